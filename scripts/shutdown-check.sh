#!/usr/bin/env bash
# The README's `make run` collector (deploy/config/default.yaml) started and
# stopped with SIGTERM, RUNS times (default 3), HOLD seconds after it is
# ready (default 6: a metrics batch is then waiting in the batch
# processor): each must exit 0 with no panic in its log. A config that names one file exporter in two pipelines
# crashed there 2 times in 3 (the exporter is shared and shut down with the
# first pipeline; the second's last batch then found no writer).
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for i in $(seq "${RUNS:-3}"); do
	bin/otelcol-gpu --config deploy/config/default.yaml > "$log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		grep -q "Everything is ready" "$log" && break
		sleep 0.1
	done
	sleep "${HOLD:-6}"
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	if [ "$rc" != 0 ] || grep -q "^panic" "$log"; then
		echo "shutdown-check: run $i: exit $rc" >&2
		grep -A12 "^panic" "$log" >&2 || tail -20 "$log" >&2
		exit 1
	fi
done
echo "shutdown-check: $i clean shutdowns of the default config"
