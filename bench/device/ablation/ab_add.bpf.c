// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_add: exit adds to its SM's counter (24-byte stride, as sm_load), the
 * result unused; entry nothing. */
#include "ablation.h"
AB_NOP_ENTRY
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_sm *s = bpf_map_lookup_elem(&ab_sm, &zero);

	if (s)
		__sync_fetch_and_add(&s->lane_ns, gpuext_active_lanes());
	return 0;
}
