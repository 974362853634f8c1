// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * block_sched.bpf.c - when each thread block of every kernel was scheduled
 * and how long it ran, and on which SM. The block's state is in its own
 * shared memory (gx_blk, a per-block array, zero when the block starts):
 * thread 0's entry probe writes its start and claims the block's record
 * in gx_block_ring (gpuext_ring_claim: an index, its atomic not waited
 * for, carried in thread 0's register to its exit); thread 0's exit
 * publishes the index; every exit adds the lanes it stands for; the exit
 * that completes the block's threads writes a struct gpuext_dev_block at
 * that index (gpuext_ring_output_at). The record's kernel comes from that
 * exit, its SM from thread 0's entry (a block can move with preemption;
 * the claim's shard is the entry's). Nothing is searched for or freed, no
 * block is counted twice, and the last warp touches global memory only to
 * store its record, waiting for nothing: when it took the index itself, it
 * waited for the atomic before it could store, which delayed the block's
 * retirement (a short kernel's last blocks, a GEMM's every wave:
 * devrt/jit/README.md). The record names its launch (%gridid), so the
 * receiver groups blocks by launch in whatever order the ring's shards
 * hand them over, its weight (block sampling: the blocks of its launch it
 * stands for) and its launch's blocks (so the receiver knows which ran the
 * probes, and when it has every record of the launch). A block that
 * outlives a lap of its shard (8192 records started on the SMs that share
 * it) loses its record, and its late write
 * costs the record that had taken its slot since (the reader counts both
 * lost).
 * Receiver: gpu.kernel.block.* (schedule time, duration, SM).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, GPUEXT_GPUMAP_PER_BLOCK_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_dev_block_state);
} gx_blk SEC(".maps");

/* 20 MiB: 262144 blocks between two reads of the host (80-byte slots; 16
 * MiB of 64-byte slots until the record named its launch's blocks: the
 * slots are a power of two, and 16 MiB of 80 would have been 131072), in
 * 32 shards (SM s
 * writes shard s % 32): with one head, every block's last warp queued on
 * the same atomic, which cost a short memory-bound kernel more than its
 * own work (vecadd 16M on an H100: 2.27x with one shard, 1.53x with 32;
 * bench/device/ablation ab_bsring*). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 80 << 18);
	__uint(map_extra, 32);
} gx_block_ring SEC(".maps");

/* In every thread (gpu/entry_thread): only thread 0 claims, and no shfl
 * of a leader's result makes a warp wait for the claim's atomic. */
SEC("gpu/entry_thread/*")
__u64 block_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_block_state *st;
	__u64 sm;

	/* Thread 0 starts with its block (all of a block's warps are placed
	 * at once); plain stores to shared memory, no warp waits. */
	if (!gpuext_first_thread())
		return GPUEXT_RING_NO_CLAIM;
	st = bpf_map_lookup_elem(&gx_blk, &zero);
	if (!st)
		return GPUEXT_RING_NO_CLAIM;
	st->start_ns = bpf_get_globaltimer();
	/* one read: the claim's shard and the record's (the SM can change
	 * with preemption between two reads) */
	sm = bpf_get_sm_id();
	st->sm = sm;
	return gpuext_ring_claim(&gx_block_ring, sm);
}

SEC("gpu/exit/*")
int block_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_block_state *st;
	struct gpuext_dev_block rec = {};
	__u64 lanes = gpuext_active_lanes();
	__u64 threads = gpuext_block_threads();

	st = bpf_map_lookup_elem(&gx_blk, &zero);
	if (!st)
		return 0;
	/* thread 0 (its exit's leader: the lowest lane) publishes its claim,
	 * before its count releases it to the last exit */
	if (ctx->entry_ret != GPUEXT_RING_NO_CLAIM)
		st->index = ctx->entry_ret;
	/* fetching: the last exit sees thread 0's start and claim */
	if (__sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < threads)
		return 0;
	rec.kernel_id = ctx->kernel_id;
	rec.block = gpuext_block_linear();
	rec.start_ns = st->start_ns;
	rec.end_ns = bpf_get_globaltimer();
	rec.smid = st->sm;
	rec.threads = threads;
	rec.weight = gpuext_block_weight();
	rec.grid_id = gpuext_grid_id();
	rec.grid_blocks = gpuext_grid_blocks();
	gpuext_ring_output_at(&gx_block_ring, st->sm, st->index, &rec, sizeof(rec));
	return 1;
}
