"""The training steps the overhead runs time (train_loop.py, ab_overhead.py),
chosen by TRAIN_MODEL:

  small (default): a two-layer transformer encoder (d_model 256) on 16 x 128
      random tokens, fp32. A step is ~300 small launches and the GPU waits
      for the host between them: launch-bound, the worst case for anything
      that adds host time to a launch.
  large: a six-layer encoder (d_model 1024, 16 heads) on 32 x 512 tokens,
      bf16 autocast, a vocabulary of 8192: a step as a real training job
      runs one, GPU-bound (the host enqueues ahead of the GPU).

Fixed seed, deterministic algorithms, so the final loss is bit-identical
with and without tracing. Needs CUBLAS_WORKSPACE_CONFIG=:4096:8."""
import os

import torch

MODELS = {
    # name: (d_model, heads, feed-forward, layers, vocab, batch, sequence, bf16)
    "small": (256, 4, 1024, 2, 512, 16, 128, False),
    "large": (1024, 16, 4096, 6, 8192, 32, 512, True),
}


def make_step(name=None, compile=False, with_model=False):
    """Builds the model on the GPU and returns step(), one training step
    that returns its loss (and the model with with_model). compile: the
    model goes through torch.compile (inductor's Triton kernels)."""
    name = name or os.environ.get("TRAIN_MODEL", "small")
    d, heads, ff, layers, vocab, batch, seq, bf16 = MODELS[name]
    torch.manual_seed(0)
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True)
    layer = torch.nn.TransformerEncoderLayer(d_model=d, nhead=heads, dim_feedforward=ff, batch_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(vocab, d), torch.nn.TransformerEncoder(layer, layers),
                                torch.nn.Linear(d, vocab)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    run = torch.compile(model) if compile else model
    tokens = torch.randint(0, vocab, (batch, seq), device="cuda")
    target = torch.randint(0, vocab, (batch, seq), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            out = run(tokens)
            loss = torch.nn.functional.cross_entropy(out.reshape(-1, vocab).float(), target.reshape(-1))
        loss.backward()
        opt.step()
        return loss
    return (step, model) if with_model else step
