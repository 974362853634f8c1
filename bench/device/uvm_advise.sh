#!/usr/bin/env bash
# The fault pattern and policy advice live, phase by phase: the
# managed-memory program (bench/device/uvm/managed.cu) pauses 3 s after each
# GPU pass (sequential, 64 KiB-strided, random) while the collector samples
# every second; the time series of gpu.uvm.fault.pattern and
# gpu.policy.advice for its pid must name each pass in order. Needs
# .device/otelcol-gpu.xz.
source "$(dirname "$0")/lib.sh"
nvcc -O2 -arch=sm_90 -o /tmp/managed bench/device/uvm/managed.cu 2>&1 | tail -3
rm -f $OUT/otel.jsonl /tmp/uvm-advise-start
$bin --config bench/device/uvm_advise.yaml > $OUT/collector.log 2>&1 &
col=$!
wait_ready "$OUT/collector.log"
/tmp/managed --start-file /tmp/uvm-advise-start --max-mib ${MIB:-64} --random-pages ${RANDOM_PAGES:-2048} --pause-ms 3000 > $OUT/program.json 2>$OUT/program.err &
prog=$!
sleep 2
touch /tmp/uvm-advise-start
wait $prog
sleep 2
kill -TERM $col; wait $col
grep -E "panic|error" $OUT/collector.log | cut -c1-250 | head -5
python3 - "$OUT/otel.jsonl" "$OUT/program.json" <<'PY'
import json, sys
otel, prog_path = sys.argv[1:3]
prog = json.loads(open(prog_path).read().strip().splitlines()[-1])
pid = prog["pid"]
series = []  # (time ns, metric, pattern, advice)
for line in open(otel):
    d = json.loads(line)
    for rm in d.get("resourceMetrics", []):
        res = {a["key"]: list(a["value"].values())[0] for a in rm["resource"].get("attributes", [])}
        if int(res.get("process.pid", -1)) != pid or "hw.id" not in res:
            continue
        for sm in rm["scopeMetrics"]:
            for m in sm["metrics"]:
                if m["name"] not in ("gpu.uvm.fault.pattern", "gpu.policy.advice"):
                    continue
                for dp in m["gauge"]["dataPoints"]:
                    at = {a["key"]: list(a["value"].values())[0] for a in dp.get("attributes", [])}
                    adv = ""
                    if m["name"] == "gpu.policy.advice":
                        adv = f"prefetch={at.get('gpu.policy.prefetch')}"
                        if "gpu.policy.prefetch.stride" in at:
                            adv += f"({at['gpu.policy.prefetch.stride']})"
                        adv += f" eviction={at.get('gpu.policy.eviction')}"
                    series.append((int(dp["timeUnixNano"]), m["name"], at.get("gpu.uvm.pattern"), dp.get("asDouble"), adv))
series.sort()
def changes(name):
    out, last = [], None
    for t, n, pat, conf, adv in series:
        if n == name and pat != last:
            out.append((pat, conf, adv))
            last = pat
    return out
print(f"program: pid {pid}, phases {[p['name'] for p in prog['phases']]}")
for name in ("gpu.uvm.fault.pattern", "gpu.policy.advice"):
    ch = changes(name)
    print(f"{name}: " + " -> ".join(f"{p} ({c:.2f}{', ' + a if a else ''})" for p, c, a in ch))
    seq = [p for p, _, _ in ch]
    want = ["sequential", "strided", "random"]
    ok = [p for p in seq if p in want] == want
    print(f"  names the passes in order: {'yes' if ok else 'NO'}")
PY
gzip -f $OUT/otel.jsonl
