#!/usr/bin/env bash
# make demo: the collector traces the fake CUDA driver while its workload runs
# every scenario, then this prints what was recorded. No GPU needed; root is
# (BPF). Full output: build/demo-traces.jsonl and build/demo-metrics.jsonl (OTLP
# JSON) and build/demo-collector.log.
set -euo pipefail
cd "$(dirname "$0")/.."
export FAKECUDA_LIB=$PWD/build/fakecuda/libcuda.so.1 FAKECUDA_RT=$PWD/build/fakecuda/libcudart.so.12
rm -f build/demo-traces.jsonl build/demo-metrics.jsonl
bin/otelcol-gpu --config deploy/config/demo.yaml > build/demo-collector.log 2>&1 &
col=$!
trap 'kill $col 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	grep -q "Everything is ready" build/demo-collector.log && break
	sleep 0.1
done
grep -E "probed CUDA library|unavailable" build/demo-collector.log | sed 's/^/collector: /' || true

echo "workload: running every scenario (launch storm, allocations with a leak, copies, errors, runtime API, cuGetProcAddress)"
LD_LIBRARY_PATH=build/fakecuda build/fakecuda/workload all > build/demo-workload.json
sleep 3 # one more metrics interval and a flush
kill -TERM $col; wait $col || true
trap - EXIT

python3 - <<'PY'
import collections, json
spans = collections.Counter(); kernels = collections.Counter(); errors = collections.Counter()
metrics = {}
for line in (l for f in ("build/demo-traces.jsonl", "build/demo-metrics.jsonl") for l in open(f)):
    d = json.loads(line)
    for rs in d.get("resourceSpans", []):
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                spans[s["name"]] += 1
                attrs = {a["key"]: a["value"] for a in s.get("attributes", [])}
                if "gpu.cuda.kernel.name" in attrs:
                    kernels[attrs["gpu.cuda.kernel.name"]["stringValue"]] += 1
                if s.get("status", {}).get("code") == 2:
                    errors[(s["name"], s["status"]["message"])] += 1
    for rm in d.get("resourceMetrics", []):
        res = {a["key"]: list(a["value"].values())[0] for a in rm["resource"].get("attributes", [])}
        for sm in rm["scopeMetrics"]:
            for m in sm["metrics"]:
                for dp in m.get("sum", {}).get("dataPoints", []):
                    key = (m["name"],) + tuple(sorted((a["key"], list(a["value"].values())[0]) for a in dp.get("attributes", [])))
                    metrics[key] = (int(dp.get("asInt", 0)), res.get("process.executable.name", "receiver"))
print(f"\nspans: {sum(spans.values())} in all")
for name, n in spans.most_common():
    print(f"  {n:6d}  {name}")
print("kernels launched (from span attributes):")
for k, n in kernels.most_common():
    print(f"  {n:6d}  {k}")
print("failed calls:")
for (name, msg), n in errors.most_common():
    print(f"  {n:6d}  {name}: {msg}")
print("metrics (latest cumulative values):")
for key, (v, who) in sorted(metrics.items()):
    if key[0].startswith(("gpu.cuda.memory", "gpu.cuda.launches", "gpu.ebpf")):
        attrs = ", ".join(f"{k}={v}" for k, v in key[1:])
        print(f"  {key[0]}{{{attrs}}} = {v}  [{who}]")
PY
echo
echo "full output: build/demo-traces.jsonl, build/demo-metrics.jsonl, build/demo-collector.log"
