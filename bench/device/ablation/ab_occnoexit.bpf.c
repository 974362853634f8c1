// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_occnoexit: warp_occupancy (bpf/device) whose exit does nothing
 * (timing only: what every warp's two reductions at its exit cost; thread
 * 0's entry is warp_occupancy's). With AB_OCC_EXIT1 (ab_occexit1) the
 * exit makes one reduction, its lane-ns, not its threads too. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../bpf/device/gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "../../../bpf/device/occupancy.h"

SEC("gpu/entry/*")
__u64 occ_entry(const struct gpuext_dev_ctx *ctx)
{
	return occ_entry_time();
}

SEC("gpu/exit/*")
int occ_exit(const struct gpuext_dev_ctx *ctx)
{
#ifdef AB_OCC_EXIT1
	__u64 now = bpf_get_globaltimer(), start = ctx->entry_ret;
	__u64 lanes = gpuext_active_lanes() * gpuext_block_weight();
	struct gpuext_dev_occ *o;

	if (!start)
		return 0;
	o = occ_exit_slot(now, start);
	if (o)
		__sync_fetch_and_add(&o->lane_ns, -(lanes * occ_left(now)));
#endif
	return 0;
}
