// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bs128: block_sched as shipped (bpf/device/block_sched.bpf.c) with its ring in 128 shards, not 32: a fourth of the sampled blocks' claims queued on each shard's head */
#include "ablation.h"

struct {
	__uint(type, GPUEXT_GPUMAP_PER_BLOCK_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_dev_block_state);
} ab_blk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 80 << 18);
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
	struct gpuext_dev_block rec = {};
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
