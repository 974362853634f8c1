// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_addpad: as ab_add, the SMs' counters 128 bytes apart. */
#include "ablation.h"
AB_NOP_ENTRY
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct ab_sm_pad *s = bpf_map_lookup_elem(&ab_sm_pad, &zero);

	if (s)
		__sync_fetch_and_add(&s->sm.lane_ns, gpuext_active_lanes());
	return 0;
}
