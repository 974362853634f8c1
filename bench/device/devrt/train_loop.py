"""A PyTorch training loop for overhead runs: a two-layer transformer
encoder on random tokens, fixed seed, deterministic algorithms, N steps per
round, five timed rounds. Prints one JSON line: the median milliseconds per
step, and the final loss with its exact bits (tracing must not change them).
Needs CUBLAS_WORKSPACE_CONFIG=:4096:8."""
import json, os, statistics, sys, time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.use_deterministic_algorithms(True)
layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
model = torch.nn.Sequential(torch.nn.Embedding(512, 256), torch.nn.TransformerEncoder(layer, 2),
                            torch.nn.Linear(256, 512)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randint(0, 512, (16, 128), device="cuda")
target = torch.randint(0, 512, (16, 128), device="cuda")


def step():
    opt.zero_grad(set_to_none=True)
    out = model(tokens)
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, 512), target.reshape(-1))
    loss.backward()
    opt.step()
    return loss


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
