/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * occupancy.h - warp_occupancy's map and the find-or-claim of a time
 * bucket's slot, apart so that the ablation probes of
 * bench/device/ablation (ab_occ*) take them from here rather than copy
 * them. Include after gpuext_device.h.
 */
#ifndef GPUEXT_OCCUPANCY_H
#define GPUEXT_OCCUPANCY_H

struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, GPUEXT_DEV_OCC_BUCKETS);
	__type(key, __u32);
	__type(value, struct gpuext_dev_occ);
	__uint(map_extra, 256); /* SMs */
} gx_occ SEC(".maps");

/* Reads of the epoch before giving up: each failed claim means another
 * probe moved the slot on, so the next read finds the bucket (or a newer). */
#define OCC_TRIES 4

static __always_inline __u64 read_once(__u64 *p)
{
	return *(volatile __u64 *)p;
}

/* occ_slot returns this SM's slot of bucket now. A slot still holding an
 * older bucket is claimed with one cmpxchg of its epoch (old -> bucket);
 * the claimer then takes away the counts it read before the cmpxchg,
 * which belong to the old bucket. No probe ever waits and none is lost:
 * adds and that subtraction commute, so the lanes of one warp (per-thread
 * probes) and the warps of a block entering together all count; an add of
 * the old bucket racing the claim lands in the new one. NULL when the slot
 * already holds a newer bucket. */
static __always_inline struct gpuext_dev_occ *occ_slot(__u64 now)
{
	__u64 bucket = now >> GPUEXT_DEV_OCC_SHIFT, epoch, threads, lane_ns;
	__u32 key = bucket & (GPUEXT_DEV_OCC_BUCKETS - 1);
	struct gpuext_dev_occ *o = bpf_map_lookup_elem(&gx_occ, &key);
	int i;

	if (!o)
		return 0;
	for (i = 0; i < OCC_TRIES; i++) {
		epoch = read_once(&o->epoch);
		if (epoch == bucket)
			return o;
		if (epoch > bucket)
			return 0;
		threads = read_once(&o->threads);
		lane_ns = read_once(&o->lane_ns);
		if (__sync_val_compare_and_swap(&o->epoch, epoch, bucket) == epoch) {
			__sync_fetch_and_add(&o->threads, -threads);
			__sync_fetch_and_add(&o->lane_ns, -lane_ns);
			return o;
		}
	}
	return 0;
}

/* occ_exit_slot returns the slot a warp that entered at start and exits at
 * now adds its lane-ns to (NULL: none). */
static __always_inline struct gpuext_dev_occ *occ_exit_slot(__u64 now, __u64 start)
{
	__u64 bucket = now >> GPUEXT_DEV_OCC_SHIFT;
	__u32 key = bucket & (GPUEXT_DEV_OCC_BUCKETS - 1);

	if (bucket == start >> GPUEXT_DEV_OCC_SHIFT)
		/* Entered in this bucket: its block's thread 0 found or made the
		 * slot this bucket's at entry, so the warp adds without reading
		 * the epoch first (a load each warp waited for: 1.31x -> 1.20x
		 * on vecadd 16M, H100). An exit that beats that claim to the
		 * slot is taken away with the old bucket's counts: once per SM
		 * and bucket at most, one warp's lane-ns. */
		return bpf_map_lookup_elem(&gx_occ, &key);
	return occ_slot(now);
}

/* occ_exit_add is warp_occupancy's exit: the warp's lane-ns since its entry
 * (ctx->entry_ret) into the slot of the bucket it exits in. */
static __always_inline int occ_exit_add(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer(), start = ctx->entry_ret;
	struct gpuext_dev_occ *o;

	if (!start || now < start)
		return 0;
	o = occ_exit_slot(now, start);
	if (o)
		__sync_fetch_and_add(&o->lane_ns, (now - start) * gpuext_active_lanes());
	return 0;
}

#endif /* GPUEXT_OCCUPANCY_H */
