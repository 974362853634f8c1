/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gpu_ext.h - what a GPU driver calls, and what a policy implements.
 *
 * A driver (NVIDIA's open modules with kernel-modules/nvidia/, or the
 * simulator in kernel-modules/sim/) fills a context of gpuext_abi.h with what
 * it observed and calls one entry point below at the matching place:
 *
 *   gpu_ext_block_activate   a root chunk was given to a VA block (used list)
 *   gpu_ext_block_access     a resident root chunk served a fault
 *   gpu_ext_evict_prepare    the driver picked a victim candidate
 *   gpu_ext_page_prefetch    a fault in a VA block: which pages to prefetch
 *   gpu_ext_page_prefetch_iter  one level of the driver's region tree (ENTER_LOOP)
 *   gpu_ext_sched_task_init / _bind / _destroy   a channel group's life
 *
 * The module copies the context, runs the attached struct_ops policy on the
 * copy (policies only read it and record requests through kfuncs), then
 * validates and clamps each request and hands the driver a decision. The
 * driver applies the decision itself: the policy advises, the kernel decides.
 * Every entry point is safe to call with no policy attached (it returns the
 * default decision and only counts the call) and from atomic context.
 */
/*
 * kfuncs a policy may call (struct_ops programs only; each records a request
 * in module memory, returns 0 or -EINVAL/-EPERM, and is counted):
 *   int bpf_gpu_ext_block_move(struct gpuext_mem_ctx *ctx, u32 pos);
 *   int bpf_gpu_ext_set_prefetch_region(struct gpuext_prefetch_ctx *ctx, u32 first, u32 outer);
 *   int bpf_gpu_ext_set_timeslice(struct gpuext_sched_ctx *ctx, u64 us);
 *   int bpf_gpu_ext_set_interleave(struct gpuext_sched_ctx *ctx, u32 level);
 *   int bpf_gpu_ext_reject_bind(struct gpuext_sched_ctx *ctx);
 *
 * Userspace view, /sys/kernel/gpu_ext/ (read-only text):
 *   abi_version   "1\n" (GPUEXT_KMOD_ABI_VERSION)
 *   mem_policy    the attached gpu_mem_ops' name, or "-"
 *   sched_policy  the attached gpu_sched_ops' name, or "-"
 *   stats         one line per hook (enum gpuext_hook order):
 *     "<hook> calls N policy N requests N applied N rejected N clamped N\n"
 *     hook names: block_activate block_access evict_prepare page_prefetch
 *     page_prefetch_iter task_init task_bind task_destroy
 *     calls: entry point calls; policy: calls that ran a policy callback;
 *     requests: kfunc calls; applied: decisions returned as asked;
 *     rejected: invalid requests (bad value, wrong hook, skip bound hit);
 *     clamped: requests changed to fit a bound.
 */
#ifndef GPU_EXT_H
#define GPU_EXT_H

#include <linux/types.h>
#include "../../bpf/include/gpuext_abi.h"

/* The struct_ops a memory policy implements. Every callback is optional. */
struct gpu_mem_ops {
	/* Return values are ignored; requests go through bpf_gpu_ext_block_move. */
	int (*block_activate)(struct gpuext_mem_ctx *ctx);
	int (*block_access)(struct gpuext_mem_ctx *ctx);
	int (*evict_prepare)(struct gpuext_mem_ctx *ctx);
	/* Return enum gpuext_action; region through bpf_gpu_ext_set_prefetch_region. */
	int (*page_prefetch)(struct gpuext_prefetch_ctx *ctx);
	int (*page_prefetch_iter)(struct gpuext_prefetch_ctx *ctx);
	char name[16];
};

/* The struct_ops a scheduling policy implements. Every callback is optional. */
struct gpu_sched_ops {
	int (*task_init)(struct gpuext_sched_ctx *ctx);
	int (*task_bind)(struct gpuext_sched_ctx *ctx);
	int (*task_destroy)(struct gpuext_sched_ctx *ctx);
	char name[16];
};

/* Memory: the validated position for the chunk (enum gpuext_pos);
 * GPUEXT_POS_NONE means "do what you would have done". For evict_prepare,
 * GPUEXT_POS_TAIL means "spare this candidate, move it to the tail and pick
 * again"; the module never returns it once ctx->skips reaches
 * GPUEXT_EVICT_MAX_SKIPS, so an eviction always ends. */
u32 gpu_ext_block_activate(const struct gpuext_mem_ctx *ctx);
u32 gpu_ext_block_access(const struct gpuext_mem_ctx *ctx);
u32 gpu_ext_evict_prepare(const struct gpuext_mem_ctx *ctx);

/* Prefetch: returns enum gpuext_action. On GPUEXT_ACTION_BYPASS, *first and
 * *outer hold the region to prefetch, inside [max_first, max_outer) (empty
 * when first == outer). On GPUEXT_ACTION_ENTER_LOOP the driver walks its tree
 * and calls gpu_ext_page_prefetch_iter per level; that returns true when the
 * policy chose the level's region (then in *first, *outer, clamped), and the
 * driver prefetches the last region chosen. */
u32 gpu_ext_page_prefetch(const struct gpuext_prefetch_ctx *ctx, u32 *first, u32 *outer);
bool gpu_ext_page_prefetch_iter(const struct gpuext_prefetch_ctx *ctx, u32 *first, u32 *outer);

/* Scheduling: what the driver should use for the channel group. */
struct gpu_ext_sched_decision {
	u64 timeslice_us;  /* clamped into [GPUEXT_TIMESLICE_MIN_US, GPUEXT_TIMESLICE_MAX_US] */
	u32 interleave;    /* enum gpuext_interleave */
	bool reject;       /* task_bind only: refuse the bind */
};

/* Each fills *out (starting from the context's current values) and returns
 * true when the policy changed anything. */
bool gpu_ext_sched_task_init(const struct gpuext_sched_ctx *ctx, struct gpu_ext_sched_decision *out);
bool gpu_ext_sched_task_bind(const struct gpuext_sched_ctx *ctx, struct gpu_ext_sched_decision *out);
void gpu_ext_sched_task_destroy(const struct gpuext_sched_ctx *ctx);

/* The module's ABI version, for a driver to check at load. */
u32 gpu_ext_abi_version(void);

#endif /* GPU_EXT_H */
