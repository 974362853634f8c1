#!/bin/bash
# GPU check of the device probes through the collector (issue 7): the
# built otelcol-gpu with devrt.probes enabled patches the modules a program
# loads (devrt, LD_PRELOADed, asks it), the probes run inside the kernels,
# the collector reads their regions and exports metrics and spans to a file.
#
# What it checks, for each shipped probe (block_sched, launch_latency,
# sm_load, warp_occupancy) at warp level and per thread:
#   - results identical with and without instrumentation: the SHA-256 of
#     every output of nvcc's vec_add, early_exits, imbalanced
#     (bench/device/ptx/kernels.cu) and Triton's add_kernel
#     (devrt/ptx/testdata/corpus/triton_add.ptx) equals the uninstrumented
#     run's, and so do the outputs of three live Triton kernels Triton
#     itself compiles and loads as cubins (bench/device/probes_triton.py:
#     an axpy, an fp16 GEMM whose wgmma tiles live in dynamic shared memory
#     and a flash-style attention forward), all patched (block_sched: a
#     span per launch with every block);
#   - the program's own variables, which the patched twin owns
#     (GPUEXT_INJ_RF_VARS): globals_use (kernels.cu) after the program
#     wrote its __constant__ coeffs through cuModuleGetGlobal, its
#     __device__ dev_counter read back the same way; and, where nvcc is,
#     vars_runtime.cu (cudaMemcpyToSymbol, cudaMemcpyFromSymbol, a kernel
#     changing an initialized __device__ variable another reads) printing
#     the same line as without devrt, its kernels run instrumented;
#   - block_sched: one "<kernel> blocks" span per launch with every block,
#     its first-block-start to last-block-end no longer than the CUDA-event
#     time of the launches, the longest block inside it; imbalanced's
#     longest/shortest block near its work ratio (blocks = SMs, block b
#     spins b+1 units); a schedule delay histogram;
#   - sm_load: gpu.kernel.sm.imbalance of the imbalanced kernel (one block
#     per SM, work growing with the block: ideally 2 * SMs / (SMs + 1));
#   - launch_latency: one latency per launch of every kernel (the offset
#     calibrated from devrt's timed launches); the launches are
#     synchronous, so mean 0.5-100 µs, none below -5 µs or above 1 ms;
#   - warp_occupancy: occupancy points between 0 and 64 warps per SM (times
#     the largest weight when sampled);
#   - sampled (BLOCK_SAMPLE: l256, the collector's default
#     blocks_per_launch 256; lK another; n, block_sample n; 1 every
#     block): block_sched's spans hold exactly the blocks devrt/ptx picks
#     (BlockSampled, LaunchSampled) and say their weight, sm_load counts
#     each sampled block as many times;
# and times each kernel (median of REPS launches, CUDA events):
# uninstrumented, devrt without a collector, each probe warp-level and per
# thread, as a table of ratios to the uninstrumented time; and the patch +
# JIT cost of each module load (the program's cuModuleLoadData time).
#
# Build first, where Go is (from the repository root):
#   make build                                           # bin/otelcol-gpu
#   make -C devrt OUT=$(pwd)/.device/probes/devrt
#   mkdir -p .device/probes && cp bin/otelcol-gpu .device/probes/
# then on the GPU machine, from the repository root:
#   bench/device/probes_check.sh
# nvcc, when present, compiles bench/device/ptx/kernels.cu to PTX afresh
# (sm_90); otherwise the committed nvcc output of the corpus is used. The
# ring directory is on /dev/shm: devrt's regions must be on tmpfs (see
# devrt/README.md). Knobs: REPS (21), BASE_ITERS (2000), PROBES, MODES,
# BLOCK_SAMPLE (l256).
# Output: $OUT/probes_check.txt, the collector's exports and logs; exit 1
# on any failure.
set -u
cd "$(dirname "$0")/../.."
. bench/device/probes_config.sh
probes_setup probes
PROBES=${PROBES:-"block_sched launch_latency sm_load warp_occupancy"}
MODES=${MODES:-"warp thread"}
export BLOCK_SAMPLE=${BLOCK_SAMPLE:-l256}

KPTX=$ROOT/devrt/ptx/testdata/corpus/nvcc_kernels.ptx
VARS= VARS_ERR=
if command -v nvcc >/dev/null; then
	nvcc -ptx -arch=sm_90 -o "$W/kernels.ptx" bench/device/ptx/kernels.cu && KPTX=$W/kernels.ptx
	if nvcc -arch=sm_90 -o "$W/vars_runtime" bench/device/vars_runtime.cu 2>"$W/vars_nvcc.err"; then
		VARS=$W/vars_runtime
	else
		VARS_ERR=$(tail -3 "$W/vars_nvcc.err")
	fi
fi
TPTX=$ROOT/devrt/ptx/testdata/corpus/triton_add.ptx

# collector_config PROBE MODE: devrt only, the probe, a file exporter.
collector_config() {
	probes_collector_config "$DIR" "$1" "$2" "$BLOCK_SAMPLE" "$OUT/otel-$1-$2.jsonl"
}

status=0
run_program() { # NAME [env...]: the program, its JSON in $OUT/run-NAME.json
	local name=$1; shift
	env "$@" $PY bench/device/probes_check.py run "$KPTX" "$TPTX" >"$OUT/run-$name.json" 2>"$OUT/run-$name.err" ||
		{ echo "FAIL $name: the program failed: $(tail -3 "$OUT/run-$name.err")"; status=1; return 1; }
}
run_triton() { # NAME [env...]: the live Triton kernel, $OUT/triton-NAME.json
	local name=$1; shift
	env TRITON_CACHE_DIR="$(mktemp -d "$W/triton.XXXX")" "$@" $PY bench/device/probes_triton.py \
		>"$OUT/triton-$name.json" 2>"$OUT/triton-$name.err" ||
		{ echo "FAIL $name: the Triton program failed: $(tail -3 "$OUT/triton-$name.err")"; status=1; return 1; }
}
run_vars() { # NAME [env...]: the runtime program with variables of its own
	# (vars_runtime.cu), its output line the same as without devrt
	[ -n "$VARS" ] || return 0
	local name=$1; shift
	env "$@" "$VARS" >"$OUT/vars-$name.json" 2>"$OUT/vars-$name.err" ||
		{ echo "FAIL vars $name: rc=$? $(cat "$OUT/vars-$name.json") $(tail -2 "$OUT/vars-$name.err")"; status=1; return 1; }
	[ "$name" = base ] && return 0
	if cmp -s "$OUT/vars-base.json" "$OUT/vars-$name.json"; then
		echo "PASS $name: the runtime program's own variables (cudaMemcpyToSymbol, cudaMemcpyFromSymbol, device writes) as without devrt: $(cat "$OUT/vars-$name.json")"
	else
		echo "FAIL $name: vars_runtime printed $(cat "$OUT/vars-$name.json"), without devrt $(cat "$OUT/vars-base.json")"; status=1
	fi
}
same_results() { # NAME: outputs identical to the uninstrumented run's
	$PY - "$OUT/run-base.json" "$OUT/run-$1.json" "$1" <<'PYEOF' || status=1
import json, sys
ra, rb = (json.load(open(p)) for p in sys.argv[1:3])
a, b = ra["kernels"], rb["kernels"]
a["long_tail"], b["long_tail"] = ra["long_tail"], rb["long_tail"]
a["globals_use"], b["globals_use"] = ra["globals_use"], rb["globals_use"]
bad = [k for k in a if a[k]["sha256"] != b[k]["sha256"]]
print(("FAIL " if bad else "PASS ") + sys.argv[3] + ": outputs identical to the uninstrumented run" + (f" except {bad}" if bad else ""))
sys.exit(1 if bad else 0)
PYEOF
}
{
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	echo "kernels: $KPTX; triton: $TPTX"
	[ -z "$VARS_ERR" ] || echo "FAIL vars_runtime.cu does not compile: $VARS_ERR"
	run_program base
	run_triton base
	run_vars base
	run_program devrt LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR" && same_results devrt
	run_vars devrt LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR"
	for probe in $PROBES; do
		for mode in $MODES; do
			name=$probe-$mode
			collector_config "$probe" "$mode" >"$W/$name.yaml"
			"$D/otelcol-gpu" --config "$W/$name.yaml" >"$OUT/collector-$name.log" 2>&1 &
			COL=$!
			for _ in $(seq 100); do [ -S "$DIR/gpuext-inject.sock" ] && break; sleep 0.1; done
			if [ ! -S "$DIR/gpuext-inject.sock" ]; then
				echo "FAIL $name: the collector's injection socket never appeared"; status=1
				kill $COL; wait $COL; COL=; continue
			fi
			run_program "$name" LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR" &&
				same_results "$name"
			run_triton "$name" LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR"
			run_vars "$name" LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR"
			sleep 2 # the last reads, collection and file flush
			# the runtime program's kernels ran in their twins (which own
			# the variables), so block_sched saw them
			if [ -n "$VARS" ] && [ "$probe" = block_sched ]; then
				if grep -q '"take blocks"' "$OUT/otel-$name.jsonl"; then
					echo "PASS $name: vars_runtime's take ran instrumented (\"take blocks\" spans)"
				else
					echo "FAIL $name: no \"take blocks\" span: vars_runtime's kernels did not run in the twin"; status=1
				fi
				echo "INFO $name: vars_runtime's big (all the shared memory a block may have): $(grep -o '"big blocks"' "$OUT/otel-$name.jsonl" | wc -l) \"big blocks\" spans (0: the twin refused it and it ran uninstrumented: its plain copy, or before plain copies the original)"
			fi
			kill $COL; wait $COL; COL=
			# What a collector of another probe set must not find (the
			# collector removes regions of ended processes itself).
			left=$(ls "$DIR" | grep -c '^gpuext-devmaps-')
			[ "$left" = 0 ] || echo "FAIL $name: $left region files left after the program ended"
			rm -f "$DIR"/gpuext-devmaps-*.maps
			if [ -s "$OUT/run-$name.json" ]; then
				$PY bench/device/probes_check.py analyze "$OUT/otel-$name.jsonl" "$OUT/run-$name.json" "$probe" || status=1
			fi
			if [ -s "$OUT/triton-$name.json" ]; then
				$PY bench/device/probes_check.py triton "$OUT/otel-$name.jsonl" "$OUT/triton-base.json" \
					"$OUT/triton-$name.json" "$probe" || status=1
			fi
		done
	done
	# Times: median µs per launch and ratio to the uninstrumented kernel;
	# module load (patch + JIT when instrumented).
	$PY - "$OUT" <<'PYEOF'
import glob, json, os, sys
runs = {os.path.basename(p)[4:-5]: json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/run-*.json")) if os.path.getsize(p)}
base = runs.get("base")
if base:
    ks = list(base["kernels"])
    print("| run | " + " | ".join(f"{k} µs (x)" for k in ks) + " | load nvcc / triton µs |")
    print("|---" * (len(ks) + 2) + "|")
    for name, r in runs.items():
        cells = [f"{r['kernels'][k]['median_us']:.1f} ({r['kernels'][k]['median_us'] / base['kernels'][k]['median_us']:.3f})" for k in ks]
        print(f"| {name} | " + " | ".join(cells) + f" | {r['load_us']['nvcc']:.0f} / {r['load_us']['triton']:.0f} |")
PYEOF
} 2>&1 | tee "$OUT/probes_check.txt"
grep -q "^FAIL" "$OUT/probes_check.txt" && status=1
exit $status
