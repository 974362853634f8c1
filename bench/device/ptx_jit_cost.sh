#!/bin/bash
# What the driver's JIT of a patched module costs, with and without the
# kernels' entries for 1-D grids (devrt/ptx Spec.Grid1D): ptxas, the
# compiler the driver's JIT runs, times each module of two directories
# that `jitcheck patch` wrote from the same PTX (median of REPS runs, ms),
# and fails if it refuses one (a module with debug sections, -G or
# -lineinfo, included).
#
# Build where Go is (from the repository root):
#   CGO_ENABLED=0 go build -o .device/jitcheck ./devrt/jit/cmd/jitcheck
#   .device/jitcheck patch -out .device/jitcost/with devrt/ptx/testdata/corpus/*.ptx
#   .device/jitcheck patch -out .device/jitcost/without -no-grid1d devrt/ptx/testdata/corpus/*.ptx
# then on the GPU machine:
#   bash bench/device/ptx_jit_cost.sh .device/jitcost/without .device/jitcost/with
set -u
A=$1 B=$2
CUDA=${CUDA:-/usr/local/cuda}
ARCH=${ARCH:-sm_90}
REPS=${REPS:-5}
T=$(mktemp -d /tmp/jitcost.XXXX)
rc=0
# ms of one ptxas run of $1 (relocatable code, -rdc, compiled with -c), or
# nothing if ptxas refuses it
# (an sm_90a module, as Triton writes for Hopper, for sm_90a)
one() {
	local t0 t1 flags="" arch=$ARCH
	grep -q "^\.extern \.func\|\.weak \.func" "$1" && flags=-c
	grep -q "^\.target ${ARCH}a" "$1" && arch=${ARCH}a
	t0=$(date +%s%N)
	"$CUDA/bin/ptxas" -arch="$arch" $flags "$1" -o "$T/out.cubin" 2> "$T/err" || return 1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '| module | %s ms | %s ms | x |\n| --- | --- | --- | --- |\n' "$(basename "$A")" "$(basename "$B")"
for f in "$A"/*.ptx; do
	n=$(basename "$f")
	ok=1
	for d in "$A" "$B"; do
		ts=""
		for _ in $(seq "$REPS"); do
			t=$(one "$d/$n") || { echo "FAIL ptxas $d/$n: $(head -c 400 "$T/err")"; ok=0; rc=1; break; }
			ts="$ts $t"
		done
		[ $ok = 1 ] || break
		eval "m_$([ "$d" = "$A" ] && echo a || echo b)=$(echo $ts | tr ' ' '\n' | med)"
	done
	[ $ok = 1 ] && awk -v n="$n" -v a="$m_a" -v b="$m_b" 'BEGIN {printf "| %s | %d | %d | %.2f |\n", n, a, b, b / (a > 0 ? a : 1)}'
done
rm -rf "$T"
exit $rc
