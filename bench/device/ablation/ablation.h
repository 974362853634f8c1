/* ablation.h - the per-SM maps the ablation probes share (see README.md). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../bpf/device/gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* One u64 per hardware warp slot of each SM, as sm_load's gx_sm_warp_start. */
struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_extra, 256);
} ab_slot SEC(".maps");

/* One 24-byte counter block per SM, as sm_load's gx_sm. */
struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_dev_sm);
	__uint(map_extra, 256);
} ab_sm SEC(".maps");

/* The same counters padded to 128 bytes: one SM per cache line. */
struct ab_sm_pad {
	struct gpuext_dev_sm sm;
	__u8 pad[128 - sizeof(struct gpuext_dev_sm)];
};
struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ab_sm_pad);
	__uint(map_extra, 256);
} ab_sm_pad SEC(".maps");

/* One counter for the whole GPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ab_one SEC(".maps");

/* sm_load's entry count: thread 0 adds its block and the block's threads
 * to the SM's padded counters. */
static __always_inline void ab_sm_count_block(void)
{
	__u32 zero = 0;
	struct gpuext_dev_sm *sm;

	if (gpuext_thread_linear() != 0)
		return;
	sm = bpf_map_lookup_elem(&ab_sm_pad, &zero);
	if (!sm)
		return;
	__sync_fetch_and_add(&sm->blocks, 1);
	__sync_fetch_and_add(&sm->threads, gpuext_block_threads());
}

/* block_sched's ring (bpf/device/block_sched.bpf.c: 80-byte records, 32
 * shards) as ab_ring, for the ab_bs* probes that write its record their
 * own way; a macro, declared by those alone, so the other probes' regions
 * do not carry its 20 MiB. */
#define AB_RING \
	struct { \
		__uint(type, BPF_MAP_TYPE_RINGBUF); \
		__uint(max_entries, 80 << 18); \
		__uint(map_extra, 32); \
	} ab_ring SEC(".maps")

#define AB_NOP_ENTRY \
	SEC("gpu/entry/*") int ab_entry(const struct gpuext_dev_ctx *ctx) { return 0; }
#define AB_NOP_EXIT \
	SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx) { return 0; }

/* block_sched's block state, in the block's shared memory
 * (bpf/device/block_sched.bpf.c). */
struct {
	__uint(type, GPUEXT_GPUMAP_PER_BLOCK_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_dev_block_state);
} ab_blocks SEC(".maps");

static __always_inline struct gpuext_dev_block_state *ab_block_slot(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&ab_blocks, &zero);
}

/* block_sched's entry: thread 0 stamps its block's state. */
#define AB_BLOCK_ENTRY                                                          \
	SEC("gpu/entry/*") int ab_entry(const struct gpuext_dev_ctx *ctx)      \
	{                                                                       \
		struct gpuext_dev_block_state *st;                              \
		if (gpuext_thread_linear() != 0)                                \
			return 0;                                               \
		st = ab_block_slot(ctx);                                        \
		if (!st)                                                        \
			return 0;                                               \
		st->start_ns = bpf_get_globaltimer();                           \
		return 1;                                                       \
	}

/* block_sched's ring record alone (ab_bsring*): a ring of 16 MiB in shards
 * (map_extra) that warp 0 of each block writes its block's record to at
 * its exit; no lanes count, the other warps touch nothing. */
#define AB_BSRING(shards)                                                       \
	struct {                                                                \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                             \
		__uint(max_entries, 1 << 24);                                   \
		__uint(map_extra, shards);                                      \
	} ab_ring SEC(".maps");                                                 \
	AB_BLOCK_ENTRY                                                          \
	SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx)        \
	{                                                                       \
		struct gpuext_dev_block_state *st = ab_block_slot(ctx);         \
		struct gpuext_dev_block rec = {};                               \
		if (!st || gpuext_thread_linear() >= 32)                        \
			return 0;                                               \
		rec.kernel_id = ctx->kernel_id;                                 \
		rec.block = gpuext_block_linear();                              \
		rec.start_ns = st->start_ns;                                    \
		rec.end_ns = bpf_get_globaltimer();                             \
		rec.smid = bpf_get_sm_id();                                     \
		rec.threads = gpuext_block_threads();                           \
		rec.grid_id = gpuext_grid_id();                                 \
		bpf_ringbuf_output(&ab_ring, &rec, sizeof(rec), 0);             \
		return 1;                                                       \
	}
