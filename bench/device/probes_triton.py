#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A live Triton kernel for bench/device/probes_check.sh: Triton compiles it
(into TRITON_CACHE_DIR, fresh per run) and loads the cubin, so under devrt
the module is patched from the PTX Triton cached beside it (devrt/src/
triton.c). Runs it once to check, then REPS timed launches (CUDA events);
prints one JSON line: the SHA-256 of the output, the median µs per launch,
the grid and the launches."""
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


def main():
    reps = int(os.environ.get("REPS", 21))
    n, block = 1 << 22, 1024
    x = torch.arange(n, device="cuda", dtype=torch.float32) * 0.25
    y = torch.full((n,), 3.0, device="cuda", dtype=torch.float32)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, block),)
    live_axpy[grid](x, y, out, n, 2.0, BLOCK=block)
    torch.cuda.synchronize()
    digest = hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()
    times = []
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        e0.record()
        live_axpy[grid](x, y, out, n, 2.0, BLOCK=block)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1000)
    times.sort()
    print(json.dumps({"sha256": digest, "median_us": times[len(times) // 2], "grid": grid[0],
                      "launches": reps + 1}))


if __name__ == "__main__":
    main()
