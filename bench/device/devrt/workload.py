"""The device workload of bench/device/devrt.sh: a deterministic PyTorch
training loop and a Triton kernel, each with a reference of its own GPU
times taken in the same run, and a hash of everything it computed.

Phases (their windows in CLOCK_MONOTONIC ns, the clock devrt's records use):
  train    - STEPS steps of a small transformer block + MLP head (AdamW,
             fixed seed, deterministic algorithms); the last PROF_STEPS under
             torch.profiler, whose CUDA kernel activity is the reference
  triton   - a Triton vector add at three sizes, N_TRITON launches each,
             under torch.profiler (CUPTI's kernel times: the reference), and
             every launch bracketed by torch.cuda.Event pairs too (a second
             reference, which also holds the launcher's time on the host)

Prints one JSON line: hashes of the losses, the final parameters and the
Triton outputs (bit-identical runs have equal hashes), wall times, the
windows, and the reference times.
"""
import hashlib, json, os, struct, sys, tempfile, time

# Deterministic cuBLAS: must be set before CUDA initialises.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch
import triton

STEPS = int(os.environ.get("STEPS", "300"))
PROF_STEPS = int(os.environ.get("PROF_STEPS", "5"))
N_TRITON = int(os.environ.get("N_TRITON", "200"))
SIZES = (1 << 16, 1 << 20, 1 << 24)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from triton_add import add_kernel  # noqa: E402


class Model(torch.nn.Module):
    def __init__(self, d=256, heads=4, ff=1024, vocab=512):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.block = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True)
        self.head = torch.nn.Sequential(torch.nn.Linear(d, ff), torch.nn.GELU(), torch.nn.Linear(ff, vocab))

    def forward(self, tokens):
        return self.head(self.block(self.embed(tokens)))


def now():
    return time.monotonic_ns()  # CLOCK_MONOTONIC, as devrt's records


def profiler_kernels(prof):
    """The profiler's CUDA kernels in start order: name, start and duration (ns)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    out = [{"name": e["name"], "ts_ns": round(e["ts"] * 1000), "dur_ns": round(e["dur"] * 1000)}
           for e in trace.get("traceEvents", []) if e.get("cat") == "kernel"]
    return sorted(out, key=lambda k: k["ts_ns"])


def train(res):
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    model = Model().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(1)
    data = torch.randint(0, 512, (STEPS, 32, 64), device="cuda", generator=gen)
    losses = []

    def step(i):
        tokens = data[i]
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    torch.cuda.synchronize()
    t0 = now()
    for i in range(STEPS - PROF_STEPS):
        losses.append(step(i))
    torch.cuda.synchronize()
    t1 = now()
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
    with prof:
        p0 = now()
        for i in range(STEPS - PROF_STEPS, STEPS):
            losses.append(step(i))
        torch.cuda.synchronize()
        p1 = now()
    h = hashlib.sha256()
    for loss in losses:
        h.update(struct.pack("<f", loss.item()))
    res["loss_hash"] = h.hexdigest()
    res["final_loss"] = losses[-1].item()
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    res["params_hash"] = h.hexdigest()
    res["train"] = {"t0": t0, "t1": t1, "steps": STEPS - PROF_STEPS, "wall_ms": (t1 - t0) / 1e6,
                    "ms_per_step": (t1 - t0) / 1e6 / (STEPS - PROF_STEPS)}
    res["profiled"] = {"t0": p0, "t1": p1, "steps": PROF_STEPS, "kernels": profiler_kernels(prof)}


def triton_phase(res):
    h = hashlib.sha256()
    runs = []
    for n in SIZES:
        gen = torch.Generator(device="cuda").manual_seed(n)
        x = torch.rand(n, device="cuda", generator=gen)
        y = torch.rand(n, device="cuda", generator=gen)
        out = torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(N_TRITON)]
        add_kernel[grid](x, y, out, n, BLOCK=1024)  # compile and load outside the window
        torch.cuda.synchronize()
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        with prof:
            t0 = now()
            for s, e in events:
                s.record()
                add_kernel[grid](x, y, out, n, BLOCK=1024)
                e.record()
            torch.cuda.synchronize()
            t1 = now()
        assert torch.equal(out, x + y)
        h.update(out.cpu().numpy().tobytes())
        runs.append({"n": n, "t0": t0, "t1": t1, "ref_ms": [s.elapsed_time(e) for s, e in events],
                     "profiler_ns": [k["dur_ns"] for k in profiler_kernels(prof) if "add_kernel" in k["name"]]})
    res["triton_hash"] = h.hexdigest()
    res["triton"] = runs


res = {"pid": os.getpid(), "torch_version": torch.__version__, "triton_version": triton.__version__,
       "device": torch.cuda.get_device_name(0), "devrt": "LD_PRELOAD" in os.environ,
       "sample": os.environ.get("GPUEXT_DEVRT_SAMPLE", "")}
torch.cuda.init()
train(res)
triton_phase(res)
print(json.dumps(res))
sys.stdout.flush()
