#!/usr/bin/env bash
# The uvm source of the collector on a real GPU: the managed-memory program
# (bench/device/uvm/managed.cu, 64 MiB: sequential, 64 KiB-strided and
# random GPU passes with CPU touches between) runs once under uvmcapture, the
# reference (the driver's own counters and every event), and once under the
# collector; the collector's gpu.uvm.* figures for its pid are set beside
# the reference's. Needs .device/otelcol-gpu.xz and .device/uvmcapture.
source "$(dirname "$0")/lib.sh"
nvcc -O2 -arch=sm_90 -o /tmp/managed bench/device/uvm/managed.cu 2>&1 | tail -3
args="--max-mib 64 --random-pages 2048"

echo "== reference: uvmcapture"
rm -f /tmp/uvm-start
.device/uvmcapture --out $OUT --name ref --wait-file /tmp/uvm-start -- /tmp/managed --start-file /tmp/uvm-start $args > $OUT/ref.txt 2>&1
grep -E "GPU faults|CPU faults|bytes|migrat|pages faulted" $OUT/ref.txt | head -20

echo "== collector"
rm -f $OUT/otel.jsonl /tmp/uvm-start2
$bin --config bench/device/uvm.yaml > $OUT/collector.log 2>&1 &
col=$!
wait_ready "$OUT/collector.log"
/tmp/managed --start-file /tmp/uvm-start2 $args > $OUT/program.json 2>$OUT/program.err &
prog=$!
sleep 2 # the program's first CUDA calls start the tracker; then let it go
touch /tmp/uvm-start2
wait $prog
sleep 3
kill -TERM $col; wait $col
grep -E "uvm|UVM|panic" $OUT/collector.log | cut -c1-250 | head -5
python3 - "$OUT/otel.jsonl" "$OUT/program.json" "$OUT/ref.json" <<'PY'
import json, sys
otel, prog_path, ref_path = sys.argv[1:4]
prog = json.loads(open(prog_path).read().strip().splitlines()[-1])
ref = json.load(open(ref_path))
pid = prog["pid"]
last = {}
for line in open(otel):
    d = json.loads(line)
    for rm in d.get("resourceMetrics", []):
        res = {a["key"]: list(a["value"].values())[0] for a in rm["resource"].get("attributes", [])}
        if int(res.get("process.pid", -1)) != pid:
            continue
        for sm in rm["scopeMetrics"]:
            for m in sm["metrics"]:
                if not m["name"].startswith("gpu.uvm"):
                    continue
                pts = (m.get("sum") or m.get("gauge") or {}).get("dataPoints", [])
                for dp in pts:
                    attrs = tuple(sorted((a["key"].split(".")[-1], list(a["value"].values())[0]) for a in dp.get("attributes", [])))
                    v = dp.get("asInt", dp.get("asDouble"))
                    last[(m["name"], attrs, res.get("hw.id", "-")[:12])] = v
                for dp in (m.get("histogram") or {}).get("dataPoints", []):
                    last[(m["name"], (("stat", "count"),), res.get("hw.id", "-")[:12])] = dp.get("count")
def total(name, **want):
    return sum(int(float(v)) for (n, attrs, _), v in last.items()
               if n == name and all(dict(attrs).get(k) == w for k, w in want.items()))
c = ref["counters"]
print(f"program: pid {pid}, {prog['bytes']} bytes, phases {[p['name'] for p in prog['phases']]}")
print(f"{'':32} {'collector':>12} {'reference':>12}")
print(f"{'GPU faults':32} {total('gpu.uvm.faults', processor='gpu'):>12} {c['gpu_page_faults']:>12}")
print(f"{'CPU faults':32} {total('gpu.uvm.faults', processor='cpu'):>12} {c['cpu_page_faults']:>12}")
print(f"{'migrated htod (bytes)':32} {total('gpu.uvm.migrated', direction='htod'):>12} {c['bytes_htd']:>12}")
print(f"{'migrated dtoh (bytes)':32} {total('gpu.uvm.migrated', direction='dtoh'):>12} {c['bytes_dth']:>12}")
print(f"{'buffer (bytes)':32} {prog['bytes']:>12}")
for (n, attrs, hw), v in sorted(last.items()):
    print(f"  {n}{dict(attrs)} [{hw}] = {v}")
PY
gzip -f $OUT/otel.jsonl
