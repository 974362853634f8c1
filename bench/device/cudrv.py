# SPDX-License-Identifier: Apache-2.0
"""The CUDA driver as the GPU check scripts use it (ctypes, no other
dependency): the library, a result check that raises with the driver's
error name, and device 0's primary context made current."""
import ctypes as c

cu = c.CDLL("libcuda.so.1")


def check(r, what):
    """Raises RuntimeError naming what failed and the driver's error."""
    if r != 0:
        name = c.c_char_p()
        cu.cuGetErrorName(r, c.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else r}")


def primary_context():
    """cuInit, device 0, its primary context retained and made current:
    (device, context)."""
    check(cu.cuInit(0), "cuInit")
    dev = c.c_int()
    check(cu.cuDeviceGet(c.byref(dev), 0), "cuDeviceGet")
    ctx = c.c_void_p()
    check(cu.cuDevicePrimaryCtxRetain(c.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return dev, ctx
