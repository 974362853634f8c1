// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * block_sched.bpf.c - when each thread block of every kernel was scheduled
 * and how long it ran, and on which SM. The block's state is in its own
 * shared memory (gx_blk, a per-block array, zero when the block starts):
 * thread 0's entry probe writes its start; every exit adds the lanes it
 * stands for; the exit that completes the block's threads writes a struct
 * gpuext_dev_block to gx_block_ring. The SM and kernel come from that exit
 * (a block never leaves its SM). Nothing is searched for or freed, no
 * block is counted twice, and the only global memory a block touches is
 * its one ring record: each global access the last warp waits for
 * delays the block's retirement. The record names its launch (%gridid),
 * so the receiver groups blocks by launch in whatever order the ring's
 * shards hand them over, and its weight (block sampling: the blocks of
 * its launch it stands for).
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

/* 16 MiB: ~262k blocks between two reads of the host, in 32 shards (SM s
 * writes shard s % 32): with one head, every block's last warp queued on
 * the same atomic, which cost a short memory-bound kernel more than its
 * own work (vecadd 16M on an H100: 2.27x with one shard, 1.53x with 32;
 * bench/device/ablation ab_bsring*). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
	__uint(map_extra, 32);
} gx_block_ring SEC(".maps");

SEC("gpu/entry/*")
int block_entry(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_block_state *st;

	/* Thread 0 starts with its block (all of a block's warps are placed
	 * at once); a plain store to shared memory, no warp waits. */
	if (!gpuext_first_thread())
		return 0;
	st = bpf_map_lookup_elem(&gx_blk, &zero);
	if (!st)
		return 0;
	st->start_ns = bpf_get_globaltimer();
	return 1;
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
	/* fetching: the last exit sees thread 0's start */
	if (__sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < threads)
		return 0;
	rec.kernel_id = ctx->kernel_id;
	rec.block = gpuext_block_linear();
	rec.start_ns = st->start_ns;
	rec.end_ns = bpf_get_globaltimer();
	rec.smid = bpf_get_sm_id();
	rec.threads = threads;
	rec.weight = gpuext_block_weight();
	rec.grid_id = gpuext_grid_id();
	bpf_ringbuf_output(&gx_block_ring, &rec, sizeof(rec), 0);
	return 1;
}
