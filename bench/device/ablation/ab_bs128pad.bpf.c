// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bs128pad: ab_bs128 and ab_bspad */
#include "ablation.h"

struct ab_padrec {
	__u64 kernel_id, block, start_ns, end_ns;
	__u16 smid, threads;
	__u32 weight;
	__u64 grid_id, grid_blocks, pad[7];
};

struct {
	__uint(type, GPUEXT_GPUMAP_PER_BLOCK_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_dev_block_state);
} ab_blk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 128 << 18);
	__uint(map_extra, 128);
} ab_ring SEC(".maps");

/* In every thread (gpu/entry_thread): only thread 0 claims, and no shfl
 * of a leader's result makes a warp wait for the claim's atomic. */
SEC("gpu/entry_thread/*")
__u64 block_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_block_state *st;
	__u64 sm;

	/* Thread 0 starts with its block (all of a block's warps are placed
	 * at once); plain stores to shared memory, no warp waits. */
	if (!gpuext_first_thread())
		return GPUEXT_RING_NO_CLAIM;
	st = bpf_map_lookup_elem(&ab_blk, &zero);
	if (!st)
		return GPUEXT_RING_NO_CLAIM;
	st->start_ns = bpf_get_globaltimer();
	/* one read: the claim's shard and the record's (the SM can change
	 * with preemption between two reads) */
	sm = bpf_get_sm_id();
	st->sm = sm;
	return gpuext_ring_claim(&ab_ring, sm);
}

SEC("gpu/exit/*")
int block_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_block_state *st;
	struct ab_padrec rec = {};
	__u64 lanes = gpuext_active_lanes();
	__u64 threads = gpuext_block_threads();

	st = bpf_map_lookup_elem(&ab_blk, &zero);
	if (!st)
		return 0;
	/* thread 0 (its exit's leader: the lowest lane) publishes its claim,
	 * before its count releases it to the last exit */
	if (ctx->entry_ret != GPUEXT_RING_NO_CLAIM)
		st->index = ctx->entry_ret;
	/* fetching: the last exit sees thread 0's start and claim */
	if (__sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < threads)
		return 0;
	rec.kernel_id = ctx->kernel_id;
	rec.block = gpuext_block_linear();
	rec.start_ns = st->start_ns;
	rec.end_ns = bpf_get_globaltimer();
	rec.smid = st->sm;
	rec.threads = threads;
	rec.weight = gpuext_block_weight();
	rec.grid_id = gpuext_grid_id();
	rec.grid_blocks = gpuext_grid_blocks();
	gpuext_ring_output_at(&ab_ring, st->sm, st->index, &rec, sizeof(rec));
	return 1;
}
