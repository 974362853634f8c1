// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * sm_load.bpf.c - how much work each SM got: blocks and threads started on
 * it and the lane-nanoseconds its warps were resident (gx_sm, one struct
 * gpuext_dev_sm per SM). A warp's entry time is kept per SM by its hardware
 * warp slot (%warpid), unique among the warps resident on an SM. Receiver:
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

/* Entry time of the warp in each hardware warp slot of the SM. */
struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_extra, 256);
} gx_sm_warp_start SEC(".maps");

SEC("gpu/entry/*")
int sm_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0, slot = bpf_get_warp_id();
	struct gpuext_dev_sm *sm;
	__u64 *start;

	start = bpf_map_lookup_elem(&gx_sm_warp_start, &slot);
	if (start)
		*start = bpf_get_globaltimer();
	sm = bpf_map_lookup_elem(&gx_sm, &zero);
	if (!sm)
		return 0;
	__sync_fetch_and_add(&sm->threads, gpuext_active_lanes());
	if (gpuext_thread_linear() == 0)
		__sync_fetch_and_add(&sm->blocks, 1);
	return 0;
}

SEC("gpu/exit/*")
int sm_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0, slot = bpf_get_warp_id();
	struct gpuext_dev_sm *sm;
	__u64 *start, now;

	start = bpf_map_lookup_elem(&gx_sm_warp_start, &slot);
	sm = bpf_map_lookup_elem(&gx_sm, &zero);
	if (!start || !sm || !*start)
		return 0;
	now = bpf_get_globaltimer();
	__sync_fetch_and_add(&sm->lane_ns, (now - *start) * gpuext_active_lanes());
	return 0;
}
