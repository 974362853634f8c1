// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/* ab_occexit: warp_occupancy (bpf/device) with thread 0's claim of the
 * bucket and its thread count made by its warp's exit instead of its
 * entry (timing: warps that exit before it in a new bucket are lost). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../bpf/device/gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "../../../bpf/device/occupancy.h"

SEC("gpu/entry/*")
__u64 occ_entry(const struct gpuext_dev_ctx *ctx)
{
	return bpf_get_globaltimer();
}

SEC("gpu/exit/*")
int occ_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer(), start = ctx->entry_ret;
	struct gpuext_dev_occ *o;

	if (!start || now < start)
		return 0;
	if (gpuext_first_thread()) {
		o = occ_slot(now);
		if (o)
			__sync_fetch_and_add(&o->threads, gpuext_block_threads());
	} else {
		o = occ_exit_slot(now, start);
	}
	if (o)
		__sync_fetch_and_add(&o->lane_ns, (now - start) * gpuext_active_lanes());
	return 0;
}
