"""A launch-bound PyTorch loop: N tiny in-place adds, timed. Prints one JSON
line with microseconds per launch (the median of five timed rounds)."""
import json, statistics, sys, time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
x = torch.zeros(1, device="cuda")
for _ in range(1000):  # warm-up: allocator, kernels, caches
    x.add_(1)
torch.cuda.synchronize()
rounds = []
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    rounds.append((time.perf_counter() - t0) / n * 1e6)
print(json.dumps({"pid": __import__("os").getpid(), "launches": 5 * n + 1000,
                  "us_per_launch": statistics.median(rounds), "rounds": rounds}))
