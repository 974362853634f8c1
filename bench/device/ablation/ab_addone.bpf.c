// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_addone: as ab_add, one counter for the whole GPU. */
#include "ablation.h"
AB_NOP_ENTRY
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	__u64 *s = bpf_map_lookup_elem(&ab_one, &zero);

	if (s)
		__sync_fetch_and_add(s, gpuext_active_lanes());
	return 0;
}
