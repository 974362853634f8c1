#!/bin/bash
# The device probes on a PyTorch training job (issue 7), as a user would
# turn them on: train_model.py's step, its model compiled with torch.compile
# (MODE=compile: inductor's Triton kernels, whose cubins PyTorch's static
# launcher loads by path; devrt patches the PTX Triton keeps beside each)
# and run eagerly (MODE=eager: PyTorch's own kernels ship as SASS and are
# not instrumentable; a cuBLAS fat binary carries PTX for one kernel that
# need not run), under devrt and the collector with every shipped probe at
# warp level, every block, 1 in 16 and by launch (at most 256 blocks of
# each, the collector's default).
#
# Per mode: an uninstrumented run (base), devrt without a collector, the
# probes at each BLOCK_SAMPLES, and base again (the run-to-run noise of
# separate processes; base2 must reproduce base exactly, or no comparison
# below means anything). Checks (probes_torch.py analyze): every step's loss
# and the final parameters bit-identical to the base run's (deterministic
# algorithms; inductor's autotuning choices are cached by the base run and
# reused), module loads by status (no failure; at least one patched when
# compiled), no probe region broken, one "<kernel> blocks" span per launch
# seen with its blocks, launch latencies, SM imbalance and warp occupancy;
# the collector's log free of errors. Prints the median step time of each
# run against base, and the first step's seconds (compile + module loads +
# patching).
#
# Build first, where Go is (from the repository root): as probes_check.sh
#   make build && make -C devrt OUT=$(pwd)/.device/probes/devrt
#   mkdir -p .device/probes && cp bin/otelcol-gpu .device/probes/
# then on the GPU machine: bench/device/probes_torch.sh
# Knobs: MODES ("compile eager"), BLOCK_SAMPLES ("1 16 l256"), TRAIN_MODEL
# (small), STEPS (40), WARMUP (5), LOG_LEVEL. Output: $OUT/probes_torch.txt,
# the collector's exports and logs; exit 1 on any failure.
set -u
cd "$(dirname "$0")/../.."
. bench/device/probes_config.sh
probes_setup torch
MODES=${MODES:-"compile eager"}
BLOCK_SAMPLES=${BLOCK_SAMPLES:-"1 16 l256"}
PROBES="block_sched, launch_latency, sm_load, warp_occupancy"
export CUBLAS_WORKSPACE_CONFIG=:4096:8 PYTHONUNBUFFERED=1 TRAIN_MODEL=${TRAIN_MODEL:-small}

exec > >(tee "$OUT/probes_torch.txt") 2>&1
status=0
train() { # MODE NAME [env...]: one training run, $OUT/MODE/run-NAME.json
	local mode=$1 name=$2; shift 2
	env MODE="$mode" TORCHINDUCTOR_CACHE_DIR="$W/inductor-$mode" "$@" \
		$PY bench/device/probes_torch.py run >"$OUT/$mode/run-$name.json" 2>"$OUT/$mode/run-$name.err" ||
		{ echo "FAIL $mode/$name: the training run failed: $(tail -3 "$OUT/$mode/run-$name.err")"; status=1; return 1; }
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for mode in $MODES; do
	mkdir -p "$OUT/$mode"
	# base first: it compiles and autotunes into the mode's inductor
	# cache, which every later run of the mode reuses.
	train "$mode" base || continue
	train "$mode" devrt LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR" &&
		BLOCK_SAMPLE=1 $PY bench/device/probes_torch.py analyze - \
			"$OUT/$mode/run-devrt.json" "$OUT/$mode/run-base.json" "$mode/devrt" || status=1
	for bs in $BLOCK_SAMPLES; do
		name=probes-$bs
		probes_collector_config "$DIR" "$PROBES" warp "$bs" "$OUT/$mode/otel-$name.jsonl" >"$W/$name.yaml"
		"$D/otelcol-gpu" --config "$W/$name.yaml" >"$OUT/$mode/collector-$name.log" 2>&1 &
		COL=$!
		for _ in $(seq 100); do [ -S "$DIR/gpuext-inject.sock" ] && break; sleep 0.1; done
		if [ ! -S "$DIR/gpuext-inject.sock" ]; then
			echo "FAIL $mode/$name: the collector's injection socket never appeared"; status=1
			kill $COL; wait $COL; COL=; continue
		fi
		train "$mode" "$name" LD_PRELOAD="$D/devrt/libgpuext-devrt.so" GPUEXT_DEVRT_DIR="$DIR"
		sleep 2 # the last reads, collection and file flush
		kill $COL; wait $COL; COL=
		left=$(ls "$DIR" | grep -c '^gpuext-devmaps-')
		[ "$left" = 0 ] || { echo "FAIL $mode/$name: $left region files left after the program ended"; status=1; }
		rm -f "$DIR"/gpuext-devmaps-*.maps
		errs=$(grep -c '"level":"error"\|	error	\|panic' "$OUT/$mode/collector-$name.log")
		if [ "$errs" = 0 ]; then echo "PASS $mode/$name: no error in the collector's log"
		else echo "FAIL $mode/$name: $errs errors in the collector's log:"; grep -m3 'error\|panic' "$OUT/$mode/collector-$name.log"; status=1; fi
		[ -s "$OUT/$mode/run-$name.json" ] &&
			{ BLOCK_SAMPLE=$bs $PY bench/device/probes_torch.py analyze "$OUT/$mode/otel-$name.jsonl" \
				"$OUT/$mode/run-$name.json" "$OUT/$mode/run-base.json" "$mode/$name" || status=1; }
	done
	train "$mode" base2 &&
		$PY bench/device/probes_torch.py analyze - \
			"$OUT/$mode/run-base2.json" "$OUT/$mode/run-base.json" "$mode/base2" || status=1
	$PY bench/device/probes_torch.py table "$OUT/$mode"
done
exit $status
