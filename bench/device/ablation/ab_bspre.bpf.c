// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bspre: block_sched with its record prepared at entry: thread 0 fills
 * every field but the end time in the block's shared state (with its
 * start, SM and claim), so that the last warp reads the time, stores it
 * there and copies the record from shared memory: no block index, grid
 * or launch reads on the block's last path (the count still reads the
 * block's dimensions, and the last warp the claimed index). */
#include "ablation.h"

struct ab_pre {
	struct gpuext_dev_block rec;
	__u64 index;
	__u32 lanes_done;
	__u32 pad;
};

struct {
	__uint(type, GPUEXT_GPUMAP_PER_BLOCK_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ab_pre);
} ab_pre SEC(".maps");

AB_RING;

SEC("gpu/entry_thread/*")
__u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct ab_pre *st;
	__u64 sm;

	if (!gpuext_first_thread())
		return GPUEXT_RING_NO_CLAIM;
	st = bpf_map_lookup_elem(&ab_pre, &zero);
	if (!st)
		return GPUEXT_RING_NO_CLAIM;
	st->rec.start_ns = bpf_get_globaltimer();
	sm = bpf_get_sm_id();
	st->rec.smid = sm;
	st->rec.kernel_id = ctx->kernel_id;
	st->rec.block = gpuext_block_linear();
	st->rec.threads = gpuext_block_threads();
	st->rec.weight = gpuext_block_weight();
	st->rec.grid_id = gpuext_grid_id();
	st->rec.grid_blocks = gpuext_grid_blocks();
	return gpuext_ring_claim(&ab_ring, sm);
}

SEC("gpu/exit/*")
int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct ab_pre *st;
	__u64 lanes = gpuext_active_lanes();

	st = bpf_map_lookup_elem(&ab_pre, &zero);
	if (!st)
		return 0;
	if (ctx->entry_ret != GPUEXT_RING_NO_CLAIM)
		st->index = ctx->entry_ret;
	if (__sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < gpuext_block_threads())
		return 0;
	st->rec.end_ns = bpf_get_globaltimer();
	gpuext_ring_output_at(&ab_ring, st->rec.smid, st->index, &st->rec, sizeof(st->rec));
	return 1;
}
