#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Live Triton kernels for bench/device/probes_check.sh: Triton compiles them
(into TRITON_CACHE_DIR, fresh per run) and loads the cubins, so under devrt
the modules are patched from the PTX Triton cached beside them (devrt/src/
triton.c). An elementwise axpy, and an fp16 GEMM whose operand tiles live
in dynamic shared memory laid out for wgmma's 128-byte swizzle on Hopper
(a probe's shared array must not move them off their 1,024-byte
boundary: devrt/ptx Link). Runs each once to check, then REPS timed
launches (CUDA events); prints one JSON line: the axpy's SHA-256 of the
output, median µs per launch, grid and launches, and the same for the
GEMM under "matmul"."""
import hashlib
import json
import os

import torch
import triton
import triton.language as tl


@triton.jit
def live_axpy(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * x + y, mask=mask)


@triton.jit
def live_matmul(a, b, c, M, N, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a + rm[:, None] * sam + (k + rk)[None, :]),
                      tl.load(b + (k + rk)[:, None] * sbk + rn[None, :]))
    tl.store(c + rm[:, None] * scm + rn[None, :], acc.to(tl.float16))


def timed(launch, reps):
    """The median µs of reps launches, each timed by CUDA events."""
    times = []
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        e0.record()
        launch()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1000)
    times.sort()
    return times[len(times) // 2]


def digest(t):
    return hashlib.sha256(t.cpu().numpy().tobytes()).hexdigest()


def matmul(reps):
    """The GEMM's output digest and timing: 2048^3 fp16, 128x128x64 tiles."""
    g = torch.Generator(device="cuda").manual_seed(7)
    m = n = k = 2048
    a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16, generator=g)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    grid = (m // 128, n // 128)

    def launch():
        live_matmul[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), BM=128, BN=128, BK=64)
    launch()
    torch.cuda.synchronize()
    out = digest(c)
    return {"sha256": out, "median_us": timed(launch, reps), "grid": grid[0] * grid[1], "launches": reps + 1}


def main():
    reps = int(os.environ.get("REPS", 21))
    n, block = 1 << 22, 1024
    x = torch.arange(n, device="cuda", dtype=torch.float32) * 0.25
    y = torch.full((n,), 3.0, device="cuda", dtype=torch.float32)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, block),)
    live_axpy[grid](x, y, out, n, 2.0, BLOCK=block)
    torch.cuda.synchronize()
    out_digest = digest(out)
    us = timed(lambda: live_axpy[grid](x, y, out, n, 2.0, BLOCK=block), reps)
    print(json.dumps({"sha256": out_digest, "median_us": us, "grid": grid[0], "launches": reps + 1,
                      "matmul": matmul(reps)}))


if __name__ == "__main__":
    main()
