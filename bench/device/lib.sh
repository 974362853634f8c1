# Sourced by the bench/device scripts that run the collector: from the
# repository root, with $OUT ready, the collector unpacked at $bin.
# Expects .device/otelcol-gpu.xz (scripts/device-prepare.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export OTEL_OUT=$OUT PYTHONUNBUFFERED=1
bin=/tmp/otelcol-gpu
xz -dc .device/otelcol-gpu.xz > $bin && chmod +x $bin

# wait_ready LOG: wait (up to 30 s) until the collector writing LOG is ready.
wait_ready() {
	for _ in $(seq 300); do grep -q "Everything is ready" "$1" && return 0; sleep 0.1; done
	echo "collector not ready after 30 s: $1" >&2
	return 1
}
