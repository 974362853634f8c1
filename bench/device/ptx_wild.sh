#!/bin/bash
# devrt/ptx on PTX from the wild: every PTX image NVIDIA ships inside the CUDA
# libraries of the PyTorch install on a GPU machine (cuBLAS/cuBLASLt,
# cuSOLVER, cuSPARSE, cuDNN, NCCL, cuRAND, cuSPARSELt), extracted with
# cuobjdump. For each file: ptxtool check (parse, write, re-parse, equal tree
# and tokens); then, on a sample spread over the libraries, ptxtool
# instrument (every kernel, every site kind, generic and atomics, with the
# counting probe) and ptxas on the result. Prints counts, the distinct
# failure messages, the rewriter's refusal reasons, and a SUMMARY line.
#
#   CGO_ENABLED=0 go build -o build/ptxtool ./devrt/ptx/cmd/ptxtool   (where Go is)
#   bench/device/ptx_wild.sh [SAMPLE=300]                               (on the GPU machine)
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-/tmp/out}
T=$ROOT/${PTXTOOL:-build/ptxtool}
SAMPLE=${1:-300}
W=$(mktemp -d /tmp/ptxwild.XXXX)
trap 'rm -rf "$W"' EXIT
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$OUT"
SP=$(ls -d /opt/torch/.venv/lib/python3*/site-packages)
{
for lib in "$SP"/nvidia/*/lib/*.so* "$SP"/torch/lib/*.so; do
	[ -n "$(cuobjdump -lptx "$lib" 2>/dev/null | head -1)" ] || continue
	d=$W/$(basename "$lib"); mkdir -p "$d"
	(cd "$d" && cuobjdump -xptx all "$lib" >/dev/null 2>&1)
	echo "extracted $(ls "$d" | wc -l) PTX files, $(du -sm "$d" | cut -f1) MB from $(basename "$lib")"
done
find "$W" -name '*.ptx' | sort > "$W/files"
echo "files: $(wc -l < "$W/files"), $(cat $(cat "$W/files") | wc -c) bytes"
# round trip, 16 at a time
xargs -P 16 -n 8 "$T" check < "$W/files" 2>/dev/null | sort > "$W/check"
ok=$(grep -c '^ok ' "$W/check"); bad=$(grep -c '^FAIL ' "$W/check")
echo "round trip: $ok ok, $bad failed"
grep '^FAIL ' "$W/check" | sed -E 's/^FAIL [^:]+: //; s/ptx:[0-9]+:[0-9]+: //' | sort | uniq -c | sort -rn | head -20
# the source line of the first failures
grep '^FAIL ' "$W/check" | head -8 | while read -r _ f rest; do
	pos=$(echo "$rest" | grep -oE 'ptx:[0-9]+:[0-9]+' | head -1); l=$(echo "$pos" | cut -d: -f2)
	[ -n "$l" ] && echo "  ${f%:} $pos: $(sed -n "${l}p" "${f%:}" | cut -c1-200)"
done
# instrument + ptxas on a sample of the files that round-trip
grep '^ok ' "$W/check" | awk '{print $2}' > "$W/good"
n=$(wc -l < "$W/good"); step=$(( n > SAMPLE ? n / SAMPLE : 1 ))
awk -v s=$step 'NR % s == 0' "$W/good" | head -$SAMPLE > "$W/sample"
P=__gpuext_probe_0
inst() {
	f=$1; o=$f.inst
	if ! "$T" instrument -fragment "$ROOT/devrt/ptx/testdata/probe_count.ptx" -entry $P -exit $P -load $P -store $P -generic -atomics -o "$o" "$f" 2>"$o.log"; then
		echo "INSTFAIL $(tail -1 "$o.log")"; return
	fi
	grep '^refused' "$o.log" | sed -E 's/^refused [^:]+: /REFUSED /; s/ at [0-9]+:[0-9]+//'
	arch=$(awk '/^\.target/ {gsub(",", "", $2); print $2; exit}' "$f")
	msg() { grep -m1 -iE 'error|fatal' "$1" | sed -E 's#^ptxas [^,]*, line [0-9]+; ##'; }
	if timeout 300 ptxas -arch=$arch -o /dev/null "$o" >"$o.ptxas" 2>&1; then echo "PTXAS_OK $(grep -c '^instrumented' "$o.log")"
	elif ! timeout 300 ptxas -arch=$arch -o /dev/null "$f" >"$f.ptxas" 2>&1; then echo "ORIGINAL_REJECTED_TOO $arch $(msg "$f.ptxas")"
	else echo "PTXAS_FAIL $arch $(msg "$o.ptxas")"; fi
}
export -f inst; export T ROOT P
xargs -P 16 -I{} bash -c 'inst {}' < "$W/sample" > "$W/inst"
echo "instrument+ptxas on $(wc -l < "$W/sample") files: $(grep -c '^PTXAS_OK' "$W/inst") accepted by ptxas ($(awk '/^PTXAS_OK/ {s += $2} END {print s+0}' "$W/inst") kernels instrumented), $(grep -c '^PTXAS_FAIL' "$W/inst") rejected, $(grep -c '^ORIGINAL_REJECTED_TOO' "$W/inst") whose original this ptxas rejects too, $(grep -c '^INSTFAIL' "$W/inst") rewriter errors"
grep -E '^(PTXAS_FAIL|ORIGINAL_REJECTED_TOO|INSTFAIL|REFUSED)' "$W/inst" | sort | uniq -c | sort -rn | head -20
fails=$(( bad + $(grep -c '^PTXAS_FAIL' "$W/inst") + $(grep -c '^INSTFAIL' "$W/inst") ))
echo "SUMMARY ptx_wild: $ok files round-trip, $bad do not; $(grep -c '^PTXAS_OK' "$W/inst") instrumented files accepted by ptxas; $fails failures"
} 2>&1 | tee "$OUT/ptx_wild.txt"
grep -q "SUMMARY ptx_wild: .* 0 failures" "$OUT/ptx_wild.txt"
