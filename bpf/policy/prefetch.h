/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * prefetch.h - the prefetch algorithms of the memory policy, one small unit
 * each. On a fault in a VA block the driver allows a region
 * [max_first, max_outer) of 4 KiB pages; a unit returns enum gpuext_action
 * and, for BYPASS, records the region to prefetch with
 * bpf_gpu_ext_set_prefetch_region (none recorded: no prefetch). The module
 * clamps a region that overflows the allowed one (counted "clamped").
 */
#ifndef GPUEXT_PREFETCH_H
#define GPUEXT_PREFETCH_H

#include "mem_maps.h"

static __always_inline int prefetch_region(struct gpuext_prefetch_ctx *ctx, __u32 first, __u32 outer)
{
	mem_stat(GPUEXT_MEM_STAT_REGION);
	return bpf_gpu_ext_set_prefetch_region(ctx, first, outer);
}

/* --- NONE: only the faulting page moves. */
static __always_inline int prefetch_none(struct gpuext_prefetch_ctx *ctx)
{
	return GPUEXT_ACTION_BYPASS;
}

/* --- ALWAYS_MAX: everything the driver allows (UVM's threshold 0). */
static __always_inline int prefetch_always_max(struct gpuext_prefetch_ctx *ctx)
{
	prefetch_region(ctx, ctx->max_first, ctx->max_outer);
	return GPUEXT_ACTION_BYPASS;
}

/* --- SEQUENTIAL: seq_pages pages from the faulting one (0: to the end). */
static __always_inline int prefetch_sequential(struct gpuext_prefetch_ctx *ctx, const struct gpuext_mem_cfg *cfg)
{
	__u32 outer = ctx->max_outer;

	if (cfg->seq_pages && ctx->page_index + cfg->seq_pages < outer)
		outer = ctx->page_index + cfg->seq_pages;
	prefetch_region(ctx, ctx->page_index, outer);
	return GPUEXT_ACTION_BYPASS;
}

/* --- STRIDE: per process, the distance between consecutive faulting pages
 * (absolute page numbers, so a stride crosses VA blocks). A fault k strides
 * on (k = 1..stride_ahead+1: the strides between were prefetched and hit)
 * repeats the stride and raises the confidence, anything else restarts it;
 * at stride_min_conf the next stride_ahead strides are prefetched as one
 * region (the pages between are the price of a contiguous region), inside
 * this block. Until then the driver's own algorithm runs. */
static __always_inline int stride_repeats(__s64 d, __s64 stride, __u32 ahead)
{
	__u64 ud, us;

	if (stride == 0 || (d > 0) != (stride > 0))
		return 0;
	ud = d > 0 ? d : -d;
	us = stride > 0 ? stride : -stride;
	return ud % us == 0 && ud / us <= (__u64)ahead + 1;
}

static __always_inline int prefetch_stride(struct gpuext_prefetch_ctx *ctx, const struct gpuext_mem_cfg *cfg)
{
	__u64 page = (ctx->va_start >> GPUEXT_PAGE_SHIFT) + ctx->page_index;
	struct stride_rec fresh = { .last_page = page };
	__u32 pid = ctx->pid; /* map keys live on the stack, never in the context */
	struct stride_rec *r = bpf_map_lookup_elem(&stride_state, &pid);
	__s64 d, span, first, outer;

	if (!r) {
		if (bpf_map_update_elem(&stride_state, &pid, &fresh, BPF_ANY))
			mem_stat(GPUEXT_MEM_STAT_TABLE_FULL);
		return GPUEXT_ACTION_DEFAULT;
	}
	d = (__s64)(page - r->last_page);
	r->last_page = page;
	if (d == 0)
		return GPUEXT_ACTION_DEFAULT;
	if (stride_repeats(d, r->stride, cfg->stride_ahead)) {
		mem_stat(GPUEXT_MEM_STAT_STRIDE_HIT);
		if (r->conf < GPUEXT_POLICY_STRIDE_MAX_CONF)
			r->conf++;
	} else {
		r->stride = d;
		r->conf = 0;
	}
	if (r->conf < cfg->stride_min_conf)
		return GPUEXT_ACTION_DEFAULT;

	span = r->stride * (__s64)cfg->stride_ahead;
	if (span > 0) {
		first = ctx->page_index;
		outer = (__s64)ctx->page_index + span + 1;
	} else {
		first = (__s64)ctx->page_index + span;
		outer = (__s64)ctx->page_index + 1;
	}
	if (first < ctx->max_first)
		first = ctx->max_first;
	if (outer > ctx->max_outer)
		outer = ctx->max_outer; /* further is another block */
	if (first >= outer)
		return GPUEXT_ACTION_DEFAULT;
	prefetch_region(ctx, (__u32)first, (__u32)outer);
	return GPUEXT_ACTION_BYPASS;
}

/* --- THRESHOLD: the driver walks its region tree from the leaf up and asks
 * at each level; a node more than threshold_pct full (faulted + resident) is
 * chosen, and the driver prefetches the last (largest) node chosen. With 51
 * this is UVM's stock algorithm. */
static __always_inline int prefetch_threshold(struct gpuext_prefetch_ctx *ctx)
{
	return GPUEXT_ACTION_ENTER_LOOP;
}

static __always_inline void prefetch_threshold_iter(struct gpuext_prefetch_ctx *ctx, const struct gpuext_mem_cfg *cfg)
{
	__u64 pages = ctx->iter_outer - ctx->iter_first;

	if (ctx->iter_outer > ctx->iter_first &&
	    (__u64)ctx->iter_count * 100 > pages * cfg->threshold_pct)
		prefetch_region(ctx, ctx->iter_first, ctx->iter_outer);
}

#endif /* GPUEXT_PREFETCH_H */
