// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * sm_load.bpf.c - how much work each SM got: the blocks and threads that
 * ran on it and the lane-nanoseconds its warps were resident (gx_sm, one
 * struct gpuext_dev_sm per SM). The entry returns the warp's entry time,
 * which the kernel keeps in a register until its exit probe reads it as
 * ctx->entry_ret. Each exit adds its lanes and lane-ns to the block's sums
 * in shared memory (gx_sm_blk); the exit that completes the block's
 * threads adds the block to its SM's totals. One global update per block,
 * not one per warp: a short memory-bound kernel issues only a few memory
 * instructions per warp, and one more per warp cost it 15-25%.
 * Receiver: gpu.sm.blocks, gpu.sm.busy (imbalance across SMs).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_dev_sm);
	__uint(map_extra, 256); /* SMs */
} gx_sm SEC(".maps");

struct {
	__uint(type, GPUEXT_GPUMAP_PER_BLOCK_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_dev_block_sum);
} gx_sm_blk SEC(".maps");

/* Returns the entry time (never 0), carried to sm_exit. */
SEC("gpu/entry/*")
__u64 sm_entry(const struct gpuext_dev_ctx *ctx)
{
	return bpf_get_globaltimer();
}

SEC("gpu/exit/*")
int sm_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 start = ctx->entry_ret, now = bpf_get_globaltimer();
	__u64 lanes = gpuext_active_lanes(), threads;
	struct gpuext_dev_block_sum *b;
	struct gpuext_dev_sm *sm;
	__u32 zero = 0;

	b = bpf_map_lookup_elem(&gx_sm_blk, &zero);
	if (!b)
		return 0;
	if (start && now > start)
		__sync_fetch_and_add(&b->lane_ns, (now - start) * lanes);
	/* fetching: ordered after the add above, and the last exit sees
	 * every other warp's */
	threads = __sync_fetch_and_add(&b->lanes, lanes) + lanes;
	if (threads < gpuext_block_threads())
		return 0;
	sm = bpf_map_lookup_elem(&gx_sm, &zero);
	if (!sm)
		return 0;
	__sync_fetch_and_add(&sm->blocks, 1);
	__sync_fetch_and_add(&sm->threads, threads);
	__sync_fetch_and_add(&sm->lane_ns, b->lane_ns);
	return 0;
}
