"""Runs devrt/jit's GPU check cases (ctypes, CUDA driver API; no Go here).

For every DIR/NAME.json written by `jitcheck gen`: load DIR/NAME.ptx with
cuModuleLoadDataEx (the driver JITs it; its error log is kept), allocate the
shared region (REGION=mapped: host memory mapped into the device, as devrt
does; REGION=device: cuMemAlloc), zero it and write the map headers, write its
device pointer into the module's __gpuext_shared (cuModuleGetGlobal +
cuMemcpyHtoD), copy the ctx inputs, fill out[] with the sentinel, launch
gx_test, then write RDIR/NAME.out.bin and RDIR/NAME.region.bin (or
RDIR/NAME.error). `jitcheck compare` judges them.

usage: jit_check.py DIR RDIR
"""
import ctypes as c
import glob
import json
import os
import sys
import time

from cudrv import check, cu, primary_context


def main(d, rd):
    os.makedirs(rd, exist_ok=True)
    mapped = os.environ.get("REGION", "mapped") == "mapped"
    dev, ctx = primary_context()
    ran = failed = 0
    for jf in sorted(glob.glob(os.path.join(d, "*.json"))):
        cf = json.load(open(jf))
        name = cf["name"]
        base = os.path.join(d, name)
        out = os.path.join(rd, name)
        for suffix in (".error", ".out.bin", ".region.bin"):
            if os.path.exists(out + suffix):
                os.remove(out + suffix)
        frees = []
        try:
            t0 = time.perf_counter()
            mod = c.c_void_p()
            log = c.create_string_buffer(65536)
            opts = (c.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, _SIZE_BYTES
            vals = (c.c_void_p * 2)(c.cast(log, c.c_void_p), c.c_void_p(len(log)))
            src = open(base + ".ptx", "rb").read() + b"\0"
            r = cu.cuModuleLoadDataEx(c.byref(mod), src, 2, opts, vals)
            if r != 0:
                raise RuntimeError(f"cuModuleLoadDataEx: {r}: {log.value.decode(errors='replace')[:3000]}")
            jit_ms = (time.perf_counter() - t0) * 1e3
            size = cf["region_size"]
            if mapped:
                host = c.c_void_p()
                check(cu.cuMemHostAlloc(c.byref(host), max(size, 8), 0x1 | 0x2), "cuMemHostAlloc")  # PORTABLE|DEVICEMAP
                frees.append(lambda h=host: cu.cuMemFreeHost(h))
                c.memset(host, 0, max(size, 8))
                for off, hx in cf["headers"]:
                    h = bytes.fromhex(hx)
                    c.memmove(host.value + off, h, len(h))
                region = c.c_uint64()
                check(cu.cuMemHostGetDevicePointer_v2(c.byref(region), host, 0), "cuMemHostGetDevicePointer")
                region = region.value
            else:
                p = c.c_uint64()
                check(cu.cuMemAlloc_v2(c.byref(p), max(size, 8)), "cuMemAlloc")
                frees.append(lambda q=p: cu.cuMemFree_v2(q))
                region = p.value
                check(cu.cuMemsetD8_v2(c.c_uint64(region), 0, max(size, 8)), "cuMemsetD8 region")
                for off, hx in cf["headers"]:
                    h = bytes.fromhex(hx)
                    check(cu.cuMemcpyHtoD_v2(c.c_uint64(region + off), h, len(h)), "cuMemcpyHtoD header")
            gptr, gsize = c.c_uint64(), c.c_size_t()
            check(cu.cuModuleGetGlobal_v2(c.byref(gptr), c.byref(gsize), mod, cf["shared"].encode()), "cuModuleGetGlobal")
            if gsize.value != 8:
                raise RuntimeError(f"__gpuext_shared has {gsize.value} bytes")
            check(cu.cuMemcpyHtoD_v2(gptr, c.byref(c.c_uint64(region)), 8), "cuMemcpyHtoD __gpuext_shared")
            n = cf["threads"]
            ctxs = open(base + ".ctx.bin", "rb").read()
            dctx, dout = c.c_uint64(), c.c_uint64()
            check(cu.cuMemAlloc_v2(c.byref(dctx), len(ctxs)), "cuMemAlloc ctxs")
            check(cu.cuMemAlloc_v2(c.byref(dout), 16 * n), "cuMemAlloc out")
            frees += [lambda q=dctx: cu.cuMemFree_v2(q), lambda q=dout: cu.cuMemFree_v2(q)]
            check(cu.cuMemcpyHtoD_v2(dctx, ctxs, len(ctxs)), "cuMemcpyHtoD ctxs")
            check(cu.cuMemsetD32_v2(dout, c.c_uint(cf["sentinel"] & 0xFFFFFFFF), 4 * n), "cuMemsetD32")
            f = c.c_void_p()
            check(cu.cuModuleGetFunction(c.byref(f), mod, cf["kernel"].encode()), "cuModuleGetFunction")
            a0, a1 = c.c_uint64(dout.value), c.c_uint64(dctx.value)
            params = (c.c_void_p * 2)(c.cast(c.byref(a0), c.c_void_p), c.cast(c.byref(a1), c.c_void_p))
            g, b = cf["grid"], cf["block"]
            check(cu.cuLaunchKernel(f, g[0], g[1], g[2], b[0], b[1], b[2], 0, None, params, None), "cuLaunchKernel")
            check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            buf = c.create_string_buffer(16 * n)
            check(cu.cuMemcpyDtoH_v2(buf, dout, 16 * n), "cuMemcpyDtoH out")
            open(out + ".out.bin", "wb").write(buf.raw)
            rb = c.create_string_buffer(max(size, 1))
            check(cu.cuMemcpyDtoH_v2(rb, c.c_uint64(region), size), "cuMemcpyDtoH region")
            open(out + ".region.bin", "wb").write(rb.raw[:size])
            check(cu.cuModuleUnload(mod), "cuModuleUnload")
            ran += 1
            print(f"RAN  {name} (module load {jit_ms:.1f} ms)")
        except Exception as e:  # noqa: BLE001 - every failure is reported per case
            failed += 1
            open(out + ".error", "w").write(str(e))
            print(f"ERR  {name}: {str(e)[:500]}")
            if "ILLEGAL" in str(e) or "LAUNCH_FAILED" in str(e):
                # the context is gone: start a fresh one for the next case
                cu.cuDevicePrimaryCtxReset(dev)
                check(cu.cuDevicePrimaryCtxRetain(c.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
                check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
                frees = []
        finally:
            for fr in frees:
                fr()
    print(f"jit_check.py: {ran} ran, {failed} failed to run (region {'mapped' if mapped else 'device'})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
