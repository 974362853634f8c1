// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsring: block_sched's ring record without its lanes count: warp 0
 * writes it at its exit (the other warps touch nothing). */
#include "ablation.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} ab_ring SEC(".maps");

AB_BLOCK_ENTRY
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_block_state *st = ab_block_slot(ctx);
	struct gpuext_dev_block rec = {};

	if (!st || gpuext_thread_linear() >= 32)
		return 0;
	rec.kernel_id = ctx->kernel_id;
	rec.block = gpuext_block_linear();
	rec.start_ns = st->start_ns;
	rec.end_ns = bpf_get_globaltimer();
	rec.smid = bpf_get_sm_id();
	rec.threads = gpuext_block_threads();
	bpf_ringbuf_output(&ab_ring, &rec, sizeof(rec), 0);
	return 1;
}
