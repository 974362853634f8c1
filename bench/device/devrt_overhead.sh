#!/usr/bin/env bash
# Wall-time cost of tracing a PyTorch loop, side by side in one run, three
# interleaved rounds on pinned cores (the collector on others):
#   none            no collector
#   collector       the collector running, tracing nothing of the program
#                   (what its own work on the other cores costs the loop)
#   pass            collector as above, the program under devrt turned off
#                   (GPUEXT_DEVRT_DISABLE=1: every call passed through):
#                   what the interposition alone costs
#   uprobes         the collector's uprobes (entry+return on every API)
#   devrt/N         the collector without uprobes, draining the ring of the
#                   program run with LD_PRELOAD=libgpuext-devrt.so, 1 in N
#                   launches timed on the GPU; N=0: timing off
#   both/N          devrt/N with the uprobes attached as well: the kernel
#                   filter skips the process, but each call still takes the
#                   uprobe's breakpoint trap (uprobes are per library inode)
# for a training loop (train_loop.py; TRAIN_MODEL=large for a GPU-bound
# step, train_model.py) and a launch-bound loop (launch_loop.py); LOOPS
# picks; STEPS the training loop's steps per timed pass (5 passes a
# process). Each round runs the configurations in a new random order
# (SEED), and the summary pairs each configuration with the untraced run of
# the same round: the median of those ratios, and their range. Needs
# .device/otelcol-gpu.xz and .device/devrt/.
source "$(dirname "$0")/lib.sh"
lib=$PWD/.device/devrt/libgpuext-devrt.so
CONFIGS=${CONFIGS:-"none uprobes devrt/32 devrt/256 devrt/0 both/32"}
ROUNDS=${ROUNDS:-3}
LOOPS=${LOOPS:-"train launch"}
STEPS=${STEPS:-50}
SEED=${SEED:-1}
export CUBLAS_WORKSPACE_CONFIG=:4096:8
: > $OUT/overhead.jsonl

# run CONFIG LOOP: one run of LOOP (train|launch) under CONFIG.
run() {
	local config=$1 loop=$2 round=$3 sample=0 pre="" col="" cuda=true off=0
	case $config in
	collector) cuda=false ;;
	pass) pre=$lib; cuda=false; off=1 ;;
	devrt/*) sample=${config#devrt/}; pre=$lib; cuda=false ;;
	both/*) sample=${config#both/}; pre=$lib ;;
	esac
	rm -f /dev/shm/gpuext-devrt-*.ring
	if [ "$config" != none ]; then
		CUDA_ENABLED=$cuda DEVRT_SAMPLE=$sample RUN_NAME=${config//\//-}-$loop taskset -c 8-15 $bin --config bench/device/devrt_overhead.yaml > $OUT/collector-${config//\//-}.log 2>&1 &
		col=$!
		wait_ready "$OUT/collector-${config//\//-}.log"
	fi
	local cmd="python3 bench/device/devrt/train_loop.py $STEPS"
	[ "$loop" = launch ] && cmd="python3 bench/device/launch_loop.py 20000"
	GPUEXT_DEVRT_DISABLE=$off LD_PRELOAD=$pre taskset -c 2-7 $cmd |
		python3 -c 'import json,sys; d=json.load(sys.stdin); d["config"], d["loop"], d["round"] = sys.argv[1], sys.argv[2], int(sys.argv[3]); print(json.dumps(d))' "$config" "$loop" "$round" |
		tee -a $OUT/overhead.jsonl
	if [ -n "$col" ]; then
		sleep 1.5
		kill -TERM $col; wait $col
		grep -E "panic|level\":\"error" $OUT/collector-${config//\//-}.log | head -3
	fi
}

for round in $(seq $ROUNDS); do
	for loop in $LOOPS; do
		order=$(python3 -c 'import random,sys; r=random.Random(sys.argv[1]); c=sys.argv[2].split(); r.shuffle(c); print(*c)' "$SEED$round$loop" "$CONFIGS")
		for c in $order; do run $c $loop $round; done
	done
done

python3 - $OUT/overhead.jsonl <<'PY'
import json, statistics, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(list)
loss = collections.defaultdict(set)
for r in rows:
    key = (r["loop"], r["config"])
    by[key].append(r.get("ms_per_step", r.get("us_per_launch")))
    if "loss_hex" in r:
        loss[r["config"]].add(r["loss_hex"])
for loop, unit in (("train", "ms/step"), ("launch", "us/launch")):
    if (loop, "none") not in by:
        continue
    base, base_lo = statistics.median(by[(loop, "none")]), min(by[(loop, "none")])
    print(f"{loop} loop ({unit}, median of {len(by[(loop, 'none')])} rounds, each the median of 5 timed passes)")
    for (l, c), v in by.items():
        if l != loop:
            continue
        m, lo = statistics.median(v), min(v)
        print(f"  {c:12} median {m:9.4f} {100 * (m / base - 1):+6.2f}%  best {lo:9.4f} {100 * (lo / base_lo - 1):+6.2f}%  rounds {', '.join(f'{x:.4f}' for x in v)}")
    # Paired: each run against the untraced run of its round.
    none = {r["round"]: r.get("ms_per_step", r.get("us_per_launch")) for r in rows
            if r["loop"] == loop and r["config"] == "none" and "round" in r}
    for c in dict.fromkeys(r["config"] for r in rows if r["loop"] == loop):
        if c == "none":
            continue
        q = sorted(100 * (r.get("ms_per_step", r.get("us_per_launch")) / none[r["round"]] - 1)
                   for r in rows if r["loop"] == loop and r["config"] == c and r.get("round") in none)
        if q:
            print(f"  {c:12} paired with none: median {statistics.median(q):+6.2f}%  range [{q[0]:+.2f}, {q[-1]:+.2f}]  n={len(q)}")
print("final training loss per config (bits):", {c: sorted(s) for c, s in loss.items()})
print("identical across configs:", len(set().union(*loss.values())) == 1)
PY
for f in $OUT/otel-*.jsonl; do gzip -f "$f"; done
