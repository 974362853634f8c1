// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpu_ext_stats.c - per-CPU counters of every hook call, policy run, request,
 * and what became of each request. Per-CPU so an entry point called from any
 * context (atomic, interrupts off) counts without a lock or a shared cache
 * line; summed only when userspace reads /sys/kernel/gpu_ext/stats.
 */
#include <linux/percpu.h>
#include <linux/sysfs.h>

#include "gpu_ext_internal.h"

struct gpu_ext_hook_counters {
	u64 c[GPU_EXT_CNT_MAX];
};

static DEFINE_PER_CPU(struct gpu_ext_hook_counters[GPUEXT_HOOK_MAX], gpu_ext_counters);

static const char *const gpu_ext_hook_names[GPUEXT_HOOK_MAX] = {
	[GPUEXT_HOOK_BLOCK_ACTIVATE] = "block_activate",
	[GPUEXT_HOOK_BLOCK_ACCESS] = "block_access",
	[GPUEXT_HOOK_EVICT_PREPARE] = "evict_prepare",
	[GPUEXT_HOOK_PAGE_PREFETCH] = "page_prefetch",
	[GPUEXT_HOOK_PAGE_PREFETCH_ITER] = "page_prefetch_iter",
	[GPUEXT_HOOK_TASK_INIT] = "task_init",
	[GPUEXT_HOOK_TASK_BIND] = "task_bind",
	[GPUEXT_HOOK_TASK_DESTROY] = "task_destroy",
};

void gpu_ext_count(u32 hook, enum gpu_ext_counter c)
{
	if (hook >= GPUEXT_HOOK_MAX || c >= GPU_EXT_CNT_MAX)
		return;
	/* this_cpu_inc is one irq-safe instruction on x86. */
	this_cpu_inc(gpu_ext_counters[hook].c[c]);
}

ssize_t gpu_ext_stats_emit(char *buf)
{
	ssize_t n = 0;
	u32 hook;
	int cpu, c;

	for (hook = 0; hook < GPUEXT_HOOK_MAX; hook++) {
		u64 sum[GPU_EXT_CNT_MAX] = {};

		for_each_possible_cpu(cpu)
			for (c = 0; c < GPU_EXT_CNT_MAX; c++)
				sum[c] += per_cpu(gpu_ext_counters, cpu)[hook].c[c];
		n += sysfs_emit_at(buf, n,
				   "%s calls %llu policy %llu requests %llu applied %llu rejected %llu clamped %llu\n",
				   gpu_ext_hook_names[hook], sum[GPU_EXT_CNT_CALLS],
				   sum[GPU_EXT_CNT_POLICY], sum[GPU_EXT_CNT_REQUESTS],
				   sum[GPU_EXT_CNT_APPLIED], sum[GPU_EXT_CNT_REJECTED],
				   sum[GPU_EXT_CNT_CLAMPED]);
	}
	return n;
}
