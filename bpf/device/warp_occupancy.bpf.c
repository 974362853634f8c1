// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * warp_occupancy.bpf.c - warps resident per SM over time: for each SM and
 * ~1 ms bucket of %globaltimer the threads that entered and the
 * lane-nanoseconds of the warps that exited (gx_occ: per SM, a round robin
 * of GPUEXT_DEV_OCC_BUCKETS struct gpuext_dev_occ of cumulative counts; see
 * gpuext_abi.h and occ_mark). lane_ns / 32 / bucket length is the mean
 * number of resident warps. Thread 0 counts its block's threads at entry
 * and marks its bucket's slot, so the other warps touch memory only at
 * their exit, with one reduction; no probe reads global memory or waits
 * for it (sm_load counts at thread 0's exit instead: it has no slot to
 * mark). Counts are weighed by gpuext_block_weight() (block sampling).
 * Receiver: gpu.warp.occupancy.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "occupancy.h"

/* Returns the entry time, which the kernel keeps in a register for
 * occ_exit (ctx->entry_ret): no per-warp slot in memory. */
SEC("gpu/entry/*")
__u64 occ_entry(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	struct gpuext_dev_occ *o;

	if (!gpuext_first_thread())
		return now;
	o = occ_mark(now >> GPUEXT_DEV_OCC_SHIFT);
	if (o)
		__sync_fetch_and_add(&o->threads, gpuext_block_weight() * gpuext_block_threads());
	return now;
}

SEC("gpu/exit/*")
int occ_exit(const struct gpuext_dev_ctx *ctx)
{
	return occ_exit_add(ctx);
}
