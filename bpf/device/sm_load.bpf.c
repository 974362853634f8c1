// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * sm_load.bpf.c - how much work each SM got: blocks and threads started on
 * it and the lane-nanoseconds its warps were resident (gx_sm, one struct
 * gpuext_dev_sm per SM). The entry returns the warp's entry time, which the
 * kernel keeps in a register until its exit probe reads it as
 * ctx->entry_ret: nothing per warp goes through memory but the counts.
 * Receiver:
 * gpu.sm.blocks, gpu.sm.busy (imbalance across SMs).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_dev_sm);
	__uint(map_extra, 256); /* SMs */
} gx_sm SEC(".maps");

/* Returns the entry time (never 0), carried to sm_exit. */
SEC("gpu/entry/*")
__u64 sm_entry(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	__u32 zero = 0;
	struct gpuext_dev_sm *sm;

	sm = bpf_map_lookup_elem(&gx_sm, &zero);
	if (!sm)
		return now;
	__sync_fetch_and_add(&sm->threads, gpuext_active_lanes());
	if (gpuext_thread_linear() == 0)
		__sync_fetch_and_add(&sm->blocks, 1);
	return now;
}

SEC("gpu/exit/*")
int sm_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 start = ctx->entry_ret, now;
	__u32 zero = 0;
	struct gpuext_dev_sm *sm;

	sm = bpf_map_lookup_elem(&gx_sm, &zero);
	if (!sm || !start)
		return 0;
	now = bpf_get_globaltimer();
	if (now > start)
		__sync_fetch_and_add(&sm->lane_ns, (now - start) * gpuext_active_lanes());
	return 0;
}
