#!/usr/bin/env bash
# devrt's cost, measured three ways on the GPU machine:
#  1. what a timestamp costs there (devrt/clockbench.c);
#  2. ns per cuLaunchKernel on the fake driver (testdata/fakecuda's
#     callbench): no GPU, just devrt's own path on that CPU;
#  3. PyTorch loops (a training loop, a launch-bound loop), each in one
#     process that switches devrt's configuration through its own control
#     page between short passes (devrt/ab_overhead.py): paired, so the
#     machine's drift cancels; and what devrt recorded per training step, by
#     API.
# Needs .device/devrt (make -C devrt OUT=$PWD/.device/devrt), .device/fakecuda
# (make -C testdata/fakecuda OUT=$PWD/.device/fakecuda) and .device/clockbench
# (cc -O2 -static -o .device/clockbench bench/device/devrt/clockbench.c).
#
# DEVRT (.device/devrt) is the build measured; CONSUMER the ring's consumer
# (default: ringdump draining every 10 ms, as the collector drains every
# poll_interval).
set -u
dir=$PWD/${DEVRT:-.device/devrt}
lib=$dir/libgpuext-devrt.so
fake=$PWD/.device/fakecuda
export CUBLAS_WORKSPACE_CONFIG=:4096:8 GPUEXT_DEVRT_DIR=/dev/shm
PY=${PY:-/opt/torch/.venv/bin/python}
# A consumer on a core of its own drains every ring at intervals, as the
# collector would: rings stay at their default size.
rm -f /dev/shm/gpuext-devrt-*.ring
taskset -c 12 ${CONSUMER:-$dir/ringdump --follow /dev/shm 10} > /dev/null &
consumer=$!
trap 'kill $consumer 2>/dev/null' EXIT
.device/clockbench | tee $OUT/clock.json

# In a loop, a ring that holds 10 ms of calls (with cold caches, and one
# build against another: devrt_ab_builds.sh).
echo "== ns per cuLaunchKernel, fake driver (best of 3)"
for round in 1 2 3; do
	for cfg in none pass vdso tsc tsc-32; do
		env=(FAKECUDA_COUNT=0 LD_LIBRARY_PATH=$fake GPUEXT_DEVRT_RING_SLOTS=262144)
		case $cfg in
		pass) env+=(LD_PRELOAD=$lib GPUEXT_DEVRT_CLASSES=none) ;;
		vdso) env+=(LD_PRELOAD=$lib GPUEXT_DEVRT_SAMPLE=0 GPUEXT_DEVRT_CLOCK=vdso) ;;
		tsc) env+=(LD_PRELOAD=$lib GPUEXT_DEVRT_SAMPLE=0) ;;
		tsc-32) env+=(LD_PRELOAD=$lib GPUEXT_DEVRT_SAMPLE=32) ;;
		esac
		rm -f /dev/shm/gpuext-devrt-*.ring
		echo "$cfg $(env "${env[@]}" taskset -c 2 $fake/callbench launch 1000000)"
	done
done | tee $OUT/callbench.txt
$PY - $OUT/callbench.txt <<'PY'
import json, sys, collections
best = collections.defaultdict(lambda: 1e9)
for line in open(sys.argv[1]):
    cfg, js = line.split(" ", 1)
    best[cfg] = min(best[cfg], json.loads(js)["ns_per_call"])
print("best ns/call:", dict(best))
PY

rm -f /dev/shm/gpuext-devrt-*.ring
# on/32/50000 is devrt's default: 1 in 32 launches timed, no two of a
# thread's timed launches closer than 50 ms (on/32/10000 and on/32/1000:
# the defaults before).
LD_PRELOAD=$lib taskset -c 2-7 $PY bench/device/devrt/ab_overhead.py launch ${LAUNCH_ROUNDS:-300} \
	${LAUNCH_CONFIGS:-pass pass2 on/0 on/32/50000 on/32/10000 on/32/1000 on/32 on/1} > $OUT/ab_launch.json
rm -f /dev/shm/gpuext-devrt-*.ring
AB_STEPS=${AB_STEPS:-10} LD_PRELOAD=$lib taskset -c 2-7 $PY bench/device/devrt/ab_overhead.py train ${TRAIN_ROUNDS:-200} \
	${TRAIN_CONFIGS:-pass pass2 on/0 on/32/50000 on/32/10000 on/32/1000} > $OUT/ab_train.json
# A GPU-bound training step (train_model.py's large model): what a real job sees.
rm -f /dev/shm/gpuext-devrt-*.ring
TRAIN_MODEL=large AB_STEPS=${AB_LARGE_STEPS:-2} LD_PRELOAD=$lib taskset -c 2-7 $PY bench/device/devrt/ab_overhead.py train \
	${TRAIN_LARGE_ROUNDS:-40} ${TRAIN_LARGE_CONFIGS:-pass pass2 on/0 on/32/50000 on/1} > $OUT/ab_train_large.json
kill $consumer; wait $consumer 2>/dev/null
# What one training pass records, by API: a last run with no consumer.
rm -f /dev/shm/gpuext-devrt-*.ring
AB_STEPS=5 GPUEXT_DEVRT_RING_SLOTS=1048576 LD_PRELOAD=$lib taskset -c 2-7 $PY bench/device/devrt/ab_overhead.py train 1 on/32 > /dev/null
$dir/ringdump /dev/shm/gpuext-devrt-*.ring | $PY -c '
import json, sys, collections
c = collections.Counter()
for l in sys.stdin:
    r = json.loads(l)
    c[(r["kind"], r.get("api"))] += 1
print("one training run (50 warm-up + 6 steps), records by kind and api:", sorted(c.items(), key=lambda x: -x[1])[:25])' | tee $OUT/train_records.txt
rm -f /dev/shm/gpuext-devrt-*.ring
