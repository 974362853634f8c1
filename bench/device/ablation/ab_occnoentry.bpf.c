// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/* ab_occnoentry: warp_occupancy (bpf/device) whose entry only returns the
 * time (timing only: what thread 0's count at entry costs). */
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
	return bpf_get_globaltimer();
}

SEC("gpu/exit/*")
int occ_exit(const struct gpuext_dev_ctx *ctx)
{
	return occ_exit_add(ctx);
}
