#!/bin/bash
# Two builds of the device probes side by side on a GPU: the probes as
# jitcheck compiles them now, and an earlier build's (its probe objects, or
# a whole earlier jitcheck: its compiler and its embedded probes), each
# patched into the benchmark kernels and timed in the same run by
# jit_bench.py (warp level), RUNS times over; then a table of each probe's
# ratio to the uninstrumented kernel, before -> after, per run.
#
# Build where Go is, then run on the GPU machine from the repository root:
#   CGO_ENABLED=0 go build -o .device/jitcheck ./devrt/jit/cmd/jitcheck
# and either the earlier objects:
#   mkdir -p .device/oldprobes && for p in block_sched launch_latency sm_load warp_occupancy; do
#     git show REV:bpf/device/$p.bpf.o > .device/oldprobes/$p.bpf.o; done
# or an earlier jitcheck (git worktree add /tmp/old REV; build it there):
#   (cd /tmp/old && CGO_ENABLED=0 go build -o $OLDPWD/.device/jitcheck-old ./devrt/jit/cmd/jitcheck)
#   bash bench/device/jit_probes_ab.sh     (RUNS=2, ROUNDS=21; CORPUS=dir of corpus kernels or none;
#                                          BLOCK_SAMPLE=one sampling as jitcheck bench takes it,
#                                          l256 the collector's default; 1, every block, if unset;
#                                          OLD_BLOCK_SAMPLE=the earlier build's, if not the same;
#                                          OLD=.device/oldprobes, or
#                                          OLDJIT=.device/jitcheck-old; SASS=1 also writes each
#                                          module's SASS to $OUT/sass: ptxas -arch=sm_90, cuobjdump)
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
T=${JITCHECK:-$PWD/.device/jitcheck}
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
PROBES="launch_latency sm_load warp_occupancy block_sched"
new=empty old=empty
for p in $PROBES; do
	new=$new,device/$p
	if [ -n "${OLDJIT:-}" ]; then
		old=$old,device/$p
	else
		old=$old,$(realpath "${OLD:-.device/oldprobes}")/$p.bpf.o
	fi
done
# The compiler-written kernels of the PTX corpus too (CORPUS= leaves them out).
corpus=${CORPUS-devrt/ptx/testdata/corpus}
corpus=${corpus:+-corpus $corpus}
mkdir -p "$OUT"
for run in $(seq "${RUNS:-2}"); do
	W=$(mktemp -d /tmp/jitab.XXXX)
	"$T" bench -out "$W/new" -levels warp -probes "$new" $corpus ${BLOCK_SAMPLE:+-block-sample "$BLOCK_SAMPLE"} > /dev/null || exit 2
	ob=${OLD_BLOCK_SAMPLE-${BLOCK_SAMPLE:-}}
	"${OLDJIT:-$T}" bench -out "$W/old" -levels warp -probes "$old" $corpus ${ob:+-block-sample "$ob"} > /dev/null || exit 2
	# One benchmark of both: the old build's modules renamed old_<probe>.
	"$PY" - "$W" <<'PY' || exit 2
import json, os, shutil, sys
w = sys.argv[1]
os.makedirs(f"{w}/ab")
old, new = (json.load(open(f"{w}/{d}/bench.json")) for d in ("old", "new"))
out = []
for v in old["variants"]:
    src = f"{w}/old/{v['ptx']}"
    if v["probe"]:
        v = dict(v, name=v["name"].replace("+", "+old_", 1), probe="old_" + v["probe"], ptx="old." + v["ptx"])
    shutil.copy(src, f"{w}/ab/{v['ptx']}")
    out.append(v)
for v in new["variants"]:
    if v["probe"]:
        shutil.copy(f"{w}/new/{v['ptx']}", f"{w}/ab/{v['ptx']}")
        out.append(v)
old["variants"] = out
json.dump(old, open(f"{w}/ab/bench.json", "w"), indent=1)
PY
	if [ "${SASS:-0}" = 1 ] && [ "$run" = 1 ]; then
		mkdir -p "$OUT/sass"
		for f in "$W"/ab/*.ptx; do
			b=$(basename "${f%.ptx}")
			/usr/local/cuda/bin/ptxas -arch=sm_90 "$f" -o "$W/$b.cubin" &&
				/usr/local/cuda/bin/cuobjdump -sass "$W/$b.cubin" > "$OUT/sass/$b.sass"
		done
	fi
	(cd bench/device && ROUNDS=${ROUNDS:-21} "$PY" jit_bench.py "$W/ab") > "$OUT/jit_probes_ab.$run.txt" 2>&1 || {
		tail "$OUT/jit_probes_ab.$run.txt"; exit 1; }
	# What the new build's block_sched and sm_load saw in one launch of the
	# imbalanced kernel (jit_bench.py kept their regions): with sampling,
	# exactly the blocks devrt/ptx picks, each of its weight.
	if [ "$run" = 1 ] && ls "$W"/ab/report.*.bin > /dev/null 2>&1; then
		"$T" report -dir "$W/ab" || exit 1
	fi
done
"$PY" - "$OUT" "${RUNS:-2}" empty $PROBES <<'PY'
import re, sys
out, runs, probes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ratio = {}
for run in range(1, runs + 1):
    for line in open(f"{out}/jit_probes_ab.{run}.txt"):
        m = re.match(r"(\w+)\+(\w+)/warp(?:,\S+)?\s+[\d.]+\s+([\d.]+)", line)
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
