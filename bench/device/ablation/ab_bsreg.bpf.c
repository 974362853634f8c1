// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsreg: block_sched with nothing stored or claimed at entry: thread 0
 * reads the start time into the register its exit gets (entry_ret), and
 * its exit stores it and the SM in the block's state before its count;
 * the record's index is the block's own (timing only: records of two
 * launches collide), standing for an index known without an atomic
 * (ab_bsvar.h). With AB_EARLY (ab_bsregearly) every exit reads the end
 * time before its count, not the last one after it. */
#include "ab_bsvar.h"

SEC("gpu/entry_thread/*")
__u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	if (!gpuext_first_thread())
		return GPUEXT_RING_NO_CLAIM;
	return bpf_get_globaltimer();
}
