/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gpu_ext_internal.h - what the module's files share and nothing exports:
 * the call records that wrap a context copy while a policy runs (kfuncs find
 * them with container_of), the attached-policy pointers, the counters.
 */
#ifndef GPU_EXT_INTERNAL_H
#define GPU_EXT_INTERNAL_H

#include <linux/types.h>
#include <linux/rcupdate.h>

#include "gpu_ext.h"

#define GPU_EXT_NAME_LEN 16

/* Marks a live call record; a kfunc refuses a context without it. */
#define GPU_EXT_CALL_MAGIC 0x67707578u /* "gpux" */

/* A request recorded by a kfunc: the last call of a kfunc in one callback
 * wins; the entry point validates it after the callback returns. */
struct gpu_ext_req {
	bool set;
	u64 val;
};

struct gpu_ext_mem_call {
	struct gpuext_mem_ctx ctx; /* the policy's (read-only) copy */
	u32 magic;
	struct gpu_ext_req pos;
};

struct gpu_ext_prefetch_call {
	struct gpuext_prefetch_ctx ctx;
	u32 magic;
	struct gpu_ext_req first; /* set together with outer */
	struct gpu_ext_req outer;
};

struct gpu_ext_sched_call {
	struct gpuext_sched_ctx ctx;
	u32 magic;
	struct gpu_ext_req timeslice;
	struct gpu_ext_req interleave;
	struct gpu_ext_req reject;
};

/* The attached policies (NULL: none); gpu_ext_ops.c changes them, entry
 * points read them under rcu_read_lock. */
extern struct gpu_mem_ops __rcu *gpu_ext_mem_ops;
extern struct gpu_sched_ops __rcu *gpu_ext_sched_ops;

int gpu_ext_ops_register(void);
int gpu_ext_kfuncs_register(void);
void gpu_ext_mem_policy_name(char name[GPU_EXT_NAME_LEN]);
void gpu_ext_sched_policy_name(char name[GPU_EXT_NAME_LEN]);

/* Validation shared by the kfuncs (their return value) and the entry points
 * (the decision): one definition of what is allowed. */
int gpu_ext_check_pos(const struct gpuext_mem_ctx *ctx, u64 pos);
int gpu_ext_check_region(const struct gpuext_prefetch_ctx *ctx, u64 first, u64 outer);
int gpu_ext_check_timeslice(const struct gpuext_sched_ctx *ctx, u64 us);
int gpu_ext_check_interleave(const struct gpuext_sched_ctx *ctx, u64 level);
int gpu_ext_check_reject(const struct gpuext_sched_ctx *ctx);

/* A check's verdict when the request is valid but changed to fit a bound. */
#define GPU_EXT_CLAMPED 1

/* Counters (gpu_ext_stats.c). */
enum gpu_ext_counter {
	GPU_EXT_CNT_CALLS,
	GPU_EXT_CNT_POLICY,
	GPU_EXT_CNT_REQUESTS,
	GPU_EXT_CNT_APPLIED,
	GPU_EXT_CNT_REJECTED,
	GPU_EXT_CNT_CLAMPED,
	GPU_EXT_CNT_MAX,
};

void gpu_ext_count(u32 hook, enum gpu_ext_counter c);
ssize_t gpu_ext_stats_emit(char *buf);

#endif /* GPU_EXT_INTERNAL_H */
