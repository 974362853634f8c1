// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * block_sched.bpf.c - when each thread block of every kernel was scheduled
 * and how long it ran, and on which SM. The first warp of a block to reach
 * the entry probe inserts the block (its %globaltimer and %smid); every
 * exit adds the lanes it stands for; the exit that completes the block's
 * threads writes a struct gpuext_dev_block to gx_block_ring and removes the
 * block. Receiver: gpu.kernel.block.* (schedule time, duration, SM).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct gpuext_dev_block_key);
	__type(value, struct gpuext_dev_block_state);
} gx_blocks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} gx_block_ring SEC(".maps");

SEC("gpu/entry/*")
int block_entry(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_block_key key = {
		.kernel_id = ctx->kernel_id,
		.block = gpuext_block_linear(),
	};
	struct gpuext_dev_block_state st = {
		.start_ns = bpf_get_globaltimer(),
		.smid = bpf_get_sm_id(),
	};

	/* The first warp of the block wins; the others find it there. */
	bpf_map_update_elem(&gx_blocks, &key, &st, BPF_NOEXIST);
	return 0;
}

SEC("gpu/exit/*")
int block_exit(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_block_key key = {
		.kernel_id = ctx->kernel_id,
		.block = gpuext_block_linear(),
	};
	struct gpuext_dev_block_state *st;
	struct gpuext_dev_block rec = {};
	__u64 lanes = gpuext_active_lanes();
	__u64 threads = gpuext_block_threads();

	st = bpf_map_lookup_elem(&gx_blocks, &key);
	if (!st)
		return 0;
	if (__sync_fetch_and_add(&st->lanes_done, lanes) + lanes < threads)
		return 0;
	rec.kernel_id = key.kernel_id;
	rec.block = key.block;
	rec.start_ns = st->start_ns;
	rec.end_ns = bpf_get_globaltimer();
	rec.smid = st->smid;
	rec.threads = threads;
	bpf_ringbuf_output(&gx_block_ring, &rec, sizeof(rec), 0);
	bpf_map_delete_elem(&gx_blocks, &key);
	return 1;
}
