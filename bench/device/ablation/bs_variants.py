"""Writes variants of the shipped block_sched probe (bpf/device/block_sched.bpf.c)
that change only its ring, for the ablation's comparison (README.md):

  ab_bs128     its ring in 128 shards, not 32 (a fourth of the sampled
               blocks' claims queued on each shard's head)
  ab_bspad     its record padded to 112 bytes: 128-byte slots, one cache
               line a record, not 80-byte slots across lines
  ab_bs128pad  both

Generated from the shipped source, so they follow it. Build (where clang
is), from the repository root:
  python3 bench/device/ablation/bs_variants.py .device/ablation-gen
  for v in ab_bs128 ab_bspad ab_bs128pad; do
    CPATH=$PWD/bpf/device DIR=.device/ablation-gen bpf/device/build.sh $v.bpf.c; done

usage: bs_variants.py DIR
"""
import os
import sys

PADREC = """struct ab_padrec {
	__u64 kernel_id, block, start_ns, end_ns;
	__u16 smid, threads;
	__u32 weight;
	__u64 grid_id, grid_blocks, pad[7];
};

"""


def variant(src, shards, pad):
    """src with its ring in shards shards and, with pad, 128-byte records."""
    subs = [("__uint(map_extra, 32);", f"__uint(map_extra, {shards});")]
    if pad:
        subs += [("struct gpuext_dev_block rec = {};", "struct ab_padrec rec = {};"),
                 ("__uint(max_entries, 80 << 18);", "__uint(max_entries, 128 << 18);"),
                 ('char LICENSE[] SEC("license")', PADREC + 'char LICENSE[] SEC("license")')]
    for a, b in subs:
        if src.count(a) != 1:
            sys.exit(f"bs_variants.py: block_sched.bpf.c no longer has one {a!r}: update the variants")
        src = src.replace(a, b)
    return src


def main(dst):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../..")
    src = open(os.path.join(root, "bpf/device/block_sched.bpf.c")).read()
    os.makedirs(dst, exist_ok=True)
    for name, shards, pad in (("ab_bs128", 128, False), ("ab_bspad", 32, True), ("ab_bs128pad", 128, True)):
        open(os.path.join(dst, name + ".bpf.c"), "w").write(variant(src, shards, pad))
        print(os.path.join(dst, name + ".bpf.c"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
