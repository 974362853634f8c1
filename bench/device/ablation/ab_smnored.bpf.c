// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_smnored: sm_load without its exit's reduction: thread 0 counts its
 * block at entry, every warp reads %globaltimer at entry and exit (what
 * the reduction per warp costs beside them). */
#include "ablation.h"
SEC("gpu/entry/*") __u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();

	ab_sm_count_block();
	return now;
}
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 start = ctx->entry_ret, now = bpf_get_globaltimer();

	return start && now > start;
}
