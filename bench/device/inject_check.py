#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Device probe injection on a real GPU: the program side.

Loads a PTX kernel (scale: x[i] *= 2) through one of the loading paths
devrt intercepts (MODE: ptx = cuModuleLoadData, ptxex = cuModuleLoadDataEx,
fatbin = cuModuleLoadFatBinary of a fat binary built here, library =
cuLibraryLoadData + cuKernelGetFunction), runs it ROUNDS times over N floats,
checks every value, times LAUNCHES back-to-back cuLaunchKernel calls of a
one-block launch, and, when devrt patched the module (GPUEXT_DEVRT_DIR holds
a gpuext-devmaps-*.maps file), reads the region's first 8 bytes, which the
injecttest Patcher's Mark code stores from the GPU (into device memory, which
devrt copies into the file). Prints one JSON line.
Run it under LD_PRELOAD=libgpuext-devrt.so by devrt/devrttest's
TestInjectOnGPU (bench/device/inject_check.sh); no dependency but ctypes
(through cudrv.py).
"""
import ctypes
import glob
import json
import os
import struct
import sys
import time

from cudrv import check, cu, primary_context  # bench/device/cudrv.py

PTX = b"""//
// inject_check.py: scale
//
.version 8.0
.target sm_90
.address_size 64

.visible .entry scale(
	.param .u64 x,
	.param .u32 n
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .f32 %f<3>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [x];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.s32 %p1, %r5, %r1;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.s32 %rd3, %r5, 4;
	add.s64 %rd4, %rd2, %rd3;
	ld.global.f32 %f1, [%rd4];
	add.f32 %f2, %f1, %f1;
	st.global.f32 [%rd4], %f2;
DONE:
	ret;
}
"""


def fatbin(ptx, arch):
    """A fat binary of one PTX entry, laid out as devrt/src/fatbin.c reads."""
    payload = ptx + b"\0"
    payload += b"\0" * (-len(payload) % 8)
    # A PTX entry's header is 72 bytes: its options (offset 64) are the
    # offset and size of ptxas options, none here.
    entry = struct.pack("<HHIQIIHHIIIQQQII", 1, 0x0101, 72, len(payload), 0, 64,
                        0, 8, arch, 0, 0, 0x11, 0, 0, 0, 0) + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entry)) + entry


def main():
    mode = os.environ.get("MODE", "ptx")
    n = int(os.environ.get("N", 1 << 20))
    rounds = int(os.environ.get("ROUNDS", 10))
    launches = int(os.environ.get("LAUNCHES", 20000))

    def failed(e):
        print(json.dumps({"mode": mode, "ok": False, "error": str(e)}))
        sys.exit(1)

    def ck(r, what):
        try:
            check(r, what)
        except RuntimeError as e:
            failed(e)

    try:
        primary_context()
    except RuntimeError as e:
        failed(e)

    fn = ctypes.c_void_p()
    mod = ctypes.c_void_p()
    image = ctypes.create_string_buffer(fatbin(PTX, 90) if mode == "fatbin" else PTX)
    t0 = time.perf_counter_ns()
    if mode == "ptx":
        ck(cu.cuModuleLoadData(ctypes.byref(mod), image), "cuModuleLoadData")
    elif mode == "ptxex":
        ck(cu.cuModuleLoadDataEx(ctypes.byref(mod), image, 0, None, None), "cuModuleLoadDataEx")
    elif mode == "fatbin":
        ck(cu.cuModuleLoadFatBinary(ctypes.byref(mod), image), "cuModuleLoadFatBinary")
    elif mode == "library":
        ck(cu.cuLibraryLoadData(ctypes.byref(mod), image, None, None, 0, None, None, 0),
           "cuLibraryLoadData")
    load_ns = time.perf_counter_ns() - t0
    if mode == "library":
        kern = ctypes.c_void_p()
        ck(cu.cuLibraryGetKernel(ctypes.byref(kern), mod, b"scale"), "cuLibraryGetKernel")
        ck(cu.cuKernelGetFunction(ctypes.byref(fn), kern), "cuKernelGetFunction")
    else:
        ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"scale"), "cuModuleGetFunction")

    dptr = ctypes.c_uint64()
    ck(cu.cuMemAlloc_v2(ctypes.byref(dptr), ctypes.c_size_t(4 * n)), "cuMemAlloc")
    host = (ctypes.c_float * n)(*([1.0] * n))
    ck(cu.cuMemcpyHtoD_v2(dptr, host, ctypes.c_size_t(4 * n)), "cuMemcpyHtoD")
    px = ctypes.c_uint64(dptr.value)
    pn = ctypes.c_uint32(n)
    params = (ctypes.c_void_p * 2)(ctypes.addressof(px), ctypes.addressof(pn))
    blocks = (n + 255) // 256
    for _ in range(rounds):
        ck(cu.cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, None, params, None), "cuLaunchKernel")
    ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    ck(cu.cuMemcpyDtoH_v2(host, dptr, ctypes.c_size_t(4 * n)), "cuMemcpyDtoH")
    want = float(2 ** rounds)
    bad = sum(1 for v in host if v != want)

    # The launch call itself: one block over the first 256 floats.
    pn1 = ctypes.c_uint32(256)
    params1 = (ctypes.c_void_p * 2)(ctypes.addressof(px), ctypes.addressof(pn1))
    launch = cu.cuLaunchKernel
    t0 = time.perf_counter_ns()
    for _ in range(launches):
        launch(fn, 1, 1, 1, 256, 1, 1, 0, None, params1, None)
    t1 = time.perf_counter_ns()
    ck(cu.cuCtxSynchronize(), "cuCtxSynchronize")

    # The region is device memory that devrt copies into its file every
    # GPUEXT_DEVRT_PROBE_SYNC_MS (100 ms by default): wait for a copy.
    marks = []
    paths = sorted(glob.glob(os.path.join(os.environ.get("GPUEXT_DEVRT_DIR", "/nonexistent"),
                                          "gpuext-devmaps-*.maps")))
    deadline = time.monotonic() + 2.0
    while True:
        marks = []
        for path in paths:
            with open(path, "rb") as f:
                marks.append(struct.unpack("<Q", f.read(8))[0])
        if all(marks) or time.monotonic() > deadline:
            break
        time.sleep(0.01)

    if mode == "library":
        ck(cu.cuLibraryUnload(mod), "cuLibraryUnload")
    else:
        ck(cu.cuModuleUnload(mod), "cuModuleUnload")
    left = glob.glob(os.path.join(os.environ.get("GPUEXT_DEVRT_DIR", "/nonexistent"),
                                  "gpuext-devmaps-*.maps"))
    print(json.dumps({"mode": mode, "ok": bad == 0, "bad": bad, "value": want,
                      "load_ns": load_ns, "launch_ns": (t1 - t0) / launches,
                      "marks": marks, "maps_left": len(left)}))


if __name__ == "__main__":
    main()
