#!/usr/bin/env bash
# devrt's footprint per reported call, counted rather than timed: the
# instructions devrt executes, the distinct instructions among them and the
# 64-byte lines of code they sit in, per function, from callgrind runs of
# callbench on the fake driver (2,000 and 4,000 calls; their difference is
# the calls, without start-up). Timings on a shared machine move by a third
# from one run to the next; these counts do not, and the code lines are what
# a launch-bound program pays for again on every call once its own work has
# pushed devrt out of the instruction cache.
#
#   bash bench/devrt_footprint.sh [LIB] [MODE]
#
# LIB: a libgpuext-devrt.so (default build/devrt's; make -C devrt), MODE:
# callbench's launch (cuLaunchKernel) or rtlaunch (cudaLaunchKernel through
# the fake runtime, PyTorch's path; the default). Needs valgrind and the
# fake driver (make -C testdata/fakecuda).
set -euo pipefail
cd "$(dirname "$0")/.."
lib=$(realpath "${1:-build/devrt/libgpuext-devrt.so}")
mode=${2:-rtlaunch}
fake=build/fakecuda
command -v valgrind >/dev/null || { echo "devrt_footprint: needs valgrind" >&2; exit 1; }
[ -x $fake/callbench ] || { echo "devrt_footprint: make -C testdata/fakecuda first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 2000 4000; do
	mkdir -p "$tmp/ring$n"
	env FAKECUDA_COUNT=0 LD_LIBRARY_PATH=$fake LD_PRELOAD="$lib" \
		GPUEXT_DEVRT_DIR="$tmp/ring$n" GPUEXT_DEVRT_RING_SLOTS=8192 GPUEXT_DEVRT_SAMPLE=0 \
		valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$tmp/cg.$n" \
		$fake/callbench "$mode" $n > "$tmp/log.$n" 2>&1 ||
		{ cat "$tmp/log.$n" >&2; exit 1; }
done
nm -n "$lib" | awk '$2 ~ /^[tT]$/ {print $1, $3}' > "$tmp/syms"
python3 - "$tmp" "$lib" "$mode" <<'PY'
import bisect, collections, os, re, sys
tmp, lib, mode = sys.argv[1:]
name = os.path.basename(lib)

def load(path):
    """Instructions executed per address of lib, from callgrind's
    --dump-instr output (positions "instr line", compressed with +/-/*)."""
    cnt, objs, obj, addr, skip = collections.Counter(), {}, None, 0, False
    for l in open(path):
        l = l.rstrip("\n")
        m = re.match(r"c?ob=\((\d+)\)(?: (.+))?", l)
        if m:
            if m.group(2):
                objs[m.group(1)] = m.group(2)
            if l.startswith("ob="):
                obj = objs.get(m.group(1))
            continue
        if l.startswith("calls="):
            skip = True  # the next line is the call's inclusive cost
            continue
        f = l.split()
        if not f or not re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*)$", f[0]):
            continue
        a = f[0]
        if a.startswith("0x"):
            addr = int(a, 16)
        elif a[0] in "+-":
            addr += int(a)
        if skip:
            skip = False
            continue
        if obj and obj.endswith(name) and len(f) >= 3:
            cnt[addr] += int(f[2])
    return cnt

a, b = load(f"{tmp}/cg.2000"), load(f"{tmp}/cg.4000")
calls = 2000
per = {k: (b[k] - a.get(k, 0)) / calls for k in b}
hot = sorted(k for k, v in per.items() if v >= 0.9)
syms = [(int(x, 16), s) for x, s in (l.split() for l in open(f"{tmp}/syms"))]
starts = [s[0] for s in syms]
fns = collections.defaultdict(list)
for k in hot:
    fns[syms[bisect.bisect_right(starts, k) - 1][1]].append(k)
print(f"{mode}: {sum(per.values()):.0f} instructions a call, {len(hot)} distinct, "
      f"in {len({k >> 6 for k in hot})} lines of code")
for f, ks in sorted(fns.items(), key=lambda x: -sum(per[k] for k in x[1])):
    print(f"  {f:<24} {sum(per[k] for k in ks):5.0f} executed {len(ks):4d} distinct")
PY
