// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsatom: block_sched's exit count alone: every warp adds its lanes to
 * its block's count in shared memory. */
#include "ablation.h"
AB_NOP_ENTRY
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_block_state *st = ab_block_slot(ctx);
	__u64 lanes = gpuext_active_lanes();

	if (!st || __sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < gpuext_block_threads())
		return 0;
	return 1;
}
