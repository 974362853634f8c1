// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * warp_occupancy.bpf.c - warps resident per SM over time: for each SM and
 * ~1 ms bucket of %globaltimer (GPUEXT_DEV_OCC_SHIFT) the threads that
 * entered and the lane-nanoseconds of the warps that exited (gx_occ, a
 * hash of struct gpuext_dev_occ). lane_ns / 32 / bucket length is the mean
 * number of resident warps. Receiver: gpu.warp.occupancy.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct gpuext_dev_occ_key);
	__type(value, struct gpuext_dev_occ);
} gx_occ SEC(".maps");

struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_extra, 256);
} gx_occ_warp_start SEC(".maps");

SEC("gpu/entry/*")
int occ_entry(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	__u32 slot = bpf_get_warp_id();
	struct gpuext_dev_occ_key key = {
		.smid = bpf_get_sm_id(),
		.bucket = now >> GPUEXT_DEV_OCC_SHIFT,
	};
	__u64 *start;

	start = bpf_map_lookup_elem(&gx_occ_warp_start, &slot);
	if (start)
		*start = now;
	/* threads is the value's first field: map_add adds to it. */
	gpuext_map_add(&gx_occ, &key, gpuext_active_lanes());
	return 0;
}

SEC("gpu/exit/*")
int occ_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	__u32 slot = bpf_get_warp_id();
	struct gpuext_dev_occ_key key = {
		.smid = bpf_get_sm_id(),
		.bucket = now >> GPUEXT_DEV_OCC_SHIFT,
	};
	struct gpuext_dev_occ zero = {}, *occ;
	__u64 *start;

	start = bpf_map_lookup_elem(&gx_occ_warp_start, &slot);
	if (!start || !*start)
		return 0;
	occ = bpf_map_lookup_elem(&gx_occ, &key);
	if (!occ) {
		bpf_map_update_elem(&gx_occ, &key, &zero, BPF_NOEXIST);
		occ = bpf_map_lookup_elem(&gx_occ, &key);
		if (!occ)
			return 0;
	}
	__sync_fetch_and_add(&occ->lane_ns, (now - *start) * gpuext_active_lanes());
	return 0;
}
