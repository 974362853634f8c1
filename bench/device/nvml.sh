#!/usr/bin/env bash
# The NVML source on a real GPU, in one command (README, "On a GPU"):
#   1. the collector (bench/device/nvml.yaml) scrapes every second while
#      nvidia-smi logs every 500 ms and a PyTorch matmul load runs;
#   2. a CUDA program faults on a bad pointer: the driver reports Xid 31, which
#      must arrive as a log record (tracepoint and NVML event, one record);
#   3. nvml_compare.py sets the collector's figures beside nvidia-smi's and
#      checks that the per-process figures name the workload's pid;
#   4. BenchmarkScrapeNVML times one scrape against the real library.
# Expects .device/otelcol-gpu.xz (scripts/device-prepare.sh); writes to $OUT.
source "$(dirname "$0")/lib.sh"
nvcc -o /tmp/xid_trigger bench/device/xid_trigger.cu 2>&1 | tail -3

rm -f $OUT/otel.jsonl
$bin --config bench/device/nvml.yaml > $OUT/collector.log 2>&1 &
col=$!
wait_ready "$OUT/collector.log"
grep -E "unavailable|NVML|Xid" $OUT/collector.log | cut -c1-300

echo "== 1. load + nvidia-smi"
bash bench/device/nvml/capture.sh $OUT/run 20

echo "== 2. Xid"
/tmp/xid_trigger | tee $OUT/xid_trigger.txt
sleep 3
kill -TERM $col; wait $col
if grep -E "^panic:|fatal error:" $OUT/collector.log; then echo "COLLECTOR CRASHED"; fi

echo "== 3. comparison"
python3 bench/device/nvml/nvml_compare.py $OUT/otel.jsonl $OUT/run/smi.csv $OUT/run/apps.csv \
	--pid "$(cat $OUT/run/workload.pid)" | tee $OUT/comparison.txt
python3 - "$OUT/otel.jsonl" "$(head -1 $OUT/xid_trigger.txt)" <<'PY'
import json, sys
path, pid = sys.argv[1], sys.argv[2]
n = 0
for line in open(path):
    d = json.loads(line)
    for rl in d.get("resourceLogs", []):
        res = {a["key"]: list(a["value"].values())[0] for a in rl["resource"].get("attributes", [])}
        for sl in rl["scopeLogs"]:
            for r in sl["logRecords"]:
                attrs = {a["key"]: list(a["value"].values())[0] for a in r.get("attributes", [])}
                n += 1
                print("log:", r.get("severityText"), r.get("body", {}).get("stringValue"), attrs,
                      {k: v for k, v in res.items() if k in ("hw.id", "process.pid", "process.executable.name")})
print(f"{n} log records; the faulting program was pid {pid}")
PY
echo "== 4. cost of one scrape on this GPU"
(cd receiver/gpuebpfreceiver/internal/nvml && ../../../../.device/nvml.test -test.run XXX -test.bench ScrapeNVML -test.benchtime 20x -test.v 2>&1 | grep -E "Benchmark|SKIP") | tee $OUT/scrape-bench.txt
gzip -f $OUT/otel.jsonl
ls -la $OUT $OUT/run
