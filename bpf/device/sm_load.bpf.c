// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * sm_load.bpf.c - how much work each SM got: blocks and threads that ran on
 * it and the lane-nanoseconds its warps were resident (gx_sm, one struct
 * gpuext_dev_sm per SM). The entry returns the warp's entry time, which the
 * kernel keeps in a register until its exit probe reads it as
 * ctx->entry_ret; it touches no memory. Each warp's exit adds its
 * lane-ns, and the exit of thread 0's lanes also counts its block and the
 * block's threads: at entry, those adds held thread 0's warp back before
 * its first instruction, and the block with it (vecadd 16M on an H100:
 * 1.08x -> 1.06x, earlyexits 1.34-1.35x -> 1.28-1.29x). On a short
 * memory-bound kernel each memory instruction a warp adds, global or
 * shared, costs 15-25% (bench/device/jit_ablation.sh). Every count is
 * weighed by gpuext_block_weight() (block sampling).
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

/* Returns the entry time (never 0), carried to sm_exit. */
SEC("gpu/entry/*")
__u64 sm_entry(const struct gpuext_dev_ctx *ctx)
{
	return bpf_get_globaltimer();
}

SEC("gpu/exit/*")
int sm_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 start = ctx->entry_ret, now, w = gpuext_block_weight();
	__u32 zero = 0;
	struct gpuext_dev_sm *sm;

	sm = bpf_map_lookup_elem(&gx_sm, &zero);
	if (!sm)
		return 0;
	/* Thread 0 leaves in exactly one exit of its block, led by it. */
	if (gpuext_first_thread()) {
		__sync_fetch_and_add(&sm->blocks, w);
		__sync_fetch_and_add(&sm->threads, w * gpuext_block_threads());
	}
	if (!start)
		return 0;
	now = bpf_get_globaltimer();
	if (now > start)
		__sync_fetch_and_add(&sm->lane_ns, (now - start) * gpuext_active_lanes() * w);
	return 0;
}
