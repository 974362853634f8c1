// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_smblk: sm_load per block: thread 0 stamps the block's start in its
 * shared state (as block_sched), every warp adds its lanes there, and the
 * block's last warp makes the SM's three reductions (blocks, threads,
 * block ns x threads): one warp per block touches global memory. */
#include "ablation.h"
AB_BLOCK_ENTRY
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_block_state *st = ab_block_slot(ctx);
	__u64 lanes = gpuext_active_lanes(), threads = gpuext_block_threads(), now, start;
	__u32 zero = 0;
	struct gpuext_dev_sm *sm;

	if (!st || __sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < threads)
		return 0;
	start = st->start_ns;
	now = bpf_get_globaltimer();
	sm = bpf_map_lookup_elem(&ab_sm_pad, &zero);
	if (!sm || !start || now < start)
		return 0;
	__sync_fetch_and_add(&sm->blocks, 1);
	__sync_fetch_and_add(&sm->threads, threads);
	__sync_fetch_and_add(&sm->lane_ns, (now - start) * threads);
	return 1;
}
