"""Writes variants of the shipped block_sched probe (bpf/device/block_sched.bpf.c)
that change only its ring, for the ablation's comparison (README.md):

  ab_bs128     its ring in 128 shards, not 32 (a fourth of the sampled
               blocks' claims queued on each shard's head)
  ab_bspad     its record padded to 112 bytes: 128-byte slots, one cache
               line a record, not 80-byte slots across lines
  ab_bs128pad  both
  ab_bsnorec   its record not written: the claim and the count (the
               record's fields, folded into the exit's return value,
               which nothing uses, go dead: ptxas drops them)
  ab_bsearly   every exit reads the end time before its count, not the
               last one after it (the read off the last warp's path)

Generated from the shipped source, so they follow it. Build (where clang
is), from the repository root:
  python3 bench/device/ablation/bs_variants.py .device/ablation-gen
  for v in ab_bs128 ab_bspad ab_bs128pad ab_bsnorec ab_bsearly; do
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


NOREC = ("gpuext_ring_output_at(&gx_block_ring, st->sm, st->index, &rec, sizeof(rec));\n\treturn 1;",
         "return (rec.kernel_id ^ rec.block ^ rec.start_ns ^ rec.end_ns ^ rec.smid ^ rec.threads ^ rec.weight ^\n"
         "\t\trec.grid_id ^ rec.grid_blocks ^ st->index) & 1;")


EARLY = [("\tif (__sync_fetch_and_add(&st->lanes_done", "\tend = bpf_get_globaltimer();\n\tif (__sync_fetch_and_add(&st->lanes_done"),
         ("\trec.end_ns = bpf_get_globaltimer();", "\trec.end_ns = end;"),
         ("\t__u64 threads = gpuext_block_threads();\n", "\t__u64 threads = gpuext_block_threads();\n\t__u64 end;\n")]


def variant(src, shards=32, pad=False, norec=False, early=False):
    """src with its ring in shards shards, with pad 128-byte records, with
    norec no record written, with early the end time read before the
    count."""
    subs = [("__uint(map_extra, 32);", f"__uint(map_extra, {shards});")]
    if pad:
        subs += [("struct gpuext_dev_block rec = {};", "struct ab_padrec rec = {};"),
                 ("__uint(max_entries, 80 << 18);", "__uint(max_entries, 128 << 18);"),
                 ('char LICENSE[] SEC("license")', PADREC + 'char LICENSE[] SEC("license")')]
    if norec:
        subs.append(NOREC)
    if early:
        subs += EARLY
    for a, b in subs:
        if src.count(a) != 1:
            sys.exit(f"bs_variants.py: block_sched.bpf.c no longer has one {a!r}: update the variants")
        src = src.replace(a, b)
    return src


def main(dst):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../..")
    src = open(os.path.join(root, "bpf/device/block_sched.bpf.c")).read()
    os.makedirs(dst, exist_ok=True)
    for name, kw in (("ab_bs128", dict(shards=128)), ("ab_bspad", dict(pad=True)),
                     ("ab_bs128pad", dict(shards=128, pad=True)), ("ab_bsnorec", dict(norec=True)),
                     ("ab_bsearly", dict(early=True))):
        open(os.path.join(dst, name + ".bpf.c"), "w").write(variant(src, **kw))
        print(os.path.join(dst, name + ".bpf.c"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
