#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch training under the device probes, for bench/device/probes_torch.sh.

run: train_model.py's step (TRAIN_MODEL, default small), its model compiled
    with torch.compile when MODE=compile (inductor's Triton kernels, whose
    cubins PyTorch's static launcher loads by path, cuModuleLoad: devrt
    patches the PTX Triton cached beside each) or run eagerly (MODE=eager:
    PyTorch's and cuBLAS's own kernels); WARMUP steps, then STEPS steps each
    synchronised and timed. Prints one JSON line: every step's loss as exact
    bits, the SHA-256 of the final parameters, the median ms per step, the
    seconds to the end of the first step (compile, module loads, patching).
analyze OTEL RUN BASE NAME: checks a run against the uninstrumented one
    (BASE) and, unless OTEL is -, the collector's OTLP file: identical
    losses and parameters, module loads by status (none failed); compiled,
    at least one patched and the "<kernel> blocks" spans, launch latencies,
    SM load and occupancy of the Triton kernels (eager: reported only, as
    PyTorch's own kernels are SASS-only); prints PASS/FAIL/INFO lines.
table DIR: the step times of every run-*.json in DIR against run-base."""
import glob
import hashlib
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run():
    import torch
    sys.path.insert(0, os.path.join(HERE, "devrt"))
    from train_model import make_step

    steps, warm = int(os.environ.get("STEPS", 40)), int(os.environ.get("WARMUP", 5))
    mode = os.environ.get("MODE", "compile")
    if mode == "compile":
        # Dropout's masks from the same generator calls as eager: inductor's
        # own random numbers depend on what compiling drew before them,
        # which differs between a fresh compile and a cached one.
        import torch._inductor.config as inductor_config
        inductor_config.fallback_random = True
    t0 = time.perf_counter()
    step, model = make_step(compile=mode == "compile", with_model=True)
    losses, times = [], []
    first = None
    for i in range(warm + steps):
        t = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        if first is None:
            first = time.perf_counter() - t0
        if i >= warm:
            times.append((time.perf_counter() - t) * 1e3)
        losses.append(loss.float().item().hex())
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().float().cpu().numpy().tobytes())
    print(json.dumps({"pid": os.getpid(), "mode": mode, "model": os.environ.get("TRAIN_MODEL", "small"),
                      "torch": torch.__version__, "losses": losses, "params_sha256": h.hexdigest(),
                      "ms_per_step": statistics.median(times), "ms_min": min(times),
                      "first_step_s": first}))


def analyze(otel_path, run_path, base_path, name):
    sys.path.insert(0, HERE)
    from probes_check import Checks, last_point, otel, value

    r, base = json.load(open(run_path)), json.load(open(base_path))
    check = Checks(name)

    def last(metric, **attrs):
        return last_point(points, metric, **attrs)

    same = [i for i, (a, b) in enumerate(zip(base["losses"], r["losses"])) if a != b]
    check(len(r["losses"]) == len(base["losses"]) and not same,
          f"{len(r['losses'])} losses bit-identical to the uninstrumented run's" +
          (f" (first difference at step {same[0]}: {base['losses'][same[0]]} vs {r['losses'][same[0]]})" if same else ""))
    check(r["params_sha256"] == base["params_sha256"], "final parameters identical")
    if otel_path == "-":  # devrt without a collector: nothing exported
        sys.exit(0 if check.ok else 1)
    spans, points = otel(otel_path)

    status = {}
    for p in points:
        if p["name"] == "gpu.devrt.modules":
            status[p["attrs"].get("gpu.devrt.module.status")] = int(value(p))
    print(f"INFO {name}: module loads by status {status}")
    if r["mode"] == "compile":
        check(status.get("patched", 0) >= 1, f"{status.get('patched', 0)} modules patched (inductor's Triton kernels)")
    check(status.get("failed", 0) == 0, f"no module load fell back on a failure ({status.get('failed', 0)})")
    broken = last("gpu.devrt.probes.regions", state="broken")
    check(broken is not None and value(broken) == 0, "no probe region broken")
    drops = {p["attrs"].get("gpu.devrt.probe.map"): int(value(p)) for p in points if p["name"] == "gpu.devrt.probes.dropped"}
    print(f"INFO {name}: probe records dropped by map {drops}")

    pid = str(r["pid"])
    blocks = [s for s in spans if s["name"].endswith(" blocks") and s["attrs"].get("process.pid") == pid]
    kernels = {}
    for s in blocks:
        kernels.setdefault(s["name"][:-len(" blocks")], []).append(s)
    bs = os.environ.get("BLOCK_SAMPLE", "1")  # n, or lK: blocks_per_launch K
    n, per = (1, int(bs[1:])) if bs.startswith("l") else (int(bs), 0)
    if r["mode"] != "compile":
        # Eager PyTorch runs its own kernels, which ship as SASS only; what
        # devrt could patch (a cuBLAS fat binary's PTX) need not run.
        print(f"INFO {name}: {len(blocks)} block spans of {len(kernels)} kernels "
              f"(eager: PyTorch's kernels are SASS-only, {status.get('not_instrumentable', 0)} modules)")
    else:
        check(len(kernels) > 0, f"{len(blocks)} block spans of {len(kernels)} kernels")
        bad = [s for s in blocks if int(s["attrs"].get("gpu.kernel.blocks", 0)) < 1 or
               int(s["endTimeUnixNano"]) < int(s["startTimeUnixNano"])]
        check(not bad, f"every block span has blocks and ends after it starts ({len(bad)} do not" +
              (f", as {bad[0]['name'][:50]}: {bad[0]['startTimeUnixNano']}..{bad[0]['endTimeUnixNano']}, "
               f"{bad[0]['attrs'].get('gpu.kernel.blocks')} blocks)" if bad else ")"))
        marks = {int(s["attrs"].get("gpu.kernel.block.sample", 1)) for s in blocks}
        if per:  # by launch: each launch its own power of two
            check(all(m & (m - 1) == 0 and m <= 1 << 16 for m in marks), f"block spans say block sample {sorted(marks)}")
        else:
            check(marks == {max(n, 1)}, f"block spans say block sample {sorted(marks)}")
        top = sorted(kernels.items(), key=lambda kv: -len(kv[1]))[:5]
        for k, ss in top:
            durs = sorted((int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e3 for s in ss)
            nb = sorted(int(s["attrs"].get("gpu.kernel.blocks", 0)) for s in ss)
            print(f"INFO {name}: {k[:60]}: {len(ss)} spans, blocks {nb[0]}..{nb[-1]}, "
                  f"first start to last end median {durs[len(durs) // 2]:.1f} µs")
        lat = [p for p in points if p["name"] == "gpu.kernel.launch.latency" and p["attrs"].get("process.pid") == pid]
        cnt = sum(int(p["count"]) for p in lat)
        check(cnt > 0, f"launch latencies of {len({p['attrs'].get('gpu.cuda.kernel.name') for p in lat})} kernels ({cnt} in the last points)")
        imb = last("gpu.kernel.sm.imbalance", **{"process.pid": pid})
        check(imb is not None and value(imb) >= 1, f"SM imbalance {value(imb) if imb else None}")
        # a sampled block stands for its weight (the largest a span said):
        # an SM's estimate can pass its 64 resident warps by as much
        most = 64 * max([n] + [int(s["attrs"].get("gpu.kernel.block.sample", 1)) for s in blocks])
        occ = [p for p in points if p["name"] == "gpu.warp.occupancy"]
        check(occ and all(0 <= value(p) <= most for p in occ), f"{len(occ)} warp occupancy points in [0, {most}]")
    sys.exit(0 if check.ok else 1)


def table(d):
    runs = {os.path.basename(p)[4:-5]: json.load(open(p)) for p in sorted(glob.glob(d + "/run-*.json")) if os.path.getsize(p)}
    base = runs.get("base")
    if not base:
        return
    print(f"torch {base['torch']}, model {base['model']}, mode {base['mode']}")
    print("| run | ms per step (median) | x base | min ms | first step s |")
    print("| --- | --- | --- | --- | --- |")
    for k, r in runs.items():
        print(f"| {k} | {r['ms_per_step']:.2f} | {r['ms_per_step'] / base['ms_per_step']:.3f} | {r['ms_min']:.2f} | {r['first_step_s']:.1f} |")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "run"
    if cmd == "run":
        run()
    elif cmd == "analyze":
        analyze(*sys.argv[2:6])
    elif cmd == "table":
        table(sys.argv[2])
    else:
        sys.exit(f"unknown command {cmd}")
