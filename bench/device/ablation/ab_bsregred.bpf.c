// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsregred: ab_bsreg with counts of blocks started and records written
 * that no one waits for: thread 0's entry adds 1 to its SM's padded
 * counter (a reduction: no value returned) before it reads the start
 * time, and the last warp adds 1 to another of its words after the
 * record (ab_bsvar.h's AB_WRITTEN): what a reader's started and written
 * counts would cost a ring with no claim. */
#define AB_WRITTEN 1
#include "ab_bsvar.h"

SEC("gpu/entry_thread/*")
__u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_sm *sm;

	if (!gpuext_first_thread())
		return GPUEXT_RING_NO_CLAIM;
	sm = bpf_map_lookup_elem(&ab_sm_pad, &zero);
	if (sm)
		__sync_fetch_and_add(&sm->blocks, 1);
	return bpf_get_globaltimer();
}
