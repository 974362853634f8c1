// SPDX-License-Identifier: GPL-2.0-only
/*
 * gpu_ext_kfuncs.c - the only things a policy can do: record a request.
 *
 * Each kfunc takes the context the policy was given (a copy inside a call
 * record on the entry point's stack), finds the record with container_of,
 * and stores the request there. Nothing is applied here: the entry point
 * validates the last request of each kind after the callback returns. The
 * return value tells the policy now what the validation will say later (0:
 * it will be applied, possibly clamped; -EINVAL: bad value; -EPERM: not
 * allowed at this hook or past a bound), from the same check functions.
 *
 * The context argument must be a trusted pointer of the context's BTF type
 * (KF_TRUSTED_ARGS), which only the callbacks of gpu_mem_ops and
 * gpu_sched_ops receive; the magic check is a second fence.
 */
#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/module.h>

#include "gpu_ext_internal.h"

static void gpu_ext_record(struct gpu_ext_req *req, u64 val)
{
	req->set = true;
	req->val = val;
}

static int gpu_ext_verdict(int check)
{
	return check < 0 ? check : 0;
}

__bpf_kfunc_start_defs();

__bpf_kfunc int bpf_gpu_ext_block_move(struct gpuext_mem_ctx *ctx, u32 pos)
{
	struct gpu_ext_mem_call *call = container_of(ctx, struct gpu_ext_mem_call, ctx);

	if (call->magic != GPU_EXT_CALL_MAGIC)
		return -EINVAL;
	gpu_ext_count(ctx->hook, GPU_EXT_CNT_REQUESTS);
	gpu_ext_record(&call->pos, pos);
	return gpu_ext_verdict(gpu_ext_check_pos(ctx, pos));
}

__bpf_kfunc int bpf_gpu_ext_set_prefetch_region(struct gpuext_prefetch_ctx *ctx, u32 first,
						u32 outer)
{
	struct gpu_ext_prefetch_call *call = container_of(ctx, struct gpu_ext_prefetch_call, ctx);

	if (call->magic != GPU_EXT_CALL_MAGIC)
		return -EINVAL;
	gpu_ext_count(ctx->hook, GPU_EXT_CNT_REQUESTS);
	gpu_ext_record(&call->first, first);
	gpu_ext_record(&call->outer, outer);
	return gpu_ext_verdict(gpu_ext_check_region(ctx, first, outer));
}

__bpf_kfunc int bpf_gpu_ext_set_timeslice(struct gpuext_sched_ctx *ctx, u64 us)
{
	struct gpu_ext_sched_call *call = container_of(ctx, struct gpu_ext_sched_call, ctx);

	if (call->magic != GPU_EXT_CALL_MAGIC)
		return -EINVAL;
	gpu_ext_count(ctx->hook, GPU_EXT_CNT_REQUESTS);
	gpu_ext_record(&call->timeslice, us);
	return gpu_ext_verdict(gpu_ext_check_timeslice(ctx, us));
}

__bpf_kfunc int bpf_gpu_ext_set_interleave(struct gpuext_sched_ctx *ctx, u32 level)
{
	struct gpu_ext_sched_call *call = container_of(ctx, struct gpu_ext_sched_call, ctx);

	if (call->magic != GPU_EXT_CALL_MAGIC)
		return -EINVAL;
	gpu_ext_count(ctx->hook, GPU_EXT_CNT_REQUESTS);
	gpu_ext_record(&call->interleave, level);
	return gpu_ext_verdict(gpu_ext_check_interleave(ctx, level));
}

__bpf_kfunc int bpf_gpu_ext_reject_bind(struct gpuext_sched_ctx *ctx)
{
	struct gpu_ext_sched_call *call = container_of(ctx, struct gpu_ext_sched_call, ctx);

	if (call->magic != GPU_EXT_CALL_MAGIC)
		return -EINVAL;
	gpu_ext_count(ctx->hook, GPU_EXT_CNT_REQUESTS);
	gpu_ext_record(&call->reject, 1);
	return gpu_ext_verdict(gpu_ext_check_reject(ctx));
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(gpu_ext_kfunc_ids)
BTF_ID_FLAGS(func, bpf_gpu_ext_block_move, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_ext_set_prefetch_region, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_ext_set_timeslice, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_ext_set_interleave, KF_TRUSTED_ARGS)
BTF_ID_FLAGS(func, bpf_gpu_ext_reject_bind, KF_TRUSTED_ARGS)
BTF_KFUNCS_END(gpu_ext_kfunc_ids)

static const struct btf_kfunc_id_set gpu_ext_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &gpu_ext_kfunc_ids,
};

int gpu_ext_kfuncs_register(void)
{
	return register_btf_kfunc_id_set(BPF_PROG_TYPE_STRUCT_OPS, &gpu_ext_kfunc_set);
}
