// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * per_block.bpf.c - a per-block array (values in the block's shared
 * memory, zero when the block starts) through every operation a probe has
 * on it: lookups in and out of range, updates and their errors, 64- and
 * 32-bit reductions, a compare-and-swap and a fetching add whose last run
 * in each block copies the block's sums to the region. Its own object, so
 * that the classes programs keep no per-block area.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../../bpf/device/gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct blk {
	__u64 runs;
	__u64 lanes;
	__u32 w32;
	__u32 cas;
};

struct {
	__uint(type, GPUEXT_GPUMAP_PER_BLOCK_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct blk);
} t_blk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} t_bsum SEC(".maps");

/* r0 does not depend on the order the block's warps run in: every run
 * writes the same value to key 1, and only the sums leave the block. */
SEC("gpu/entry/*")
__u64 per_block(const struct gpuext_dev_ctx *ctx)
{
	__u32 k0 = 0, k1 = 1, k2 = 2, k3 = 3;
	struct blk v = { .runs = 7, .lanes = 9, .w32 = 11 };
	struct blk *b = bpf_map_lookup_elem(&t_blk, &k0), *b1;
	__u64 lanes = gpuext_active_lanes(), old, r = 0;
	__u32 was;

	if (!b)
		return 1;
	if (bpf_map_lookup_elem(&t_blk, &k2))
		r |= 2;
	r |= (__u64)(bpf_map_update_elem(&t_blk, &k1, &v, BPF_NOEXIST) & 0xff) << 8;
	r |= (__u64)(bpf_map_update_elem(&t_blk, &k2, &v, BPF_ANY) & 0xff) << 16;
	r |= (__u64)(bpf_map_update_elem(&t_blk, &k1, &v, 5) & 0xff) << 24;
	r |= (__u64)(bpf_map_update_elem(&t_blk, &k1, &v, BPF_ANY) & 0xff) << 32;
	b1 = bpf_map_lookup_elem(&t_blk, &k1);
	if (b1)
		r |= (b1->runs + b1->lanes + b1->w32) << 40;
	__sync_fetch_and_add(&b->runs, 1);
	gpuext_map_add(&t_blk, &k0, 2);
	__sync_fetch_and_add(&b->w32, 1);
	was = __sync_val_compare_and_swap(&b->cas, 0, 5);
	if (was != 0 && was != 5)
		r |= 4;
	if (gpuext_map_add(&t_blk, &k2, 1) == 0)
		r |= 8;
	old = __sync_fetch_and_add(&b->lanes, lanes);
	if (old + lanes == gpuext_block_threads()) {
		/* the block's last run: its sums go to the region */
		gpuext_map_add(&t_bsum, &k0, b->runs);
		gpuext_map_add(&t_bsum, &k1, b->w32);
		gpuext_map_add(&t_bsum, &k2, old + lanes);
		gpuext_map_add(&t_bsum, &k3, b->cas);
	}
	return r;
}
