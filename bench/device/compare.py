"""Compares what the collector recorded (OTLP JSON lines from the file
exporter) with what the workload itself reports (torch_workload.py's JSON)
and prints the comparison; also writes it as JSON.

usage: compare.py OTEL_JSONL WORKLOAD_JSON OUT_JSON [LOOPS_JSONL]
"""
import collections, json, statistics, sys

otel_path, wl_path, out_path = sys.argv[1:4]
loops = [json.loads(l) for p in sys.argv[4:] for l in open(p) if l.strip()]
wl = json.loads(open(wl_path).read().strip().splitlines()[-1])
pid = wl["pid"]
DRIVER_LAUNCH = {"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel"}

spans, metrics, self_metrics = [], {}, {}
for line in open(otel_path):
    d = json.loads(line)
    for rs in d.get("resourceSpans", []):
        res = {a["key"]: list(a["value"].values())[0] for a in rs["resource"].get("attributes", [])}
        if int(res.get("process.pid", -1)) != pid:
            continue
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                attrs = {a["key"]: list(a["value"].values())[0] for a in s.get("attributes", [])}
                spans.append((s["name"], int(s["startTimeUnixNano"]), int(s["endTimeUnixNano"]), attrs,
                              s.get("status", {}).get("code", 0)))
    for rm in d.get("resourceMetrics", []):
        res = {a["key"]: list(a["value"].values())[0] for a in rm["resource"].get("attributes", [])}
        target = metrics if int(res.get("process.pid", -1)) == pid else self_metrics if "process.pid" not in res else None
        if target is None:
            continue
        if target is metrics:
            metrics["resource"] = res
        for sm in rm["scopeMetrics"]:
            for m in sm["metrics"]:
                for dp in m.get("sum", {}).get("dataPoints", []):
                    key = m["name"] + "".join(f"|{a['key']}={list(a['value'].values())[0]}" for a in dp.get("attributes", []))
                    target[key] = int(dp.get("asInt", 0))

def window(phase):
    t0, t1 = wl[phase]["t0"], wl[phase]["t1"]
    return [s for s in spans if t0 <= s[1] and s[2] <= t1]

out = {"pid": pid, "device": wl["device"], "torch_version": wl["torch_version"], "triton_version": wl["triton_version"],
       "spans_total": len(spans), "resource": metrics.get("resource")}

# Matmul loop: the profiler's kernels vs our driver-level launches.
ref = wl["matmul"]["kernels"]
w = window("matmul")
ours = collections.Counter(s[3].get("gpu.cuda.kernel.name", "?") for s in w if s[0] in DRIVER_LAUNCH)
out["matmul"] = {
    "iterations": wl["matmul"]["n"],
    "profiler_kernels": sum(ref.values()),
    "collector_driver_launches": sum(ours.values()),
    "collector_runtime_launches": sum(1 for s in w if s[0] == "cudaLaunchKernel"),
    "profiler_names": ref,
    "collector_names": dict(ours),
    "launch_apis": dict(collections.Counter(s[0] for s in w if "Launch" in s[0])),
}

# Triton: every launch, by name.
w = window("triton")
ours = collections.Counter(s[3].get("gpu.cuda.kernel.name", "?") for s in w if s[0] in DRIVER_LAUNCH)
out["triton"] = {
    "launches": wl["triton"]["n"],
    "profiler_kernels": sum(wl["triton"]["kernels"].values()),
    "collector_driver_launches": sum(ours.values()),
    "collector_names": dict(ours),
    "grid_seen": sorted({s[3].get("gpu.cuda.grid") for s in w if s[0] in DRIVER_LAUNCH}),
    "expected_grid": f"{wl['triton']['grid']}x1x1",
}

# Allocations: the caching allocator's segments vs our cuMemAlloc spans up
# to the end of the allocation phase.
allocs = [s for s in spans if s[0] == "cuMemAlloc" and s[2] <= wl["alloc"]["t1"] and s[4] != 2]
out["alloc"] = {
    "torch_segments": wl["alloc"]["segments"],
    "torch_reserved_bytes": wl["alloc"]["reserved_bytes"],
    "collector_cuMemAlloc_calls": len(allocs),
    "collector_cuMemAlloc_bytes": sum(int(s[3].get("gpu.cuda.memory.size", 0)) for s in allocs),
    "collector_outstanding_device_bytes_final": metrics.get("gpu.cuda.memory.outstanding|gpu.cuda.memory.kind=device"),
}
out["errors"] = dict(collections.Counter((s[0], s[3].get("gpu.cuda.result")) for s in spans if s[4] == 2))
out["dropped"] = {k: v for k, v in self_metrics.items() if k.startswith("gpu.ebpf.events.dropped")}
out["received"] = {k: v for k, v in self_metrics.items() if k.startswith("gpu.ebpf.events.received")}
out["api_counts"] = dict(collections.Counter(s[0] for s in spans))
if loops:
    by = collections.defaultdict(list)
    for l in loops:
        by[l["config"]].append(l["us_per_launch"])
    base = statistics.median(by.get("no collector", [float("nan")]))
    out["launch_loop_us"] = [{"config": c, "median": round(statistics.median(v), 3),
                              "runs": [round(x, 3) for x in v],
                              "added_us": round(statistics.median(v) - base, 3)} for c, v in by.items()]
json.dump(out, open(out_path, "w"), indent=1)

m, t, a = out["matmul"], out["triton"], out["alloc"]
print(f"device {out['device']}, torch {out['torch_version']}, triton {out['triton_version']}, pid {pid}, {len(spans)} spans")
print(f"resource: {out['resource']}")
print(f"matmul x{m['iterations']}: profiler saw {m['profiler_kernels']} kernels; collector saw "
      f"{m['collector_driver_launches']} driver launches ({m['collector_runtime_launches']} via cudaLaunchKernel); APIs {m['launch_apis']}")
print(f"  profiler names:  {m['profiler_names']}")
print(f"  collector names: {m['collector_names']}")
print(f"triton x{t['launches']}: profiler {t['profiler_kernels']}, collector {t['collector_driver_launches']} "
      f"{t['collector_names']} grid {t['grid_seen']} (expected {t['expected_grid']})")
print(f"alloc: torch segments {a['torch_segments']} ({a['torch_reserved_bytes']} B); collector cuMemAlloc "
      f"{a['collector_cuMemAlloc_calls']} ({a['collector_cuMemAlloc_bytes']} B); outstanding at end {a['collector_outstanding_device_bytes_final']}")
print(f"failed calls: {out['errors']}")
print(f"dropped: {out['dropped']}  received: {out['received']}")
for l in out.get("launch_loop_us", []):
    print(f"launch loop [{l['config']}]: median {l['median']} us/launch (+{l['added_us']}), runs {l['runs']}")
