/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * evict.h - the eviction algorithms of the memory policy, one small unit
 * each. The driver evicts from the head of its lists; each unit answers, for
 * a chunk at block_activate, block_access and evict_prepare, which position
 * to ask for (enum gpuext_pos): HEAD (evict sooner), TAIL (keep longer; in
 * evict_prepare: spare this candidate) or NONE (the driver's default: an
 * activated or accessed chunk goes to the used tail, a candidate is evicted).
 * A unit never asks to spare once ctx->skips reached GPUEXT_EVICT_MAX_SKIPS:
 * the module would refuse it, and the units that track residency need to
 * know the candidate is really leaving.
 */
#ifndef GPUEXT_EVICT_H
#define GPUEXT_EVICT_H

#include "mem_maps.h"

static __always_inline int can_spare(const struct gpuext_mem_ctx *ctx)
{
	return ctx->list == GPUEXT_LIST_USED && ctx->skips < GPUEXT_EVICT_MAX_SKIPS;
}

/* --- LRU: recency order, asked for explicitly (same order as no policy). */
static __always_inline __u32 lru_activate(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_TAIL; }
static __always_inline __u32 lru_access(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_TAIL; }
static __always_inline __u32 lru_evict(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_NONE; }

/* --- MRU: the chunk used last goes first; wins on cyclic scans larger than memory. */
static __always_inline __u32 mru_activate(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_HEAD; }
static __always_inline __u32 mru_access(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_HEAD; }
static __always_inline __u32 mru_evict(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_NONE; }

/* --- LFU: counts accesses per chunk (decaying by halves every
 * lfu_decay_period accesses); a new chunk goes to the head, so one-time
 * chunks leave first, and a candidate with at least lfu_hot accesses is
 * spared. */
static __always_inline __u32 lfu_decayed(struct lfu_rec *r, __u32 epoch)
{
	__u32 age = epoch - r->epoch;

	if (age >= 32)
		return 0;
	return r->count >> age;
}

static __always_inline __u32 lfu_epoch(const struct gpuext_mem_cfg *cfg, __u64 accesses)
{
	if (!cfg->lfu_decay_period)
		return 0;
	return (__u32)(accesses / cfg->lfu_decay_period);
}

static __always_inline __u32 lfu_activate(const struct gpuext_mem_ctx *ctx, const struct gpuext_mem_cfg *cfg,
					  struct mem_clock *clk)
{
	struct lfu_rec r = { .count = 1, .epoch = lfu_epoch(cfg, clk->accesses) };
	__u64 chunk = ctx->chunk_id; /* map keys live on the stack, never in the context */

	if (bpf_map_update_elem(&lfu_count, &chunk, &r, BPF_ANY))
		mem_stat(GPUEXT_MEM_STAT_TABLE_FULL);
	return GPUEXT_POS_HEAD;
}

static __always_inline __u32 lfu_access(const struct gpuext_mem_ctx *ctx, const struct gpuext_mem_cfg *cfg,
					struct mem_clock *clk)
{
	__u32 epoch = lfu_epoch(cfg, __sync_fetch_and_add(&clk->accesses, 1) + 1);
	__u64 chunk = ctx->chunk_id;
	struct lfu_rec *r = bpf_map_lookup_elem(&lfu_count, &chunk);
	struct lfu_rec fresh = { .count = 1, .epoch = epoch };

	if (!r) {
		/* Activated before the policy came, or pushed out of the table. */
		if (bpf_map_update_elem(&lfu_count, &chunk, &fresh, BPF_ANY))
			mem_stat(GPUEXT_MEM_STAT_TABLE_FULL);
		return GPUEXT_POS_TAIL;
	}
	r->count = lfu_decayed(r, epoch);
	if (r->count < GPUEXT_POLICY_LFU_MAX_FREQ)
		r->count++;
	r->epoch = epoch;
	return GPUEXT_POS_TAIL;
}

static __always_inline __u32 lfu_evict(const struct gpuext_mem_ctx *ctx, const struct gpuext_mem_cfg *cfg,
				       struct mem_clock *clk)
{
	__u64 chunk = ctx->chunk_id;
	struct lfu_rec *r = bpf_map_lookup_elem(&lfu_count, &chunk);

	if (r && can_spare(ctx) && lfu_decayed(r, lfu_epoch(cfg, clk->accesses)) >= cfg->lfu_hot)
		return GPUEXT_POS_TAIL;
	if (ctx->list == GPUEXT_LIST_USED)
		bpf_map_delete_elem(&lfu_count, &chunk);
	return GPUEXT_POS_NONE;
}

/* --- FIFO: evict in activation order whatever the accesses. The driver
 * moves an accessed chunk to the tail and there is no "stay" request, so the
 * unit keeps the activation order itself (a queue of (chunk, activation
 * number)) and spares any candidate that is not the oldest resident chunk;
 * within GPUEXT_EVICT_MAX_SKIPS that is exact FIFO. */
#define FIFO_STALE_POPS 16 /* stale queue entries dropped per evict_prepare */

static __always_inline __u32 fifo_activate(const struct gpuext_mem_ctx *ctx, struct mem_clock *clk)
{
	struct fifo_ent e = { .chunk_id = ctx->chunk_id };
	__u64 chunk = ctx->chunk_id;

	e.seq = __sync_fetch_and_add(&clk->activations, 1) + 1;
	if (bpf_map_update_elem(&fifo_seq, &chunk, &e.seq, BPF_ANY) ||
	    bpf_map_push_elem(&fifo_order, &e, 0))
		mem_stat(GPUEXT_MEM_STAT_TABLE_FULL);
	return GPUEXT_POS_TAIL;
}

static __always_inline __u32 fifo_access(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_NONE; }

static __always_inline __u32 fifo_evict(const struct gpuext_mem_ctx *ctx)
{
	struct fifo_ent head;
	__u64 chunk = ctx->chunk_id;
	__u64 *seq;
	int i;

	if (ctx->list != GPUEXT_LIST_USED)
		return GPUEXT_POS_NONE;
	for (i = 0; i < FIFO_STALE_POPS; i++) {
		if (bpf_map_peek_elem(&fifo_order, &head))
			break; /* nothing known: let the driver choose */
		seq = bpf_map_lookup_elem(&fifo_seq, &head.chunk_id);
		if (seq && *seq == head.seq) {
			if (head.chunk_id != ctx->chunk_id && can_spare(ctx))
				return GPUEXT_POS_TAIL;
			break;
		}
		bpf_map_pop_elem(&fifo_order, &head); /* evicted or re-activated since */
	}
	/* The candidate leaves: its queue entry turns stale. */
	bpf_map_delete_elem(&fifo_seq, &chunk);
	return GPUEXT_POS_NONE;
}

/* --- PRIORITY: LRU, except that chunks of owners at or above
 * protect_priority are spared while lower ones can be evicted. */
static __always_inline __u32 owner_priority(const struct gpuext_mem_ctx *ctx, const struct gpuext_mem_cfg *cfg)
{
	__u32 pid = ctx->pid, *p = NULL;
	__u64 cgroup = ctx->cgroup_id;

	if (ctx->pid)
		p = bpf_map_lookup_elem(&prio_pid, &pid);
	if (!p && ctx->cgroup_id)
		p = bpf_map_lookup_elem(&prio_cgroup, &cgroup);
	return p ? *p : cfg->default_priority;
}

static __always_inline __u32 prio_activate(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_TAIL; }
static __always_inline __u32 prio_access(const struct gpuext_mem_ctx *ctx) { return GPUEXT_POS_TAIL; }

static __always_inline __u32 prio_evict(const struct gpuext_mem_ctx *ctx, const struct gpuext_mem_cfg *cfg)
{
	if (can_spare(ctx) && owner_priority(ctx, cfg) >= cfg->protect_priority)
		return GPUEXT_POS_TAIL;
	return GPUEXT_POS_NONE;
}

#endif /* GPUEXT_EVICT_H */
