"""A PyTorch + Triton workload whose CUDA activity is known, with a reference
taken in the same run by PyTorch itself (allocator statistics, and the
profiler's record of every kernel), for bench/device/compare.py.

Phases, each bracketed by wall-clock nanoseconds:
  alloc   - tensors allocated through PyTorch's caching allocator
  matmul  - N_MM fp32 1024x1024 matmuls (cuBLAS), under the profiler
  triton  - N_TRITON launches of a Triton vector-add kernel, under the profiler
"""
import json, os, sys, time

import torch
import triton

N_MM = int(os.environ.get("N_MM", "500"))
N_TRITON = int(os.environ.get("N_TRITON", "300"))


from triton_add import add_kernel  # noqa: E402 (bench/device is on sys.path)


def kernels(prof):
    """Kernel name -> launches, from the profiler's device-side activity."""
    out = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            out[e.name] = out.get(e.name, 0) + 1
    return out


res = {"pid": os.getpid(), "torch_version": torch.__version__, "triton_version": triton.__version__,
       "device": torch.cuda.get_device_name(0)}
torch.cuda.init()
time.sleep(1.0)  # let the collector probe this process's runtime

# Phase 1: allocations through the caching allocator.
t0 = time.time_ns()
keep = [torch.empty(sz, dtype=torch.uint8, device="cuda") for sz in (1 << 20, 3 << 20, 64 << 20, 512 << 20)]
torch.cuda.synchronize()
t1 = time.time_ns()
st = torch.cuda.memory_stats()
res["alloc"] = {"t0": t0, "t1": t1, "segments": st["segment.all.allocated"],
                "reserved_bytes": st["reserved_bytes.all.allocated"]}

# Phase 2: matmuls, profiled.
a = torch.randn(1024, 1024, device="cuda")
b = torch.randn(1024, 1024, device="cuda")
for _ in range(5):
    a @ b
torch.cuda.synchronize()
time.sleep(0.5)
prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
with prof:
    t0 = time.time_ns()
    for _ in range(N_MM):
        c = a @ b
    torch.cuda.synchronize()
    t1 = time.time_ns()
res["matmul"] = {"t0": t0, "t1": t1, "n": N_MM, "kernels": kernels(prof)}

# Phase 3: a Triton kernel, profiled.
n = 1 << 20
x = torch.rand(n, device="cuda"); y = torch.rand(n, device="cuda"); out = torch.empty_like(x)
grid = (triton.cdiv(n, 1024),)
add_kernel[grid](x, y, out, n, BLOCK=1024)  # compile and load outside the window
torch.cuda.synchronize()
time.sleep(0.5)
prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
with prof:
    t0 = time.time_ns()
    for _ in range(N_TRITON):
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
    t1 = time.time_ns()
assert torch.allclose(out, x + y)
res["triton"] = {"t0": t0, "t1": t1, "n": N_TRITON, "grid": grid[0], "kernels": kernels(prof)}
time.sleep(1.0)
print(json.dumps(res))
