// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * reject.bpf.c - programs clang compiles and devrt/jit's verifier must
 * reject, each for one reason (reject_test.go holds the exact messages).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../../bpf/device/gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} r_arr SEC(".maps");

SEC("gpu/entry/*")
int unbounded_loop(const struct gpuext_dev_ctx *ctx)
{
	__u64 x = ctx->addr, steps = 0;

	/* Collatz: no bound the verifier can see. */
	while (x > 1) {
		x = (x & 1) ? 3 * x + 1 : x / 2;
		steps++;
	}
	return steps;
}

SEC("gpu/entry/*")
int no_null_check(const struct gpuext_dev_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&r_arr, &k);

	return *v;
}

SEC("gpu/entry/*")
int value_oob(const struct gpuext_dev_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&r_arr, &k);

	if (!v)
		return 0;
	return v[ctx->site & 3];
}

SEC("gpu/entry/*")
int ctx_write(struct gpuext_dev_ctx *ctx)
{
	ctx->site = 1;
	return 0;
}

SEC("gpu/entry/*")
int ctx_oob(const struct gpuext_dev_ctx *ctx)
{
	return *(const __u32 *)((const char *)ctx + 24);
}

SEC("gpu/entry/*")
int unknown_helper(const struct gpuext_dev_ctx *ctx)
{
	return bpf_get_smp_processor_id();
}

SEC("gpu/entry/*")
int pointer_leak(const struct gpuext_dev_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&r_arr, &k);

	if (!v)
		return 0;
	*v = (__u64)ctx;
	return 0;
}
