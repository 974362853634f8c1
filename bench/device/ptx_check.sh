#!/bin/bash
# GPU check of devrt/ptx (no Go needed on the GPU machine): for every file of
# the PTX corpus, ptxtool writes it back (round trip) and instruments every
# kernel at entry, exits, global+generic loads/stores and atomics with the
# counting probe devrt/ptx/testdata/probe_count.ptx, twice: calling it
# (inst) and with its body copied at entry and exits (-inline: inl), and
# once more with the entry probe in block 0 only (fb: -probe
# FUNC:entry_block0, the site behind a test of the block index); ptxas
# must accept them all (registers used, original vs instrumented, from
# ptxas -v); then bench/device/ptx/ptx_run.py runs original and
# instrumented kernels side by side and checks identical outputs and exact
# probe counts, for both forms. The rewriter's golden files
# (devrt/ptx/testdata/golden) go through ptxas too. The shipped probes are
# patched inlined, as the collector does.
#
# Build the tool first, where Go is:
#   CGO_ENABLED=0 go build -o build/ptxtool ./devrt/ptx/cmd/ptxtool
# then on the GPU machine, from the repository root:
#   bench/device/ptx_check.sh        (PTXTOOL=path overrides build/ptxtool)
# Output: PASS/FAIL lines, a SUMMARY line, $OUT/ptx_check.txt; exit 1 on failure.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
T=${PTXTOOL:-build/ptxtool}
W=$(mktemp -d /tmp/ptxcheck.XXXX)
trap 'rm -rf "$W"' EXIT
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$OUT"
P=__gpuext_probe_0
fails=0 passes=0
{
ptxas --version | tail -1
for f in devrt/ptx/testdata/corpus/*.ptx; do
	b=$(basename "$f" .ptx)
	arch=sm_90; grep -q "sm_90a" "$f" && arch=sm_90a
	cp "$f" "$W/$b.ptx"
	if ! $T write -o "$W/$b.rt.ptx" "$f" || ! $T instrument -fragment devrt/ptx/testdata/probe_count.ptx \
		-entry $P -exit $P -load $P -store $P -generic -atomics -report "$W/$b.report.json" -o "$W/$b.inst.ptx" "$f" 2>"$W/$b.inst.log" ||
		! $T instrument -inline -fragment devrt/ptx/testdata/probe_count.ptx \
		-entry $P -exit $P -load $P -store $P -generic -atomics -report "$W/$b.inl.report.json" -o "$W/$b.inl.ptx" "$f" 2>"$W/$b.inl.log" ||
		! $T instrument -inline -fragment devrt/ptx/testdata/probe_count.ptx \
		-probe $P:entry_block0 -exit $P -o "$W/$b.fb.ptx" "$f" 2>"$W/$b.fb.log"; then
		echo "FAIL ptxtool $b: $(tail -3 "$W/$b.inst.log" "$W/$b.inl.log" "$W/$b.fb.log")"; fails=$((fails+1)); continue
	fi
	grep -h "called, not inlined" "$W/$b.inl.log" | sort | uniq -c | sed "s/^/note $b: /"
	for v in ptx rt.ptx inst.ptx inl.ptx fb.ptx; do # fb: an entry probe of block 0 only
		if ptxas -v -arch=$arch -o /dev/null "$W/$b.$v" >"$W/$b.$v.ptxas" 2>&1; then
			echo "PASS ptxas $b.$v"; passes=$((passes+1))
		else
			echo "FAIL ptxas $b.$v: $(grep -m3 -i -E "error|fatal" "$W/$b.$v.ptxas")"; fails=$((fails+1))
		fi
	done
	# registers per kernel: original -> instrumented
	regs() { awk "/Compiling entry function/ {split(\$0, a, \"'\"); k = a[2]} /Used [0-9]+ registers/ && k != \"\" {for (i = 1; i <= NF; i++) if (\$i == \"Used\") print k, \$(i+1); k = \"\"}" "$1" | sort; }
	join <(regs "$W/$b.ptx.ptxas") <(regs "$W/$b.inst.ptx.ptxas") | join - <(regs "$W/$b.inl.ptx.ptxas") |
		awk -v b=$b '{printf "regs %s %s: %s -> %s (calls), %s (inlined)\n", b, $1, $2, $3, $4}'
done
# the rewriter's golden files, inputs and outputs
for f in devrt/ptx/testdata/golden/*.ptx; do
	arch=sm_90; grep -q "sm_90a" "$f" && arch=sm_90a
	if ptxas -arch=$arch -o /dev/null "$f" >"$W/golden.log" 2>&1; then
		echo "PASS ptxas golden/$(basename "$f")"; passes=$((passes+1))
	else
		echo "FAIL ptxas golden/$(basename "$f"): $(head -3 "$W/golden.log")"; fails=$((fails+1))
	fi
done
for b in nvcc_kernels:exact nvcc_kernels_lineinfo:exact nvcc_kernels_rdc:exact nvcc_kernels_debug:entryexit triton_add:entryexit; do
	n=${b%%:*}
	if $PY bench/device/ptx/ptx_run.py "$W/$n.ptx" "$W/$n.inst.ptx" "$W/$n.report.json" ${b#*:}; then passes=$((passes+1)); else fails=$((fails+1)); fi
	if $PY bench/device/ptx/ptx_run.py "$W/$n.ptx" "$W/$n.inl.ptx" "$W/$n.inl.report.json" ${b#*:}; then passes=$((passes+1)); else fails=$((fails+1)); fi
done
# the probes devrt/jit ships (its golden fragments of bpf/device), entry
# probe_0 and exit probe_1, in the nvcc kernels and Triton's add: ptxas,
# identical outputs, the probes wrote their maps, and kernel time
for frag in devrt/jit/testdata/golden/device_*.warp.ptx; do
	[ -f "$frag" ] || continue
	p=$(basename "$frag" .warp.ptx)
	size=$(head -1 "$frag" | grep -oE 'shared region [0-9]+' | grep -oE '[0-9]+$')
	ex=""; grep -q '__gpuext_probe_1(' "$frag" && ex="-exit __gpuext_probe_1"
	# an entry probe that returns a value is carried to the exit (entry_ret)
	grep -q '__gx_ret) __gpuext_probe_0(' "$frag" && ex="$ex -carry __gpuext_probe_1=__gpuext_probe_0"
	for n in nvcc_kernels triton_add; do
		arch=sm_90; grep -q "sm_90a" "$W/$n.ptx" && arch=sm_90a
		o=$W/$p.$n
		if ! $T instrument -inline -fragment "$frag" -entry __gpuext_probe_0 $ex -report "$o.report.json" -o "$o.inst.ptx" "$W/$n.ptx" 2>"$o.log"; then
			echo "FAIL ptxtool $p.$n: $(tail -3 "$o.log")"; fails=$((fails+1)); continue
		fi
		if ptxas -v -arch=$arch -o /dev/null "$o.inst.ptx" >"$o.ptxas" 2>&1; then
			echo "PASS ptxas $p.$n.inst"; passes=$((passes+1))
		else
			echo "FAIL ptxas $p.$n.inst: $(grep -m3 -i -E "error|fatal" "$o.ptxas")"; fails=$((fails+1)); continue
		fi
		join <(regs "$W/$n.ptx.ptxas") <(regs "$o.ptxas") | awk -v b=$p.$n '{printf "regs %s %s: %s -> %s\n", b, $1, $2, $3}'
		if $PY bench/device/ptx/ptx_run.py "$W/$n.ptx" "$o.inst.ptx" "$o.report.json" outputs "$size"; then passes=$((passes+1)); else fails=$((fails+1)); fi
	done
done
echo "SUMMARY ptx_check: $passes passed, $fails failed"
} 2>&1 | tee "$OUT/ptx_check.txt"
grep -q "SUMMARY ptx_check: .* 0 failed" "$OUT/ptx_check.txt"
