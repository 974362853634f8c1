#!/usr/bin/env bash
# The UVM tools tracer's cost on the managed-memory program (256 MiB, never
# more than a quarter of free GPU memory), side by side: the program alone
# and under uvmcapture, alternated, three rounds; each run prints its own
# phase times (CLOCK_MONOTONIC_RAW), summed here into one time per run.
# Also saves the nvidia_uvm module's BTF for the fentry backend's CO-RE tests.
# Needs .device/uvmcapture (see bench/device/uvm.sh); writes to $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
cp /sys/kernel/btf/nvidia_uvm "$OUT/nvidia_uvm.btf" 2>/dev/null && echo "saved nvidia_uvm BTF ($(stat -c %s $OUT/nvidia_uvm.btf) bytes)"
head -1 /proc/driver/nvidia/version
nvcc -O2 -arch=sm_90 -o /tmp/managed bench/device/uvm/managed.cu 2>&1 | tail -3
total() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print("%.2f" % (sum(p["end_ns"]-p["start_ns"] for p in d["phases"])/1e6))'; }
for round in 1 2 3; do
	rm -f /tmp/uvm-start-alone; touch /tmp/uvm-start-alone
	alone=$(/tmp/managed --start-file /tmp/uvm-start-alone --max-mib 256 --random-pages 4096 | total)
	rm -f /tmp/uvm-start
	traced=$(.device/uvmcapture --out /tmp/uvmcost --name cost --wait-file /tmp/uvm-start -- \
		/tmp/managed --start-file /tmp/uvm-start --max-mib 256 --random-pages 4096 2>/dev/null |
		grep -E '^\{"program"' | total)
	echo "round $round: alone ${alone} ms, traced ${traced} ms"
done | tee "$OUT/uvm_cost.txt"
