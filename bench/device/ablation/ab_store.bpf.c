// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_store: entry stores the time in the warp's slot (sm_load's entry store); exit nothing. */
#include "ablation.h"
SEC("gpu/entry/*") int ab_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 slot = bpf_get_warp_id();
	__u64 *s = bpf_map_lookup_elem(&ab_slot, &slot);

	if (s)
		*s = bpf_get_globaltimer();
	return 0;
}
AB_NOP_EXIT
