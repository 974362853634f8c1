#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Device probes on a real GPU, through the collector: the program side and
the analysis (bench/device/probes_check.sh runs both).

run KERNELS_PTX TRITON_PTX: loads both modules with cuModuleLoadData (devrt,
when preloaded, asks the collector for the patched twins), runs vec_add,
early_exits and Triton's add_kernel, then after a pause (so the collector's
SM imbalance of the last interval is the imbalanced kernel's alone) the
imbalanced kernel; prints one JSON line: per kernel the SHA-256 of its
outputs (after one launch on fresh inputs), the median and every kernel time
of REPS timed launches (CUDA events, microseconds), and the host
CLOCK_MONOTONIC of the timed launches. ctypes and the driver API only.

Between them, one launch of long_tail (a PTX module of its own), whose
block 0 ends seconds after the others.

analyze OTEL_JSONL RUN_JSON PROBE: checks what the collector exported for
one probe against the program's run (exit 1 on failure, one line per check).
"""
import ctypes as c
import hashlib
import json
import os
import struct
import sys
import time

REPS = int(os.environ.get("REPS", 21))


def run(kernels_ptx, triton_ptx):
    from cudrv import check as ck, cu, primary_context  # the GPU machine only

    dev, _ = primary_context()
    nsm = c.c_int()
    ck(cu.cuDeviceGetAttribute(c.byref(nsm), 16, dev), "multiprocessor count")  # CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT

    def load(path):
        mod = c.c_void_p()
        img = c.create_string_buffer(open(path, "rb").read())
        t0 = time.perf_counter_ns()
        ck(cu.cuModuleLoadData(c.byref(mod), img), f"cuModuleLoadData {path}")
        return mod, (time.perf_counter_ns() - t0) / 1e3

    mods = {}
    mods["nvcc"], load_nvcc = load(kernels_ptx)
    mods["triton"], load_triton = load(triton_ptx)

    def alloc(data):
        p = c.c_uint64()
        ck(cu.cuMemAlloc_v2(c.byref(p), c.c_size_t(len(data))), "cuMemAlloc")
        ck(cu.cuMemcpyHtoD_v2(p, data, c.c_size_t(len(data))), "cuMemcpyHtoD")
        return p.value

    def dtoh(p, n):
        buf = c.create_string_buffer(n)
        ck(cu.cuMemcpyDtoH_v2(buf, c.c_uint64(p), c.c_size_t(n)), "cuMemcpyDtoH")
        return buf.raw

    e0, e1 = c.c_void_p(), c.c_void_p()
    ck(cu.cuEventCreate(c.byref(e0), 0), "cuEventCreate")
    ck(cu.cuEventCreate(c.byref(e1), 0), "cuEventCreate")

    def case(mod, kernel, grid, block, inputs, outputs, args):
        fn = c.c_void_p()
        ck(cu.cuModuleGetFunction(c.byref(fn), mods[mod], kernel.encode()), f"cuModuleGetFunction {kernel}")
        bufs = {k: alloc(v) for k, v in inputs.items()}
        outs = {k: alloc(b"\xab" * n) for k, n in outputs.items()}
        vals = []
        for kind, v in args:
            if kind == "p":
                vals.append(c.c_uint64(bufs.get(v) or outs[v]))
            elif kind == "i":
                vals.append(c.c_int32(v))
            elif kind == "f":
                vals.append(c.c_float(v))
        params = (c.c_void_p * len(vals))(*[c.addressof(v) for v in vals])

        def launch():
            ck(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, None, params, None), f"launch {kernel}")

        launch()
        ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        h = hashlib.sha256()
        for k in sorted(outs):
            h.update(dtoh(outs[k], outputs[k]))
        times, hosts = [], []
        for _ in range(REPS):
            hosts.append(time.clock_gettime_ns(time.CLOCK_MONOTONIC))
            ck(cu.cuEventRecord(e0, None), "cuEventRecord")
            launch()
            ck(cu.cuEventRecord(e1, None), "cuEventRecord")
            ck(cu.cuEventSynchronize(e1), "cuEventSynchronize")
            ms = c.c_float()
            ck(cu.cuEventElapsedTime(c.byref(ms), e0, e1), "cuEventElapsedTime")
            times.append(ms.value * 1000)
        for p in list(bufs.values()) + list(outs.values()):
            cu.cuMemFree_v2(c.c_uint64(p))
        st = sorted(times)
        return {"sha256": h.hexdigest(), "median_us": st[len(st) // 2], "times_us": times,
                "host_ns": hosts, "grid": grid, "block": block}

    n = 1 << 22
    f32 = lambda xs: struct.pack(f"<{len(xs)}f", *xs)
    res = {"sms": nsm.value, "pid": os.getpid(), "load_us": {"nvcc": load_nvcc, "triton": load_triton}, "kernels": {}}
    res["kernels"]["vec_add"] = case("nvcc", "vec_add", n // 256, 256,
                                     {"a": f32([i * 0.5 for i in range(n)]), "b": f32([2.0] * n)}, {"c": 4 * n},
                                     [("p", "a"), ("p", "b"), ("p", "c"), ("i", n)])
    flags = struct.pack(f"<{n}i", *[(-1 if i % 3 == 0 else 0 if i % 3 == 1 else i % 7 + 1) for i in range(n)])
    res["kernels"]["early_exits"] = case("nvcc", "early_exits", n // 256, 256, {"flags": flags}, {"out": 4 * n},
                                         [("p", "flags"), ("p", "out"), ("i", n)])
    res["kernels"]["add_kernel"] = case("triton", "add_kernel", n // 1024, 128,
                                        {"x": f32([i * 1.5 for i in range(n)]), "y": f32([3.0] * n)},
                                        {"out": 4 * n, "s1": 64, "s2": 64},
                                        [("p", "x"), ("p", "y"), ("p", "out"), ("i", n), ("p", "s1"), ("p", "s2")])
    res["long_tail"] = long_tail(load, alloc, dtoh, e0, e1, nsm.value)
    res["globals_use"] = globals_use(mods["nvcc"], alloc, dtoh)
    time.sleep(float(os.environ.get("PAUSE", 2)))
    # One block per SM; block b spins base*(b+1) iterations: SM load grows
    # with the SM's block, so max/mean tends to 2 (the ideal placement).
    res["kernels"]["imbalanced"] = case("nvcc", "imbalanced", nsm.value, 256, {}, {"out": 4 * 256 * nsm.value},
                                        [("p", "out"), ("i", int(os.environ.get("BASE_ITERS", 2000)))])
    time.sleep(float(os.environ.get("PAUSE", 2)))
    print(json.dumps(res))


def globals_use(mod, alloc, dtoh):
    """The module's own variables (kernels.cu): coeffs (__constant__)
    written through cuModuleGetGlobal, then globals_use launched 3 times
    (each thread adds 1 to dev_counter, a __device__ int, and stores
    coeffs[the count it got & 3]), dev_counter read back the same way. With
    devrt the patched twin owns both, so the program must see what it would
    without: the SHA-256 of the counter and of the set of values stored
    (which thread got which count is the GPU's order)."""
    from cudrv import check as ck, cu

    def glob(name):
        p, n = c.c_uint64(), c.c_size_t()
        ck(cu.cuModuleGetGlobal_v2(c.byref(p), c.byref(n), mod, name.encode()), f"cuModuleGetGlobal {name}")
        return p.value, n.value

    cp, cn = glob("coeffs")
    ck(cu.cuMemcpyHtoD_v2(c.c_uint64(cp), struct.pack("<4f", 1.5, -2.0, 3.25, 8.0), c.c_size_t(16)), "coeffs")
    fn = c.c_void_p()
    ck(cu.cuModuleGetFunction(c.byref(fn), mod, b"globals_use"), "cuModuleGetFunction globals_use")
    out = alloc(b"\xab" * 4 * 256)
    p = c.c_uint64(out)
    params = (c.c_void_p * 1)(c.addressof(p))
    for _ in range(3):
        ck(cu.cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, None, params, None), "launch globals_use")
    ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    dp, dn = glob("dev_counter")
    counter = struct.unpack("<i", dtoh(dp, 4))[0]
    vals = sorted(struct.unpack("<256f", dtoh(out, 4 * 256)))
    h = hashlib.sha256(struct.pack("<i", counter) + struct.pack("<256f", *vals)).hexdigest()
    return {"sha256": h, "counter": counter, "sizes": [cn, dn], "grid": 1, "launches": 3}


# long_tail: block 0 spins LONG_TAIL_MS (%globaltimer), the others 1/1024
# of it, then every thread stores its block id: blocks that end seconds
# apart, more than the collector's QuietClose (1 s) with nothing ending.
LONG_TAIL_PTX = """.version 8.0
.target sm_90
.address_size 64

.visible .entry long_tail(.param .u64 pout, .param .u64 pns)
{
	.reg .pred %p<3>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [pout];
	ld.param.u64 %rd2, [pns];
	mov.u32 %r1, %ctaid.x;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 shr.b64 %rd2, %rd2, 10;
	mov.u64 %rd3, %globaltimer;
$L_spin:
	mov.u64 %rd4, %globaltimer;
	sub.s64 %rd5, %rd4, %rd3;
	setp.lt.u64 %p2, %rd5, %rd2;
	@%p2 bra $L_spin;
	mov.u32 %r2, %tid.x;
	mov.u32 %r3, %ntid.x;
	mad.lo.s32 %r2, %r1, %r3, %r2;
	cvta.to.global.u64 %rd6, %rd1;
	mul.wide.u32 %rd7, %r2, 4;
	add.s64 %rd6, %rd6, %rd7;
	st.global.u32 [%rd6], %r1;
	ret;
}
"""


def long_tail(load, alloc, dtoh, e0, e1, nsm):
    """One launch of long_tail (4 blocks per SM of 128 threads) on a
    stream of its own, timed, and meanwhile, for most of its block 0's
    spin, launches of it that spin 0 ns on another stream, every 50 ms:
    blocks of other launches end while the long one runs. Its outputs'
    SHA-256, its time and grid, and the short launches made."""
    from cudrv import check as ck, cu

    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"long_tail.{os.getpid()}.ptx")
    with open(path, "w") as f:
        f.write(LONG_TAIL_PTX)
    mod, _ = load(path)
    os.unlink(path)
    fn = c.c_void_p()
    ck(cu.cuModuleGetFunction(c.byref(fn), mod, b"long_tail"), "cuModuleGetFunction long_tail")
    grid, block = 4 * nsm, 128
    spin_ms = int(os.environ.get("LONG_TAIL_MS", 2000))
    out, other = alloc(b"\xab" * (4 * grid * block)), alloc(b"\xab" * (4 * grid * block))
    vals = [c.c_uint64(out), c.c_uint64(spin_ms * 1_000_000)]
    params = (c.c_void_p * 2)(*[c.addressof(v) for v in vals])
    vals2 = [c.c_uint64(other), c.c_uint64(0)]
    params2 = (c.c_void_p * 2)(*[c.addressof(v) for v in vals2])
    s1, s2 = c.c_void_p(), c.c_void_p()
    ck(cu.cuStreamCreate(c.byref(s1), 1), "cuStreamCreate")  # CU_STREAM_NON_BLOCKING
    ck(cu.cuStreamCreate(c.byref(s2), 1), "cuStreamCreate")
    host = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    ck(cu.cuEventRecord(e0, s1), "cuEventRecord")
    ck(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, s1, params, None), "launch long_tail")
    ck(cu.cuEventRecord(e1, s1), "cuEventRecord")
    shorts, until = 0, time.monotonic() + spin_ms / 1000 * 0.75
    while time.monotonic() < until:
        ck(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, s2, params2, None), "launch long_tail (short)")
        ck(cu.cuStreamSynchronize(s2), "cuStreamSynchronize")
        shorts += 1
        time.sleep(0.05)
    ck(cu.cuEventSynchronize(e1), "cuEventSynchronize")
    ms = c.c_float()
    ck(cu.cuEventElapsedTime(c.byref(ms), e0, e1), "cuEventElapsedTime")
    sha = hashlib.sha256(dtoh(out, 4 * grid * block)).hexdigest()
    for p in (out, other):
        cu.cuMemFree_v2(c.c_uint64(p))
    for s in (s1, s2):
        cu.cuStreamDestroy_v2(s)
    return {"sha256": sha, "time_us": ms.value * 1000, "host_ns": host, "grid": grid, "block": block, "shorts": shorts}


def sampling():
    """BLOCK_SAMPLE: n (devrt::probes::block_sample: 1 in n blocks; 1 every
    block) or lK (blocks_per_launch K: by launch, the collector's default
    l256). (n, K), one of them in force."""
    s = os.environ.get("BLOCK_SAMPLE", "l256")
    return (1, int(s[1:])) if s.startswith("l") else (int(s), 0)


def launch_shift(blocks, per):
    """devrt/ptx LaunchShift: a launch of blocks blocks runs the probes in 1
    of 2^s, about per/2 to per of them."""
    if per == 0 or blocks <= per:
        return 0
    return min((blocks - 1).bit_length() - (per.bit_length() - 1), 16)


def weight(grid):
    """The blocks each sampled block of a launch of grid blocks stands for."""
    n, per = sampling()
    return 1 << launch_shift(grid, per) if per else max(n, 1)


def sampled(i, grid):
    """devrt/ptx BlockSampled / LaunchSampled: whether block i of a launch of
    grid blocks runs the probes."""
    n, per = sampling()
    h = (i * 0x9E3779B9) & 0xFFFFFFFF
    if per:
        s = launch_shift(grid, per)
        return s == 0 or h >> (32 - s) == 0
    return n <= 1 or h < (2**32 + n - 1) // n


def otel(path):
    """Spans and metric data points of an OTLP JSON lines file."""
    spans, points = [], []
    for line in open(path):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        for rs in d.get("resourceSpans", []):
            # the resource's (process.pid, hw.id) under the span's own
            res = {a["key"]: list(a["value"].values())[0] for a in rs.get("resource", {}).get("attributes", [])}
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    s["attrs"] = dict(res, **{a["key"]: list(a["value"].values())[0] for a in s.get("attributes", [])})
                    spans.append(s)
        for rm in d.get("resourceMetrics", []):
            res = {a["key"]: list(a["value"].values())[0] for a in rm.get("resource", {}).get("attributes", [])}
            for sm in rm.get("scopeMetrics", []):
                for m in sm.get("metrics", []):
                    for kind in ("sum", "gauge", "histogram"):
                        for dp in m.get(kind, {}).get("dataPoints", []):
                            # the resource's (process.pid) under the point's own
                            dp["attrs"] = dict(res, **{a["key"]: list(a["value"].values())[0] for a in dp.get("attributes", [])})
                            dp["name"], dp["kind"] = m["name"], kind
                            points.append(dp)
    return spans, points


def value(dp):
    return float(dp.get("asDouble", dp.get("asInt", 0)))


class Checks:
    """check(cond, what) prints a PASS or FAIL line under name; ok turns
    false at the first FAIL."""

    def __init__(self, name):
        self.name, self.ok = name, True

    def __call__(self, cond, what):
        print(("PASS " if cond else "FAIL ") + self.name + ": " + what)
        self.ok = self.ok and bool(cond)


def last_point(points, name, **attrs):
    """The last data point of metric name with these attributes, or None."""
    found = [p for p in points if p["name"] == name and all(p["attrs"].get(k) == v for k, v in attrs.items())]
    return found[-1] if found else None


def analyze(otel_path, run_path, probe):
    run_res = json.load(open(run_path))
    spans, points = otel(otel_path)
    check = Checks(probe)

    def last(name, **attrs):
        return last_point(points, name, **attrs)

    patched = last("gpu.devrt.modules", **{"gpu.devrt.module.status": "patched"})
    check(patched is not None and value(patched) >= 2, f"both modules patched (gpu.devrt.modules patched = {value(patched) if patched else None})")
    broken = last("gpu.devrt.probes.regions", state="broken")
    check(broken is not None and value(broken) == 0, "no region broken")
    # The blocks sampling picks run the probes (devrt::probes::block_sample
    # or blocks_per_launch): exactly those sampled() picks, block 0 always.
    picked = lambda grid: [i for i in range(grid) if sampled(i, grid)]
    if probe == "block_sched":
        # The ring holds 262144 block records between two reads; kernels of
        # 16k blocks launched back to back overflow it within a few ms. Lost
        # records must all be counted (gpu.devrt.probes.dropped): kernels
        # that lost blocks are checked for that; the others exactly.
        drops = {}
        for p in points:
            if p["name"] == "gpu.devrt.probes.dropped":
                drops[p["attrs"].get("gpu.devrt.probe.map")] = value(p)
        ring_drops = drops.get("gx_block_ring", 0)
        print(f"INFO {probe}: records dropped by map (ring overwritten before read, ...): {drops}")
        missing_all = 0
        for k, r in run_res["kernels"].items():
            mine = [s for s in spans if s["name"] == k + " blocks"]
            launches = 1 + len(r["times_us"])
            blocks = [int(s["attrs"].get("gpu.kernel.blocks")) for s in mine]
            # one span per launch: each names its own %gridid
            gids = [int(s["attrs"].get("gpu.kernel.grid_id", 0)) for s in mine]
            check(all(gids) and len(set(gids)) == len(gids),
                  f"{k}: {len(set(gids))} distinct nonzero grid ids for {len(gids)} spans")
            want = len(picked(r["grid"]))
            missing = launches * want - sum(blocks)
            missing_all += max(missing, 0)
            if missing > 0 and ring_drops > 0:
                print(f"INFO {probe}: {k}: {missing} of {launches * want} blocks lost "
                      f"({len(mine)} spans for {launches} launches, {sum(b != want for b in blocks)} short)")
                continue
            check(len(mine) >= launches * 0.9, f"{k}: {len(mine)} block spans for {launches} launches")
            if not mine:
                continue
            durs = sorted((int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e3 for s in mine)
            ev = sorted(r["times_us"])
            # The span runs from the first block's start to the last block's
            # end: inside the launch the events time, so never longer (5 µs
            # of event resolution), and most of it for a kernel this long.
            check(durs[-1] <= ev[-1] + 5, f"{k}: longest block span {durs[-1]:.1f} µs <= longest event time {ev[-1]:.1f} µs")
            med = durs[len(durs) // 2]
            check(med >= 0.5 * ev[0] or ev[0] < 20, f"{k}: median block span {med:.1f} µs against the fastest event time {ev[0]:.1f} µs")
            short = [b for b in blocks if b != want]
            w = weight(r["grid"])
            check(not short, f"{k}: every span saw all {want} blocks of {r['grid']} sampled 1 in {w} "
                  f"({len(short)} of {len(blocks)} short: {sorted(short)[:5]})")
            marks = {int(s["attrs"].get("gpu.kernel.block.sample", 1)) for s in mine}
            check(marks == {w}, f"{k}: spans say block sample {sorted(marks)}, want {w}")
            dmax = max(float(s["attrs"]["gpu.kernel.block.duration.max"]) for s in mine) * 1e6
            check(dmax <= ev[-1] + 5, f"{k}: longest block {dmax:.1f} µs within the launch")
            if k == "imbalanced":
                mx = [float(s["attrs"]["gpu.kernel.block.duration.max"]) for s in mine]
                mn = [float(s["attrs"]["gpu.kernel.block.duration.min"]) for s in mine]
                ratio = sorted(a / b for a, b in zip(mx, mn) if b > 0)
                rr = ratio[len(ratio) // 2] if ratio else 0
                work = picked(r["grid"])[-1] + 1 # block b spins b+1 units; block 0 is sampled
                check(rr > 0.5 * work, f"imbalanced: longest/shortest block {rr:.1f} (work ratio of the sampled blocks {work})")
        check(missing_all <= ring_drops, f"every lost block counted: {missing_all} missing, {ring_drops:.0f} ring records dropped")
        # long_tail: block 0 ends seconds after the others, while short
        # launches of it on another stream end (the records say their
        # launch's blocks: a run is over when it has all of them): one
        # span of every sampled block, as long as block 0, and one span of
        # each short launch, each whole.
        lt = run_res["long_tail"]
        mine = [s for s in spans if s["name"] == "long_tail blocks"]
        want = len(picked(lt["grid"]))
        blocks = [int(s["attrs"].get("gpu.kernel.blocks")) for s in mine]
        durs = [(int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e3 for s in mine]
        spin = int(os.environ.get("LONG_TAIL_MS", 2000)) * 1e3
        long = [d for d in durs if d >= spin / 2]
        check(len(mine) == 1 + lt["shorts"] and set(blocks) == {want} and len(long) == 1 and spin <= long[0] <= lt["time_us"] + 5,
              f"long_tail: {len(mine)} spans for {1 + lt['shorts']} launches (its {lt['shorts']} short ones on another stream "
              f"during it), blocks {sorted(set(blocks))} (want {want} each), the long one(s) {[round(d / 1e6, 3) for d in long]} s "
              f"(block 0 spins {spin / 1e6:.3f} s, the launch took {lt['time_us'] / 1e6:.3f} s)")
        h = last("gpu.kernel.block.schedule.delay", **{"gpu.cuda.kernel.name": "imbalanced"})
        check(h is not None and int(h["count"]) > 0, "imbalanced: schedule delay histogram")
    if probe == "sm_load":
        # This program's (the live Triton kernel's process runs too).
        imb = last("gpu.kernel.sm.imbalance", **{"process.pid": str(run_res["pid"])})
        v = value(imb) if imb is not None else 0.0
        sms = {p["attrs"].get("gpu.sm.id") for p in points if p["name"] == "gpu.kernel.sm.blocks"}
        if weight(run_res["sms"]) == 1:
            check(1.4 < v < 2.2, f"imbalanced: SM imbalance {v:.3f} (ideal one block per SM: {2 * run_res['sms'] / (run_res['sms'] + 1):.3f})")
            check(len(sms) >= 0.9 * run_res["sms"], f"{len(sms)} SMs reported of {run_res['sms']}")
        else:
            # Sampled blocks stand for their weight: the last launch's SMs are
            # those of its sampled blocks (one block per SM), the rest idle.
            check(imb is not None and v >= 1, f"imbalanced: SM imbalance {v:.3f} of the sampled blocks")
            check(len(sms) >= len(picked(run_res["sms"])),
                  f"{len(sms)} SMs reported, at least the {len(picked(run_res['sms']))} of imbalanced's sampled blocks")
        blk = [p for p in points if p["name"] == "gpu.kernel.sm.blocks" and p["attrs"].get("process.pid") == str(run_res["pid"])]
        if blk:
            # every launch's sampled blocks, each standing for its weight
            last_ts = max(int(p["timeUnixNano"]) for p in blk)
            total = sum(value(p) for p in blk if int(p["timeUnixNano"]) == last_ts)
            launches = sum(1 + len(r["times_us"]) for r in run_res["kernels"].values())
            want = sum((1 + len(r["times_us"])) * len(picked(r["grid"])) * weight(r["grid"]) for r in run_res["kernels"].values())
            lt = run_res["long_tail"]
            launches += 1 + lt["shorts"]
            want += (1 + lt["shorts"]) * len(picked(lt["grid"])) * weight(lt["grid"])
            gu = run_res["globals_use"]
            launches += gu["launches"]
            want += gu["launches"] * len(picked(gu["grid"])) * weight(gu["grid"])
            print(f"INFO {probe}: blocks counted {total:.0f} (sampled x weight), {want} expected over {launches} launches")
            check(total == want, f"blocks counted {total:.0f} = sampled blocks x weight = {want}")
    if probe == "launch_latency":
        for k in run_res["kernels"]:
            h = last("gpu.kernel.launch.latency", **{"gpu.cuda.kernel.name": k})
            if h is None:
                check(False, f"{k}: no launch latency (no devrt-timed launch matched?)")
                continue
            mean = float(h["sum"]) / max(1, int(h["count"])) * 1e6
            lo, hi = float(h.get("min", 0)) * 1e6, float(h.get("max", 0)) * 1e6
            # Every launch is synchronous (the GPU idle when it is called):
            # a few µs each, the first (cold) tens. An offset off by the
            # clocks' drift or a clamped anchor reads negative or far off
            # (on an H100, before 2026-11-23: means of -0.1 to -38 µs); the
            # offset's own error is the start event's gap, about a µs.
            check(int(h["count"]) == 1 + len(run_res["kernels"][k]["times_us"]) and 0.5 < mean < 100
                  and lo > -5 and hi < 1000,
                  f"{k}: {h['count']} latencies, mean {mean:.1f} µs, min {lo:.1f}, max {hi:.1f}")
    if probe == "warp_occupancy":
        # sampled blocks stand for their weight: an SM's estimate can pass
        # its 64 resident warps by as much
        most = 64 * max(weight(r["grid"]) for r in run_res["kernels"].values())
        occ = [p for p in points if p["name"] == "gpu.warp.occupancy"]
        check(len(occ) > 0 and all(0 <= value(p) <= most for p in occ),
              f"warp occupancy: {len(occ)} points, max {max((value(p) for p in occ), default=0):.2f} warps per SM")
        # long_tail's block 0, alone on its SM for most of 2 s, is its
        # warps (weighed) in every bucket of them: not all of it in the
        # bucket it left in (until 2026-11-27: 30 518 warps per SM)
        lt = run_res["long_tail"]
        alone = lt["block"] // 32 * weight(lt["grid"])
        check(any(abs(value(p) - alone) < 1e-9 for p in occ),
              f"long_tail: a point of {alone} warps (block 0 alone on its SM, {lt['block'] // 32} warps weighed by {weight(lt['grid'])})")
    sys.exit(0 if check.ok else 1)


def triton_live(otel_path, base_path, run_path, probe):
    """The live Triton kernel (probes_triton.py) under devrt: Triton loaded
    a cubin, devrt patched the PTX Triton cached beside it."""
    base, run_res = json.load(open(base_path)), json.load(open(run_path))
    spans, points = otel(otel_path)
    name = "live_axpy"
    check = Checks(probe + ": triton")

    check(base["sha256"] == run_res["sha256"], "outputs identical to the uninstrumented run")
    check(base["matmul"]["sha256"] == run_res["matmul"]["sha256"],
          "the GEMM's output (wgmma tiles in dynamic shared memory) identical to the uninstrumented run")
    check(base["attention"]["sha256"] == run_res["attention"]["sha256"],
          "the attention's output identical to the uninstrumented run")
    patched = [p for p in points if p["name"] == "gpu.devrt.modules" and p["attrs"].get("gpu.devrt.module.status") == "patched"]
    n = value(patched[-1]) if patched else 0
    check(n >= 5, f"its cubins' modules patched too (gpu.devrt.modules patched = {n:.0f}: the check program's 2 and Triton's 3)")
    if probe == "block_sched":
        for kname, r in ((name, run_res), ("live_matmul", run_res["matmul"]), ("live_attn", run_res["attention"])):
            mine = [s for s in spans if s["name"] == kname + " blocks"]
            blocks = [int(s["attrs"].get("gpu.kernel.blocks")) for s in mine]
            want = sum(sampled(i, r["grid"]) for i in range(r["grid"]))
            check(len(mine) >= 0.9 * r["launches"] and all(b == want for b in blocks),
                  f"{kname}: {len(mine)} block spans for {r['launches']} launches, each of the {want} of {r['grid']} blocks "
                  f"sampled 1 in {weight(r['grid'])} ({sorted(set(blocks))[:3]})")
    if probe == "launch_latency":
        h = [p for p in points if p["name"] == "gpu.kernel.launch.latency" and p["attrs"].get("gpu.cuda.kernel.name") == name]
        check(bool(h) and int(h[-1]["count"]) > 0, f"{int(h[-1]['count']) if h else 0} launch latencies")
    print(f"INFO {probe}: triton: {run_res['median_us']:.1f} µs a launch, uninstrumented {base['median_us']:.1f} µs; "
          f"GEMM {run_res['matmul']['median_us']:.1f} µs, uninstrumented {base['matmul']['median_us']:.1f} µs; "
          f"attention {run_res['attention']['median_us']:.1f} µs, uninstrumented {base['attention']['median_us']:.1f} µs")
    sys.exit(0 if check.ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "analyze":
        analyze(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "triton":
        triton_live(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        sys.exit("usage: probes_check.py run KERNELS_PTX TRITON_PTX | analyze OTEL_JSONL RUN_JSON PROBE"
                 " | triton OTEL_JSONL BASE_JSON RUN_JSON PROBE")
