"""In-process A/B of devrt's cost on a PyTorch loop.

The program runs under LD_PRELOAD=libgpuext-devrt.so with no collector and
a ring large enough for every record. It writes its own devrt control page
(the seqlock the collector would write: bpf/include/gpuext_abi.h, struct
gpuext_ctl) to switch between configurations between passes of the same
loop, in a different order each round, so that all of them run in one
process, on the same allocations, kernels and GPU clocks: the differences
between configurations are devrt's cost, free of the run-to-run noise that
separate processes show on a shared machine. "pass" (classes 0) is devrt
passing calls straight through, its interposition alone (a few ns a call on
the fake driver, `make bench`); the cross-process comparison with no devrt
at all is devrt_overhead.sh's.

The training step is train_model.py's TRAIN_MODEL (small: launch-bound;
large: GPU-bound). Passes are short (AB_STEPS training steps, 3;
AB_LAUNCHES launches, 2000)
and many, so that each pair of passes sees the same machine.

Usage: ab_overhead.py train|launch ROUNDS CONFIG... where CONFIG is
pass (pass2, ...: the same again, an A/A control of the method) | on/N[/G] (every class, 1 in N launches timed; 0: timing off;
no two timed calls of a thread closer than G us, 0 by default: devrt's own default is on/32/50000) |
nested/N[/G] (also the runtime's nested driver calls).
Prints one JSON line per configuration and a summary.
"""
import glob, json, mmap, os, random, statistics, struct, sys, time

import torch

from train_model import make_step

CTL = 4096                       # the control page follows the header page
GEN, CLASSES, SAMPLE, GAP = 8, 12, 16, 32  # offsets in struct gpuext_ctl
ALL, NESTED = 0x3F, 0x40


def control_page():
    rings = glob.glob(f"{os.environ.get('GPUEXT_DEVRT_DIR', '/dev/shm')}/gpuext-devrt-{os.getpid()}-*.ring")
    if len(rings) != 1:
        sys.exit(f"expected one devrt ring of pid {os.getpid()}, found {rings}: run under LD_PRELOAD")
    f = open(rings[0], "r+b")
    return mmap.mmap(f.fileno(), 2 * 4096)


def set_config(m, classes, sample, gap_us):
    gen = struct.unpack_from("<I", m, CTL + GEN)[0]
    struct.pack_into("<I", m, CTL + GEN, gen + 1)  # odd: writing
    struct.pack_into("<I", m, CTL + CLASSES, classes)
    struct.pack_into("<I", m, CTL + SAMPLE, sample)
    struct.pack_into("<I", m, CTL + GAP, gap_us)
    struct.pack_into("<I", m, CTL + GEN, gen + 2)  # even: done


def parse(cfg):
    if cfg.startswith("pass"):  # pass, pass2...: the same, an A/A control
        return 0, 0, 0
    kind, n, *gap = cfg.split("/")
    return (ALL | NESTED if kind == "nested" else ALL), int(n), int(gap[0]) if gap else 0


def train_loop():
    step = make_step()

    def run(n):
        for _ in range(n):
            step()
    return run, int(os.environ.get("AB_STEPS", 3)), 1, "ms/step", 1e3


def launch_loop():
    x = torch.zeros(1, device="cuda")

    def run(n):
        for _ in range(n):
            x.add_(1)
    return run, int(os.environ.get("AB_LAUNCHES", 2000)), 10, "us/launch", 1e6


def main():
    loop, rounds, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    run, n, settle, unit, scale = (train_loop if loop == "train" else launch_loop)()
    m = control_page()
    run(10 * n)  # warm-up: allocator, kernels, cuBLAS
    torch.cuda.synchronize()
    times = {c: [] for c in configs}
    rng = random.Random(1)
    for _ in range(rounds):
        order = configs[:]
        rng.shuffle(order)
        for c in order:
            set_config(m, *parse(c))
            run(settle)  # every thread sees the new generation
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            run(n)
            torch.cuda.synchronize()
            times[c].append((time.perf_counter() - t0) / n * scale)
    base = configs[0]
    drops = struct.unpack_from("<8Q", m, 256)  # struct gpuext_ring_hdr: drops[], records, timed
    records, timed = struct.unpack_from("<2Q", m, 320)
    if loop == "train":
        loop += "-" + os.environ.get("TRAIN_MODEL", "small")
    out = {"loop": loop, "unit": unit, "rounds": rounds, "n": n, "records": records, "timed": timed,
           "drops": list(drops), "configs": {}}
    boot = random.Random(2)
    for c in configs:
        # Paired: each round's ratio to the base configuration of the same round.
        ratios = [a / b - 1 for a, b in zip(times[c], times[base])]
        # 95% interval of the paired median: the rounds resampled 2000 times.
        meds = sorted(statistics.median(boot.choices(ratios, k=len(ratios))) for _ in range(2000))
        out["configs"][c] = {"median": statistics.median(times[c]), "best": min(times[c]),
                             "paired_median_pct": 100 * statistics.median(ratios),
                             "ci95_pct": [100 * meds[50], 100 * meds[1949]],
                             "times": [round(t, 4) for t in times[c]]}
    print(json.dumps(out))
    for c, r in out["configs"].items():
        print(f"  {loop} {c:10} median {r['median']:.4f} {unit}  best {r['best']:.4f}  "
              f"vs {base} (paired median) {r['paired_median_pct']:+.2f}% "
              f"[{r['ci95_pct'][0]:+.2f}, {r['ci95_pct'][1]:+.2f}]", file=sys.stderr)


main()
