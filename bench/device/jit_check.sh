#!/bin/bash
# GPU check of devrt/jit (no Go needed on the GPU machine): every case of
# devrt/jit/check (one per eBPF instruction class, map kind and shipped
# probe, at warp level and per thread) is compiled to a PTX module with a
# harness kernel, run on the GPU by jit_check.py, and compared with what
# devrt/jit's interpreter computes for the same threads: every thread's r0
# exactly, the shared region exactly (or as a set where the GPU orders
# freely), plus property checks of the shipped probes. The cases run twice:
# with the region in host memory mapped to the device (as devrt maps it)
# and in device memory.
#
# Build the tool first, where Go is:
#   CGO_ENABLED=0 go build -o build/jitcheck ./devrt/jit/cmd/jitcheck
# then on the GPU machine, from the repository root:
#   bench/device/jit_check.sh          (JITCHECK=path overrides build/jitcheck)
# Output: PASS/FAIL per case and a summary line per region kind, also in
# $OUT/jit_check.txt; exit 1 on any failure.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
T=${JITCHECK:-build/jitcheck}
if [ ! -x "$T" ] && command -v go >/dev/null; then
	CGO_ENABLED=0 go build -o build/jitcheck ./devrt/jit/cmd/jitcheck && T=build/jitcheck
fi
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
W=$(mktemp -d /tmp/jitcheck.XXXX)
mkdir -p "$OUT"
rc=0
{
	"$T" gen -out "$W" || exit 2
	for region in mapped device; do
		echo "== region: $region"
		REGION=$region "$PY" bench/device/jit_check.py "$W" "$W/$region"
		"$T" compare -dir "$W" -results "$W/$region" || rc=1
	done
	echo "SUMMARY jit_check: $([ $rc = 0 ] && echo PASS || echo FAIL)"
	exit $rc
} 2>&1 | tee "$OUT/jit_check.txt"
exit "${PIPESTATUS[0]}"
