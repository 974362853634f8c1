#!/usr/bin/env bash
# devrt's cost on PyTorch loops, measured in one process per loop
# (devrt/ab_overhead.py switches devrt's configuration through its own
# control page between passes, no collector), plus what a timestamp costs on
# this machine (devrt/clockbench). Needs .device/devrt/ (make -C devrt
# OUT=$PWD/.device/devrt) and .device/clockbench (cc -O2 -static -o
# .device/clockbench bench/device/devrt/clockbench.c).
set -u
lib=$PWD/.device/devrt/libgpuext-devrt.so
export CUBLAS_WORKSPACE_CONFIG=:4096:8 GPUEXT_DEVRT_DIR=/dev/shm GPUEXT_DEVRT_RING_SLOTS=1048576
PY=${PY:-/opt/torch/.venv/bin/python}
.device/clockbench | tee $OUT/clock.json
nproc; cat /proc/cpuinfo | grep -m1 "model name"
rm -f /dev/shm/gpuext-devrt-*.ring
LD_PRELOAD=$lib taskset -c 2-7 $PY bench/device/devrt/ab_overhead.py launch ${LAUNCH_ROUNDS:-12} \
	${LAUNCH_CONFIGS:-pass on/0 on/32 on/128 on/1 nested/32} | tee $OUT/ab_launch.json
rm -f /dev/shm/gpuext-devrt-*.ring
LD_PRELOAD=$lib taskset -c 2-7 $PY bench/device/devrt/ab_overhead.py train ${TRAIN_ROUNDS:-8} \
	${TRAIN_CONFIGS:-pass on/0 on/32 on/128 nested/32} | tee $OUT/ab_train.json
rm -f /dev/shm/gpuext-devrt-*.ring
