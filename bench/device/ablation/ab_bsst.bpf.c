// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsst: ab_bsreg with block_sched's entry stores: thread 0 looks up the
 * block's state and stores its start time and SM there at entry, as
 * shipped, but claims nothing (the index is the block's own, as in
 * ab_bsreg): what the entry's lookup and stores cost without the claim. */
#define AB_ENTRY_STORES 1
#include "ab_bsvar.h"

SEC("gpu/entry_thread/*")
__u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_block_state *st;

	if (!gpuext_first_thread())
		return GPUEXT_RING_NO_CLAIM;
	st = bpf_map_lookup_elem(&ab_blocks, &zero);
	if (!st)
		return GPUEXT_RING_NO_CLAIM;
	st->start_ns = bpf_get_globaltimer();
	st->sm = bpf_get_sm_id();
	return 0;
}
