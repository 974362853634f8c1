#!/bin/bash
# GPU check of a program's own variables under device probe injection
# (GPUEXT_INJ_RF_VARS: the patched twin owns the module's __device__ and
# __constant__ variables): bench/device/vars_runtime.cu, built here with
# nvcc, run without devrt, then under devrt with the collector patching
# every kernel (block_sched, warp level); its output line must be the same,
# and its kernels must have run instrumented ("take blocks" spans).
# probes_check.sh runs the same check for every probe; this one alone
# serves to compare builds: D=<dir> takes otelcol-gpu and devrt/ from
# there (as .device/probes is built: see probes_check.sh), so a build
# before the twin owned the variables shows what the program got then.
# Output: $OUT/vars_check.txt; exit 1 on a difference.
set -u
cd "$(dirname "$0")/../.."
. bench/device/probes_config.sh
probes_setup vars
command -v nvcc >/dev/null || { echo "no nvcc"; exit 1; }
nvcc -arch=sm_90 -o "$W/vars_runtime" bench/device/vars_runtime.cu || exit 1
status=0
{
	base=$("$W/vars_runtime")
	echo "without devrt: $base (rc=$?)"
	LOG_LEVEL=${LOG_LEVEL:-debug} probes_collector_config "$DIR" block_sched warp l256 "$OUT/otel-vars.jsonl" >"$W/c.yaml"
	"$D/otelcol-gpu" --config "$W/c.yaml" >"$OUT/collector-vars.log" 2>&1 &
	COL=$!
	for _ in $(seq 100); do [ -S "$DIR/gpuext-inject.sock" ] && break; sleep 0.1; done
	got=$(LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR" "$W/vars_runtime")
	rc=$?
	echo "under devrt and the collector ($D): $got (rc=$rc)"
	sleep 2
	kill $COL; wait $COL; COL=
	[ "$got" = "$base" ] && [ $rc = 0 ] && echo "PASS: the same output" || { echo "FAIL: the output differs"; status=1; }
	n=$(grep -o '"take blocks"' "$OUT/otel-vars.jsonl" | wc -l)
	[ "$n" -gt 0 ] && echo "PASS: take ran instrumented ($n \"take blocks\" spans)" ||
		{ echo "FAIL: no \"take blocks\" span"; status=1; }
	echo "INFO: big (all the shared memory a block may have): $(grep -o '"big blocks"' "$OUT/otel-vars.jsonl" | wc -l) \"big blocks\" spans (0: the twin refused it and it ran uninstrumented: its plain copy, or before plain copies the original)"
	grep -i "plain copy\|refused" "$OUT/collector-vars.log" | head -3
} 2>&1 | tee "$OUT/vars_check.txt"
grep -q "^FAIL" "$OUT/vars_check.txt" && status=1
exit $status
