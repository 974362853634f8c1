#!/bin/bash
# PTX forms of the instrumented modules side by side on a GPU: a jitcheck
# bench directory with variants.py's forms added (bench/device/ablation),
# timed by jit_bench.py RUNS times, then one table of every module's ratio
# to its uninstrumented kernel, run by run, and the SASS ptxas makes of the
# entry of the modules named in SASS_OF (up to the first branch that leaves
# the entry block: what a block runs before its own code).
#
# Build where Go and Python are, e.g. the entry's sampling test:
#   CGO_ENABLED=0 go build -o .device/jitcheck ./devrt/jit/cmd/jitcheck
#   .device/jitcheck bench -out /tmp/jb -levels warp -probes empty,device/block_sched -block-sample l256
#   python3 bench/device/ablation/variants.py /tmp/jb .device/jf empty,device/block_sched always,fixshift,mulhi,xonly,xfix
# then on the GPU machine, from the repository root:
#   ONLY=earlyexits4M,vecadd16M RUNS=3 ROUNDS=41 SASS_OF='earlyexits4M.orig earlyexits4M.empty.warp.l256*' \
#     bash bench/device/jit_forms.sh .device/jf
set -u
cd "$(dirname "$0")/../.."
D=$1
OUT=${OUT:-/tmp/out}
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
CUDA=${CUDA:-/usr/local/cuda}
ARCH=${ARCH:-sm_90}
mkdir -p "$OUT"
for m in ${SASS_OF:-}; do
	for f in "$D"/$m.ptx; do
		[ -f "$f" ] || continue
		s=$(mktemp /tmp/forms.XXXX.cubin)
		if "$CUDA/bin/ptxas" -arch="$ARCH" "$f" -o "$s"; then
			echo "== SASS $(basename "$f" .ptx): $("$CUDA/bin/cuobjdump" -sass "$s" | grep -cE '^\s+/\*[0-9a-f]{4}\*/') instructions"
			"$CUDA/bin/cuobjdump" -sass "$s" | grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed 's/ *\/\*[0-9a-fx]*\*\/ *$//; s/^ *//' |
				awk '{print} /BRA|EXIT/ && ++n == 2 {exit}'
		fi
		rm -f "$s"
	done
done
for run in $(seq "${RUNS:-2}"); do
	(cd bench/device && ROUNDS=${ROUNDS:-21} "$PY" jit_bench.py "$(realpath "../../$D")") > "$OUT/jit_forms.$run.txt" 2>&1 || {
		tail "$OUT/jit_forms.$run.txt"; exit 1; }
	grep -E "identical|^device" "$OUT/jit_forms.$run.txt"
done
"$PY" - "$OUT" "${RUNS:-2}" <<'PY'
import re, sys
out, runs = sys.argv[1], int(sys.argv[2])
ratio, kernels, names = {}, [], []
for run in range(1, runs + 1):
    for line in open(f"{out}/jit_forms.{run}.txt"):
        m = re.match(r"(\w+)\+(\S+)\s+[\d.]+\s+([\d.]+)", line)
        if m:
            k, v = m.group(1), m.group(2)
            ratio[(run, k, v)] = float(m.group(3))
            kernels += [k] if k not in kernels else []
            names += [v] if v not in names else []
print("| module | " + " | ".join(kernels) + " |")
print("| --- |" + " --- |" * len(kernels))
for v in names:
    print(f"| {v} | " + " | ".join("; ".join(f"{ratio[(r, k, v)]:.3f}" for r in range(1, runs + 1) if (r, k, v) in ratio)
                                   for k in kernels) + " |")
PY
