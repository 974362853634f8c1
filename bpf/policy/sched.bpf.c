// SPDX-License-Identifier: GPL-2.0-only
//go:build ignore

/*
 * sched.bpf.c - the scheduling policy: a channel group's class comes from
 * its pid, else its cgroup, else its comm, else the configured default; the
 * class's parameters (timeslice, interleave, reject) are what the policy asks
 * the driver for at task_init and again at task_bind (where a rejected class
 * is refused). Latency-critical work gets long timeslices, best-effort short
 * ones, so an LC job that arrives waits for at most one BE slice. All of it
 * lives in maps the loader pins under /sys/fs/bpf/gpuext/sched/.
 */
#include "gpu_ext_policy.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_sched_cfg);
} sched_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GPUEXT_SCHED_CLASSES);
	__type(key, __u32);
	__type(value, struct gpuext_class_params);
} class_params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
} class_pid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, __u64);
	__type(value, __u32);
} class_cgroup SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, struct gpuext_comm_key);
	__type(value, __u32);
} class_comm SEC(".maps");

/* Per class: enum gpuext_sched_stat counters, summed over CPUs by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GPUEXT_SCHED_CLASSES * GPUEXT_SCHED_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sched_stats SEC(".maps");

static __always_inline void sched_stat(__u32 class, __u32 stat)
{
	__u32 key = class * GPUEXT_SCHED_STAT_MAX + stat;
	__u64 *v = bpf_map_lookup_elem(&sched_stats, &key);

	if (v)
		*v += 1;
}

static __always_inline __u32 task_class(const struct gpuext_sched_ctx *ctx)
{
	struct gpuext_comm_key comm;
	struct gpuext_sched_cfg *cfg;
	__u32 zero = 0, pid = ctx->pid, *c;
	__u64 cgroup = ctx->cgroup_id; /* map keys live on the stack, never in the context */

	c = bpf_map_lookup_elem(&class_pid, &pid);
	if (!c && ctx->cgroup_id)
		c = bpf_map_lookup_elem(&class_cgroup, &cgroup);
	if (!c) {
		__builtin_memcpy(comm.comm, ctx->comm, sizeof(comm.comm));
		c = bpf_map_lookup_elem(&class_comm, &comm);
	}
	if (c)
		return *c < GPUEXT_SCHED_CLASSES ? *c : GPUEXT_CLASS_DEFAULT;
	cfg = bpf_map_lookup_elem(&sched_cfg, &zero);
	if (cfg && cfg->default_class < GPUEXT_SCHED_CLASSES)
		return cfg->default_class;
	return GPUEXT_CLASS_DEFAULT;
}

static __always_inline struct gpuext_class_params *params(__u32 class)
{
	return bpf_map_lookup_elem(&class_params, &class);
}

static __always_inline void ask(struct gpuext_sched_ctx *ctx, const struct gpuext_class_params *p)
{
	if (p->timeslice_us)
		bpf_gpu_ext_set_timeslice(ctx, p->timeslice_us);
	if (p->interleave)
		bpf_gpu_ext_set_interleave(ctx, p->interleave);
}

SEC("struct_ops/task_init")
int BPF_PROG(sched_task_init, struct gpuext_sched_ctx *c)
{
	__u32 class = task_class(c);
	struct gpuext_class_params *p = params(class);

	sched_stat(class, GPUEXT_SCHED_STAT_INIT);
	if (p)
		ask(c, p);
	return 0;
}

SEC("struct_ops/task_bind")
int BPF_PROG(sched_task_bind, struct gpuext_sched_ctx *c)
{
	__u32 class = task_class(c);
	struct gpuext_class_params *p = params(class);

	sched_stat(class, GPUEXT_SCHED_STAT_BIND);
	if (!p)
		return 0;
	if (p->reject) {
		sched_stat(class, GPUEXT_SCHED_STAT_REJECT);
		bpf_gpu_ext_reject_bind(c);
		return 0;
	}
	ask(c, p);
	return 0;
}

SEC("struct_ops/task_destroy")
int BPF_PROG(sched_task_destroy, struct gpuext_sched_ctx *c)
{
	sched_stat(task_class(c), GPUEXT_SCHED_STAT_DESTROY);
	return 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops gpuext_sched = {
	.task_init = (void *)sched_task_init,
	.task_bind = (void *)sched_task_bind,
	.task_destroy = (void *)sched_task_destroy,
	.name = "gpuext_sched",
};
