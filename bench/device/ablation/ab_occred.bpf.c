// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_occred: warp_occupancy's exit without its bucket's epoch: the
 * exiting warp adds its lane-ns to the slot of its bucket with one
 * reduction, no load before it (what reading and claiming the epoch
 * costs; thread 0's entry is warp_occupancy's). */
#include "ablation.h"
struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, GPUEXT_DEV_OCC_BUCKETS);
	__type(key, __u32);
	__type(value, struct gpuext_dev_occ);
	__uint(map_extra, 256);
} ab_occ SEC(".maps");
SEC("gpu/entry/*") __u64 ab_entry(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer();
	__u32 key = (now >> GPUEXT_DEV_OCC_SHIFT) & (GPUEXT_DEV_OCC_BUCKETS - 1);
	struct gpuext_dev_occ *o;

	if (gpuext_thread_linear() != 0)
		return now;
	o = bpf_map_lookup_elem(&ab_occ, &key);
	if (o)
		__sync_fetch_and_add(&o->threads, gpuext_block_threads());
	return now;
}
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 now = bpf_get_globaltimer(), start = ctx->entry_ret;
	__u32 key = (now >> GPUEXT_DEV_OCC_SHIFT) & (GPUEXT_DEV_OCC_BUCKETS - 1);
	struct gpuext_dev_occ *o;

	if (!start || now < start)
		return 0;
	o = bpf_map_lookup_elem(&ab_occ, &key);
	if (o)
		__sync_fetch_and_add(&o->lane_ns, (now - start) * gpuext_active_lanes());
	return 0;
}
