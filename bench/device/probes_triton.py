#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Live Triton kernels for bench/device/probes_check.sh: Triton compiles them
(into TRITON_CACHE_DIR, fresh per run) and loads the cubins, so under devrt
the modules are patched from the PTX Triton cached beside them (devrt/src/
triton.c). An elementwise axpy, and an fp16 GEMM whose operand tiles live
in dynamic shared memory laid out for wgmma's 128-byte swizzle on Hopper
(a probe's shared array must not move them off their 1,024-byte
boundary: devrt/ptx Link), and a flash-style attention forward (two
GEMMs a step, an online softmax). Runs each once to check, then REPS timed
launches (CUDA events); prints one JSON line: the axpy's SHA-256 of the
output, median µs per launch, grid and launches, and the same for the
GEMM under "matmul" and the attention under "attention"."""
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


# Attention forward, flash style: a block of BM queries of one head
# against every key in BN steps, the softmax kept online.
@triton.jit
def live_attn(q, k, v, o, sm_scale, n_ctx, stride_h, stride_m,
              BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    start = tl.program_id(0) * BM
    base = tl.program_id(1) * stride_h
    rm = start + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    qb = tl.load(q + base + rm[:, None] * stride_m + rd[None, :])
    m_i = tl.full([BM], float("-inf"), tl.float32)
    l_i = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n in range(0, n_ctx, BN):
        kt = tl.load(k + base + (n + rn)[None, :] * stride_m + rd[:, None])
        s = tl.dot(qb, kt) * sm_scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        vb = tl.load(v + base + (n + rn)[:, None] * stride_m + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), vb)
        m_i = m_new
    tl.store(o + base + rm[:, None] * stride_m + rd[None, :], (acc / l_i[:, None]).to(tl.float16))


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


def run(launch, out, blocks, reps):
    """Launches once, digests out (the SHA-256 of its bytes), then times reps
    launches: the JSON fields probes_check.py reads."""
    launch()
    torch.cuda.synchronize()
    sha = hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()
    return {"sha256": sha, "median_us": timed(launch, reps), "grid": blocks, "launches": reps + 1}


def matmul(reps):
    """The GEMM: 2048^3 fp16, 128x128x64 tiles."""
    g = torch.Generator(device="cuda").manual_seed(7)
    m = n = k = 2048
    a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16, generator=g)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    grid = (m // 128, n // 128)
    return run(lambda: live_matmul[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), BM=128, BN=128, BK=64),
               c, grid[0] * grid[1], reps)


def attention(reps):
    """The attention kernel: 16 heads of 2048 tokens, head size 64, fp16;
    blocks of 128 queries, 64 keys a step."""
    g = torch.Generator(device="cuda").manual_seed(11)
    h, n, d = 16, 2048, 64
    q, k, v = (torch.randn(h, n, d, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
    o = torch.empty_like(q)
    grid = (n // 128, h)
    return run(lambda: live_attn[grid](q, k, v, o, d ** -0.5, n, q.stride(0), q.stride(1), BM=128, BN=64, D=d),
               o, grid[0] * grid[1], reps)


def main():
    reps = int(os.environ.get("REPS", 21))
    n, block = 1 << 22, 1024
    x = torch.arange(n, device="cuda", dtype=torch.float32) * 0.25
    y = torch.full((n,), 3.0, device="cuda", dtype=torch.float32)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, block),)
    res = run(lambda: live_axpy[grid](x, y, out, n, 2.0, BLOCK=block), out, grid[0], reps)
    res.update(matmul=matmul(reps), attention=attention(reps))
    print(json.dumps(res))


if __name__ == "__main__":
    main()
