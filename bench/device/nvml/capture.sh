#!/usr/bin/env bash
# capture.sh OUTDIR SECONDS [-- WORKLOAD...]
#
# Logs nvidia-smi every 500 ms (with nvidia-smi's own timestamps) while a
# workload runs, and snapshots the compute processes halfway through.
# The collector (file exporter) must already be running; afterwards:
#   python3 nvml_compare.py COLLECTOR.json OUTDIR/smi.csv OUTDIR/apps.csv --pid $(cat OUTDIR/workload.pid)
# The default workload is workload.py (PyTorch matmuls) for SECONDS.
set -euo pipefail
out=${1:?OUTDIR}
secs=${2:?SECONDS}
shift 2
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || set -- python3 "$here/workload.py" "$secs"
mkdir -p "$out"

q=timestamp,uuid,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.mem
nvidia-smi --query-gpu="$q" --format=csv,noheader,nounits -lms 500 >"$out/smi.csv" &
smi=$!
trap 'kill $smi 2>/dev/null || true' EXIT

"$@" >"$out/workload.log" 2>&1 &
wl=$!
echo "$wl" >"$out/workload.pid"
sleep $((secs / 2))
nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits >"$out/apps.csv"
wait "$wl" || echo "workload exited with $?" >&2
sleep 2 # let the collector take one more scrape
kill "$smi" 2>/dev/null || true
echo "wrote $out/smi.csv $out/apps.csv; workload pid $(cat "$out/workload.pid")"
