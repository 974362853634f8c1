/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * gpuext_device.h - what a device probe (an eBPF program compiled to PTX by
 * devrt/jit and called from inside GPU kernels) may use: the ctx, the GPU
 * helpers and the GPU map types. Include it after <linux/bpf.h> and
 * <bpf/bpf_helpers.h> (which declare the standard map helpers 1, 2, 3, 5
 * and 130 that devrt/jit also accepts).
 *
 * Sections: SEC("gpu/entry/<kernel>"), "gpu/entry_block0/<kernel>" (an
 * entry probe that runs in block (0, 0, 0) only), "gpu/entry_thread/<kernel>"
 * (an entry probe that runs in every thread, with no leader elected, even
 * at warp level: what it returns, carried to the exits as entry_ret, is
 * each thread's own, and nothing waits for it until an exit reads it), "gpu/exit/<kernel>",
 * "gpu/load/<kernel>", "gpu/store/<kernel>" (or bpftime's "kprobe/<kernel>"
 * and "kretprobe/<kernel>"); <kernel> is a mangled name or a glob ("*").
 * The program gets a const struct gpuext_dev_ctx * in r1.
 *
 * At warp level (the default) the lowest active lane runs the program for
 * its warp: helpers that read per-thread values (thread index, lane id)
 * return the leader's. gpuext_active_lanes() says how many lanes this run
 * stands for (1 per thread in per-thread mode).
 *
 * Under block sampling (devrt::probes::block_sample, blocks_per_launch)
 * only some blocks run the probes; gpuext_block_weight() says how many
 * blocks of its launch this one stands for (1 when every block runs them):
 * a probe that counts multiplies by it, so that readers need not know the
 * rate, which by launch differs from one launch to the next.
 */
#ifndef GPUEXT_DEVICE_H
#define GPUEXT_DEVICE_H

#include "../include/gpuext_abi.h"

static __u64 (*bpf_get_globaltimer)(void) = (void *)GPUEXT_HELPER_GLOBALTIMER;
static long (*bpf_get_block_idx)(__u64 *x, __u64 *y, __u64 *z) = (void *)GPUEXT_HELPER_BLOCK_IDX;
static long (*bpf_get_block_dim)(__u64 *x, __u64 *y, __u64 *z) = (void *)GPUEXT_HELPER_BLOCK_DIM;
static long (*bpf_get_thread_idx)(__u64 *x, __u64 *y, __u64 *z) = (void *)GPUEXT_HELPER_THREAD_IDX;
static long (*bpf_get_grid_dim)(__u64 *x, __u64 *y, __u64 *z) = (void *)GPUEXT_HELPER_GRID_DIM;
static __u64 (*bpf_get_sm_id)(void) = (void *)GPUEXT_HELPER_SMID;
static __u64 (*bpf_get_warp_id)(void) = (void *)GPUEXT_HELPER_WARPID;
static __u64 (*bpf_get_lane_id)(void) = (void *)GPUEXT_HELPER_LANEID;
static __u64 (*gpuext_nsmid)(void) = (void *)GPUEXT_HELPER_NSMID;
static long (*gpuext_map_add)(void *map, const void *key, __u64 delta) = (void *)GPUEXT_HELPER_MAP_ADD;
static __u64 (*gpuext_global_warp)(void) = (void *)GPUEXT_HELPER_GLOBAL_WARP;
static __u64 (*gpuext_block_linear)(void) = (void *)GPUEXT_HELPER_BLOCK_LINEAR;
static __u64 (*gpuext_active_lanes)(void) = (void *)GPUEXT_HELPER_ACTIVE_LANES;
static __u64 (*gpuext_grid_id)(void) = (void *)GPUEXT_HELPER_GRID_ID;
static __u64 (*gpuext_block_weight)(void) = (void *)GPUEXT_HELPER_BLOCK_WEIGHT;
static __u64 (*gpuext_ring_claim)(void *ring, __u64 sm) = (void *)GPUEXT_HELPER_RING_CLAIM;
static long (*gpuext_ring_output_at)(void *ring, __u64 sm, __u64 index, const void *data, __u64 size) =
	(void *)GPUEXT_HELPER_RING_OUTPUT_AT;

/* gpuext_thread_linear - the thread's index inside its block (x fastest). */
static __always_inline __u64 gpuext_thread_linear(void)
{
	__u64 tx, ty, tz, bx, by, bz;

	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_dim(&bx, &by, &bz);
	return (tz * by + ty) * bx + tx;
}

/*
 * gpuext_first_thread - whether this is thread (0, 0, 0) of its block, and
 * gpuext_first_block whether its block is block (0, 0, 0) of the grid: the
 * three indexes ORed, where the linear index multiplies them by the
 * dimensions first. Every warp of a kernel asks, on its way in (but
 * for a gpu/entry_block0 program, which only block 0 runs).
 */
static __always_inline int gpuext_first_thread(void)
{
	__u64 x, y, z;

	bpf_get_thread_idx(&x, &y, &z);
	return (x | y | z) == 0;
}

static __always_inline int gpuext_first_block(void)
{
	__u64 x, y, z;

	bpf_get_block_idx(&x, &y, &z);
	return (x | y | z) == 0;
}

/* gpuext_block_threads - threads per block (at most 1024: 32-bit
 * multiplies, one instruction each where 64-bit ones take several). */
static __always_inline __u32 gpuext_block_threads(void)
{
	__u64 bx, by, bz;

	bpf_get_block_dim(&bx, &by, &bz);
	return (__u32)bx * (__u32)by * (__u32)bz;
}

/* The blocks of the launch: %nctaid.x * y * z. */
static __always_inline __u64 gpuext_grid_blocks(void)
{
	__u64 gx, gy, gz;

	bpf_get_grid_dim(&gx, &gy, &gz);
	return gx * gy * gz;
}

#endif /* GPUEXT_DEVICE_H */
