#!/bin/bash
# GPU check and figures of devrt's device probe injection (no Go needed on
# the GPU machine): TestInjectOnGPU (devrt/devrttest/inject_gpu_test.go)
# runs bench/device/inject_check.py through each loading path (PTX,
# cuModuleLoadDataEx, a fat binary, a library) under devrt, without a
# collector and with the test Patcher answering from the test's own server:
# same results, the patched twin ran (it marks the shared region from the
# GPU), what the patch cost (ask, the driver's JIT, total) on a miss and a
# cache hit. Then the fake-driver benchmarks on this machine's quiet CPUs:
# what the redirect adds to cuLaunchKernel, and the patch cost of each PTX
# of the corpus without JIT.
#
# Build first, where Go is (from the repository root):
#   make -C devrt OUT=$(pwd)/.device/inject/devrt
#   make -C testdata/fakecuda OUT=$(pwd)/.device/inject/fakecuda
#   CGO_ENABLED=0 go test -c -o .device/inject/devrttest.test ./devrt/devrttest/
# then on the GPU machine, from the repository root:
#   bench/device/inject_check.sh
# Output: the test's log and the benchmarks, also in $OUT/inject_check.txt;
# exit 1 on failure.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
ROOT=$(pwd)
PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
export DEVRT=$ROOT/.device/inject/devrt FAKECUDA=$ROOT/.device/inject/fakecuda GPUEXT_INJECT_GPU_PYTHON=$PY
status=0
{
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	cd devrt/devrttest
	"$ROOT/.device/inject/devrttest.test" -test.run 'TestInject' -test.v -test.count=1 || status=1
	"$ROOT/.device/inject/devrttest.test" -test.run XXX -test.bench 'BenchmarkInjectLaunch' \
		-test.benchtime 3000000x -test.count ${COUNT:-5} || status=1
	"$ROOT/.device/inject/devrttest.test" -test.run XXX -test.bench 'BenchmarkInjectModulePatch' \
		-test.benchtime 5x -test.count 1 || status=1
} 2>&1 | tee "$OUT/inject_check.txt"
exit $status
