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
