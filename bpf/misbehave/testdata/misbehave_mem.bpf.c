// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * misbehave_mem.bpf.c - a gpu_mem_ops policy that asks gpu_ext for what it
 * must refuse or clamp: a position that does not exist, a request replaced
 * by a later one, TAIL past the eviction skip bound, prefetch regions out
 * of bounds or reversed, an unknown action, a region with DEFAULT, and a
 * reversed region in the ENTER_LOOP walk. misbehave_kernel_test.go checks
 * every decision and counter that must follow.
 */
#include "misbehave.h"

char LICENSE[] SEC("license") = "GPL";

long rets[NRETS];

SEC("struct_ops/block_activate")
int BPF_PROG(activate, struct gpuext_mem_ctx *c)
{
	rets[RET_ACTIVATE] = bpf_gpu_ext_block_move(c, 7);
	return 0;
}

SEC("struct_ops/block_access")
int BPF_PROG(access, struct gpuext_mem_ctx *c)
{
	rets[RET_ACCESS_BAD] = bpf_gpu_ext_block_move(c, 9);
	rets[RET_ACCESS_HEAD] = bpf_gpu_ext_block_move(c, GPUEXT_POS_HEAD);
	return 0;
}

SEC("struct_ops/evict_prepare")
int BPF_PROG(evict, struct gpuext_mem_ctx *c)
{
	rets[RET_EVICT] = bpf_gpu_ext_block_move(c, GPUEXT_POS_TAIL);
	return 0;
}

SEC("struct_ops/page_prefetch")
int BPF_PROG(prefetch, struct gpuext_prefetch_ctx *c)
{
	switch (c->page_index) {
	case 0:
		rets[RET_REGION_WIDE] = bpf_gpu_ext_set_prefetch_region(c, 5, 600);
		return GPUEXT_ACTION_BYPASS;
	case 1:
		rets[RET_REGION_REVERSED] = bpf_gpu_ext_set_prefetch_region(c, 10, 3);
		return GPUEXT_ACTION_BYPASS;
	case 2:
		return GPUEXT_ACTION_ENTER_LOOP;
	case 3:
		return 99;
	case 4:
		bpf_gpu_ext_set_prefetch_region(c, 0, 0);
		return GPUEXT_ACTION_DEFAULT;
	}
	return GPUEXT_ACTION_BYPASS;
}

SEC("struct_ops/page_prefetch_iter")
int BPF_PROG(prefetch_iter, struct gpuext_prefetch_ctx *c)
{
	if (c->iter_level == 2)
		bpf_gpu_ext_set_prefetch_region(c, c->iter_first, c->iter_outer);
	if (c->iter_level == 4)
		rets[RET_ITER_REVERSED] = bpf_gpu_ext_set_prefetch_region(c, 20, 10);
	return 0;
}

/* Carries struct gpu_mem_ops in BTF; the Go test builds the map itself
 * (bpf/policy.Prepare). */
SEC(".struct_ops.link")
struct gpu_mem_ops misbehave_mem = {
	.block_activate = (void *)activate,
	.block_access = (void *)access,
	.evict_prepare = (void *)evict,
	.page_prefetch = (void *)prefetch,
	.page_prefetch_iter = (void *)prefetch_iter,
	.name = "misbehave",
};
