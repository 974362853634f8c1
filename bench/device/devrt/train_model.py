"""The training step the overhead runs time (train_loop.py, ab_overhead.py):
a two-layer transformer encoder on random tokens, fixed seed, deterministic
algorithms. Needs CUBLAS_WORKSPACE_CONFIG=:4096:8."""
import torch


def make_step():
    """Builds the model on the GPU and returns step(), one training step
    that returns its loss."""
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
    return step
