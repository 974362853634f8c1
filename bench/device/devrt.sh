#!/usr/bin/env bash
# devrt, the in-process CUDA runtime, on a real GPU, in one command:
#   1. bench/device/devrt/workload.py (a deterministic PyTorch training loop
#      and a Triton kernel, with their own GPU-time references) without
#      devrt, with devrt timing every launch (GPUEXT_DEVRT_SAMPLE=1, no
#      minimum interval), and with devrt at its default sampling (1 in 32,
#      none within 1 ms of the thread's previous timed launch); ringdump drains devrt's
#      ring while each runs, as the collector would;
#   2. the launch-bound loop (launch_loop.py) on a pinned core: no tracing,
#      devrt at the default sampling, devrt with timing off; interleaved,
#      three rounds;
#   3. devrt/compare.py: devrt's kernel times against the references,
#      whether every run computed the same bits, what devrt saw, wall times.
# Results go under $OUT. No collector and no Go needed: it expects devrt's
# library and ringdump (static) at .device/devrt/, built with
#     make -C devrt OUT=$(pwd)/.device/devrt
# (.device/ is git-ignored and travels with the working tree).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8
lib=$PWD/.device/devrt/libgpuext-devrt.so
ringdump=$PWD/.device/devrt/ringdump
if [ ! -f "$lib" ] || [ ! -x "$ringdump" ]; then
	echo "devrt.sh: build first: make -C devrt OUT=\$(pwd)/.device/devrt" >&2
	exit 1
fi

echo "== machine"
nvidia-smi -L; uname -r; ldd --version | head -1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
ldconfig -p | grep -E 'libcuda\.so\.1' || true

# traced NAME [VAR=value...] -- CMD...: CMD under devrt, its ring drained
# by ringdump on other cores into $OUT/NAME.records.jsonl.
traced() {
	local name=$1 dir rd rc
	shift
	local vars=()
	while [ "$1" != "--" ]; do vars+=("$1"); shift; done
	shift
	dir=$(mktemp -d /dev/shm/devrt-bench-XXXXXX)
	taskset -c 8-15 "$ringdump" --follow "$dir" > "$OUT/$name.records.jsonl" &
	rd=$!
	env "${vars[@]}" GPUEXT_DEVRT_DIR="$dir" GPUEXT_DEVRT_STATS=1 LD_PRELOAD="$lib" "$@"
	rc=$?
	sleep 0.5
	kill -TERM "$rd"
	wait "$rd" 2>/dev/null
	cp "$dir"/*.stats.json "$OUT"/ 2>/dev/null
	echo "$name: $(ls "$dir" | grep -c '\.ring$') ring(s)" >&2
	rm -rf "$dir"
	return $rc
}

echo "== 1. training loop + Triton: without devrt, every launch timed, default sampling"
taskset -c 2-7 python3 bench/device/devrt/workload.py > "$OUT/plain.json"; echo "plain: exit $?"
traced sample1 GPUEXT_DEVRT_SAMPLE=1 GPUEXT_DEVRT_SAMPLE_GAP_US=0 GPUEXT_DEVRT_EVENT_PAIRS=8192 -- \
	taskset -c 2-7 python3 bench/device/devrt/workload.py > "$OUT/sample1.json"; echo "sample1: exit $?"
traced default -- taskset -c 2-7 python3 bench/device/devrt/workload.py > "$OUT/default.json"; echo "default: exit $?"

echo "== 2. launch-bound loop, configurations interleaved, three rounds"
loop() { # $1: config label, then how to run python
	local label=$1; shift
	"$@" taskset -c 2 python3 bench/device/launch_loop.py 20000 |
		python3 -c 'import json,sys; d=json.load(sys.stdin); d["config"]=sys.argv[1]; print(json.dumps(d))' "$label"
}
: > "$OUT/loops.jsonl"
for round in 1 2 3; do
	loop "no tracing" env | tee -a "$OUT/loops.jsonl"
	loop "devrt default (1 in 32 timed, 1 ms apart)" traced loop-default-$round -- | tee -a "$OUT/loops.jsonl"
	loop "devrt, timing off" traced loop-notiming-$round GPUEXT_DEVRT_SAMPLE=0 -- | tee -a "$OUT/loops.jsonl"
	for f in "$OUT"/loop-*-$round.records.jsonl; do # keep each ring's header: counts, drops
		grep '"kind":"header"' "$f" > "$f.tmp"; mv "$f.tmp" "$f"
	done
done
cat "$OUT"/loop-*.records.jsonl

echo "== 3. comparison"
python3 bench/device/devrt/compare.py "$OUT"
gzip -f "$OUT"/sample1.records.jsonl "$OUT"/default.records.jsonl 2>/dev/null
ls -la "$OUT"
