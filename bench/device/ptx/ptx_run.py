"""Runs original and instrumented PTX side by side on a GPU (ctypes, driver API).

Used by bench/device/ptx_check.sh. For each test case it launches a kernel of
the original module and the same kernel of the module devrt/ptx instrumented
with testdata/probe_count.ptx at entry, exits, loads and stores (generic and
atomics included), with identical inputs, and checks:
  - the outputs are byte-identical (instrumentation never changes results);
  - the probe's counters (u64 slot per site kind, one per site index) equal
    the counts the kernel's semantics imply, exactly;
  - the per-site counters add up to the per-kind ones and match the report.
Prints PASS/FAIL per case and a summary line; exits 1 on any failure.

usage: see main's doc comment. With real devrt/jit probes (mode outputs) it
checks identical outputs and that the probes wrote into their region, and
times a long imbalanced launch original vs instrumented.
"""
import ctypes
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cudrv import check, cu, primary_context  # noqa: E402 - bench/device/cudrv.py

c = ctypes


primary_context()


def load(path):
    src = open(path, "rb").read() + b"\0"
    mod = c.c_void_p()
    log = c.create_string_buffer(16384)
    opts = (c.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, _SIZE_BYTES
    vals = (c.c_void_p * 2)(c.cast(log, c.c_void_p), c.c_void_p(len(log)))
    r = cu.cuModuleLoadDataEx(c.byref(mod), src, 2, opts, vals)
    if r != 0:
        raise RuntimeError(f"cuModuleLoadDataEx {path}: {r}: {log.value.decode(errors='replace')[:2000]}")
    return mod


def alloc(nbytes):
    p = c.c_uint64()
    check(cu.cuMemAlloc_v2(c.byref(p), max(nbytes, 8)), "cuMemAlloc")
    return p.value


def htod(dst, data):
    check(cu.cuMemcpyHtoD_v2(c.c_uint64(dst), data, len(data)), "cuMemcpyHtoD")


def dtoh(src, n):
    buf = c.create_string_buffer(n)
    check(cu.cuMemcpyDtoH_v2(buf, c.c_uint64(src), n), "cuMemcpyDtoH")
    return buf.raw


REGION = 512  # u64 slots: [kind] at 8*kind, [8 + site]


def launch(mod, kernel, grid, block, args):
    f = c.c_void_p()
    check(cu.cuModuleGetFunction(c.byref(f), mod, kernel.encode()), f"cuModuleGetFunction {kernel}")
    holders = []
    for kind, v in args:
        holders.append({"p": c.c_uint64, "i": c.c_int32, "f": c.c_float, "d": c.c_double}[kind](v))
    params = (c.c_void_p * len(holders))(*[c.cast(c.byref(h), c.c_void_p) for h in holders])
    check(cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, None, params, None), f"launch {kernel}")
    check(cu.cuCtxSynchronize(), f"sync {kernel}")


def run_case(mod, case, region, region_size=REGION):
    """Fresh buffers (inputs as given, outputs filled with 0xab), one launch;
    returns every buffer's bytes afterwards, inputs included."""
    bufs = {}
    for name, data in list(case["inputs"].items()) + [(n, b"\xab" * sz) for n, sz in case["outputs"].items()]:
        bufs[name] = (alloc(len(data)), len(data))
        htod(bufs[name][0], data)
    args = [(k, bufs[v][0] if k == "p" else v) for k, v in case["args"]]
    if region is not None:
        g, size = c.c_uint64(), c.c_size_t()
        check(cu.cuModuleGetGlobal_v2(c.byref(g), c.byref(size), mod, b"__gpuext_shared"), "__gpuext_shared")
        htod(region, b"\0" * region_size)
        htod(g.value, struct.pack("<Q", region))
    launch(mod, case["kernel"], case["grid"], case["block"], args)
    out = b"".join(dtoh(p, n) for p, n in bufs.values())
    for p, _ in bufs.values():
        cu.cuMemFree_v2(c.c_uint64(p))
    return out


def i32(xs):
    return struct.pack(f"<{len(xs)}i", *xs)


def f32(xs):
    return struct.pack(f"<{len(xs)}f", *xs)


def f64(xs):
    return struct.pack(f"<{len(xs)}d", *xs)


def cases():
    n = 1000
    flags = [(-1 if i % 3 == 0 else 0 if i % 3 == 1 else i % 7 + 1) for i in range(n)]
    # triton add_kernel: 4 elements per thread at (t*4 & 508), and again +512
    tn = 3000
    tl, ts = 0, 0
    for b in range((tn + 1023) // 1024):
        for t in range(128):
            base = b * 1024 + ((t * 4) & 508)
            for off in (0, 512):
                if base + off < tn:
                    tl, ts = tl + 2, ts + 1
    return [
        dict(kernel="vec_add", grid=4, block=256, inputs={"a": f32([i * 0.5 for i in range(n)]), "b": f32([i * 2.0 for i in range(n)])},
             outputs={"c": 4 * n}, args=[("p", "a"), ("p", "b"), ("p", "c"), ("i", n)], expect=(1024, 1024, 2 * n, n)),
        dict(kernel="block_reduce", grid=4, block=256, inputs={"in": f32([float(i % 5) for i in range(n)])},
             outputs={"out": 4}, args=[("p", "in"), ("p", "out"), ("i", n)], expect=(1024, 1024, n, 4)),
        dict(kernel="imbalanced", grid=8, block=128, inputs={}, outputs={"out": 4 * 1024},
             args=[("p", "out"), ("i", 10)], expect=(1024, 1024, 0, 1024)),
        dict(kernel="early_exits", grid=4, block=256, inputs={"flags": i32(flags)}, outputs={"out": 4 * n},
             args=[("p", "flags"), ("p", "out"), ("i", n)], expect=(1024, 1024, n, sum(1 for f in flags if f != 0))),
        dict(kernel="_Z4axpyIfEvT_PKS0_PS0_i", grid=4, block=256, inputs={"x": f32([float(i) for i in range(3000)]), "y": f32([1.0] * 3000)},
             outputs={}, args=[("f", 2.0), ("p", "x"), ("p", "y"), ("i", 3000)], expect=(1024, 1024, 6000, 3000)),
        dict(kernel="_Z4axpyIdEvT_PKS0_PS0_i", grid=4, block=256, inputs={"x": f64([float(i) for i in range(3000)]), "y": f64([1.0] * 3000)},
             outputs={}, args=[("d", 2.0), ("p", "x"), ("p", "y"), ("i", 3000)], expect=(1024, 1024, 6000, 3000)),
        dict(kernel="half_vec4", grid=4, block=256, inputs={"a": struct.pack(f"<{2 * n}e", *[i * 0.25 for i in range(2 * n)])},
             outputs={"out": 16 * n}, args=[("p", "a"), ("p", "out"), ("i", n)], expect=(1024, 1024, n, n)),
        dict(kernel="histogram", grid=2, block=256, inputs={"data": bytes((i * 7) % 256 for i in range(5000)), "bins": bytes(1024)},
             outputs={}, args=[("p", "data"), ("p", "bins"), ("i", 5000)], expect=(512, 512, 5000, 512)),
        dict(kernel="local_array", grid=4, block=256, inputs={"idx": i32([i * 3 for i in range(n)])}, outputs={"out": 4 * n},
             args=[("p", "idx"), ("p", "out"), ("i", n)], expect=(1024, 1024, n, n)),
        dict(kernel="say_hello", grid=1, block=32, inputs={}, outputs={}, args=[("i", 7)], expect=(32, 32, 0, 0)),
        dict(kernel="globals_use", grid=1, block=64, inputs={}, outputs={"out": 256}, args=[("p", "out")], expect=(64, 64, 0, 128)),
        dict(kernel="add_kernel", grid=(tn + 1023) // 1024, block=128, inputs={"x": f32([i * 1.5 for i in range(tn)]), "y": f32([3.0] * tn)},
             outputs={"out": 4 * tn, "s1": 64, "s2": 64}, args=[("p", "x"), ("p", "y"), ("p", "out"), ("i", tn), ("p", "s1"), ("p", "s2")],
             expect=(384, 384, tl, ts), triton=True),
    ]


def time_case(mod, case, region, reps=15):
    """Median kernel time in microseconds (CUDA events), fresh buffers once."""
    bufs = {}
    for name, data in list(case["inputs"].items()) + [(n, b"\xab" * sz) for n, sz in case["outputs"].items()]:
        bufs[name] = (alloc(len(data)), len(data))
        htod(bufs[name][0], data)
    args = [(k, bufs[v][0] if k == "p" else v) for k, v in case["args"]]
    if region is not None:
        g, size = c.c_uint64(), c.c_size_t()
        check(cu.cuModuleGetGlobal_v2(c.byref(g), c.byref(size), mod, b"__gpuext_shared"), "__gpuext_shared")
        htod(g.value, struct.pack("<Q", region))
    e0, e1 = c.c_void_p(), c.c_void_p()
    check(cu.cuEventCreate(c.byref(e0), 0), "cuEventCreate")
    check(cu.cuEventCreate(c.byref(e1), 0), "cuEventCreate")
    times = []
    for _ in range(reps):
        check(cu.cuEventRecord(e0, None), "cuEventRecord")
        launch(mod, case["kernel"], case["grid"], case["block"], args)
        check(cu.cuEventRecord(e1, None), "cuEventRecord")
        check(cu.cuEventSynchronize(e1), "cuEventSynchronize")
        ms = c.c_float()
        check(cu.cuEventElapsedTime(c.byref(ms), e0, e1), "cuEventElapsedTime")
        times.append(ms.value * 1000)
    for p, _ in bufs.values():
        cu.cuMemFree_v2(c.c_uint64(p))
    times.sort()
    return times[len(times) // 2]


def main():
    """ptx_run.py ORIG INST REPORT MODE [REGION_BYTES]
    MODE exact: outputs identical, all counts of the counting probe exact;
    entryexit: outputs identical, entry/exit counts exact;
    outputs: outputs identical and the region written by the probes (real
    devrt/jit probes, REGION_BYTES of shared region), plus kernel timing."""
    orig_path, inst_path, report_path, mode = sys.argv[1:5]
    region_size = int(sys.argv[5]) if len(sys.argv) > 5 else REGION
    name = os.path.basename(inst_path)
    orig = load(orig_path)
    inst = load(inst_path)
    report = json.load(open(report_path))
    sites = {k["Name"]: k["Sites"] for k in report["Kernels"]}
    region = alloc(region_size)
    fails = passes = 0
    for case in cases():
        k = case["kernel"]
        if k not in sites:
            continue
        outs = [run_case(orig, case, None), run_case(inst, case, region, region_size)]
        problems = []
        if outs[0] != outs[1]:
            diff = next(i for i in range(min(len(outs[0]), len(outs[1]))) if outs[0][i] != outs[1][i]) if len(outs[0]) == len(outs[1]) else -1
            problems.append(f"outputs differ (first differing byte {diff})")
        if mode == "outputs":
            written = sum(1 for b in dtoh(region, region_size) if b)
            if written == 0:
                problems.append("the probes wrote nothing into the shared region")
            detail = f"{written} region bytes written"
        else:
            slots = struct.unpack("<64Q", dtoh(region, REGION))
            got = tuple(slots[1:5])
            want = case["expect"]
            check_all = mode == "exact" or case.get("triton")
            if check_all and got != want or not check_all and got[:2] != want[:2]:
                problems.append(f"counts entry/exit/load/store {got}, want {want}" + ("" if check_all else " (entry/exit only)"))
            per_kind = [0] * 5
            for s in sites[k]:
                if s["Index"] < 56:
                    per_kind[s["Kind"]] += slots[8 + s["Index"]]
            if all(s["Index"] < 56 for s in sites[k]) and tuple(per_kind[1:5]) != got:
                problems.append(f"per-site sums {tuple(per_kind[1:5])} != per-kind {got}")
            detail = f"entry/exit/load/store {got}"
        if problems:
            fails += 1
            print(f"FAIL {name} {k}: " + "; ".join(problems))
        else:
            passes += 1
            print(f"PASS {name} {k}: outputs identical ({len(outs[0])} bytes), {detail}, {len(sites[k])} sites")
    if mode == "outputs" and "imbalanced" in sites:
        big = dict(kernel="imbalanced", grid=132 * 8, block=256, inputs={}, outputs={"out": 4 * 132 * 8 * 256},
                   args=[("p", "out"), ("i", 200)])
        t0, t1 = time_case(orig, big, None), time_case(inst, big, region)
        print(f"TIME {name} imbalanced (1056x256 threads, 200..211200 iterations): original {t0:.1f} us, instrumented {t1:.1f} us, +{(t1 / t0 - 1) * 100:.1f}%")
    print(f"SUMMARY {name}: {passes} passed, {fails} failed")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
