// SPDX-License-Identifier: GPL-2.0-only
/*
 * sim_mem.c - a UVM-like GPU memory manager with the gpu_ext hooks.
 *
 * GPU memory is capacity_chunks root chunks of 2 MiB. Each VA block (2 MiB,
 * 512 pages of 4 KiB) gets a chunk at its first fault and keeps it until it
 * is evicted. Chunks live on three lists: free (never used), used (backing a
 * block with data) and unused (backing a block whose data was released).
 * Replay of one access:
 *
 *  - resident page: a hit. block_access(chunk); default and TAIL move the
 *    chunk to the used tail (so with no policy the used list is an exact
 *    LRU of block accesses), HEAD to the used head.
 *  - non-resident page: a fault. A block without a chunk takes a free one,
 *    else evicts: candidate = unused head, else used head; evict_prepare;
 *    TAIL spares it (to its list's tail) and the next head is asked, at most
 *    GPUEXT_EVICT_MAX_SKIPS times. The new (or reused unused) chunk goes
 *    through block_activate: default and TAIL put it at the used tail, HEAD
 *    at the used head. A block whose chunk is already used calls
 *    block_access as for a hit. Then the page becomes resident and, unless
 *    prefetch is off, page_prefetch decides what else to bring in:
 *      DEFAULT    the stock algorithm (below),
 *      BYPASS     the region gpu_ext returned,
 *      ENTER_LOOP the tree walk below, asking page_prefetch_iter per level;
 *                 the last region it chose is prefetched (none: nothing).
 *
 * The stock prefetch models UVM's: a binary tree over the block's 512 pages
 * (level 0 = one page, level 9 = the block). Walking up from the faulting
 * page, a node whose faulted+resident pages are more than 51% of its pages
 * becomes the region; the largest such node wins (a level that fails does
 * not stop the walk). Its non-resident pages are prefetched.
 *
 * Everything is deterministic: the same trace gives the same counts.
 */
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/list.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>

#include "sim.h"

#define SIM_PAGE_BYTES (1ULL << GPUEXT_PAGE_SHIFT)
#define SIM_TREE_LEVELS 10 /* 2^9 = GPUEXT_BLOCK_PAGES */

struct sim_block;

struct sim_chunk {
	struct list_head node; /* on free, used or unused */
	struct sim_block *block;
	u32 id;
	u32 list;              /* enum gpuext_list; NONE while free */
	u64 access_count;      /* accesses since it was given to its block */
};

struct sim_block {
	u64 va_start;
	u32 pid;               /* owner: the first pid to touch it */
	u32 tenant;            /* index of the owner in the result's tenants */
	struct sim_chunk *chunk;
	u32 nresident;
	DECLARE_BITMAP(resident, GPUEXT_BLOCK_PAGES);
};

struct sim_mem {
	struct gpuext_sim_mem_config cfg;
	struct sim_chunk *chunks;
	struct list_head free, used, unused;
	u32 nused, nunused;
	struct xarray blocks;  /* va >> GPUEXT_CHUNK_SHIFT -> struct sim_block */
	struct gpuext_sim_mem_result res;
};

int sim_mem_check_config(const struct gpuext_sim_mem_config *cfg)
{
	if (cfg->capacity_chunks == 0 || cfg->capacity_chunks > GPUEXT_SIM_MAX_CHUNKS)
		return -EINVAL;
	if (cfg->flags & ~GPUEXT_SIM_MEM_NO_PREFETCH)
		return -EINVAL;
	if (cfg->_reserved[0] || cfg->_reserved[1] || cfg->_reserved[2])
		return -EINVAL;
	return 0;
}

int sim_mem_check_access(const struct gpuext_sim_access *a)
{
	if (a->pid == 0)
		return -EINVAL;
	if (a->flags & ~(GPUEXT_SIM_ACCESS_WRITE | GPUEXT_SIM_ACCESS_RELEASE))
		return -EINVAL;
	return 0;
}

struct sim_mem *sim_mem_new(const struct gpuext_sim_mem_config *cfg)
{
	struct sim_mem *m = kzalloc(sizeof(*m), GFP_KERNEL);
	u32 i;

	if (!m)
		return NULL;
	m->chunks = kvcalloc(cfg->capacity_chunks, sizeof(*m->chunks), GFP_KERNEL);
	if (!m->chunks) {
		kfree(m);
		return NULL;
	}
	m->cfg = *cfg;
	INIT_LIST_HEAD(&m->free);
	INIT_LIST_HEAD(&m->used);
	INIT_LIST_HEAD(&m->unused);
	for (i = 0; i < cfg->capacity_chunks; i++) {
		m->chunks[i].id = i;
		list_add_tail(&m->chunks[i].node, &m->free);
	}
	xa_init(&m->blocks);
	return m;
}

void sim_mem_free(struct sim_mem *m)
{
	struct sim_block *b;
	unsigned long idx;

	if (!m)
		return;
	xa_for_each(&m->blocks, idx, b)
		kfree(b);
	xa_destroy(&m->blocks);
	kvfree(m->chunks);
	kfree(m);
}

void sim_mem_result(const struct sim_mem *m, struct gpuext_sim_mem_result *res)
{
	*res = m->res;
	res->used_chunks = m->nused;
	res->unused_chunks = m->nunused;
}

/* The tenant of pid, added at its first access; -ENOSPC past the bound. */
static int sim_tenant(struct sim_mem *m, u32 pid)
{
	u32 i;

	for (i = 0; i < m->res.ntenants; i++)
		if (m->res.tenants[i].pid == pid)
			return i;
	if (m->res.ntenants == GPUEXT_SIM_MAX_TENANTS)
		return -ENOSPC;
	m->res.tenants[i].pid = pid;
	m->res.ntenants++;
	return i;
}

static void sim_mem_ctx(const struct sim_mem *m, const struct sim_chunk *c, u32 hook, u32 skips,
			struct gpuext_mem_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->chunk_id = c->id;
	ctx->va_start = c->block ? c->block->va_start : 0;
	ctx->pid = c->block ? c->block->pid : 0;
	ctx->hook = hook;
	ctx->list = c->list;
	ctx->used_chunks = m->nused;
	ctx->unused_chunks = m->nunused;
	ctx->capacity_chunks = m->cfg.capacity_chunks;
	ctx->skips = skips;
	ctx->access_count = c->access_count;
}

static void sim_list_del(struct sim_mem *m, struct sim_chunk *c)
{
	list_del(&c->node);
	if (c->list == GPUEXT_LIST_USED)
		m->nused--;
	else if (c->list == GPUEXT_LIST_UNUSED)
		m->nunused--;
	c->list = GPUEXT_LIST_NONE;
}

/* Puts a chunk on the used list at the position a decision asked for. */
static void sim_place_used(struct sim_mem *m, struct sim_chunk *c, u32 pos)
{
	if (c->list != GPUEXT_LIST_NONE)
		sim_list_del(m, c);
	if (pos == GPUEXT_POS_HEAD)
		list_add(&c->node, &m->used);
	else
		list_add_tail(&c->node, &m->used);
	c->list = GPUEXT_LIST_USED;
	m->nused++;
}

static void sim_evict(struct sim_mem *m, struct sim_chunk *c)
{
	struct sim_block *b = c->block;
	u64 bytes = (u64)b->nresident * SIM_PAGE_BYTES;
	struct gpuext_sim_tenant *t = &m->res.tenants[b->tenant];

	m->res.evictions++;
	m->res.migrated_bytes += bytes;
	t->evictions++;
	t->migrated_bytes += bytes;
	bitmap_zero(b->resident, GPUEXT_BLOCK_PAGES);
	b->nresident = 0;
	b->chunk = NULL;
	c->block = NULL;
	sim_list_del(m, c);
}

/* A chunk for a block: a free one, else a victim evict_prepare agreed to. */
static struct sim_chunk *sim_alloc_chunk(struct sim_mem *m)
{
	struct gpuext_mem_ctx ctx;
	struct sim_chunk *c;
	u32 skips = 0;

	c = list_first_entry_or_null(&m->free, struct sim_chunk, node);
	if (c) {
		list_del(&c->node);
		return c;
	}
	for (;;) {
		struct list_head *from = m->nunused ? &m->unused : &m->used;

		c = list_first_entry(from, struct sim_chunk, node);
		sim_mem_ctx(m, c, GPUEXT_HOOK_EVICT_PREPARE, skips, &ctx);
		/* The module bounds TAIL; the bound here only keeps the
		 * simulator finite whatever a module returns. */
		if (gpu_ext_evict_prepare(&ctx) != GPUEXT_POS_TAIL || skips >= GPUEXT_EVICT_MAX_SKIPS)
			break;
		list_move_tail(&c->node, from);
		skips++;
		m->res.evict_skips++;
	}
	sim_evict(m, c);
	return c;
}

static void sim_block_access(struct sim_mem *m, struct sim_chunk *c)
{
	struct gpuext_mem_ctx ctx;

	c->access_count++;
	sim_mem_ctx(m, c, GPUEXT_HOOK_BLOCK_ACCESS, 0, &ctx);
	sim_place_used(m, c, gpu_ext_block_access(&ctx));
}

static void sim_block_activate(struct sim_mem *m, struct sim_block *b, struct sim_chunk *c)
{
	struct gpuext_mem_ctx ctx;

	if (c->block != b) {
		c->block = b;
		c->access_count = 0;
	}
	b->chunk = c;
	c->access_count++;
	sim_mem_ctx(m, c, GPUEXT_HOOK_BLOCK_ACTIVATE, 0, &ctx);
	sim_place_used(m, c, gpu_ext_block_activate(&ctx));
}

/* Faulted + resident pages in the tree node [first, first + n): n is a
 * power of two and first a multiple of it, so a node is either inside one
 * word or a run of whole words. */
static u32 sim_count(const struct sim_block *b, u32 first, u32 n)
{
	u32 w, sum = 0;

	if (n < BITS_PER_LONG)
		return hweight_long((b->resident[first / BITS_PER_LONG] >> (first % BITS_PER_LONG)) &
				    ((1UL << n) - 1));
	for (w = first / BITS_PER_LONG; w < (first + n) / BITS_PER_LONG; w++)
		sum += hweight_long(b->resident[w]);
	return sum;
}

/* The stock algorithm: the largest tree node above the 51% threshold. */
static void sim_default_region(const struct sim_block *b, u32 page, u32 *first, u32 *outer)
{
	u32 level;

	*first = page;
	*outer = page + 1;
	for (level = 1; level < SIM_TREE_LEVELS; level++) {
		u32 n = 1U << level, f = page & ~(n - 1);

		if (sim_count(b, f, n) * 100 > GPUEXT_SIM_PREFETCH_THRESHOLD * n) {
			*first = f;
			*outer = f + n;
		}
	}
}

/* ENTER_LOOP: the same tree, the policy choosing per level. */
static void sim_loop_region(const struct sim_block *b, struct gpuext_prefetch_ctx *ctx,
			    u32 page, u32 *first, u32 *outer)
{
	u32 level, f, o;

	*first = *outer = 0;
	ctx->hook = GPUEXT_HOOK_PAGE_PREFETCH_ITER;
	for (level = 0; level < SIM_TREE_LEVELS; level++) {
		u32 n = 1U << level;

		ctx->iter_level = level;
		ctx->iter_first = page & ~(n - 1);
		ctx->iter_outer = ctx->iter_first + n;
		ctx->iter_count = sim_count(b, ctx->iter_first, n);
		if (gpu_ext_page_prefetch_iter(ctx, &f, &o)) {
			*first = f;
			*outer = o;
		}
	}
}

static void sim_prefetch(struct sim_mem *m, struct sim_block *b, u32 page, u32 pid,
			 struct gpuext_sim_tenant *t)
{
	struct gpuext_prefetch_ctx ctx = {
		.va_start = b->va_start,
		.pid = pid,
		.hook = GPUEXT_HOOK_PAGE_PREFETCH,
		.page_index = page,
		.max_first = 0,
		.max_outer = GPUEXT_BLOCK_PAGES,
		.faulted_pages = 1,
		.resident_pages = b->nresident - 1,
	};
	u32 first, outer, p, n = 0;
	u64 bytes;

	switch (gpu_ext_page_prefetch(&ctx, &first, &outer)) {
	case GPUEXT_ACTION_BYPASS:
		break;
	case GPUEXT_ACTION_ENTER_LOOP:
		sim_loop_region(b, &ctx, page, &first, &outer);
		break;
	default:
		sim_default_region(b, page, &first, &outer);
		break;
	}
	/* gpu_ext clamps into [max_first, max_outer); never trust it blindly. */
	outer = min_t(u32, outer, GPUEXT_BLOCK_PAGES);
	for (p = first; p < outer; p++) {
		if (!__test_and_set_bit(p, b->resident))
			n++;
	}
	b->nresident += n;
	bytes = (u64)n * SIM_PAGE_BYTES;
	m->res.prefetched_bytes += bytes;
	m->res.migrated_bytes += bytes;
	t->prefetched_bytes += bytes;
	t->migrated_bytes += bytes;
}

/* The block of va, created at its first access; NULL past the bound. */
static struct sim_block *sim_block(struct sim_mem *m, u64 va, u32 pid, u32 tenant, int *err)
{
	unsigned long idx = va >> GPUEXT_CHUNK_SHIFT;
	struct sim_block *b = xa_load(&m->blocks, idx);

	if (b)
		return b;
	if (m->res.blocks >= GPUEXT_SIM_MAX_BLOCKS) {
		*err = -ENOSPC;
		return NULL;
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b) {
		*err = -ENOMEM;
		return NULL;
	}
	b->va_start = (u64)idx << GPUEXT_CHUNK_SHIFT;
	b->pid = pid;
	b->tenant = tenant;
	*err = xa_err(xa_store(&m->blocks, idx, b, GFP_KERNEL));
	if (*err) {
		kfree(b);
		return NULL;
	}
	m->res.blocks++;
	return b;
}

static void sim_release_block(struct sim_mem *m, struct sim_block *b)
{
	struct sim_chunk *c = b->chunk;

	if (!c || c->list != GPUEXT_LIST_USED)
		return;
	bitmap_zero(b->resident, GPUEXT_BLOCK_PAGES);
	b->nresident = 0;
	sim_list_del(m, c);
	list_add_tail(&c->node, &m->unused);
	c->list = GPUEXT_LIST_UNUSED;
	m->nunused++;
}

static int sim_access(struct sim_mem *m, const struct gpuext_sim_access *a)
{
	u32 page = (a->va >> GPUEXT_PAGE_SHIFT) & (GPUEXT_BLOCK_PAGES - 1);
	struct gpuext_sim_tenant *t;
	struct sim_block *b;
	int tenant, err = 0;

	if (a->flags & GPUEXT_SIM_ACCESS_RELEASE) {
		b = xa_load(&m->blocks, a->va >> GPUEXT_CHUNK_SHIFT);
		if (b)
			sim_release_block(m, b);
		return 0;
	}
	tenant = sim_tenant(m, a->pid);
	if (tenant < 0)
		return tenant;
	b = sim_block(m, a->va, a->pid, tenant, &err);
	if (!b)
		return err;
	t = &m->res.tenants[tenant];
	m->res.accesses++;
	t->accesses++;

	if (b->chunk && b->chunk->list == GPUEXT_LIST_USED && test_bit(page, b->resident)) {
		m->res.hits++;
		t->hits++;
		sim_block_access(m, b->chunk);
		return 0;
	}

	m->res.faults++;
	t->faults++;
	if (!b->chunk)
		sim_block_activate(m, b, sim_alloc_chunk(m));
	else if (b->chunk->list == GPUEXT_LIST_UNUSED)
		sim_block_activate(m, b, b->chunk);
	else
		sim_block_access(m, b->chunk);
	__set_bit(page, b->resident);
	b->nresident++;
	m->res.migrated_bytes += SIM_PAGE_BYTES;
	t->migrated_bytes += SIM_PAGE_BYTES;
	if (!(m->cfg.flags & GPUEXT_SIM_MEM_NO_PREFETCH))
		sim_prefetch(m, b, page, a->pid, t);
	return 0;
}

size_t sim_mem_replay(struct sim_mem *m, const struct gpuext_sim_access *a, size_t n, int *err)
{
	size_t i;

	*err = 0;
	for (i = 0; i < n; i++) {
		*err = sim_access(m, &a[i]);
		if (*err)
			break;
		if ((i & 1023) == 1023)
			cond_resched();
	}
	return i;
}
