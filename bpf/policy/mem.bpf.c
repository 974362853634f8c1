// SPDX-License-Identifier: GPL-2.0-only
//go:build ignore

/*
 * mem.bpf.c - the memory policy: one gpu_mem_ops whose eviction and
 * prefetch algorithms (evict.h, prefetch.h) are chosen, and tuned, by the
 * record in the pinned map mem_cfg, so a running policy switches algorithm
 * without a second attach (only one gpu_mem_ops can be attached at a time).
 * Every callback only reads its context and records requests through
 * gpu_ext's kfuncs; the module validates them after the callback.
 */
#include "gpu_ext_policy.h"
#include "mem_maps.h"
#include "evict.h"
#include "prefetch.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline void block_move(struct gpuext_mem_ctx *ctx, __u32 pos)
{
	if (pos != GPUEXT_POS_NONE)
		bpf_gpu_ext_block_move(ctx, pos);
}

SEC("struct_ops/block_activate")
int BPF_PROG(mem_block_activate, struct gpuext_mem_ctx *c)
{
	struct gpuext_mem_cfg *cfg = mem_config();
	struct mem_clock *clk = mem_clock_get();

	mem_stat(GPUEXT_MEM_STAT_ACTIVATE);
	if (!cfg || !clk)
		return 0;
	switch (cfg->eviction) {
	case GPUEXT_EVICT_LRU: block_move(c, lru_activate(c)); break;
	case GPUEXT_EVICT_LFU: block_move(c, lfu_activate(c, cfg, clk)); break;
	case GPUEXT_EVICT_MRU: block_move(c, mru_activate(c)); break;
	case GPUEXT_EVICT_FIFO: block_move(c, fifo_activate(c, clk)); break;
	case GPUEXT_EVICT_PRIORITY: block_move(c, prio_activate(c)); break;
	}
	return 0;
}

SEC("struct_ops/block_access")
int BPF_PROG(mem_block_access, struct gpuext_mem_ctx *c)
{
	struct gpuext_mem_cfg *cfg = mem_config();
	struct mem_clock *clk = mem_clock_get();

	mem_stat(GPUEXT_MEM_STAT_ACCESS);
	if (!cfg || !clk)
		return 0;
	switch (cfg->eviction) {
	case GPUEXT_EVICT_LRU: block_move(c, lru_access(c)); break;
	case GPUEXT_EVICT_LFU: block_move(c, lfu_access(c, cfg, clk)); break;
	case GPUEXT_EVICT_MRU: block_move(c, mru_access(c)); break;
	case GPUEXT_EVICT_FIFO: block_move(c, fifo_access(c)); break;
	case GPUEXT_EVICT_PRIORITY: block_move(c, prio_access(c)); break;
	}
	return 0;
}

SEC("struct_ops/evict_prepare")
int BPF_PROG(mem_evict_prepare, struct gpuext_mem_ctx *c)
{
	struct gpuext_mem_cfg *cfg = mem_config();
	struct mem_clock *clk = mem_clock_get();
	__u32 pos = GPUEXT_POS_NONE;

	mem_stat(GPUEXT_MEM_STAT_EVICT);
	if (!cfg || !clk)
		return 0;
	switch (cfg->eviction) {
	case GPUEXT_EVICT_LRU: pos = lru_evict(c); break;
	case GPUEXT_EVICT_LFU: pos = lfu_evict(c, cfg, clk); break;
	case GPUEXT_EVICT_MRU: pos = mru_evict(c); break;
	case GPUEXT_EVICT_FIFO: pos = fifo_evict(c); break;
	case GPUEXT_EVICT_PRIORITY: pos = prio_evict(c, cfg); break;
	}
	if (pos == GPUEXT_POS_TAIL)
		mem_stat(GPUEXT_MEM_STAT_SPARED);
	block_move(c, pos);
	return 0;
}

/* The prefetch algorithm for this fault: the pid's own, else the config's. */
static __always_inline __u32 prefetch_algo(const struct gpuext_prefetch_ctx *c, const struct gpuext_mem_cfg *cfg)
{
	__u32 pid = c->pid, *algo = bpf_map_lookup_elem(&prefetch_pid, &pid);

	return algo ? *algo : cfg->prefetch;
}

SEC("struct_ops/page_prefetch")
int BPF_PROG(mem_page_prefetch, struct gpuext_prefetch_ctx *c)
{
	struct gpuext_mem_cfg *cfg = mem_config();

	mem_stat(GPUEXT_MEM_STAT_PREFETCH);
	if (!cfg)
		return GPUEXT_ACTION_DEFAULT;
	switch (prefetch_algo(c, cfg)) {
	case GPUEXT_PREFETCH_NONE: return prefetch_none(c);
	case GPUEXT_PREFETCH_ALWAYS_MAX: return prefetch_always_max(c);
	case GPUEXT_PREFETCH_SEQUENTIAL: return prefetch_sequential(c, cfg);
	case GPUEXT_PREFETCH_STRIDE: return prefetch_stride(c, cfg);
	case GPUEXT_PREFETCH_THRESHOLD: return prefetch_threshold(c);
	}
	return GPUEXT_ACTION_DEFAULT;
}

SEC("struct_ops/page_prefetch_iter")
int BPF_PROG(mem_page_prefetch_iter, struct gpuext_prefetch_ctx *c)
{
	struct gpuext_mem_cfg *cfg = mem_config();

	if (cfg && prefetch_algo(c, cfg) == GPUEXT_PREFETCH_THRESHOLD)
		prefetch_threshold_iter(c, cfg);
	return 0;
}

SEC(".struct_ops.link")
struct gpu_mem_ops gpuext_mem = {
	.block_activate = (void *)mem_block_activate,
	.block_access = (void *)mem_block_access,
	.evict_prepare = (void *)mem_evict_prepare,
	.page_prefetch = (void *)mem_page_prefetch,
	.page_prefetch_iter = (void *)mem_page_prefetch_iter,
	.name = "gpuext_mem",
};
