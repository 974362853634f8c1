#!/usr/bin/env bash
# The receiver's last readings at shutdown on a real GPU (receiver README,
# "At shutdown nothing already recorded is lost"). The collector scrapes
# NVML and UVM every 60 s (shutdown_final.yaml) and is stopped after a few
# seconds, before any periodic scrape: every NVML and UVM figure in its
# output is from Shutdown's final emission. Checks, stamped after SIGTERM:
#   - hw.energy for every GPU nvidia-smi lists (NVML's last scrape);
#   - gpu.uvm.faults of the managed-memory program (bench/device/uvm/
#     managed.cu, ended before the signal), greater than 0: its tracker was
#     read a last time and the process reported one last time;
#   - nothing of either before the signal, and the collector exits 0.
# Needs .device/otelcol-gpu.xz (scripts/device-prepare.sh).
source "$(dirname "$0")/lib.sh"
nvcc -O2 -arch=sm_90 -o /tmp/managed bench/device/uvm/managed.cu 2>&1 | tail -3
rm -f $OUT/otel.jsonl /tmp/uvm-start3
$bin --config bench/device/shutdown_final.yaml > $OUT/collector.log 2>&1 &
col=$!
wait_ready "$OUT/collector.log"
/tmp/managed --start-file /tmp/uvm-start3 --max-mib 64 --random-pages 2048 > $OUT/program.json 2>$OUT/program.err &
prog=$!
sleep 2 # its first CUDA calls start the tracker
touch /tmp/uvm-start3
wait $prog
sleep 1
term=$(date +%s%N)
kill -TERM $col; wait $col
echo "collector exit: $?"
grep -E "panic|error|UVM|NVML" $OUT/collector.log | cut -c1-250 | head -8
python3 - "$OUT/otel.jsonl" "$OUT/program.json" "$term" "$(nvidia-smi -L | wc -l)" <<'PY'
import json, sys
otel, prog_path, term, ngpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pid = json.loads(open(prog_path).read().strip().splitlines()[-1])["pid"]
energy, faults, early = {}, 0, []
for line in open(otel):
    d = json.loads(line)
    for rm in d.get("resourceMetrics", []):
        res = {a["key"]: list(a["value"].values())[0] for a in rm["resource"].get("attributes", [])}
        for sm in rm["scopeMetrics"]:
            for m in sm["metrics"]:
                name = m["name"]
                for dp in (m.get("sum") or m.get("gauge") or m.get("histogram") or {}).get("dataPoints", []):
                    ts = int(dp["timeUnixNano"])
                    if (name.startswith("gpu.uvm") or name.startswith("hw.")) and ts < term:
                        early.append((name, ts))
                    attrs = {a["key"]: list(a["value"].values())[0] for a in dp.get("attributes", [])}
                    if name == "hw.energy":
                        energy[res.get("hw.id")] = float(dp.get("asDouble", dp.get("asInt", 0)))
                    if name == "gpu.uvm.faults" and int(res.get("process.pid", -1)) == pid and attrs.get("gpu.uvm.processor") == "gpu":
                        faults += int(float(dp.get("asInt", dp.get("asDouble", 0))))
ok = True
def check(c, what):
    global ok
    print(("PASS " if c else "FAIL ") + what)
    ok = ok and c
check(len(energy) == ngpu and all(v > 0 for v in energy.values()), f"hw.energy of {len(energy)} of {ngpu} GPUs after SIGTERM: {energy}")
check(faults > 0, f"gpu.uvm.faults of the managed program (pid {pid}) after SIGTERM: {faults}")
check(not early, f"no NVML or UVM figure before SIGTERM ({len(early)}: {early[:3]})")
sys.exit(0 if ok else 1)
PY
echo "SUMMARY shutdown_final rc=$?"
