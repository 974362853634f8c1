// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * classes.bpf.c - one program per eBPF instruction class, for devrt/jit's
 * tests: the compiler's PTX (golden files), the interpreter's results and
 * the GPU check (cmd/jitcheck) all run these. Inputs come from the ctx,
 * which every test thread fills differently, so the results depend on
 * every operation. Compiled with -mcpu=v4 (sdiv, smod, movsx, bswap,
 * sign-extending loads).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../../bpf/device/gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep clang from folding: an opaque copy of x. */
#define OPAQUE(x) ({ __typeof__(x) __v = (x); asm volatile("" : "+r"(__v)); __v; })

SEC("gpu/entry/*")
__u64 alu64(const struct gpuext_dev_ctx *ctx)
{
	__u64 a = ctx->addr, b = ctx->kernel_id, s = ctx->site, k = ctx->kind;
	__u64 r;

	r = a + b;
	r ^= a * 0x9e3779b97f4a7c15ULL;
	r -= b >> 7;
	r |= k << 40;
	r &= ~(s << 3);
	r += OPAQUE(r) << (s & 63);
	r ^= OPAQUE(r) >> (k & 63);
	r += (__u64)((__s64)a >> (s & 63));
	r -= -(__s64)b;
	r ^= (__u64)(__s64)(__s8)a;
	r += (__u64)(__s64)(__s16)b;
	r ^= (__u64)(__s64)(__s32)(a >> 3);
	return r;
}

SEC("gpu/entry/*")
__u64 alu32(const struct gpuext_dev_ctx *ctx)
{
	__u32 a = ctx->addr, b = ctx->kernel_id >> 32, s = ctx->site, k = ctx->kind;
	__u32 r;

	r = a + b;
	r ^= a * 0x9e3779b9U;
	r -= b >> 5;
	r |= k << 20;
	r &= ~(s << 2);
	r += OPAQUE(r) << (s & 31);
	r ^= OPAQUE(r) >> (k & 31);
	r += (__u32)((__s32)a >> (s & 31));
	r -= -(__s32)b;
	r ^= (__u32)(__s32)(__s8)a;
	r += (__u32)(__s32)(__s16)b;
	return ((__u64)r << 32) | (__u32)(r * 7);
}

SEC("gpu/entry/*")
__u64 divmod(const struct gpuext_dev_ctx *ctx)
{
	__u64 a = ctx->addr, d = OPAQUE(ctx->site % 5); /* 0 for some threads */
	__s64 sa = (__s64)a, sd = (__s64)d - 2;         /* -2..2, incl. 0 and -1 */
	__u32 a32 = a, d32 = d;
	__s32 sa32 = (__s32)a, sd32 = (__s32)sd;
	__u64 r = 0;

	r += OPAQUE(a) / d;
	r ^= OPAQUE(a) % d;
	r += (__u64)(OPAQUE(sa) / sd);
	r ^= (__u64)(OPAQUE(sa) % sd);
	r += OPAQUE(a32) / d32;
	r ^= (__u64)(OPAQUE(a32) % d32) << 32;
	r += (__u64)(__u32)(OPAQUE(sa32) / sd32) << 16;
	r ^= (__u32)(OPAQUE(sa32) % sd32);
	r += OPAQUE(a) / 7 + OPAQUE(a) % 13;
	return r;
}

SEC("gpu/entry/*")
__u64 bswap(const struct gpuext_dev_ctx *ctx)
{
	__u64 a = ctx->addr;
	__u64 r;

	r = __builtin_bswap64(a);
	r ^= (__u64)__builtin_bswap32((__u32)a) << 7;
	r += __builtin_bswap16((__u16)(a >> 8));
	r ^= (__u64)__builtin_bswap16((__u16)OPAQUE(a)) << 48;
	return r;
}

SEC("gpu/entry/*")
__u64 jumps(const struct gpuext_dev_ctx *ctx)
{
	__u64 a = ctx->addr, b = ctx->kernel_id;
	__s64 sa = a, sb = b;
	__u32 a32 = a, b32 = b;
	__s32 sa32 = a, sb32 = b;
	__u64 r = 0;

	if (a == b) r |= 1 << 0;
	if (a != b) r |= 1 << 1;
	if (a > b) r |= 1 << 2;
	if (a >= b) r |= 1 << 3;
	if (a < b) r |= 1 << 4;
	if (a <= b) r |= 1 << 5;
	if (sa > sb) r |= 1 << 6;
	if (sa >= sb) r |= 1 << 7;
	if (sa < sb) r |= 1 << 8;
	if (sa <= sb) r |= 1 << 9;
	if (a & b) r |= 1 << 10;
	if (a32 > b32) r |= 1 << 11;
	if (a32 <= b32) r |= 1 << 12;
	if (sa32 > sb32) r |= 1 << 13;
	if (sa32 <= sb32) r |= 1 << 14;
	if (sa < 0) r |= 1 << 15;
	if (sa > -5) r |= 1 << 16;
	if (a32 == 7) r |= 1 << 17;
	if (a & 0x10) r |= 1 << 18;
	if (sa32 < -100) r |= 1 << 19;
	return r;
}

SEC("gpu/entry/*")
__u64 stack_loop(const struct gpuext_dev_ctx *ctx)
{
	__u8 b8[16];
	__u16 b16[8];
	__u32 b32[8];
	__u64 a = ctx->addr, r = 0;
	int i;

	for (i = 0; i < 16; i++)
		b8[i] = (__u8)(a >> (i & 7)) + i;
	for (i = 0; i < 8; i++)
		b16[i] = (__u16)(a >> i) * 3;
	for (i = 0; i < 8; i++)
		b32[i] = (__u32)(a >> (2 * i)) ^ i;
	for (i = 0; i < 16; i++)
		r = r * 31 + (__s8)b8[i];
	for (i = 0; i < 8; i++)
		r = r * 17 + (__s16)b16[i] + b32[i];
	return r;
}

SEC("gpu/entry/*")
__u64 ctx_read(const struct gpuext_dev_ctx *ctx)
{
	const __u8 *p = (const __u8 *)ctx;
	const __u16 *h = (const __u16 *)ctx;

	return ctx->kind + ((__u64)ctx->site << 8) + (ctx->addr ^ ctx->kernel_id) +
	       ((__u64)p[9] << 32) + ((__u64)h[5] << 40);
}

/* ctx reads at offsets the verifier knows only as ranges: the ctx goes to
 * .local memory (a read at a constant offset takes its parameter) */
SEC("gpu/entry/*")
__u64 ctx_var(const struct gpuext_dev_ctx *ctx)
{
	const __u8 *p = (const __u8 *)ctx;
	const __u64 *w = (const __u64 *)ctx;
	__u64 i = ctx->site & 15, j = ctx->kind & 1;

	return p[8 + i] + (w[1 + j] << 8) + ((__u64)ctx->site << 48);
}

SEC("gpu/entry/*")
__u64 ldimm64(const struct gpuext_dev_ctx *ctx)
{
	return ctx->addr * 0x123456789abcdef1ULL + 0xfedcba9876543210ULL;
}

/* Maps for the map tests. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} t_arr SEC(".maps");

struct val {
	__u64 a, b;
	__u32 c, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct val);
} t_hash SEC(".maps");

struct {
	__uint(type, GPUEXT_GPUMAP_PER_WARP_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_extra, 64);
} t_warp SEC(".maps");

struct {
	__uint(type, GPUEXT_GPUMAP_PER_THREAD_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_extra, 1024);
} t_thread SEC(".maps");

struct {
	__uint(type, GPUEXT_GPUMAP_PER_SM_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} t_sm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} t_ring SEC(".maps");

/* A record built in global memory (ring_map): each thread its own. */
struct mrec {
	__u64 addr;
	__u32 site;
	__u16 kind;
	__u8 x;
} __attribute__((packed));

struct {
	__uint(type, GPUEXT_GPUMAP_PER_THREAD_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mrec);
	__uint(map_extra, 1024);
} t_mrec SEC(".maps");

/* Four shards: SM s writes shard s % 4 (its own head). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
	__uint(map_extra, 4);
} t_ring4 SEC(".maps");

static __u64 t_global;

SEC("gpu/entry/*")
__u64 atomics(const struct gpuext_dev_ctx *ctx)
{
	__u32 k0 = 0, k1 = 1, k2 = 2, k3 = 3;
	__u64 *v0 = bpf_map_lookup_elem(&t_arr, &k0);
	__u64 *v1 = bpf_map_lookup_elem(&t_arr, &k1);
	__u64 *v2 = bpf_map_lookup_elem(&t_arr, &k2);
	__u64 *v3 = bpf_map_lookup_elem(&t_arr, &k3);
	__u64 a = ctx->addr;

	if (!v0 || !v1 || !v2 || !v3)
		return 1;
	__sync_fetch_and_add(v0, a);
	__sync_fetch_and_or(v1, 1ULL << (a & 63));
	__sync_fetch_and_xor(v2, a * 0x9e3779b97f4a7c15ULL);
	__sync_fetch_and_and(v3, ~(1ULL << (ctx->site & 63)));
	__sync_fetch_and_add((__u32 *)v3 + 0, 0); /* 32-bit atomic on the low half */
	__sync_fetch_and_add(&t_global, 1);
	return 0;
}

/* Single-thread atomics whose results depend on order. */
SEC("gpu/entry/*")
__u64 atomics_fetch(const struct gpuext_dev_ctx *ctx)
{
	__u32 k = 4;
	__u64 *v = bpf_map_lookup_elem(&t_arr, &k);
	__u32 *w;
	__u64 r = 0, a = ctx->addr;

	if (!v)
		return 1;
	w = (__u32 *)v;
	r += __sync_fetch_and_add(v, a);
	r ^= __sync_fetch_and_or(v, 0x100);
	r += __sync_fetch_and_xor(v, 0xff);
	r ^= __sync_fetch_and_and(v, ~0xfULL) << 1;
	r += __sync_lock_test_and_set(v, a ^ 0x5555);
	r ^= __sync_val_compare_and_swap(v, a ^ 0x5555, 77) << 2;
	r += __sync_val_compare_and_swap(v, 1, 99);
	r ^= __sync_fetch_and_add(w + 1, 3);
	r += __sync_val_compare_and_swap(w, 77, 12);
	r ^= __sync_lock_test_and_set(w + 1, 9) << 3;
	return r;
}

SEC("gpu/entry/*")
__u64 array_ops(const struct gpuext_dev_ctx *ctx)
{
	__u32 key = ctx->site & 15; /* 8..15 are out of range */
	__u64 val = ctx->addr, *p, r = 0;

	r = bpf_map_update_elem(&t_arr, &key, &val, BPF_ANY) & 0xff;
	r |= (bpf_map_update_elem(&t_arr, &key, &val, BPF_NOEXIST) & 0xff) << 8;
	r |= (bpf_map_update_elem(&t_arr, &key, &val, 7) & 0xff) << 16;
	r |= (bpf_map_delete_elem(&t_hash, &val) & 0xff) << 24;
	p = bpf_map_lookup_elem(&t_arr, &key);
	if (p)
		r |= (__u64)(*p == val) << 32;
	else
		r |= 1ULL << 33;
	return r;
}

SEC("gpu/entry/*")
__u64 hash_ops(const struct gpuext_dev_ctx *ctx)
{
	__u64 key = ctx->addr, r = 0;
	struct val v = { .a = ctx->addr, .b = ctx->kernel_id, .c = ctx->site }, *p;

	r = bpf_map_update_elem(&t_hash, &key, &v, BPF_EXIST) & 0xff; /* -ENOENT */
	r |= (bpf_map_update_elem(&t_hash, &key, &v, BPF_NOEXIST) & 0xff) << 8;
	r |= (bpf_map_update_elem(&t_hash, &key, &v, BPF_NOEXIST) & 0xff) << 16; /* -EEXIST */
	v.c += 1;
	r |= (bpf_map_update_elem(&t_hash, &key, &v, BPF_EXIST) & 0xff) << 24;
	p = bpf_map_lookup_elem(&t_hash, &key);
	if (!p)
		return r | 1ULL << 63;
	r += (__u64)p->c << 32;
	if (ctx->site & 1) {
		r |= (__u64)(bpf_map_delete_elem(&t_hash, &key) & 0xff) << 48;
		r |= (__u64)(bpf_map_delete_elem(&t_hash, &key) & 0xff) << 56; /* -ENOENT */
	}
	gpuext_map_add(&t_hash, &key, 5);
	key ^= 0x8000000000000000ULL;
	gpuext_map_add(&t_hash, &key, ctx->site);
	return r;
}

SEC("gpu/entry/*")
__u64 ring_out(const struct gpuext_dev_ctx *ctx)
{
	struct {
		__u64 addr;
		__u32 site;
		__u16 kind;
		__u8 x;
	} __attribute__((packed)) rec = { ctx->addr, ctx->site, ctx->kind, 0x5a };

	return bpf_ringbuf_output(&t_ring, &rec, sizeof(rec), 0) & 0xff;
}

/* ring_out's record from a map value: the JIT hashes a payload in memory
 * as it copies it, one on the stack before its slot is known. */
SEC("gpu/entry/*")
__u64 ring_map(const struct gpuext_dev_ctx *ctx)
{
	__u32 zero = 0;
	struct mrec *m = bpf_map_lookup_elem(&t_mrec, &zero);

	if (!m)
		return 1ULL << 63;
	m->addr = ctx->addr;
	m->site = ctx->site;
	m->kind = ctx->kind;
	m->x = 0x5a;
	return bpf_ringbuf_output(&t_ring, m, sizeof(*m), 0) & 0xff;
}

/* ring_out4's and ring_claim's record. */
struct rec4 {
	__u64 addr;
	__u32 site;
	__u32 block;
};

SEC("gpu/entry/*")
__u64 ring_out4(const struct gpuext_dev_ctx *ctx)
{
	struct rec4 rec = { ctx->addr, ctx->site, gpuext_block_linear() };

	return bpf_ringbuf_output(&t_ring4, &rec, sizeof(rec), 0) & 0xff;
}

/* ring_out4's record, its index claimed first and written after
 * (gpuext_ring_claim, gpuext_ring_output_at: block_sched's pair), by lane
 * 0 of each warp (of lanes that claim together only the lowest gets an
 * index, which the interpreter, one lane at a time, cannot tell). */
SEC("gpu/entry/*")
__u64 ring_claim(const struct gpuext_dev_ctx *ctx)
{
	struct rec4 rec = { ctx->addr, ctx->site, gpuext_block_linear() };
	__u64 sm = bpf_get_sm_id(), i;

	if (bpf_get_lane_id() != 0)
		return 7;
	i = gpuext_ring_claim(&t_ring4, sm);
	return gpuext_ring_output_at(&t_ring4, sm, i, &rec, sizeof(rec)) & 0xff;
}

SEC("gpu/entry/*")
__u64 per_copy(const struct gpuext_dev_ctx *ctx)
{
	__u32 k0 = 0, k1 = 1;
	__u64 *w0 = bpf_map_lookup_elem(&t_warp, &k0);
	__u64 *t = bpf_map_lookup_elem(&t_thread, &k0);
	__u64 r = 0;

	if (w0)
		__sync_fetch_and_add(w0, gpuext_active_lanes());
	else
		r |= 1;
	gpuext_map_add(&t_warp, &k1, ctx->addr & 0xff);
	if (t)
		*t = ctx->addr;
	else
		r |= 2;
	gpuext_map_add(&t_sm, &k0, gpuext_active_lanes());
	return r;
}

SEC("gpu/entry/*")
__u64 dims(const struct gpuext_dev_ctx *ctx)
{
	__u64 bx, by, bz, tx, ty, tz, dx, dy, dz, gx, gy, gz;

	bpf_get_block_idx(&bx, &by, &bz);
	bpf_get_thread_idx(&tx, &ty, &tz);
	bpf_get_block_dim(&dx, &dy, &dz);
	bpf_get_grid_dim(&gx, &gy, &gz);
	return bx | by << 8 | bz << 16 | tx << 24 | ty << 32 | tz << 40 |
	       (dx * dy * dz) << 44 | (gx * gy * gz) << 54 |
	       (gpuext_global_warp() ^ gpuext_block_linear()) << 60 |
	       bpf_get_lane_id() << 3;
}

/* Values no interpreter can know: check their properties on the GPU. */
SEC("gpu/entry/*")
__u64 props(const struct gpuext_dev_ctx *ctx)
{
	__u64 t0 = bpf_get_globaltimer(), t1 = bpf_ktime_get_ns(), r = 0;
	__u64 tx, ty, tz;

	if (t0 != 0 && t1 >= t0)
		r |= 1;
	if (bpf_get_sm_id() < gpuext_nsmid())
		r |= 2;
	if (bpf_get_warp_id() < 64)
		r |= 4;
	bpf_get_thread_idx(&tx, &ty, &tz);
	if (bpf_get_lane_id() == (tx & 31))
		r |= 8;
	if (gpuext_active_lanes() >= 1 && gpuext_active_lanes() <= 32)
		r |= 16;
	return r;
}

/* The weight block sampling gives a block: its case compiles it with a
 * rate (fixed, or by launch from the grid's blocks). */
SEC("gpu/entry/*")
__u64 weight(const struct gpuext_dev_ctx *ctx)
{
	return gpuext_block_weight();
}
