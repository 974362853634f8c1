#!/bin/bash
# Repeats probes_check.sh's launch_latency check (collector at debug level)
# until SECONDS_MAX have passed, to catch its occasional mis-pairing: a
# run's latencies fewer than its launches, or one below -5 µs (seen in
# about one probes_check run in five since 2026-11-25). For each failing
# run it keeps the collector's launch matcher inputs and outputs (its
# "launch call", "launch timed", "launch record", "launch ring lost
# records" and "launch latency" debug lines) as a trace,
# $OUT/latency-fail-N-MODE.trace.xz (at most KEEP; KEEP_ALL=1: of passing
# runs too, as latency-pass-N-MODE.trace.xz). A trace is what
# internal/proberegion's TestLaunchMatcherReplay replays (its testdata/
# latency holds some, unpacked): one line per debug line, in order,
#   c PID DEV KERNEL CALL_NS                       a launch call
#   t PID DEV KERNEL CALL_NS GPU_START GPU_END     devrt's timing of one
#   r PID DEV KERNEL FIRST_BLOCK_NS                a launch_latency record
#   l PID DEV LOST                                 the device ring lost records
#   L PID DEV KERNEL CALL_NS LATENCY_NS            what the collector reported
#   # ...                                          a region opened or closed, a process
#                                                  seen or dropped (not replayed)
#
# Build as for probes_check.sh (see its top); on the GPU machine, from the
# repository root: bench/device/latency_repeat.sh
# Knobs: SECONDS_MAX (480), MODES (warp thread), KEEP (4), KEEP_ALL, REPS (21).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
SECONDS_MAX=${SECONDS_MAX:-480}
KEEP=${KEEP:-4}
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
trace() { # the collector's log on stdin: the trace (see above) on stdout
	$PY -c '
import json, sys
ops = {"launch call": ("c", "call_ns"), "launch timed": ("t", "call_ns", "gpu_start_ns", "gpu_end_ns"),
       "launch record": ("r", "first_block_ns"), "launch ring lost records": ("l", "lost"),
       "launch latency": ("L", "call_ns", "latency_ns")}
for line in sys.stdin:
    f = line.rstrip("\n").split("\t")
    if len(f) >= 5 and f[3].startswith("device probe "):  # region and process lifecycle, as comments
        d = json.loads(f[4])
        print("#", f[3][13:], *(f"{k}={v}" for k, v in d.items() if k in ("pid", "path", "device", "gone", "ended", "last", "error", "retired")))
        continue
    if len(f) < 5 or f[3] not in ops:
        continue
    op, *keys = ops[f[3]]
    d = json.loads(f[4])
    who = [d["pid"], d["device"]] + ([d["kernel"]] if op != "l" else [])
    print(op, *who, *(d.get(k, 0) for k in keys))
'
}
start=$(date +%s) n=0 fails=0 kept=0
while [ $(($(date +%s) - start)) -lt "$SECONDS_MAX" ]; do
	n=$((n + 1))
	o=$(mktemp -d)
	OUT=$o PROBES=launch_latency LOG_LEVEL=debug MODES=${MODES:-"warp thread"} \
		bash bench/device/probes_check.sh >/dev/null 2>&1
	bad=$(grep "^FAIL" "$o/probes_check.txt")
	lat=$(grep -h "latencies, mean" "$o/probes_check.txt" | sed 's/^\(PASS\|FAIL\) //' | tr '\n' ';')
	echo "run $n: $(grep -c '^PASS' "$o/probes_check.txt") PASS, $(grep -c '^FAIL' "$o/probes_check.txt") FAIL; $lat"
	kind=pass
	if [ -n "$bad" ]; then
		fails=$((fails + 1)) kind=fail
		echo "$bad" | sed 's/^/  /'
	fi
	if [ -n "$bad" ] || [ "${KEEP_ALL:-0}" = 1 ]; then
		for f in "$o"/collector-launch_latency-*.log; do
			mode=${f##*-}; mode=${mode%.log}
			if [ "$kept" -lt "$KEEP" ]; then
				trace <"$f" | xz -6 >"$OUT/latency-$kind-$n-$mode.trace.xz"
				kept=$((kept + 1))
			fi
		done
	fi
	rm -rf "$o"
done
echo "latency_repeat: $n runs, $fails failed, $kept logs kept"
