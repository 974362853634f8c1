"""Times kernels uninstrumented vs instrumented with devrt/jit's probes (ctypes, driver API).

Reads DIR/bench.json written by `jitcheck bench`: for every kernel, the
original module and the modules devrt/ptx instrumented at entry and exits
with each shipped probe (and an empty probe: the call itself), compiled at
warp level and per thread. Every module is loaded (its driver JIT time is
reported), its shared region allocated as devrt does (device memory;
REGION=mapped: host memory mapped into the device, devrt's first design) and
pointed to by __gpuext_shared. Inputs hold a pattern of varied words and
every module's output must equal the original's; each row also shows the
module's registers a thread, static shared memory and blocks an SM holds.
Rounds interleave the variants of a kernel in a shuffled order; each round
resets the regions, launches once to warm up, then times BATCH launches with
CUDA events (a variant whose first launch takes over SLOW_MS, default 20 ms,
is timed on that one launch only). The stream is held while they are
queued: a one-thread kernel spins on a word of mapped host memory ahead of
the start event until the script has queued the batch and the stop event,
so the GPU runs the launches back to back. Without the hold (HOLD=0, as
before 2026-11-27's tenth session) the first launch waited for Python to
queue it (ctypes: several microseconds), and kernels shorter than a
launch's queuing (vecadd 1M: 4.5 us a launch on an H100) waited for every
one: the time was partly the CPU's, and its jitter. BATCH=auto (the
default) takes 0.2 ms over the original's time of a held launch timed
alone, 3 to 128 launches (a lone launch reads longer than one of a batch:
vecadd 1M's batch lasts about 0.15 ms). Per variant: the median over rounds of
the time per launch, and its ratio to the original's. Then the imbalanced kernel runs once with
block_sched and sm_load and their regions are written to
DIR/report.<probe>.bin for `jitcheck report`.

usage: jit_bench.py DIR     (ROUNDS, BATCH, SLOW_MS, REGION, HOLD override the defaults;
                            ONLY=kernel,... times only those)
"""
import array
import ctypes as c
import hashlib
import json
import math
import os
import random
import statistics
import sys
import time

from cudrv import check, cu, primary_context


# gx_hold: one thread spins until the word at flag is not zero, or 5 s have
# passed on %globaltimer, then stores 1 to flag + 4 if it gave up.
HOLD_PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry gx_hold(.param .u64 flag)
{
	.reg .pred %p<3>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<5>;
	ld.param.u64 %rd1, [flag];
	mov.u64 %rd2, %globaltimer;
$spin:
	ld.volatile.global.u32 %r1, [%rd1];
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra $done;
	mov.u64 %rd3, %globaltimer;
	sub.s64 %rd4, %rd3, %rd2;
	setp.lt.s64 %p2, %rd4, 5000000000;
	@%p2 bra $spin;
	st.volatile.global.u32 [%rd1+4], 1;
$done:
	ret;
}
\0"""


class Gate:
    """Holds the stream while a batch is queued: close() queues gx_hold,
    open() lets it end, check() raises if it gave up waiting (a launch
    behind it that waited for the GPU before open(): a full launch queue,
    fewer launches, BATCH)."""

    def __init__(self):
        mod, self.f = c.c_void_p(), c.c_void_p()
        check(cu.cuModuleLoadData(c.byref(mod), HOLD_PTX), "load gx_hold")
        check(cu.cuModuleGetFunction(c.byref(self.f), mod, b"gx_hold"), "cuModuleGetFunction gx_hold")
        host = c.c_void_p()
        check(cu.cuMemHostAlloc(c.byref(host), 8, 0x1 | 0x2), "cuMemHostAlloc gate")  # portable, device-mapped
        self.word = (c.c_uint32 * 2).from_address(host.value)
        self.dptr = c.c_uint64()
        check(cu.cuMemHostGetDevicePointer_v2(c.byref(self.dptr), host, 0), "cuMemHostGetDevicePointer gate")
        self.params = (c.c_void_p * 1)(c.cast(c.byref(self.dptr), c.c_void_p))

    def close(self):
        self.word[0], self.word[1] = 0, 0
        check(cu.cuLaunchKernel(self.f, 1, 1, 1, 1, 1, 1, 0, None, self.params, None), "launch gx_hold")

    def open(self):
        self.word[0] = 1

    def check(self):
        if self.word[1]:
            raise RuntimeError("gx_hold gave up after 5 s: a launch queued behind it waited for the GPU"
                               " (a full launch queue: set BATCH lower; CUDA_LAUNCH_BLOCKING; HOLD=0 times without it)")


def main(d):
    rounds = int(os.environ.get("ROUNDS", "7"))
    batch_env = os.environ.get("BATCH", "auto")
    hold = os.environ.get("HOLD", "1") != "0"
    mapped = os.environ.get("REGION", "device") == "mapped"
    bf = json.load(open(os.path.join(d, "bench.json")))
    dev, ctx = primary_context()
    name = c.create_string_buffer(256)
    cu.cuDeviceGetName(name, 256, dev)
    print(f"device: {name.value.decode()}, region in {'mapped host' if mapped else 'device'} memory, "
          f"{rounds} rounds x {batch_env} launches, stream {'held while queued' if hold else 'not held'}")
    print(f"{'variant':44s} {'us/launch':>12s} {'x orig':>9s} {'load ms':>8s} {'patch ms':>9s} {'regs':>5s}"
          f" {'smem B':>7s} {'blk/SM':>7s}", flush=True)

    def load(path):
        mod = c.c_void_p()
        log = c.create_string_buffer(65536)
        opts = (c.c_int * 2)(5, 6)
        vals = (c.c_void_p * 2)(c.cast(log, c.c_void_p), c.c_void_p(len(log)))
        src = open(path, "rb").read() + b"\0"
        t0 = time.perf_counter()
        r = cu.cuModuleLoadDataEx(c.byref(mod), src, 2, opts, vals)
        ms = (time.perf_counter() - t0) * 1e3
        if r != 0:
            raise RuntimeError(f"cuModuleLoadDataEx {path}: {r}: {log.value.decode(errors='replace')[:2000]}")
        return mod, ms

    start, stop = c.c_void_p(), c.c_void_p()
    check(cu.cuEventCreate(c.byref(start), 0), "cuEventCreate")
    check(cu.cuEventCreate(c.byref(stop), 0), "cuEventCreate")
    gate = Gate() if hold else None

    def timed(launch, n):
        """Microseconds per launch of n launches queued back to back
        (behind the gate, when held) between two events."""
        if gate:
            gate.close()
        try:
            check(cu.cuEventRecord(start, None), "cuEventRecord")
            for _ in range(n):
                launch()
            check(cu.cuEventRecord(stop, None), "cuEventRecord")
        finally:  # a launch that failed does not leave gx_hold spinning
            if gate:
                gate.open()
        check(cu.cuEventSynchronize(stop), "cuEventSynchronize")
        if gate:
            gate.check()
        ms = c.c_float()
        check(cu.cuEventElapsedTime(c.byref(ms), start, stop), "cuEventElapsedTime")
        return ms.value * 1e3 / n
    # Inputs: a pattern of 2^18 + 1 varied words (a period that divides no
    # row or tile of a power-of-two size), each a normal fp32 (below 2)
    # and two fp16 in [1, 2): a constant fill would hide a kernel that
    # reads the right values from the wrong places (a shared-memory layout
    # the probes shifted, say).
    pattern = array.array("I", (0x3C003C00 | ((i * 2654435761) >> 7 & 0x03FF03FF) for i in range((1 << 18) + 1))).tobytes()
    rows = []
    failed = False
    only = os.environ.get("ONLY", "")
    for k in bf["kernels"]:
        if only and k["name"] not in only.split(","):
            continue
        holders = []
        bufs = [i for i, (kind, _) in enumerate(k["args"]) if kind == "buf"]
        out_idx = bufs[-1] if k.get("out", -1) < 0 else k["out"]
        for i, (kind, v) in enumerate(k["args"]):
            if kind == "buf":
                p = c.c_uint64()
                check(cu.cuMemAlloc_v2(c.byref(p), v), "cuMemAlloc")
                # inputs a pattern, the output zeroed: a kernel that went
                # wrong shows in its result
                if i == out_idx:
                    check(cu.cuMemsetD32_v2(p, 0, v // 4), "cuMemsetD32")
                else:
                    for off in range(0, v, len(pattern)):
                        n = min(len(pattern), v - off)
                        check(cu.cuMemcpyHtoD_v2(c.c_uint64(p.value + off), pattern, n), "fill input")
                holders.append(c.c_uint64(p.value))
            elif kind == "u64":
                holders.append(c.c_uint64(v))
            elif kind == "f32":
                holders.append(c.c_float(v))
            else:
                holders.append(c.c_uint32(v))
        shared = k.get("shared", 0)
        params = (c.c_void_p * len(holders))(*[c.cast(c.byref(h), c.c_void_p) for h in holders])
        vs = []
        for v in bf["variants"]:
            if v["kernel"] != k["name"]:
                continue
            mod, jit_ms = load(os.path.join(d, v["ptx"]))
            f = c.c_void_p()
            # the kernel's entry for 1-D grids where it has one, as devrt launches it
            entry = v.get("grid1d") if v.get("grid1d") and (k.get("grid_y", 1) or 1) == 1 else k["entry"]
            check(cu.cuModuleGetFunction(c.byref(f), mod, entry.encode()), "cuModuleGetFunction")
            if shared:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (past 48 KiB with the probes' static part)
                check(cu.cuFuncSetAttribute(f, 8, shared), "cuFuncSetAttribute")
            # registers a thread, static shared memory, blocks an SM holds
            regs, smem, occ = c.c_int(), c.c_int(), c.c_int()
            check(cu.cuFuncGetAttribute(c.byref(regs), 4, f), "cuFuncGetAttribute")
            check(cu.cuFuncGetAttribute(c.byref(smem), 1, f), "cuFuncGetAttribute")
            check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(c.byref(occ), f, k["block"], c.c_size_t(shared)),
                  "cuOccupancyMaxActiveBlocksPerMultiprocessor")
            region = host = None
            if v["region_size"]:
                size = v["region_size"]
                if mapped:
                    host = c.c_void_p()
                    check(cu.cuMemHostAlloc(c.byref(host), size, 0x1 | 0x2), "cuMemHostAlloc")
                    rp = c.c_uint64()
                    check(cu.cuMemHostGetDevicePointer_v2(c.byref(rp), host, 0), "cuMemHostGetDevicePointer")
                    region = rp.value
                else:
                    rp = c.c_uint64()
                    check(cu.cuMemAlloc_v2(c.byref(rp), size), "cuMemAlloc region")
                    region = rp.value
                g, gs = c.c_uint64(), c.c_size_t()
                check(cu.cuModuleGetGlobal_v2(c.byref(g), c.byref(gs), mod, b"__gpuext_shared"), "cuModuleGetGlobal")
                check(cu.cuMemcpyHtoD_v2(g, c.byref(c.c_uint64(region)), 8), "set __gpuext_shared")
            hdrs = [(off, bytes.fromhex(hx)) for off, hx in (v["headers"] or [])]
            vs.append(dict(v=v, mod=mod, f=f, region=region, host=host, hdrs=hdrs, jit_ms=jit_ms, times=[],
                           res=(regs.value, smem.value, occ.value)))

        def reset(x):
            if x["region"] is None:
                return
            size = x["v"]["region_size"]
            if x["host"] is not None:
                c.memset(x["host"], 0, size)
                for off, h in x["hdrs"]:
                    c.memmove(x["host"].value + off, h, len(h))
            else:
                check(cu.cuMemsetD8_v2(c.c_uint64(x["region"]), 0, size), "cuMemsetD8 region")
                for off, h in x["hdrs"]:
                    check(cu.cuMemcpyHtoD_v2(c.c_uint64(x["region"] + off), h, len(h)), "init header")

        def launch(x):
            check(cu.cuLaunchKernel(x["f"], k["grid"], k.get("grid_y", 1) or 1, 1, k["block"], 1, 1, shared, None,
                                    params, None), "cuLaunchKernel")

        out_size = k["args"][out_idx][1]

        def result():
            buf = c.create_string_buffer(out_size)
            check(cu.cuMemcpyDtoH_v2(buf, holders[out_idx], out_size), "read result")
            check(cu.cuMemsetD8_v2(holders[out_idx], 0, out_size), "clear result")
            return hashlib.sha256(buf.raw).hexdigest()

        # a variant whose single launch takes longer than SLOW_MS is timed once
        slow_ms = float(os.environ.get("SLOW_MS", "20"))
        for x in vs:
            reset(x)
            us = timed(lambda: launch(x), 1)
            x["result"] = result()
            if us > slow_ms * 1e3:
                x["times"].append(us)
                x["slow"] = True
        if batch_env == "auto":  # about 0.2 ms of the original's launches, warm
            reset(vs[0])
            batch = min(128, max(3, math.ceil(200 / max(timed(lambda: launch(vs[0]), 1), 0.5))))
            result()
        else:
            batch = int(batch_env)
        for _ in range(rounds):
            order = [x for x in vs if not x.get("slow")]
            random.shuffle(order)
            for x in order:
                reset(x)
                launch(x)
                check(cu.cuCtxSynchronize(), "warm-up")
                x["times"].append(timed(lambda: launch(x), batch))
        differ = [x["v"]["name"] for x in vs if x["result"] != vs[0]["result"]]
        print(f"{k['name']}: results of {len(vs) - len(differ)} of {len(vs)} modules identical to the original's"
              f" ({batch} launches a batch)"
              + (f"; DIFFERENT: {', '.join(differ)}" if differ else ""), flush=True)
        if differ:
            failed = True
        base = statistics.median(vs[0]["times"])
        for x in vs:
            med = statistics.median(x["times"])
            name = x["v"]["name"] + (" (1 launch)" if x.get("slow") else "")
            rows.append((name, med, med / base, x["jit_ms"], x["v"]["patch_ms"]))
            print(f"{name:44s} {med:12.2f} {med / base:9.3f} {x['jit_ms']:8.2f} {x['v']['patch_ms']:9.3f}"
                  " %5d %7d %7d" % x["res"], flush=True)
        # the imbalance report: one launch with block_sched and sm_load, regions kept
        if k["name"] == "imbalanced":
            for x in vs:
                if x["v"]["level"] == "warp" and not x["v"].get("form") and x["v"]["probe"] in ("block_sched", "sm_load"):
                    sample = x["v"].get("block_sample", 0)
                    per_launch = x["v"].get("blocks_per_launch", 0)
                    reset(x)
                    launch(x)
                    check(cu.cuCtxSynchronize(), "report launch")
                    buf = c.create_string_buffer(x["v"]["region_size"])
                    check(cu.cuMemcpyDtoH_v2(buf, c.c_uint64(x["region"]), x["v"]["region_size"]), "read region")
                    suffix = f".s{sample}" if sample > 1 else (f".l{per_launch}" if per_launch else "")
                    open(os.path.join(d, f"report.{x['v']['probe']}{suffix}.bin"), "wb").write(buf.raw)
        for x in vs:
            cu.cuModuleUnload(x["mod"])
            if x["host"] is not None:
                cu.cuMemFreeHost(x["host"])
            elif x["region"] is not None:
                cu.cuMemFree_v2(c.c_uint64(x["region"]))
        for i in bufs:
            cu.cuMemFree_v2(holders[i])
    print(f"{len(rows)} variants timed")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1])
