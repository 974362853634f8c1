#!/bin/bash
# GPU check of the device probes in a process that uses several GPUs
# (issue 7): bench/device/multigpu/rt_kernels.cu, built PTX-only by nvcc,
# launches the same two kernels through the CUDA runtime on every visible
# GPU, interleaved (cudaSetDevice between launches), as data-parallel code
# does, and a third through the driver (cuLaunchKernel) with the
# CUfunction cuKernelGetFunction gave in each GPU's context. The runtime
# loads its fat binary once, as a context-independent library; each GPU
# runs it in a context of its own.
#
# Runs, on a machine with two or more GPUs (the nvidia-h200-x2 kind):
#   1. the program alone (reference outputs);
#   2. under devrt with the collector injecting block_sched, sm_load and
#      launch_latency (warp level; 1 launch in 4 timed, for the clock
#      offsets): outputs identical, and per GPU (hw.id) one block span per
#      launch with every block, SM block counts summing to the blocks
#      launched there, an SM imbalance for mg_imbalanced, a launch latency
#      per launch (multigpu_check.py);
#   3. the same with devrt's ring kept out of the collector's directory
#      (GPUEXT_DEVRT_INJECT_SOCK names the collector's socket) and dumped
#      by ringdump: what devrt did with each module load.
# Build first, where Go is (from the repository root):
#   make build && mkdir -p .device/probes && cp bin/otelcol-gpu .device/probes/
#   make -C devrt OUT=$(pwd)/.device/probes/devrt
# then on the GPU machine: bench/device/multigpu_check.sh
# Knobs: REPS (20). Output: $OUT/multigpu_check.txt and the exports.
set -u
cd "$(dirname "$0")/../.."
. bench/device/probes_config.sh
probes_setup mg
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}; command -v "$NVCC" >/dev/null || NVCC=nvcc
REPS=${REPS:-20}
DIAG=/dev/shm/gxmg-diag-$$
trap 'probes_cleanup; rm -rf "$DIAG"' EXIT
[ -e "$D/devrt/ringdump" ] || { echo "missing $D/devrt/ringdump: build first (see the top of $0)"; exit 1; }
mkdir -p "$DIAG"
status=0
{
	nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader
	"$NVCC" -gencode arch=compute_90,code=compute_90 -o "$W/rt_kernels" bench/device/multigpu/rt_kernels.cu -lcuda ||
		{ echo "FAIL nvcc"; exit 1; }
	"$W/rt_kernels" "$REPS" >"$OUT/run-base.json" || { echo "FAIL the plain run"; exit 1; }
	probes_collector_config "$DIR" "block_sched, sm_load, launch_latency" warp 1 "$OUT/otel-multigpu.jsonl" >"$W/col.yaml"
	"$D/otelcol-gpu" --config "$W/col.yaml" >"$OUT/collector-multigpu.log" 2>&1 &
	COL=$!
	for _ in $(seq 100); do [ -S "$DIR/gpuext-inject.sock" ] && break; sleep 0.1; done
	[ -S "$DIR/gpuext-inject.sock" ] || { echo "FAIL the collector's injection socket never appeared"; exit 1; }
	LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR" "$W/rt_kernels" "$REPS" \
		>"$OUT/run-probed.json" 2>"$OUT/run-probed.err" || { echo "FAIL the instrumented run: $(tail -3 "$OUT/run-probed.err")"; status=1; }
	LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIAG" GPUEXT_DEVRT_DEBUG=1 \
		GPUEXT_DEVRT_INJECT_SOCK="$DIR/gpuext-inject.sock" "$W/rt_kernels" "$REPS" \
		>"$OUT/run-diag.json" 2>"$OUT/run-diag.err" || { echo "FAIL the diagnosis run: $(tail -3 "$OUT/run-diag.err")"; status=1; }
	sleep 2 # the last reads, collection and file flush
	kill $COL; wait $COL; COL=
	"$D/devrt/ringdump" "$DIAG"/gpuext-devrt-*.ring >"$OUT/ring-diag.jsonl" 2>/dev/null
	ls -l "$DIAG" "$DIR"
	grep -c . "$OUT/run-diag.err" >/dev/null && sed -n 1,40p "$OUT/run-diag.err"
	$PY bench/device/multigpu_check.py analyze "$OUT/otel-multigpu.jsonl" "$OUT/run-probed.json" \
		"$OUT/run-base.json" "$OUT/ring-diag.jsonl" || status=1
} 2>&1 | tee "$OUT/multigpu_check.txt"
grep -q "^FAIL" "$OUT/multigpu_check.txt" && status=1
exit $status
