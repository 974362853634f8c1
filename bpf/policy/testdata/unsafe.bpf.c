// SPDX-License-Identifier: GPL-2.0-only
//go:build ignore

/*
 * unsafe.bpf.c - policies the kernel must refuse to load. Each program is
 * loaded on its own by bpf/policy's kernel tests (unsafe_kernel_test.go),
 * which assert the load fails and the verifier log names the reason. None
 * of them is ever attached.
 */
#include "../gpu_ext_policy.h"

char LICENSE[] SEC("license") = "GPL";

/* Writes its context: the driver's copy must stay the driver's. */
SEC("struct_ops/block_activate")
int BPF_PROG(write_ctx, struct gpuext_mem_ctx *c)
{
	c->pid = 0;
	return 0;
}

/* Writes past its context, into whatever module memory follows. */
SEC("struct_ops/block_access")
int BPF_PROG(write_past_ctx, struct gpuext_mem_ctx *c)
{
	*(volatile __u64 *)((char *)c + sizeof(*c)) = 1;
	return 0;
}

/* Reads past its context. */
SEC("struct_ops/evict_prepare")
int BPF_PROG(read_past_ctx, struct gpuext_mem_ctx *c)
{
	return *(volatile __u64 *)((char *)c + sizeof(*c) + 8) != 0;
}

/* Copies into its context through a helper. */
SEC("struct_ops/block_activate")
int BPF_PROG(helper_write_ctx, struct gpuext_mem_ctx *c)
{
	__u64 zero = 0;

	bpf_probe_read_kernel(&c->chunk_id, sizeof(zero), &zero);
	return 0;
}

/* Never leaves the loop when the faulting page is not 7. */
SEC("struct_ops/page_prefetch")
int BPF_PROG(unbounded_loop, struct gpuext_prefetch_ctx *c)
{
	__u32 first = 0;

	while (c->page_index != 7)
		first = *(volatile __u32 *)&first;
	return first;
}

/* Asks for a block move from a scheduling callback. */
SEC("struct_ops/task_init")
int BPF_PROG(wrong_ops_kfunc, struct gpuext_sched_ctx *c)
{
	return bpf_gpu_ext_block_move((struct gpuext_mem_ctx *)c, GPUEXT_POS_HEAD);
}

/* Sleeps: entry points run in atomic context. */
SEC("struct_ops.s/task_bind")
int BPF_PROG(sleepable, struct gpuext_sched_ctx *c)
{
	return 0;
}
