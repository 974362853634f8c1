"""A PyTorch training loop for overhead runs (train_model.py's step), N
steps per round, five timed rounds. Prints one JSON line: the median
milliseconds per step, and the final loss with its exact bits (tracing must
not change them). Needs CUBLAS_WORKSPACE_CONFIG=:4096:8."""
import json, os, statistics, sys, time

import torch

from train_model import make_step

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
step = make_step()

for _ in range(10):  # warm-up
    step()
torch.cuda.synchronize()
rounds = []
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    torch.cuda.synchronize()
    rounds.append((time.perf_counter() - t0) / steps * 1e3)
print(json.dumps({"pid": os.getpid(), "steps": 10 + 5 * steps, "ms_per_step": statistics.median(rounds),
                  "rounds": rounds, "loss": loss.item(), "loss_hex": loss.float().item().hex()}))
