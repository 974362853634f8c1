// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * misbehave_sched.bpf.c - a gpu_sched_ops policy that asks gpu_ext for
 * timeslices out of range, an interleave level that does not exist, reject
 * outside task_bind and anything at all at task_destroy (and one legitimate
 * reject, for pid 666). misbehave_kernel_test.go checks what must follow.
 */
#include "misbehave.h"

char LICENSE[] SEC("license") = "GPL";

long rets[NRETS];

SEC("struct_ops/task_init")
int BPF_PROG(task_init, struct gpuext_sched_ctx *c)
{
	rets[RET_INIT_TS] = bpf_gpu_ext_set_timeslice(c, 5);
	rets[RET_INIT_IL] = bpf_gpu_ext_set_interleave(c, 9);
	rets[RET_INIT_REJECT] = bpf_gpu_ext_reject_bind(c);
	return 0;
}

SEC("struct_ops/task_bind")
int BPF_PROG(task_bind, struct gpuext_sched_ctx *c)
{
	rets[BIND_CTX_TS] = c->timeslice_us;
	bpf_gpu_ext_set_timeslice(c, 20000000);
	bpf_gpu_ext_set_interleave(c, GPUEXT_INTERLEAVE_HIGH);
	if (c->pid == 666)
		bpf_gpu_ext_reject_bind(c);
	return 0;
}

SEC("struct_ops/task_destroy")
int BPF_PROG(task_destroy, struct gpuext_sched_ctx *c)
{
	rets[RET_DESTROY_TS] = bpf_gpu_ext_set_timeslice(c, 1000);
	rets[RET_DESTROY_IL] = bpf_gpu_ext_set_interleave(c, 1);
	return 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops misbehave_sched = {
	.task_init = (void *)task_init,
	.task_bind = (void *)task_bind,
	.task_destroy = (void *)task_destroy,
	.name = "misbehave_s",
};
