/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * misbehave.h - what the two misbehaving policies share: the policies'
 * header and the slots of rets[] where each keeps the last return value of
 * its kfunc call sites (read by the Go test).
 */
#ifndef MISBEHAVE_H
#define MISBEHAVE_H

/* The struct_ops types, contexts and kfunc declarations: the policies'
 * shared header (bpf/policy), so there is one place that declares them. */
#include "../../policy/gpu_ext_policy.h"

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
