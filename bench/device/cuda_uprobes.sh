#!/usr/bin/env bash
# The gpuebpf receiver on a real GPU, in one command (see README, "On a GPU"):
#   1. the collector (all probes) while torch_workload.py runs PyTorch
#      allocations, a cuBLAS matmul loop and a Triton kernel under PyTorch's
#      own profiler;
#   2. a launch-bound PyTorch loop on a pinned core, without the collector
#      and under three probe sets, interleaved, three rounds;
#   3. compare.py: the collector's record against the workload's, and the
#      loop's medians.
# Expects the collector binary, xz-compressed, at .device/otelcol-gpu.xz
# (scripts/device-prepare.sh) and writes results under $OUT.
source "$(dirname "$0")/lib.sh"

echo "== machine"
nvidia-smi -L; uname -r
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
ldconfig -p | grep -E 'libcuda\.so\.1' || true

start_collector() { # $1: log name, rest: extra args
	local log=$OUT/$1.log; shift
	rm -f "$OUT/otel.jsonl"
	taskset -c 8-15 $bin --config bench/device/collector.yaml "$@" > "$log" 2>&1 &
	col=$!
	wait_ready "$log"
	grep -E "probed CUDA library|unavailable|cannot" "$log" | cut -c1-300
}
stop_collector() { kill -TERM $col; wait $col 2>/dev/null; }

# The launch-bound loop on one pinned core; the collector runs on others.
loop() { # $1: config label
	taskset -c 2 python3 bench/device/launch_loop.py 20000 |
		python3 -c 'import json,sys; d=json.load(sys.stdin); d["config"]=sys.argv[1]; print(json.dumps(d))' "$1"
}

echo "== 1. collector (all probes) during the PyTorch + Triton workload"
start_collector collector
python3 bench/device/torch_workload.py > $OUT/workload.json; echo "workload exit $?"
sleep 3
stop_collector
cp $OUT/otel.jsonl $OUT/otel-workload.jsonl

echo "== 2. launch-loop overhead, configurations interleaved, three rounds"
: > $OUT/loops.jsonl
for round in 1 2 3; do
	loop "no collector" | tee -a $OUT/loops.jsonl
	start_collector collector-all
	loop "driver+runtime probes" | tee -a $OUT/loops.jsonl
	sleep 2; stop_collector
	[ $round = 1 ] && echo "spans of the loop (cuLaunchKernel): $(grep -o '"name":"cuLaunchKernel"' $OUT/otel.jsonl | wc -l) of 101001 launches"
	start_collector collector-driver --config bench/device/driver-only.yaml
	loop "driver probes only" | tee -a $OUT/loops.jsonl
	sleep 2; stop_collector
	start_collector collector-lean --config bench/device/lean.yaml
	loop "lean: driver, launches at entry" | tee -a $OUT/loops.jsonl
	sleep 2; stop_collector
	[ $round = 1 ] && echo "spans of the lean loop (cuLaunchKernel): $(grep -o '"name":"cuLaunchKernel"' $OUT/otel.jsonl | wc -l) of 101001 launches"
done

echo "== 3. comparison"
python3 bench/device/compare.py $OUT/otel-workload.jsonl $OUT/workload.json $OUT/comparison.json $OUT/loops.jsonl
if grep -l -E "^panic:|fatal error:" $OUT/*.log; then echo "COLLECTOR CRASHED (see the log named above)"; else echo "collector logs: no panic"; fi
grep -h -E "probed CUDA library" $OUT/collector.log | grep -o '"path": "[^"]*", "pid": [0-9]*, "functions": [0-9]*'
gzip -f $OUT/otel-workload.jsonl
rm -f $OUT/otel.jsonl $OUT/workload.json
ls -la $OUT
