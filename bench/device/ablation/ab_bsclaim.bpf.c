// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsclaim: ab_bsreg with block_sched's claim at entry instead of the
 * start time: thread 0 takes a ring index (its atomic not waited for at
 * entry) and returns it, and its exit stores that as the start time, so
 * waits for it there, as shipped (timing only: the records' times are
 * wrong, their index still the block's): what the claim alone costs an
 * entry that stores nothing. */
#include "ab_bsvar.h"

SEC("gpu/entry_thread/*")
__u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	if (!gpuext_first_thread())
		return GPUEXT_RING_NO_CLAIM;
	return gpuext_ring_claim(&ab_ring, bpf_get_sm_id());
}
