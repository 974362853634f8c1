// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpu_ext_hooks.c - the entry points a GPU driver calls (gpu_ext.h).
 *
 * Each one counts the call, copies the driver's context into a call record
 * on its own stack, runs the attached policy's callback on the copy (if a
 * policy with that callback is attached), then validates the requests the
 * callback recorded and returns the decision. The policy never sees driver
 * memory, and the driver never sees an unchecked value. Safe in atomic
 * context: no locks, no allocation, RCU only to read the policy pointer.
 *
 * The checks are here too, because the kfuncs call the same ones to tell a
 * policy what its request will become.
 */
#include <linux/bpf.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/rcupdate.h>

#include "gpu_ext_internal.h"

/* --- checks ----------------------------------------------------------- */

int gpu_ext_check_pos(const struct gpuext_mem_ctx *ctx, u64 pos)
{
	if (pos > GPUEXT_POS_TAIL)
		return -EINVAL;
	/* Sparing a candidate is bounded so every eviction ends. */
	if (pos == GPUEXT_POS_TAIL && ctx->hook == GPUEXT_HOOK_EVICT_PREPARE &&
	    ctx->skips >= GPUEXT_EVICT_MAX_SKIPS)
		return -EPERM;
	return 0;
}

int gpu_ext_check_region(const struct gpuext_prefetch_ctx *ctx, u64 first, u64 outer)
{
	if (first > outer || ctx->max_first > ctx->max_outer)
		return -EINVAL;
	if (first < ctx->max_first || outer > ctx->max_outer)
		return GPU_EXT_CLAMPED;
	return 0;
}

static bool gpu_ext_sched_settable(const struct gpuext_sched_ctx *ctx)
{
	return ctx->hook == GPUEXT_HOOK_TASK_INIT || ctx->hook == GPUEXT_HOOK_TASK_BIND;
}

int gpu_ext_check_timeslice(const struct gpuext_sched_ctx *ctx, u64 us)
{
	if (!gpu_ext_sched_settable(ctx))
		return -EPERM;
	if (us < GPUEXT_TIMESLICE_MIN_US || us > GPUEXT_TIMESLICE_MAX_US)
		return GPU_EXT_CLAMPED;
	return 0;
}

int gpu_ext_check_interleave(const struct gpuext_sched_ctx *ctx, u64 level)
{
	if (!gpu_ext_sched_settable(ctx))
		return -EPERM;
	if (level > GPUEXT_INTERLEAVE_HIGH)
		return -EINVAL;
	return 0;
}

int gpu_ext_check_reject(const struct gpuext_sched_ctx *ctx)
{
	return ctx->hook == GPUEXT_HOOK_TASK_BIND ? 0 : -EPERM;
}

/* Counts a checked request and says whether to use it. */
static bool gpu_ext_settle(u32 hook, int check)
{
	if (check < 0) {
		gpu_ext_count(hook, GPU_EXT_CNT_REJECTED);
		return false;
	}
	gpu_ext_count(hook, check == GPU_EXT_CLAMPED ? GPU_EXT_CNT_CLAMPED : GPU_EXT_CNT_APPLIED);
	return true;
}

/* --- memory ----------------------------------------------------------- */

static u32 gpu_ext_mem_hook(u32 hook, const struct gpuext_mem_ctx *dctx)
{
	int (*cb)(struct gpuext_mem_ctx *ctx) = NULL;
	struct gpu_ext_mem_call call;
	struct gpu_mem_ops *ops;
	u32 pos = GPUEXT_POS_NONE;

	gpu_ext_count(hook, GPU_EXT_CNT_CALLS);
	rcu_read_lock();
	ops = rcu_dereference(gpu_ext_mem_ops);
	if (ops) {
		if (hook == GPUEXT_HOOK_BLOCK_ACTIVATE)
			cb = ops->block_activate;
		else if (hook == GPUEXT_HOOK_BLOCK_ACCESS)
			cb = ops->block_access;
		else
			cb = ops->evict_prepare;
	}
	if (cb) {
		call.ctx = *dctx;
		call.ctx.hook = hook;
		call.magic = GPU_EXT_CALL_MAGIC;
		call.pos.set = false;
		gpu_ext_count(hook, GPU_EXT_CNT_POLICY);
		cb(&call.ctx);
		call.magic = 0;
		if (call.pos.set && gpu_ext_settle(hook, gpu_ext_check_pos(&call.ctx, call.pos.val)))
			pos = call.pos.val;
	}
	rcu_read_unlock();
	return pos;
}

u32 gpu_ext_block_activate(const struct gpuext_mem_ctx *ctx)
{
	return gpu_ext_mem_hook(GPUEXT_HOOK_BLOCK_ACTIVATE, ctx);
}
EXPORT_SYMBOL_GPL(gpu_ext_block_activate);

u32 gpu_ext_block_access(const struct gpuext_mem_ctx *ctx)
{
	return gpu_ext_mem_hook(GPUEXT_HOOK_BLOCK_ACCESS, ctx);
}
EXPORT_SYMBOL_GPL(gpu_ext_block_access);

u32 gpu_ext_evict_prepare(const struct gpuext_mem_ctx *ctx)
{
	return gpu_ext_mem_hook(GPUEXT_HOOK_EVICT_PREPARE, ctx);
}
EXPORT_SYMBOL_GPL(gpu_ext_evict_prepare);

/* --- prefetch --------------------------------------------------------- */

/* Runs one prefetch callback; returns its return value, or -1 when no
 * policy callback ran. On return call->first/outer hold its request. */
static int gpu_ext_prefetch_run(u32 hook, const struct gpuext_prefetch_ctx *dctx,
				struct gpu_ext_prefetch_call *call)
{
	int (*cb)(struct gpuext_prefetch_ctx *ctx) = NULL;
	struct gpu_mem_ops *ops;
	int ret = -1;

	call->first.set = false;
	call->outer.set = false;
	rcu_read_lock();
	ops = rcu_dereference(gpu_ext_mem_ops);
	if (ops)
		cb = hook == GPUEXT_HOOK_PAGE_PREFETCH ? ops->page_prefetch : ops->page_prefetch_iter;
	if (cb) {
		call->ctx = *dctx;
		call->ctx.hook = hook;
		call->magic = GPU_EXT_CALL_MAGIC;
		gpu_ext_count(hook, GPU_EXT_CNT_POLICY);
		ret = cb(&call->ctx);
		call->magic = 0;
		if (ret < 0)
			ret = INT_MAX; /* an unknown action, not "no policy" */
	}
	rcu_read_unlock();
	return ret;
}

/* Validates the recorded region; on success clamps it into the bound. */
static bool gpu_ext_prefetch_region(u32 hook, const struct gpu_ext_prefetch_call *call,
				    u32 *first, u32 *outer)
{
	const struct gpuext_prefetch_ctx *ctx = &call->ctx;

	if (!gpu_ext_settle(hook, gpu_ext_check_region(ctx, call->first.val, call->outer.val)))
		return false;
	*first = clamp_t(u64, call->first.val, ctx->max_first, ctx->max_outer);
	*outer = clamp_t(u64, call->outer.val, ctx->max_first, ctx->max_outer);
	return true;
}

u32 gpu_ext_page_prefetch(const struct gpuext_prefetch_ctx *ctx, u32 *first, u32 *outer)
{
	const u32 hook = GPUEXT_HOOK_PAGE_PREFETCH;
	struct gpu_ext_prefetch_call call;
	int ret;

	gpu_ext_count(hook, GPU_EXT_CNT_CALLS);
	*first = ctx->max_first;
	*outer = ctx->max_first;
	ret = gpu_ext_prefetch_run(hook, ctx, &call);
	switch (ret) {
	case -1:
	case GPUEXT_ACTION_DEFAULT:
		/* A region with DEFAULT has nothing to apply to. */
		if (call.first.set)
			gpu_ext_count(hook, GPU_EXT_CNT_REJECTED);
		return GPUEXT_ACTION_DEFAULT;
	case GPUEXT_ACTION_BYPASS:
		if (!call.first.set) {
			gpu_ext_count(hook, GPU_EXT_CNT_APPLIED); /* no prefetch */
			return GPUEXT_ACTION_BYPASS;
		}
		if (gpu_ext_prefetch_region(hook, &call, first, outer))
			return GPUEXT_ACTION_BYPASS;
		*first = ctx->max_first;
		*outer = ctx->max_first;
		return GPUEXT_ACTION_DEFAULT;
	case GPUEXT_ACTION_ENTER_LOOP:
		gpu_ext_count(hook, GPU_EXT_CNT_APPLIED);
		if (call.first.set) /* regions are chosen per level, not here */
			gpu_ext_count(hook, GPU_EXT_CNT_REJECTED);
		return GPUEXT_ACTION_ENTER_LOOP;
	default:
		gpu_ext_count(hook, GPU_EXT_CNT_REJECTED);
		return GPUEXT_ACTION_DEFAULT;
	}
}
EXPORT_SYMBOL_GPL(gpu_ext_page_prefetch);

bool gpu_ext_page_prefetch_iter(const struct gpuext_prefetch_ctx *ctx, u32 *first, u32 *outer)
{
	const u32 hook = GPUEXT_HOOK_PAGE_PREFETCH_ITER;
	struct gpu_ext_prefetch_call call;

	gpu_ext_count(hook, GPU_EXT_CNT_CALLS);
	if (gpu_ext_prefetch_run(hook, ctx, &call) == -1 || !call.first.set)
		return false;
	return gpu_ext_prefetch_region(hook, &call, first, outer);
}
EXPORT_SYMBOL_GPL(gpu_ext_page_prefetch_iter);

/* --- scheduling ------------------------------------------------------- */

static bool gpu_ext_sched_hook(u32 hook, const struct gpuext_sched_ctx *dctx,
			       struct gpu_ext_sched_decision *out)
{
	int (*cb)(struct gpuext_sched_ctx *ctx) = NULL;
	struct gpu_ext_sched_call call;
	struct gpu_sched_ops *ops;
	bool changed = false;
	int check;

	gpu_ext_count(hook, GPU_EXT_CNT_CALLS);
	out->timeslice_us = dctx->timeslice_us;
	out->interleave = dctx->interleave;
	out->reject = false;
	rcu_read_lock();
	ops = rcu_dereference(gpu_ext_sched_ops);
	if (ops) {
		if (hook == GPUEXT_HOOK_TASK_INIT)
			cb = ops->task_init;
		else if (hook == GPUEXT_HOOK_TASK_BIND)
			cb = ops->task_bind;
		else
			cb = ops->task_destroy;
	}
	if (!cb) {
		rcu_read_unlock();
		return false;
	}
	call.ctx = *dctx;
	call.ctx.hook = hook;
	call.magic = GPU_EXT_CALL_MAGIC;
	call.timeslice.set = false;
	call.interleave.set = false;
	call.reject.set = false;
	gpu_ext_count(hook, GPU_EXT_CNT_POLICY);
	cb(&call.ctx);
	call.magic = 0;
	rcu_read_unlock();

	if (call.timeslice.set) {
		check = gpu_ext_check_timeslice(&call.ctx, call.timeslice.val);
		if (gpu_ext_settle(hook, check)) {
			out->timeslice_us = clamp_t(u64, call.timeslice.val,
						    GPUEXT_TIMESLICE_MIN_US, GPUEXT_TIMESLICE_MAX_US);
			changed = true;
		}
	}
	if (call.interleave.set) {
		check = gpu_ext_check_interleave(&call.ctx, call.interleave.val);
		if (gpu_ext_settle(hook, check)) {
			out->interleave = call.interleave.val;
			changed = true;
		}
	}
	if (call.reject.set && gpu_ext_settle(hook, gpu_ext_check_reject(&call.ctx))) {
		out->reject = true;
		changed = true;
	}
	return changed;
}

bool gpu_ext_sched_task_init(const struct gpuext_sched_ctx *ctx, struct gpu_ext_sched_decision *out)
{
	return gpu_ext_sched_hook(GPUEXT_HOOK_TASK_INIT, ctx, out);
}
EXPORT_SYMBOL_GPL(gpu_ext_sched_task_init);

bool gpu_ext_sched_task_bind(const struct gpuext_sched_ctx *ctx, struct gpu_ext_sched_decision *out)
{
	return gpu_ext_sched_hook(GPUEXT_HOOK_TASK_BIND, ctx, out);
}
EXPORT_SYMBOL_GPL(gpu_ext_sched_task_bind);

void gpu_ext_sched_task_destroy(const struct gpuext_sched_ctx *ctx)
{
	struct gpu_ext_sched_decision ignored;

	gpu_ext_sched_hook(GPUEXT_HOOK_TASK_DESTROY, ctx, &ignored);
}
EXPORT_SYMBOL_GPL(gpu_ext_sched_task_destroy);
