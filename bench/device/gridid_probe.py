# SPDX-License-Identifier: Apache-2.0
"""How %gridid moves from launch to launch: whether a context numbers its
launches densely (each launch the last + 1, whatever the kernel or the
stream), which a ring indexed by launch needs (devrt/jit README). Two
kernels write their %gridid to out[i]; launched in sequences of one
kernel, of both alternating, on two streams, with cooperative-size
grids; prints the distinct steps between consecutive launches (issue
order) of each sequence. Run two at once to see whether contexts of two
processes share a numbering. No argument."""
import ctypes as c
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cudrv import cu, check, primary_context  # noqa: E402

KERNEL = """
.visible .entry %s(.param .u64 p, .param .u32 i)
{
	.reg .b64 %%rd<4>;
	.reg .b32 %%r<3>;
	.reg .pred %%p<2>;
	mov.u32 %%r2, %%tid.x;
	mov.u32 %%r1, %%ctaid.x;
	or.b32 %%r2, %%r2, %%r1;
	setp.ne.u32 %%p1, %%r2, 0;
	@%%p1 ret;
	ld.param.u64 %%rd1, [p];
	ld.param.u32 %%r1, [i];
	mov.u64 %%rd2, %%gridid;
	mul.wide.u32 %%rd3, %%r1, 8;
	add.s64 %%rd1, %%rd1, %%rd3;
	st.global.u64 [%%rd1], %%rd2;
	ret;
}
"""
PTX = (".version 7.8\n.target sm_90\n.address_size 64\n" + KERNEL % "g1" + KERNEL % "g2").encode()

N = 400


def main():
    primary_context()
    mod = c.c_void_p()
    check(cu.cuModuleLoadData(c.byref(mod), c.c_char_p(PTX + b"\0")), "cuModuleLoadData")
    fn = {}
    for name in (b"g1", b"g2"):
        f = c.c_void_p()
        check(cu.cuModuleGetFunction(c.byref(f), mod, name), "cuModuleGetFunction")
        fn[name] = f
    out = c.c_uint64()
    check(cu.cuMemAlloc_v2(c.byref(out), N * 8), "cuMemAlloc")
    streams = []
    for _ in range(2):
        s = c.c_void_p()
        check(cu.cuStreamCreate(c.byref(s), 1), "cuStreamCreate")
        streams.append(s)

    def run(label, plan):
        """plan: (kernel, stream index, grid) per launch, in issue order."""
        check(cu.cuMemsetD8_v2(out, 0, N * 8), "cuMemset")
        for i, (k, si, grid) in enumerate(plan):
            p, idx = c.c_uint64(out.value), c.c_uint32(i)
            args = (c.c_void_p * 2)(c.cast(c.byref(p), c.c_void_p), c.cast(c.byref(idx), c.c_void_p))
            check(cu.cuLaunchKernel(fn[k], grid, 1, 1, 128, 1, 1, 0, streams[si], args, None), "cuLaunchKernel")
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        ids = (c.c_uint64 * len(plan))()
        check(cu.cuMemcpyDtoH_v2(ids, out, len(plan) * 8), "cuMemcpyDtoH")
        steps = collections.Counter(ids[i + 1] - ids[i] for i in range(len(plan) - 1))
        print(f"{label}: first {ids[0]} last {ids[len(plan) - 1]} distinct {len(set(ids))}/{len(plan)} "
              f"steps {dict(steps.most_common(6))}")

    run("g1 one stream", [(b"g1", 0, 8)] * N)
    run("g1 one stream again", [(b"g1", 0, 8)] * N)
    run("g1,g2 alternating", [(b"g1" if i % 2 else b"g2", 0, 8) for i in range(N)])
    run("two streams alternating", [(b"g1", i % 2, 8) for i in range(N)])
    run("grids 1..4096", [(b"g1", 0, 1 << (i % 13)) for i in range(N)])


if __name__ == "__main__":
    main()
