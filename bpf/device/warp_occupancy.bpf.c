// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * warp_occupancy.bpf.c - warps resident per SM over time: for each SM and
 * ~1 ms bucket of %globaltimer the threads that entered and the
 * lane-nanoseconds of the warps that exited (gx_occ: per SM, a round robin
 * of GPUEXT_DEV_OCC_BUCKETS struct gpuext_dev_occ; see gpuext_abi.h).
 * lane_ns / 32 / bucket length is the mean number of resident warps. A
 * probe that finds its bucket's slot being reset by another warp waits for
 * the reset (bounded). Receiver: gpu.warp.occupancy.
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

/* Reads to wait out another warp's reset of a slot (three atomics at L2;
 * each read is an L2 round trip). Bounded by the verifier's budget too:
 * each try has two ways on, so the paths it explores double per try. */
#define OCC_TRIES 10

/* occ_slot returns this SM's slot of bucket now, claiming and zeroing it
 * when it still holds an older bucket. The warps of a block enter at the
 * same instant, so the others usually find the first one resetting the
 * slot: they wait for it (a bounded number of reads) instead of skipping,
 * which on an H200 lost all but one warp per SM and bucket. NULL when the
 * slot already holds a newer bucket, or the reset outlasts the tries. */
static __always_inline struct gpuext_dev_occ *occ_slot(__u64 now)
{
	__u64 bucket = now >> GPUEXT_DEV_OCC_SHIFT, epoch;
	__u32 key = bucket & (GPUEXT_DEV_OCC_BUCKETS - 1);
	struct gpuext_dev_occ *o = bpf_map_lookup_elem(&gx_occ, &key);
	int i;

	if (!o)
		return 0;
	for (i = 0; i < OCC_TRIES; i++) {
		/* volatile: another warp changes it, and a path without an
		 * atomic would otherwise let clang reuse the first read. */
		epoch = *(volatile __u64 *)&o->epoch;
		if (epoch == bucket)
			return o;
		if (epoch > bucket && epoch != GPUEXT_DEV_OCC_RESETTING)
			return 0;
		/* Being reset, or another warp claims it first: read again. */
		if (epoch != GPUEXT_DEV_OCC_RESETTING &&
		    __sync_val_compare_and_swap(&o->epoch, epoch, GPUEXT_DEV_OCC_RESETTING) == epoch) {
			__sync_lock_test_and_set(&o->threads, 0);
			__sync_lock_test_and_set(&o->lane_ns, 0);
			__sync_lock_test_and_set(&o->epoch, bucket);
			return o;
		}
	}
	return 0;
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
