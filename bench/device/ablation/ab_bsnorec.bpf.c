// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsnorec: block_sched as shipped (bpf/device/block_sched.bpf.c: thread
 * 0's start and claim at entry, every warp's count, the last warp's
 * record built) but the record not written: its fields folded into the
 * exit's return value instead. */
#include "ablation.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 80 << 18);
	__uint(map_extra, 32);
} ab_ring SEC(".maps");

SEC("gpu/entry_thread/*")
__u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_block_state *st;
	__u64 sm;

	if (!gpuext_first_thread())
		return GPUEXT_RING_NO_CLAIM;
	st = ab_block_slot(ctx);
	if (!st)
		return GPUEXT_RING_NO_CLAIM;
	st->start_ns = bpf_get_globaltimer();
	sm = bpf_get_sm_id();
	st->sm = sm;
	return gpuext_ring_claim(&ab_ring, sm);
}

SEC("gpu/exit/*")
int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_block_state *st = ab_block_slot(ctx);
	__u64 lanes = gpuext_active_lanes();
	__u64 threads = gpuext_block_threads();

	if (!st)
		return 0;
	if (ctx->entry_ret != GPUEXT_RING_NO_CLAIM)
		st->index = ctx->entry_ret;
	if (__sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < threads)
		return 0;
	return (ctx->kernel_id ^ gpuext_block_linear() ^ st->start_ns ^ bpf_get_globaltimer() ^ st->sm ^ threads ^
		gpuext_block_weight() ^ gpuext_grid_id() ^ gpuext_grid_blocks() ^ st->index) & 1;
}
