// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_sm2: sm_load without its per-warp start slot (as if the exit had the
 * entry's time from a register): a reduction at entry and one at exit. */
#include "ablation.h"
SEC("gpu/entry/*") int ab_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_sm *s = bpf_map_lookup_elem(&ab_sm, &zero);

	if (!s)
		return 0;
	__sync_fetch_and_add(&s->threads, gpuext_active_lanes());
	if (gpuext_thread_linear() == 0)
		__sync_fetch_and_add(&s->blocks, 1);
	return 0;
}
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_sm *s = bpf_map_lookup_elem(&ab_sm, &zero);

	if (s)
		__sync_fetch_and_add(&s->lane_ns, bpf_get_globaltimer() * gpuext_active_lanes());
	return 0;
}
