/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * occupancy.h - warp_occupancy's map and its writes to a time bucket's
 * slot, apart so that the ablation probes of bench/device/ablation (ab_occ*)
 * take them from here rather than copy them. Include after
 * gpuext_device.h.
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

/*
 * occ_mark returns this SM's slot of bucket and marks it the bucket's: a
 * plain store of the epoch, nothing read, nothing waited for. The slot's
 * counts are cumulative, over every bucket that has had the slot (one in
 * GPUEXT_DEV_OCC_BUCKETS): the reader takes a bucket's counts as the
 * difference from what the slot held when its previous bucket was over
 * (internal/proberegion, Tracker.Occupancy). So no probe claims a slot,
 * reads an epoch or subtracts (the claim's read at thread 0's entry cost
 * vecadd 16M 4 points on an H100, measured with an ablation probe since
 * removed: devrt/jit/README.md), and no count is ever lost, only, when the
 * reader misses a whole lap of a slot, its split between that slot's
 * buckets. All writers of one slot in one lap store the same value; a
 * warp held up between its clock read and its store for a whole lap (~268
 * ms: preempted) may store the older one, which the reader does not take
 * for a new bucket (epochs only grow), though counts of the newer bucket
 * read under it go to that bucket's base. NULL: no slot (the SM id
 * beyond the array).
 */
static __always_inline struct gpuext_dev_occ *occ_mark(__u64 bucket)
{
	__u32 key = bucket & (GPUEXT_DEV_OCC_BUCKETS - 1);
	struct gpuext_dev_occ *o = bpf_map_lookup_elem(&gx_occ, &key);

	if (o)
		o->epoch = bucket;
	return o;
}

/* occ_left is what is left of now's bucket, in ns: a thread resident
 * from now to the bucket's end is that many ns in it. */
static __always_inline __u64 occ_left(__u64 now)
{
	return (1ULL << GPUEXT_DEV_OCC_SHIFT) - (now & ((1ULL << GPUEXT_DEV_OCC_SHIFT) - 1));
}

/* occ_enter counts threads (block threads, weighed) that became resident
 * at now in its bucket's slot: as if resident to the bucket's end. */
static __always_inline void occ_enter(__u64 now, __u64 threads)
{
	struct gpuext_dev_occ *o = occ_mark(now >> GPUEXT_DEV_OCC_SHIFT);

	if (o) {
		__sync_fetch_and_add(&o->threads, threads);
		__sync_fetch_and_add(&o->lane_ns, threads * occ_left(now));
	}
}

/* occ_entry_time is warp_occupancy's entry: thread 0 counts its block's
 * threads (weighed) in its bucket's slot, and every warp gets the time,
 * which the kernel keeps in a register for its exit (ctx->entry_ret): no
 * per-warp slot in memory. */
static __always_inline __u64 occ_entry_time(void)
{
	__u64 now = bpf_get_globaltimer();

	if (gpuext_first_thread())
		occ_enter(now, gpuext_block_weight() * gpuext_block_threads());
	return now;
}

/* occ_exit_slot returns the slot a warp that entered at start and exits at
 * now counts its exit in (NULL: none). */
static __always_inline struct gpuext_dev_occ *occ_exit_slot(__u64 now, __u64 start)
{
	__u64 bucket = now >> GPUEXT_DEV_OCC_SHIFT;
	__u32 key = bucket & (GPUEXT_DEV_OCC_BUCKETS - 1);

	if (bucket == start >> GPUEXT_DEV_OCC_SHIFT)
		/* Entered in this bucket: its block's thread 0 marked the
		 * slot at entry, so the warp only counts. (Thread 0 having
		 * entered in the bucket before, another block's thread 0 did,
		 * or, on an SM where no block entered in this bucket, none:
		 * then these counts go to the slot's next bucket or its base;
		 * a warp's entry late by a bucket boundary, rare.) */
		return bpf_map_lookup_elem(&gx_occ, &key);
	return occ_mark(bucket);
}

/* occ_exit_add is warp_occupancy's exit: the warp's lanes leave at now, in
 * the slot of the bucket it exits in, taking back the rest of the bucket
 * after now (its entry counted it to the bucket's end; for a warp that
 * entered in an earlier one, the reader counts it resident through it).
 * Every exit counts, whatever the clock did: a warp that left uncounted
 * would stay resident for the reader ever after. */
static __always_inline int occ_exit_add(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer(), start = ctx->entry_ret;
	__u64 lanes = gpuext_active_lanes() * gpuext_block_weight();
	struct gpuext_dev_occ *o;

	if (!start)
		return 0; /* no entry ran: nothing counted it */
	o = occ_exit_slot(now, start);
	if (o) {
		__sync_fetch_and_add(&o->threads, -lanes);
		__sync_fetch_and_add(&o->lane_ns, -(lanes * occ_left(now)));
	}
	return 0;
}

#endif /* GPUEXT_OCCUPANCY_H */
