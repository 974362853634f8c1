#!/usr/bin/env bash
# The gpuebpf receiver on a real GPU, in one command (see README, "On a GPU"):
#   1. a launch-bound PyTorch loop without the collector (baseline);
#   2. the collector (all probes) while torch_workload.py runs PyTorch
#      allocations, a cuBLAS matmul loop and a Triton kernel under PyTorch's
#      own profiler, and the launch loop again;
#   3. the collector with driver probes only, and the launch loop again;
#   4. the lean set (driver only, launches at entry), and the loop again;
#   5. the loop without the collector again, to see drift;
#   6. compare.py: the collector's record against the workload's.
# Expects the collector binary, xz-compressed, at .device/otelcol-gpu.xz
# (scripts/device-prepare.sh) and writes results under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export OTEL_OUT=$OUT PYTHONUNBUFFERED=1
bin=/tmp/otelcol-gpu
xz -dc .device/otelcol-gpu.xz > $bin && chmod +x $bin

echo "== machine"
nvidia-smi -L; uname -r
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
ldconfig -p | grep -E 'libcuda\.so\.1' || true

start_collector() { # $1: log name, rest: extra args
	local log=$OUT/$1.log; shift
	rm -f "$OUT/otel.jsonl"
	$bin --config bench/device/collector.yaml "$@" > "$log" 2>&1 &
	col=$!
	for _ in $(seq 200); do grep -q "Everything is ready" "$log" && break; sleep 0.1; done
	grep -E "probed CUDA library|unavailable|cannot" "$log" | cut -c1-300
}
stop_collector() { kill -TERM $col; wait $col 2>/dev/null; }

echo "== 1. launch loop, no collector"
python3 bench/device/launch_loop.py 20000 | python3 -c 'import json,sys; d=json.load(sys.stdin); d["config"]="no collector"; print(json.dumps(d))' | tee $OUT/loop-none.json

echo "== 2. collector, all probes"
start_collector collector
python3 bench/device/torch_workload.py > $OUT/workload.json; echo "workload exit $?"
sleep 3
stop_collector
cp $OUT/otel.jsonl $OUT/otel-workload.jsonl
start_collector collector-loop
python3 bench/device/launch_loop.py 20000 | python3 -c 'import json,sys; d=json.load(sys.stdin); d["config"]="collector, driver+runtime probes"; print(json.dumps(d))' | tee $OUT/loop-all.json
sleep 3; stop_collector
loop_spans=$(grep -o '"name":"cuLaunchKernel"' $OUT/otel.jsonl | wc -l)
echo "launch loop spans recorded (cuLaunchKernel): $loop_spans of $(python3 -c "import json; print(json.load(open('$OUT/loop-all.json'))['launches'])") launches"

echo "== 3. collector, driver probes only"
start_collector collector-driver --config bench/device/driver-only.yaml
python3 bench/device/launch_loop.py 20000 | python3 -c 'import json,sys; d=json.load(sys.stdin); d["config"]="collector, driver probes only"; print(json.dumps(d))' | tee $OUT/loop-driver.json
sleep 3; stop_collector

echo "== 4. collector, lean: driver only, launches at entry"
start_collector collector-lean --config bench/device/lean.yaml
python3 bench/device/launch_loop.py 20000 | python3 -c 'import json,sys; d=json.load(sys.stdin); d["config"]="collector, lean (driver, launch entry only)"; print(json.dumps(d))' | tee $OUT/loop-lean.json
sleep 3; stop_collector
lean_spans=$(grep -o '"name":"cuLaunchKernel"' $OUT/otel.jsonl | wc -l)
echo "lean launch loop spans recorded (cuLaunchKernel): $lean_spans"

echo "== 5. launch loop, no collector, again (drift check)"
python3 bench/device/launch_loop.py 20000 | python3 -c 'import json,sys; d=json.load(sys.stdin); d["config"]="no collector (again)"; print(json.dumps(d))' | tee $OUT/loop-none2.json

echo "== 6. comparison"
python3 bench/device/compare.py $OUT/otel-workload.jsonl $OUT/workload.json $OUT/comparison.json \
	$OUT/loop-none.json $OUT/loop-all.json $OUT/loop-driver.json $OUT/loop-lean.json $OUT/loop-none2.json
if grep -l -E "^panic:|fatal error:" $OUT/*.log; then echo "COLLECTOR CRASHED (see the log named above)"; else echo "collector logs: no panic"; fi
grep -h -E "probed CUDA library" $OUT/collector.log | grep -o '"path": "[^"]*", "pid": [0-9]*, "functions": [0-9]*'
gzip -f $OUT/otel-workload.jsonl
rm -f $OUT/otel.jsonl $OUT/loop-*.json $OUT/workload.json
ls -la $OUT
