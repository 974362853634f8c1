// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsnoring: block_sched without its ring record: the last warp reads
 * the block's start. */
#include "ablation.h"
AB_BLOCK_ENTRY
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_block_state *st = ab_block_slot(ctx);
	__u64 lanes = gpuext_active_lanes(), r;

	if (!st || __sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < gpuext_block_threads())
		return 0;
	r = st->start_ns;
	return r & 1;
}
