#!/bin/bash
# Issue 7's GPU verification in one device command: the JIT's instruction-
# class check (jit_check), the PTX rewriter's corpus check (ptx_check), the
# probes' overhead benchmark (jit_bench), devrt's injection check (inject)
# and the full collector path (probes: probes_check.sh), each bounded so
# that the chosen STEPS fit one 10-minute command. Build first, where Go is:
#   CGO_ENABLED=0 go build -o .device/jitcheck ./devrt/jit/cmd/jitcheck
#   CGO_ENABLED=0 go build -o .device/ptxtool ./devrt/ptx/cmd/ptxtool
#   make -C devrt OUT=$(pwd)/.device/inject/devrt
#   make -C testdata/fakecuda OUT=$(pwd)/.device/inject/fakecuda
#   CGO_ENABLED=0 go test -c -o .device/inject/devrttest.test ./devrt/devrttest/
#   make build && xz -c bin/otelcol-gpu > .device/otelcol-gpu.xz
#   make -C devrt OUT=$(pwd)/.device/probes/devrt
# then on the GPU machine: STEPS="jit_check jit_bench" bench/device/probes_gpu.sh
# Logs in $OUT/<step>.log; a summary on stdout.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
STEPS=${STEPS:-"jit_check ptx_check jit_bench inject probes"}
step() { # name seconds command...
	local n=$1 s=$2
	shift 2
	local t0=$SECONDS
	timeout "$s" "$@" >"$OUT/$n.log" 2>&1
	echo "== $n rc=$? $((SECONDS - t0))s"
}
for s in $STEPS; do
	case $s in
	jit_check) step jit_check 150 env JITCHECK=.device/jitcheck bash bench/device/jit_check.sh ;;
	ptx_check) step ptx_check 170 env PTXTOOL=.device/ptxtool bash bench/device/ptx_check.sh ;;
	jit_bench) step jit_bench 160 env JITCHECK=.device/jitcheck bash bench/device/jit_bench.sh ;;
	inject) step inject 100 bash bench/device/inject_check.sh ;;
	probes)
		if [ ! -x .device/probes/otelcol-gpu ] && [ -e .device/otelcol-gpu.xz ]; then
			xz -dc .device/otelcol-gpu.xz >.device/probes/otelcol-gpu && chmod +x .device/probes/otelcol-gpu
		fi
		# Its many exports stay on the machine; the report comes back.
		step probes "${PROBES_TIMEOUT:-400}" env OUT=/tmp/gx-probes bash bench/device/probes_check.sh
		cp /tmp/gx-probes/probes_check.txt "$OUT/" 2>/dev/null ;;
	esac
done
for s in $STEPS; do
	[ -e "$OUT/$s.log" ] || continue
	echo "=== $s"
	case $s in
	jit_bench) head -60 "$OUT/$s.log" ;;
	probes) grep -v "^PASS" "$OUT/$s.log" | tail -60 ;;
	*) grep -E "passed|SUMMARY|FAIL|^--- |^ok|PASS: Test|     " "$OUT/$s.log" | head -30 ;;
	esac
done
