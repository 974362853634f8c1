#!/usr/bin/env bash
# Builds of devrt compared on the GPU machine: the in-process A/B of
# devrt/ab_overhead.py (each configuration against "pass" in the same
# process) run in PROCS processes of each build, alternating, so that a
# build's figure is the spread of several processes (one process's paired
# median moves by about a point from one process to the next: where its
# memory lands, which cores it shares).
#
#   bash bench/device/devrt_ab_builds.sh .device/devrt-old .device/devrt [DIR...]
#
# Each DIR holds libgpuext-devrt.so and ringdump (make -C devrt OUT=...).
# Last, per build, each configuration over the processes: the median of
# their paired medians, the range, and the median in ns of the first
# configuration's time.
# The consumer is the last build's ringdump, draining every 10 ms.
set -u
builds=("$@")
b=${builds[$((${#builds[@]} - 1))]}
PY=${PY:-/opt/torch/.venv/bin/python}
export CUBLAS_WORKSPACE_CONFIG=:4096:8 GPUEXT_DEVRT_DIR=/dev/shm
rm -f /dev/shm/gpuext-devrt-*.ring
taskset -c 12 $b/ringdump --follow /dev/shm 10 > /dev/null &
consumer=$!
trap 'kill $consumer 2>/dev/null' EXIT
# First, with .device/fakecuda: ns per cuLaunchKernel in a loop (1M calls,
# a ring that holds 10 ms of them), the same through the runtime's
# cudaLaunchKernel (rt: PyTorch's path, the driver launch folded into the
# runtime's record) and with cold caches (4 MiB written between two calls,
# a driver that takes 2 us; 20,000 calls), calls reported, timing off;
# interleaved, 5 rounds.
if [ -d .device/fakecuda ]; then
	for r in 1 2 3 4 5; do
		for mode in warm rt cold; do
			for cfg in none "${builds[@]}"; do
				env=(FAKECUDA_COUNT=0 LD_LIBRARY_PATH=.device/fakecuda GPUEXT_DEVRT_RING_SLOTS=262144)
				n=1000000
				calls=launch
				[ $mode = rt ] && calls=rtlaunch
				if [ $mode = cold ]; then
					env+=(CALLBENCH_THRASH=4096 FAKECUDA_DELAY_US=2 FAKECUDA_DELAY_SPIN=1)
					n=20000
				fi
				[ $cfg = none ] || env+=(LD_PRELOAD=$PWD/$cfg/libgpuext-devrt.so GPUEXT_DEVRT_SAMPLE=0)
				rm -f /dev/shm/gpuext-devrt-*.ring
				echo "$mode $cfg $(env "${env[@]}" taskset -c 2 .device/fakecuda/callbench $calls $n |
					sed 's/.*ns_per_call":\([0-9.]*\).*/\1/')"
			done
		done
	done | awk '{k=$1" "$2; s[k]=s[k]" "$3} END{for(k in s) print "ns per call,", k ":" s[k]}' | sort | tee $OUT/callbench.txt
fi
for i in $(seq ${PROCS:-4}); do
	for d in "${builds[@]}"; do
		name=$(basename $d)
		LD_PRELOAD=$PWD/$d/libgpuext-devrt.so taskset -c 2-7 $PY bench/device/devrt/ab_overhead.py \
			${LOOP:-launch} ${ROUNDS:-200} ${CONFIGS:-pass on/0 on/32} > $OUT/$name.$i.json 2> $OUT/$name.$i.txt
		echo "$name process $i:" $(sed 's/ *median.*(paired median)//' $OUT/$name.$i.txt | tr -s ' ' | tr '\n' ';')
	done
done
# Over processes: each configuration's paired medians (their median and
# range) and what the median is in ns a launch or step, per build.
$PY - "$OUT" "${PROCS:-4}" "${builds[@]}" <<'PY'
import json, os, statistics, sys
out, procs = sys.argv[1], int(sys.argv[2])
for d in sys.argv[3:]:
    name = os.path.basename(d)
    files = [f"{out}/{name}.{i}.json" for i in range(1, procs + 1)]
    runs = [json.load(open(f)) for f in files if os.path.exists(f) and os.path.getsize(f)]
    if not runs:
        continue
    # each process's paired medians are against its first configuration
    first = next(iter(runs[0]["configs"]))
    base = statistics.median(r["configs"][first]["median"] for r in runs)
    unit = runs[0]["unit"]
    ns = {"us": 1e3, "ms": 1e6}.get(unit.split("/")[0], float("nan"))
    for cfg in runs[0]["configs"]:
        pcts = [r["configs"][cfg]["paired_median_pct"] for r in runs if cfg in r["configs"]]
        med = statistics.median(pcts)
        print(f"{name} over {len(pcts)} processes: {runs[0]['loop']} {cfg} median {med:+.2f}% "
              f"(range {min(pcts):+.2f} to {max(pcts):+.2f}), {med / 100 * base * ns:.0f} ns of {base:.2f} {unit}")
PY
