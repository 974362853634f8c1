// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * block_sched.bpf.c - when each thread block of every kernel was scheduled
 * and how long it ran, and on which SM. A block in flight has a slot of
 * gx_blocks, (linear block id + kernel_id) % GPUEXT_DEV_BLOCK_SLOTS (the
 * blocks resident at once are far fewer, so the blocks of one launch never
 * share a slot): thread 0's entry probe writes its start with a plain
 * store (no warp waits at entry); every exit adds the lanes it stands for;
 * the exit that completes the block's threads writes a struct
 * gpuext_dev_block to gx_block_ring and frees the slot. The SM and kernel
 * come from that exit (a block never leaves its SM): each memory access
 * the last warp waits for delays the block's retirement. A slot is never
 * searched for, so no warp can miss it and no block is counted twice.
 * Receiver: gpu.kernel.block.* (schedule time, duration, SM).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GPUEXT_DEV_BLOCK_SLOTS);
	__type(key, __u32);
	__type(value, struct gpuext_dev_block_state);
} gx_blocks SEC(".maps");

/* 16 MiB: ~262k blocks between two reads of the host. One shard: split in
 * 32 (map_extra) it cost the same on an H200 (the head was not what
 * block_sched paid for), and shards copied and read at slightly different
 * moments handed the tracker one launch's blocks in two reads, around the
 * next launch's. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} gx_block_ring SEC(".maps");

static __always_inline __u32 block_slot(const struct gpuext_dev_ctx *ctx, __u64 block)
{
	return (block + ctx->kernel_id) & (GPUEXT_DEV_BLOCK_SLOTS - 1);
}

SEC("gpu/entry/*")
int block_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 slot;
	struct gpuext_dev_block_state *st;

	/* Thread 0 starts with its block (all of a block's warps are placed
	 * at once) and writes its slot with a plain store: no warp waits on
	 * an atomic at the kernel's entry (a cmpxchg there made short blocks
	 * much slower). */
	if (gpuext_thread_linear() != 0)
		return 0;
	slot = block_slot(ctx, gpuext_block_linear());
	st = bpf_map_lookup_elem(&gx_blocks, &slot);
	if (!st)
		return 0;
	st->start_ns = bpf_get_globaltimer();
	return 1;
}

SEC("gpu/exit/*")
int block_exit(const struct gpuext_dev_ctx *ctx)
{
	__u64 block = gpuext_block_linear();
	__u32 slot = block_slot(ctx, block);
	struct gpuext_dev_block_state *st;
	struct gpuext_dev_block rec = {};
	__u64 lanes = gpuext_active_lanes();
	__u64 threads = gpuext_block_threads();

	st = bpf_map_lookup_elem(&gx_blocks, &slot);
	if (!st)
		return 0;
	if (__sync_fetch_and_add(&st->lanes_done, lanes) + lanes < threads)
		return 0;
	rec.kernel_id = ctx->kernel_id;
	rec.block = block;
	rec.start_ns = st->start_ns;
	rec.end_ns = bpf_get_globaltimer();
	rec.smid = bpf_get_sm_id();
	rec.threads = threads;
	bpf_ringbuf_output(&gx_block_ring, &rec, sizeof(rec), 0);
	/* free the slot for the next block that maps to it */
	st->lanes_done = 0;
	st->start_ns = 0;
	return 1;
}
