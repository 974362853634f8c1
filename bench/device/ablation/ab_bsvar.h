/* ab_bsvar.h - block_sched's exit with its index the block's own, for
 * the ab_bs* probes that vary its entry (ab_bsreg.bpf.c says why). The
 * including file defines AB_ENTRY_STORES when its entry stores the start
 * time and SM in the block's state itself; otherwise thread 0's exit
 * stores what its entry returned (the start time) and the SM. With
 * AB_WRITTEN the last warp adds 1 to its SM's padded counter's threads
 * word after the record. */
#include "ablation.h"

AB_RING;

SEC("gpu/exit/*")
int ab_exit(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct gpuext_dev_block_state *st;
	struct gpuext_dev_block rec = {};
	__u64 lanes = gpuext_active_lanes();
	__u64 threads = gpuext_block_threads();
#ifdef AB_EARLY
	__u64 end = bpf_get_globaltimer();
#endif

	st = bpf_map_lookup_elem(&ab_blocks, &zero);
	if (!st)
		return 0;
#ifndef AB_ENTRY_STORES
	if (ctx->entry_ret != GPUEXT_RING_NO_CLAIM) {
		st->start_ns = ctx->entry_ret;
		st->sm = bpf_get_sm_id();
	}
#endif
	if (__sync_fetch_and_add(&st->lanes_done, (__u32)lanes) + lanes < threads)
		return 0;
	rec.kernel_id = ctx->kernel_id;
	rec.block = gpuext_block_linear();
	rec.start_ns = st->start_ns;
#ifdef AB_EARLY
	rec.end_ns = end;
#else
	rec.end_ns = bpf_get_globaltimer();
#endif
	rec.smid = st->sm;
	rec.threads = threads;
	rec.weight = gpuext_block_weight();
	rec.grid_id = gpuext_grid_id();
	rec.grid_blocks = gpuext_grid_blocks();
	gpuext_ring_output_at(&ab_ring, st->sm, rec.block, &rec, sizeof(rec));
#ifdef AB_WRITTEN
	{
		struct gpuext_dev_sm *sm = bpf_map_lookup_elem(&ab_sm_pad, &zero);

		if (sm)
			__sync_fetch_and_add(&sm->threads, 1);
	}
#endif
	return 1;
}
