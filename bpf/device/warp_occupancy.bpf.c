// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * warp_occupancy.bpf.c - warps resident per SM over time: for each SM and
 * ~1 ms bucket of %globaltimer the threads that entered and the
 * lane-nanoseconds of the warps that exited (gx_occ: per SM, a round robin
 * of GPUEXT_DEV_OCC_BUCKETS struct gpuext_dev_occ; see gpuext_abi.h).
 * lane_ns / 32 / bucket length is the mean number of resident warps. A
 * probe that finds its bucket's slot being reset by another warp skips its
 * update (rare: once per SM and bucket). Receiver: gpu.warp.occupancy.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, GPUEXT_DEV_OCC_BUCKETS);
	__type(key, __u32);
	__type(value, struct gpuext_dev_occ);
	__uint(map_extra, 256); /* SMs */
} gx_occ SEC(".maps");

struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_extra, 256);
} gx_occ_warp_start SEC(".maps");

/* occ_slot returns this SM's slot of bucket now, claiming and zeroing it
 * when it still holds an older bucket; NULL while another warp resets it. */
static __always_inline struct gpuext_dev_occ *occ_slot(__u64 now)
{
	__u64 bucket = now >> GPUEXT_DEV_OCC_SHIFT, epoch;
	__u32 key = bucket & (GPUEXT_DEV_OCC_BUCKETS - 1);
	struct gpuext_dev_occ *o = bpf_map_lookup_elem(&gx_occ, &key);

	if (!o)
		return 0;
	epoch = o->epoch;
	if (epoch == bucket)
		return o;
	if (epoch == GPUEXT_DEV_OCC_RESETTING || epoch > bucket)
		return 0;
	if (__sync_val_compare_and_swap(&o->epoch, epoch, GPUEXT_DEV_OCC_RESETTING) != epoch)
		return 0;
	o->threads = 0;
	o->lane_ns = 0;
	__sync_lock_test_and_set(&o->epoch, bucket);
	return o;
}

SEC("gpu/entry/*")
int occ_entry(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	__u32 slot = bpf_get_warp_id();
	struct gpuext_dev_occ *o;
	__u64 *start;

	start = bpf_map_lookup_elem(&gx_occ_warp_start, &slot);
	if (start)
		*start = now;
	o = occ_slot(now);
	if (o)
		__sync_fetch_and_add(&o->threads, gpuext_active_lanes());
	return 0;
}

SEC("gpu/exit/*")
int occ_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	__u32 slot = bpf_get_warp_id();
	struct gpuext_dev_occ *o;
	__u64 *start;

	start = bpf_map_lookup_elem(&gx_occ_warp_start, &slot);
	if (!start || !*start || now < *start)
		return 0;
	o = occ_slot(now);
	if (o)
		__sync_fetch_and_add(&o->lane_ns, (now - *start) * gpuext_active_lanes());
	return 0;
}
