#!/bin/bash
# Two builds of the shipped device probes side by side on a GPU: the
# objects now in jitcheck (device/<probe>) and an earlier build's, each
# patched into the benchmark kernels in the same run and timed by
# jit_bench.py (warp level), RUNS times over; then a table of each probe's
# ratio to the uninstrumented kernel, before -> after, per run.
#
# Build where Go is, then run on the GPU machine from the repository root:
#   CGO_ENABLED=0 go build -o .device/jitcheck ./devrt/jit/cmd/jitcheck
#   mkdir -p .device/oldprobes && for p in block_sched launch_latency sm_load warp_occupancy; do
#     git show REV:bpf/device/$p.bpf.o > .device/oldprobes/old_$p.bpf.o; done
#   bash bench/device/jit_probes_ab.sh        (RUNS=2, ROUNDS=21, OLD=.device/oldprobes;
#                                             SASS=1 also writes each module's SASS to $OUT/sass,
#                                             ptxas -arch=sm_90 and cuobjdump from the CUDA toolkit)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
T=${JITCHECK:-$PWD/.device/jitcheck}
OLD=$(realpath "${OLD:-.device/oldprobes}")
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
PROBES="launch_latency sm_load warp_occupancy block_sched"
P=empty
for p in $PROBES; do
	P=$P,device/$p,$OLD/old_$p.bpf.o
done
mkdir -p "$OUT"
for run in $(seq "${RUNS:-2}"); do
	W=$(mktemp -d /tmp/jitab.XXXX)
	"$T" bench -out "$W" -levels warp -probes "$P" > /dev/null || exit 2
	if [ "${SASS:-0}" = 1 ] && [ "$run" = 1 ]; then
		mkdir -p "$OUT/sass"
		for f in "$W"/*.ptx; do
			b=$(basename "${f%.ptx}")
			/usr/local/cuda/bin/ptxas -arch=sm_90 "$f" -o "$W/$b.cubin" &&
				/usr/local/cuda/bin/cuobjdump -sass "$W/$b.cubin" > "$OUT/sass/$b.sass"
		done
	fi
	(cd bench/device && ROUNDS=${ROUNDS:-21} "$PY" jit_bench.py "$W") > "$OUT/jit_probes_ab.$run.txt" 2>&1 || {
		tail "$OUT/jit_probes_ab.$run.txt"; exit 1; }
done
"$PY" - "$OUT" "${RUNS:-2}" $PROBES <<'PY'
import re, sys
out, runs, probes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ratio = {}
for run in range(1, runs + 1):
    for line in open(f"{out}/jit_probes_ab.{run}.txt"):
        m = re.match(r"(\w+)\+(\w+)/warp\s+[\d.]+\s+([\d.]+)", line)
        if m:
            ratio[(run, m.group(1), m.group(2))] = float(m.group(3))
kernels = sorted({k for _, k, _ in ratio})
print("| kernel | " + " | ".join(probes) + " |")
print("| --- |" + " --- |" * len(probes))
for k in kernels:
    cells = []
    for p in probes:
        cells.append("; ".join(f"{ratio.get((r, k, 'old_' + p), float('nan')):.3f} -> "
                               f"{ratio.get((r, k, p), float('nan')):.3f}" for r in range(1, runs + 1)))
    print(f"| {k} | " + " | ".join(cells) + " |")
PY
