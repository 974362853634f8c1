"""Analysis of bench/device/multigpu_check.sh: what the device probes saw of
a program that launches the same kernels on every GPU of one process.

  multigpu_check.py analyze OTEL_JSONL RUN_JSON BASE_JSON [RING_JSONL]

PASS/FAIL lines, exit 1 on any FAIL:
  - outputs identical to the uninstrumented run (FNV-1a of each output);
  - per GPU (hw.id = its UUID): one "<kernel> blocks" span per launch with
    every block, for each kernel (mg_axpy: launched by the CUfunction of
    that GPU's context, a handle of its own per GPU);
  - per GPU: gpu.kernel.sm.blocks over that GPU's SMs sums to the blocks
    launched there, and gpu.kernel.sm.imbalance of mg_imbalanced > 1;
  - per GPU and kernel: one launch latency per launch, on that GPU's
    resource, with a mean between 0 and 10 ms (paired per process, the
    interleaved launches of two GPUs went with each other's blocks);
and, with RING_JSONL (ringdump of the diagnosis run), what devrt did with
each module load (inject records) and which launch calls it saw.
"""
import collections
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from probes_check import otel, value  # noqa: E402

# mg_axpy is launched by the CUfunction of each GPU's context.
KERNELS = ("mg_vec_add", "mg_imbalanced", "mg_axpy")


def analyze(otel_path, run_path, base_path, ring_path=None):
    run, base = json.load(open(run_path)), json.load(open(base_path))
    ok = True

    def check(cond, what):
        nonlocal ok
        ok &= bool(cond)
        print(("PASS " if cond else "FAIL ") + what)

    for g, b in zip(run["devices"], base["devices"]):
        for k in KERNELS:
            check(g[k]["fnv"] == b[k]["fnv"], f"GPU {g['index']} {k}: output identical to the plain run")
    fns = [g.get("axpy_function") for g in run["devices"]]
    check(len(set(fns)) == len(fns), f"a CUfunction of mg_axpy per GPU: {fns}")
    spans, points = otel(otel_path)
    pid = str(run["pid"])
    mine = [s for s in spans if s["attrs"].get("process.pid", pid) in (pid, int(pid))]
    by = collections.Counter((s["attrs"].get("hw.id", "?"), s["name"]) for s in mine if s["name"].endswith(" blocks"))
    print("INFO block spans by (hw.id, name): " + json.dumps({f"{h} {n}": c for (h, n), c in sorted(by.items())}))
    for g in run["devices"]:
        for k in KERNELS:
            sp = [s for s in mine if s["name"] == k + " blocks" and s["attrs"].get("hw.id") == g["uuid"]]
            full = [s for s in sp if int(s["attrs"].get("gpu.kernel.blocks", 0)) == g[k]["blocks"]]
            check(len(sp) == g[k]["launches"] and len(full) == len(sp),
                  f"GPU {g['index']} {k}: {len(sp)} block spans of {g[k]['launches']} launches, "
                  f"{len(full)} with all {g[k]['blocks']} blocks")
    smb = [p for p in points if p["name"] == "gpu.kernel.sm.blocks" and str(p["attrs"].get("process.pid")) == pid]
    last = {}
    for p in smb:
        key = (p["attrs"].get("hw.id"), p["attrs"].get("gpu.sm.id"))
        if key not in last or int(p["timeUnixNano"]) >= int(last[key]["timeUnixNano"]):
            last[key] = p
    for g in run["devices"]:
        want = sum(g[k]["launches"] * g[k]["blocks"] for k in KERNELS)
        got = sum(value(p) for (h, _), p in last.items() if h == g["uuid"])
        sms = len([1 for (h, _) in last if h == g["uuid"]])
        check(got == want, f"GPU {g['index']}: gpu.kernel.sm.blocks {got:.0f} over {sms} SMs, {want} launched")
        imb = [p for p in points if p["name"] == "gpu.kernel.sm.imbalance" and p["attrs"].get("hw.id") == g["uuid"]
               and str(p["attrs"].get("process.pid")) == pid]
        check(imb and value(imb[-1]) > 1, f"GPU {g['index']}: SM imbalance {value(imb[-1]) if imb else 'none'}")
    for g in run["devices"]:
        for k in KERNELS:
            lat = [p for p in points if p["name"] == "gpu.kernel.launch.latency" and p["attrs"].get("hw.id") == g["uuid"]
                   and p["attrs"].get("gpu.cuda.kernel.name") == k and str(p["attrs"].get("process.pid")) == pid]
            if not lat:
                check(False, f"GPU {g['index']} {k}: no launch latency")
                continue
            h = max(lat, key=lambda p: int(p["timeUnixNano"]))
            n = int(h["count"])
            mean = float(h["sum"]) / max(1, n) * 1e6
            print(f"INFO GPU {g['index']} {k}: launch latency buckets {h.get('bucketCounts')}")
            check(n == g[k]["launches"] and 0 < mean < 10000,
                  f"GPU {g['index']} {k}: {n} launch latencies of {g[k]['launches']} launches, mean {mean:.1f} µs")
    if ring_path:
        inj = collections.Counter()
        calls = collections.Counter()
        for line in open(ring_path):
            r = json.loads(line)
            if r["kind"] == "inject":
                inj[(r["api"], r["flags"], r["outcome"], r["reason"], r["cuda_result"], r["text"])] += 1
            elif r["kind"] in ("call", "named"):
                calls[r["api"]] += 1
        print("INFO inject records (api, flags, outcome, reason, cuda_result, text): " +
              "; ".join(f"{k}: {c}" for k, c in sorted(inj.items())))
        print("INFO call records by api: " + json.dumps(dict(sorted(calls.items()))))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "analyze":
        analyze(*sys.argv[2:6])
    else:
        sys.exit("usage: multigpu_check.py analyze OTEL_JSONL RUN_JSON BASE_JSON [RING_JSONL]")
