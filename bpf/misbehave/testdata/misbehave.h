/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * misbehave.h - what the two misbehaving policies share: the struct_ops
 * types of gpu_ext.h, the kfuncs, and the slots of rets[] where each keeps
 * the last return value of its kfunc call sites (read by the Go test).
 */
#ifndef MISBEHAVE_H
#define MISBEHAVE_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

typedef __u32 u32;
typedef __u64 u64;
typedef _Bool bool;
#include "../../../kernel-modules/gpu_ext/gpu_ext.h"

extern int bpf_gpu_ext_block_move(struct gpuext_mem_ctx *ctx, __u32 pos) __ksym;
extern int bpf_gpu_ext_set_prefetch_region(struct gpuext_prefetch_ctx *ctx, __u32 first,
					   __u32 outer) __ksym;
extern int bpf_gpu_ext_set_timeslice(struct gpuext_sched_ctx *ctx, __u64 us) __ksym;
extern int bpf_gpu_ext_set_interleave(struct gpuext_sched_ctx *ctx, __u32 level) __ksym;
extern int bpf_gpu_ext_reject_bind(struct gpuext_sched_ctx *ctx) __ksym;

enum {
	RET_ACTIVATE,        /* block_move(7): -EINVAL */
	RET_ACCESS_BAD,      /* block_move(9), superseded */
	RET_ACCESS_HEAD,     /* then block_move(HEAD): 0 */
	RET_EVICT,           /* block_move(TAIL): 0 until skips hit the bound, then -EPERM */
	RET_REGION_WIDE,     /* (5, 600): 0, clamped */
	RET_REGION_REVERSED, /* (10, 3): -EINVAL */
	RET_INIT_TS,         /* set_timeslice(5) at init: 0, clamped */
	RET_INIT_IL,         /* set_interleave(9): -EINVAL */
	RET_INIT_REJECT,     /* reject_bind at init: -EPERM */
	BIND_CTX_TS,         /* ctx->timeslice_us seen at bind */
	RET_DESTROY_TS,      /* set_timeslice at destroy: -EPERM */
	RET_DESTROY_IL,      /* set_interleave at destroy: -EPERM */
	RET_ITER_REVERSED,   /* _iter level 4 region (20, 10): -EINVAL */
	NRETS,
};

#endif /* MISBEHAVE_H */
