// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_load: exit loads the warp's slot and returns from it (a dependent load); entry nothing. */
#include "ablation.h"
AB_NOP_ENTRY
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 slot = bpf_get_warp_id();
	__u64 *s = bpf_map_lookup_elem(&ab_slot, &slot);

	return s ? (*(volatile __u64 *)s & 1) : 0;
}
