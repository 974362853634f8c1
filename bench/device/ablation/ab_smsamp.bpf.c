// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_smsamp: sm_load on one block in 8 (block_linear % 8 == 0): the
 * other blocks' warps only test their block index. */
#include "ablation.h"
SEC("gpu/entry/*") __u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	__u64 now;

	if (gpuext_block_linear() & 7)
		return 0;
	now = bpf_get_globaltimer();
	ab_sm_count_block();
	return now;
}
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 start = ctx->entry_ret, now;
	__u32 zero = 0;
	struct gpuext_dev_sm *sm;

	if (!start)
		return 0;
	sm = bpf_map_lookup_elem(&ab_sm_pad, &zero);
	if (!sm)
		return 0;
	now = bpf_get_globaltimer();
	if (now > start)
		__sync_fetch_and_add(&sm->lane_ns, (now - start) * gpuext_active_lanes());
	return 0;
}
