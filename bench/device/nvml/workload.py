#!/usr/bin/env python3
"""A steady GPU load for the NVML comparison: fp16 matmuls for N seconds."""
import os
import sys
import time

import torch

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
print(f"pid {os.getpid()}", flush=True)
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn_like(a)
end = time.time() + secs
while time.time() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
print("done", flush=True)
