// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * warp_occupancy.bpf.c - warps resident per SM over time: for each SM and
 * ~1 ms bucket of %globaltimer the threads that became resident (entered
 * less exited) and their lane-nanoseconds in the bucket from their entry
 * or exit to its end, entries less exits (gx_occ: per SM, a round robin
 * of GPUEXT_DEV_OCC_BUCKETS struct gpuext_dev_occ of cumulative counts; see
 * gpuext_abi.h and occ_mark). The reader adds the threads resident
 * through the bucket (from the buckets before) times its length: over 32
 * and the bucket length, the mean number of resident warps, whether a
 * warp lived a microsecond or a second. Thread 0 counts its block's
 * threads at entry and marks its bucket's slot, so the other warps touch
 * memory only at their exit, with two reductions; no probe reads global
 * memory or waits for it (sm_load counts at thread 0's exit instead: it
 * has no slot to mark). Counts are weighed by gpuext_block_weight() (block
 * sampling).
 * Receiver: gpu.warp.occupancy.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "occupancy.h"

SEC("gpu/entry/*")
__u64 occ_entry(const struct gpuext_dev_ctx *ctx)
{
	return occ_entry_time();
}

SEC("gpu/exit/*")
int occ_exit(const struct gpuext_dev_ctx *ctx)
{
	return occ_exit_add(ctx);
}
