// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_occnoexit: warp_occupancy (bpf/device) whose exit does nothing
 * (timing only: what every warp's two reductions at its exit cost; thread
 * 0's entry is warp_occupancy's). */
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
	return 0;
}
