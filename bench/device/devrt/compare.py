"""Compares devrt's records with the workload's own references; part of
bench/device/devrt.sh.

usage: compare.py OUT

Reads from OUT: plain.json, sample1.json, default.json (workload.py's line
without devrt, with every launch timed, at the default sampling), their
devrt records (NAME.records.jsonl, from ringdump --follow) and loops.jsonl
(launch_loop.py's lines, with a "config"). Prints, and writes as
OUT/devrt_comparison.json:
  - whether every run computed the same bits (loss, parameters, Triton);
  - per Triton launch, devrt's GPU time against the torch.cuda.Event pair
    around it; for the profiled training steps, devrt's kernel times and
    start offsets against torch.profiler's;
  - what devrt saw: records by API, timed work, drops, the ring's state;
  - wall time: the training step and the launch-bound loop, without
    tracing and under devrt.
"""
import collections, json, os, statistics, sys

out_dir = sys.argv[1]
# enum gpuext_api (bpf/include/gpuext_abi.h)
API = {1: "cuLaunchKernel", 2: "cuLaunchKernelEx", 3: "cuLaunchCooperativeKernel", 4: "cuGraphLaunch",
       5: "cudaLaunchKernel", 6: "cudaGraphLaunch", 10: "cuMemAlloc", 11: "cuMemAllocManaged",
       12: "cuMemAllocAsync", 13: "cuMemAllocHost", 14: "cuMemHostAlloc", 15: "cuMemFree", 16: "cuMemFreeAsync",
       17: "cuMemFreeHost", 18: "cuMemPrefetchAsync", 19: "cuMemAdvise", 20: "cuMemPrefetchAsync_v2",
       21: "cuMemAdvise_v2", 30: "cuMemcpy", 31: "cuMemcpyAsync", 32: "cuMemcpyHtoD", 33: "cuMemcpyDtoH",
       34: "cuMemcpyDtoD", 35: "cuMemcpyHtoDAsync", 36: "cuMemcpyDtoHAsync", 37: "cuMemcpyDtoDAsync",
       38: "cuMemcpyPeer", 39: "cuMemcpyPeerAsync", 40: "cuMemcpy2D", 41: "cuMemcpy2DAsync",
       42: "cuMemcpy2DUnaligned", 43: "cuMemcpy3D", 44: "cuMemcpy3DAsync", 50: "cuMemsetD8", 51: "cuMemsetD16",
       52: "cuMemsetD32", 53: "cuMemsetD8Async", 54: "cuMemsetD16Async", 55: "cuMemsetD32Async",
       56: "cuMemsetD2D8", 57: "cuMemsetD2D16", 58: "cuMemsetD2D32", 59: "cuMemsetD2D8Async",
       60: "cuMemsetD2D16Async", 61: "cuMemsetD2D32Async", 70: "cuCtxSynchronize", 71: "cuStreamSynchronize",
       72: "cuEventSynchronize", 73: "cuStreamWaitEvent", 80: "cuCtxCreate", 81: "cuDevicePrimaryCtxRetain",
       82: "cuCtxDestroy", 83: "cuModuleLoadData", 84: "cuModuleLoadDataEx", 85: "cuModuleLoadFatBinary",
       86: "cuLibraryLoadData", 87: "cuModuleGetFunction", 88: "cuLibraryGetKernel", 89: "cuKernelGetFunction",
       90: "__cudaRegisterFunction", 91: "cuCtxCreate_v3", 92: "cuCtxCreate_v4",
       93: "cuModuleLoad", 94: "cuLibraryLoadFromFile"}
LAUNCHES = {1, 2, 3, 4, 5, 6}
STATES = {1: "active", 2: "disabled", 3: "closed"}


def load(name):
    path = os.path.join(out_dir, name)
    if not os.path.exists(path):
        return None
    lines = [l for l in open(path) if l.strip()]
    return json.loads(lines[-1]) if lines else None


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def summary(diffs):
    """Median and p90 of absolute differences (ns), median signed."""
    if not diffs:
        return {"n": 0}
    a = [abs(d) for d in diffs]
    return {"n": len(diffs), "median_abs_ns": statistics.median(a), "p90_abs_ns": pct(a, 0.9),
            "median_signed_ns": statistics.median(diffs)}


class Records:
    """One run's devrt records, for the workload's process."""

    def __init__(self, name, pid):
        self.calls, self.execs, self.header = [], [], None
        path = os.path.join(out_dir, name + ".records.jsonl")
        rings = {}
        for line in open(path) if os.path.exists(path) else []:
            r = json.loads(line)
            if r["kind"] == "header":
                rings[r["ring"]] = r
                continue
            if r["pid"] != pid:
                continue
            (self.execs if r["kind"] == "gpu_exec" else self.calls).append(r)
        self.header = next((h for h in rings.values() if h["pid"] == pid), None)
        self.by_corr = {c["corr"]: c for c in self.calls}
        # Names of launched functions: driver lookups, then host stubs.
        fn, kern, self.stub = {}, {}, {}
        for c in self.calls:
            if c["api"] == 87 and c["result"] == 0:
                fn[c["out"]] = c["name"]
            elif c["api"] == 88 and c["result"] == 0:
                kern[c["out"]] = c["name"]
            elif c["api"] == 90:
                self.stub[c["args"][1]] = c["name"]
        for c in self.calls:
            if c["api"] == 89 and c["result"] == 0 and c["args"][1] in kern:
                fn[c["out"]] = kern[c["args"][1]]
        self.fn = fn

    def name(self, handle):
        return self.fn.get(handle) or self.stub.get(handle) or hex(handle)

    @staticmethod
    def handle(call):
        return call["args"][1] if call["api"] == 2 else call["args"][0]


def triton_vs_references(wl, recs):
    """devrt's time of each timed Triton launch against CUPTI's (the
    profiler) and against the event pair the workload put around it."""
    funcs = {h for h, n in recs.fn.items() if "add_kernel" in n}
    res = []
    for run in wl["triton"]:
        launches = sorted((c for c in recs.calls if c["api"] in LAUNCHES and Records.handle(c) in funcs
                           and run["t0"] <= c["start"] <= run["t1"]), key=lambda c: c["start"])
        index = {c["corr"]: i for i, c in enumerate(launches)}
        prof, events = run.get("profiler_ns", []), [ms * 1e6 for ms in run["ref_ms"]]
        vs_prof, vs_events = [], []
        for x in recs.execs:
            i = index.get(x["corr"])
            if i is None:
                continue
            d = x["gpu_end"] - x["gpu_start"]
            if i < len(prof):
                vs_prof.append(d - prof[i])
            if i < len(events):
                vs_events.append(d - events[i])
        res.append({"size": run["n"], "launches": len(events), "devrt_saw": len(launches), "timed": len(vs_prof or vs_events),
                    "profiler_median_ns": statistics.median(prof) if prof else None,
                    "events_median_ns": statistics.median(events),
                    "vs_profiler": summary(vs_prof), "vs_events": summary(vs_events)})
    return res


def training_vs_profiler(wl, recs):
    """The profiled steps: devrt's kernels against the profiler's, in order."""
    p = wl["profiled"]
    ours = sorted((x for x in recs.execs if x["api"] in LAUNCHES and p["t0"] <= x["call_start"] <= p["t1"]),
                  key=lambda x: x["gpu_start"])
    ref = p["kernels"]
    out = {"profiler_kernels": len(ref), "devrt_timed": len(ours)}
    if not ours or len(ours) != len(ref):
        # Sampled: which kernel a record is cannot be told by its place.
        out["matched"] = False
        return out
    n = min(len(ours), len(ref))
    out["duration"] = summary([(ours[i]["gpu_end"] - ours[i]["gpu_start"]) - ref[i]["dur_ns"] for i in range(n)])
    # Start offsets from the first kernel: how well devrt maps GPU times
    # onto the host clock over the window.
    out["start_offset"] = summary([(ours[i]["gpu_start"] - ours[0]["gpu_start"]) - (ref[i]["ts_ns"] - ref[0]["ts_ns"])
                                   for i in range(n)])
    top = collections.Counter(recs.name(x["handle"]) for x in ours)
    out["top_kernels"] = top.most_common(5)
    return out


def coverage(recs):
    by_api = collections.Counter(API.get(c["api"], str(c["api"])) for c in recs.calls)
    h = recs.header or {}
    named = sum(1 for x in recs.execs if not recs.name(x["handle"]).startswith("0x"))
    return {"records_by_api": dict(by_api.most_common(12)), "calls": len(recs.calls), "timed": len(recs.execs),
            "timed_with_kernel_name": named,
            # GPUEXT_XF_CLAMPED: the anchor put the start before the call
            "timed_clamped": sum(1 for x in recs.execs if x.get("flags", 0) & 1),
            "state": STATES.get(h.get("state"), h.get("state")), "drops": h.get("drops"),
            "records_in_header": h.get("records"), "devrt_driver_calls": {}}


runs = {k: load(k + ".json") for k in ("plain", "sample1", "default")}
result = {"runs": {}}
plain = runs["plain"]
if not plain:
    sys.exit("compare.py: no plain.json in " + out_dir)
result["device"], result["torch"], result["triton"] = plain["device"], plain["torch_version"], plain["triton_version"]
print(f"device {plain['device']}, torch {plain['torch_version']}, triton {plain['triton_version']}")

for name in ("sample1", "default"):
    wl = runs[name]
    if not wl:
        print(f"{name}: no output (the workload failed under devrt?)")
        result["runs"][name] = None
        continue
    recs = Records(name, wl["pid"])
    r = {
        "bit_identical": {k: wl[k] == plain[k] for k in ("loss_hash", "params_hash", "triton_hash")},
        "ms_per_step": {"plain": plain["train"]["ms_per_step"], "devrt": wl["train"]["ms_per_step"]},
        "triton": triton_vs_references(wl, recs),
        "training_vs_profiler": training_vs_profiler(wl, recs),
        "coverage": coverage(recs) if recs.header else None,
    }
    for f in os.listdir(out_dir):  # devrt's stats file, named after its ring
        if f.startswith(f"gpuext-devrt-{wl['pid']}-") and f.endswith(".stats.json") and r["coverage"]:
            r["coverage"]["devrt_driver_calls"] = json.load(open(os.path.join(out_dir, f)))
    result["runs"][name] = r
    print(f"\n== devrt, sample {wl['sample'] or 'default (32)'}")
    print("bit-identical to the run without devrt:", r["bit_identical"])
    print(f"training step: {r['ms_per_step']['plain']:.3f} ms without devrt, {r['ms_per_step']['devrt']:.3f} ms with")
    for t in r["triton"]:
        print(f"Triton add, n={t['size']}: devrt saw {t['devrt_saw']}/{t['launches']} launches, timed {t['timed']};"
              f" kernel median: profiler {(t['profiler_median_ns'] or float('nan')) / 1e3:.2f} µs,"
              f" events {t['events_median_ns'] / 1e3:.2f} µs")
        for ref in ("vs_profiler", "vs_events"):
            v = t[ref]
            if v["n"]:
                print(f"    devrt {ref.replace('_', ' ')}: median {v['median_signed_ns']:+.0f} ns,"
                      f" median |d| {v['median_abs_ns']:.0f} ns, p90 |d| {v['p90_abs_ns']:.0f} ns")
    tp = r["training_vs_profiler"]
    print(f"profiled training steps: profiler {tp['profiler_kernels']} kernels, devrt timed {tp['devrt_timed']}"
          + ("" if "duration" in tp else " (sampled: not matched kernel by kernel)"))
    for k in ("duration", "start_offset"):
        if k in tp:
            s = tp[k]
            print(f"  devrt - profiler, {k}: n={s['n']} median {s['median_signed_ns']:+.0f} ns,"
                  f" median |d| {s['median_abs_ns']:.0f} ns, p90 |d| {s['p90_abs_ns']:.0f} ns")
    if r["coverage"]:
        c = r["coverage"]
        print(f"records: {c['calls']} calls, {c['timed']} timed ({c['timed_with_kernel_name']} with a kernel name,"
              f" {c['timed_clamped']} clamped to their call's start);"
              f" ring {c['state']}, drops {c['drops']}")
        print("  by API:", c["records_by_api"])

loops = [json.loads(l) for l in open(os.path.join(out_dir, "loops.jsonl"))] if os.path.exists(
    os.path.join(out_dir, "loops.jsonl")) else []
by = collections.defaultdict(list)
for l in loops:
    by[l["config"]].append(l["us_per_launch"])
if by:
    base = statistics.median(by.get("no tracing", [float("nan")]))
    print("\n== launch-bound loop (median of rounds, µs per launch)")
    result["loop"] = {}
    for cfg, xs in by.items():
        m = statistics.median(xs)
        result["loop"][cfg] = {"us_per_launch": m, "rounds": xs, "overhead_ns": (m - base) * 1e3}
        print(f"  {cfg:28s} {m:.3f} µs  ({(m - base) * 1e3:+.0f} ns, {100 * (m / base - 1):+.1f}%)")

json.dump(result, open(os.path.join(out_dir, "devrt_comparison.json"), "w"), indent=1)
