#!/bin/bash
# Ablation of the device probes' cost on a GPU: what each primitive a probe
# uses (the call, %globaltimer, a store, a dependent load, a reduction to a
# per-SM or a single counter, an atomic whose result is waited for) adds to
# the benchmark kernels of jit_bench, and the SASS ptxas makes of a call
# site (is the probe inlined, is an unused atomic a RED).
#
# The probes are bench/device/ablation/*.bpf.c. Build, where clang and Go are:
#   mkdir -p .device/ablation
#   for f in bench/device/ablation/ab_*.bpf.c; do
#     DIR=bench/device/ablation bpf/device/build.sh $(basename $f); done
#   mv bench/device/ablation/*.o .device/ablation/
#   CGO_ENABLED=0 go build -o .device/jitcheck ./devrt/jit/cmd/jitcheck
#   .device/jitcheck bench -out .device/jb -levels warp \
#     -probes empty,device/sm_load,$(ls .device/ablation/*.o | paste -sd,)
# then on the GPU machine, from the repository root:
#   bench/device/jit_ablation.sh .device/jb [more dirs: other JIT builds]
# (ROUNDS, BATCH as jit_bench.py). Output also in $OUT/jit_ablation.txt.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
CUDA=${CUDA:-/usr/local/cuda}
ARCH=${ARCH:-sm_90}
mkdir -p "$OUT"
rc=0
{
	for d in "$@"; do
		echo "== $d"
		ROUNDS=${ROUNDS:-15} "$PY" bench/device/jit_bench.py "$d" || rc=1
		for m in vecadd1M.ab_add.warp vecadd1M.sm_load.warp vecadd1M.empty.warp; do
			[ -f "$d/$m.ptx" ] || continue
			s=$(mktemp /tmp/abl.XXXX.cubin)
			if "$CUDA/bin/ptxas" -arch="$ARCH" "$d/$m.ptx" -o "$s" 2>/dev/null; then
				sass=$("$CUDA/bin/cuobjdump" -sass "$s")
				printf '%s SASS: %s instructions; CALL %s, RED %s, ATOMG %s, LDG %s, STG %s, STL %s\n' "$m" \
					"$(grep -cE '^\s+/\*[0-9a-f]{4}\*/' <<<"$sass")" \
					"$(grep -c 'CALL' <<<"$sass")" "$(grep -c 'RED' <<<"$sass")" \
					"$(grep -c 'ATOMG' <<<"$sass")" "$(grep -c 'LDG' <<<"$sass")" \
					"$(grep -c 'STG' <<<"$sass")" "$(grep -c 'STL' <<<"$sass")"
				[ -n "${SASS:-}" ] && echo "$sass"
			fi
			rm -f "$s"
		done
	done
} 2>&1 | tee "$OUT/jit_ablation.txt"
exit $rc
