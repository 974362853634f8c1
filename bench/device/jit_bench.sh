#!/bin/bash
# Benchmark of devrt/jit's device probes on a GPU (no Go needed there): two
# kernels of vector addition (16M and 1M elements), one whose threads
# mostly leave early (4M), and two compute kernels (balanced, and with
# every 8th block doing 8x the work), all hand-written to single out a
# probe's fixed costs; then kernels as compilers write them, from the PTX
# corpus (devrt/ptx/testdata/corpus): Triton's elementwise add (16M),
# row softmax and fp16 GEMM (4096^3, wgmma), nvcc's grid-stride axpy (16M).
# Each uninstrumented and instrumented by devrt/ptx at entry and exits with each
# shipped probe (and an empty probe: the call site alone), compiled at warp
# level and per thread; time per launch (median over interleaved rounds),
# ratio to the original, driver JIT time of each module, Go patch time
# (compile + link + instrument + write), registers a thread, static shared
# memory and blocks an SM holds; every module's output must equal the
# original's (inputs a pattern of varied words). Then what block_sched
# and sm_load saw in one launch of the imbalanced kernel.
#
# Build the tool first, where Go is:
#   CGO_ENABLED=0 go build -o build/jitcheck ./devrt/jit/cmd/jitcheck
# then on the GPU machine, from the repository root:
#   bench/device/jit_bench.sh       (JITCHECK=path; ROUNDS, BATCH, REGION=mapped;
#                                    LEVELS=warp; BLOCK_SAMPLE=1,16: each probe
#                                    also in 1 of 16 blocks, and the report
#                                    checks the blocks sampled on the GPU;
#                                    16g: the same in the guards form; l256:
#                                    by launch, at most 256 blocks of each,
#                                    the collector's default; l256g)
# Output also in $OUT/jit_bench.txt.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
T=${JITCHECK:-build/jitcheck}
if [ ! -x "$T" ] && command -v go >/dev/null; then
	CGO_ENABLED=0 go build -o build/jitcheck ./devrt/jit/cmd/jitcheck && T=build/jitcheck
fi
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
W=$(mktemp -d /tmp/jitbench.XXXX)
mkdir -p "$OUT"
{
	"$T" bench -out "$W" -corpus devrt/ptx/testdata/corpus ${LEVELS:+-levels "$LEVELS"} ${BLOCK_SAMPLE:+-block-sample "$BLOCK_SAMPLE"} || exit 2
	"$PY" bench/device/jit_bench.py "$W" || exit 1
	"$T" report -dir "$W"
} 2>&1 | tee "$OUT/jit_bench.txt"
exit "${PIPESTATUS[0]}"
