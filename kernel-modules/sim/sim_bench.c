// SPDX-License-Identifier: GPL-2.0-only
/*
 * sim_bench.c - what one gpu_ext entry point call costs, measured where a
 * driver pays it: in the kernel, N calls in a loop timed with ktime. The
 * benchmark (bench/) runs it with and without a policy attached and reports
 * the ratio; nothing here decides anything.
 */
#include <linux/ktime.h>
#include <linux/sched.h>

#include "sim.h"

int sim_bench(struct gpuext_sim_bench *b)
{
	struct gpuext_mem_ctx mem = {
		.chunk_id = 7, .va_start = 1ULL << 32, .pid = 1, .list = GPUEXT_LIST_USED,
		.used_chunks = 64, .capacity_chunks = 64, .access_count = 3,
	};
	struct gpuext_prefetch_ctx pf = {
		.va_start = 1ULL << 32, .pid = 1, .page_index = 17, .max_outer = GPUEXT_BLOCK_PAGES,
		.faulted_pages = 1, .resident_pages = 16, .iter_first = 16, .iter_outer = 32,
		.iter_count = 9, .iter_level = 4,
	};
	struct gpuext_sched_ctx sc = {
		.tsg_id = 1, .timeslice_us = 1000, .pid = 1, .channel_count = 1, .comm = "bench",
	};
	struct gpu_ext_sched_decision d;
	u32 first, outer;
	u64 i, start;

	if (b->hook >= GPUEXT_HOOK_MAX || b->_pad || b->calls == 0 ||
	    b->calls > GPUEXT_SIM_MAX_BENCH_CALLS)
		return -EINVAL;
	start = ktime_get_ns();
	for (i = 0; i < b->calls; i++) {
		switch (b->hook) {
		case GPUEXT_HOOK_BLOCK_ACTIVATE:
			gpu_ext_block_activate(&mem);
			break;
		case GPUEXT_HOOK_BLOCK_ACCESS:
			gpu_ext_block_access(&mem);
			break;
		case GPUEXT_HOOK_EVICT_PREPARE:
			gpu_ext_evict_prepare(&mem);
			break;
		case GPUEXT_HOOK_PAGE_PREFETCH:
			gpu_ext_page_prefetch(&pf, &first, &outer);
			break;
		case GPUEXT_HOOK_PAGE_PREFETCH_ITER:
			gpu_ext_page_prefetch_iter(&pf, &first, &outer);
			break;
		case GPUEXT_HOOK_TASK_INIT:
			gpu_ext_sched_task_init(&sc, &d);
			break;
		case GPUEXT_HOOK_TASK_BIND:
			gpu_ext_sched_task_bind(&sc, &d);
			break;
		default:
			gpu_ext_sched_task_destroy(&sc);
			break;
		}
		/* Rarely enough not to show in the figure. */
		if ((i & 0xffff) == 0xffff)
			cond_resched();
	}
	b->elapsed_ns = ktime_get_ns() - start;
	return 0;
}
