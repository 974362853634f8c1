// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/* ab_occnoclaim: warp_occupancy (bpf/device) whose entry's thread 0 adds
 * its block's threads to the bucket's slot without reading the slot's
 * epoch or claiming it (timing only: what the load thread 0's warp waits
 * for at entry costs). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../bpf/device/gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "../../../bpf/device/occupancy.h"

/* Returns the entry time, which the kernel keeps in a register for
 * occ_exit (ctx->entry_ret): no per-warp slot in memory. */
SEC("gpu/entry/*")
__u64 occ_entry(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	struct gpuext_dev_occ *o;

	if (!gpuext_first_thread())
		return now;
	{
		__u32 key = (now >> GPUEXT_DEV_OCC_SHIFT) & (GPUEXT_DEV_OCC_BUCKETS - 1);

		o = bpf_map_lookup_elem(&gx_occ, &key);
	}
	if (o)
		__sync_fetch_and_add(&o->threads, gpuext_block_threads());
	return now;
}

SEC("gpu/exit/*")
int occ_exit(const struct gpuext_dev_ctx *ctx)
{
	return occ_exit_add(ctx);
}
