// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * cuda.bpf.c - uprobes on the CUDA driver and runtime APIs.
 *
 * One entry program and one return program serve every probed function: the
 * attach cookie carries the API id and how to read its arguments (see
 * GPUEXT_CK_* in gpuext_abi.h). The entry program saves the raw arguments per
 * thread; the return program adds the result, the values the call wrote
 * through its out argument and, for functions that name a handle, the name,
 * and sends one record to the ring buffer. Interpreting the arguments of each
 * API is the decoder's job in Go, which keeps the BPF side small and cheap.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "include/x86_regs.h"
#include "include/gpuext_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Keep the record types in BTF so Go tests can check their layout. */
const struct gpuext_named_event *unused_named_event __attribute__((unused));
const enum gpuext_api *unused_api __attribute__((unused));
const enum gpuext_drop *unused_drop __attribute__((unused));
const enum gpuext_kind *unused_kind __attribute__((unused));

/*
 * Calls in progress, keyed by thread and by the stack pointer at entry, so
 * nested and recursive calls of one function (a _ptsz variant calling the
 * plain one, say) each keep their own entry. At the return probe the return
 * address has been popped: sp is the entry's sp + 8.
 * Sized from userspace (max_inflight).
 */
struct inflight_key {
	__u64 pid_tgid;
	__u64 sp;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct inflight_key);
	__type(value, struct gpuext_event);
} inflight SEC(".maps");

/* Completed calls and process events, to the collector. Sized from userspace.
 * Every reservation is submitted, never discarded: the receiver counts the
 * bytes it reads against the backlog it saw (readMark in receiver.go). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} events SEC(".maps");

/* Per-process selection, written by the collector from its include/exclude
 * rules: GPUEXT_FILTER_SKIP stops a process's calls in the kernel. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} pid_filter SEC(".maps");

/* Events lost, by enum gpuext_drop. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GPUEXT_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void count_drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);

	/* Atomic even per CPU: uprobe programs can be preempted. */
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline int traced(__u32 tgid)
{
	__u8 *action = bpf_map_lookup_elem(&pid_filter, &tgid);

	return !action || *action != GPUEXT_FILTER_SKIP;
}

SEC("uprobe")
int cuda_enter(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	struct inflight_key key = {};
	/*
	 * On the stack, not in per-CPU scratch: uprobe programs run with
	 * migration disabled but can be preempted, and another task's entry on
	 * this CPU would overwrite a shared buffer mid-build.
	 */
	struct gpuext_event rec = {};
	struct gpuext_event *ev = &rec;

	if (!traced(tgid))
		return 0;

	ev->kind = GPUEXT_KIND_CALL;
	ev->api = cookie & GPUEXT_CK_API_MASK;
	ev->source = GPUEXT_SOURCE_UPROBE;
	ev->pid = tgid;
	ev->tid = (__u32)pid_tgid;
	ev->cgroup_id = bpf_get_current_cgroup_id();
	ev->args[0] = REG_ARG1(ctx);
	ev->args[1] = REG_ARG2(ctx);
	ev->args[2] = REG_ARG3(ctx);
	ev->args[3] = REG_ARG4(ctx);
	ev->args[4] = REG_ARG5(ctx);
	ev->args[5] = REG_ARG6(ctx);

	if (cookie & GPUEXT_CK_STACK) {
		if (bpf_probe_read_user(&ev->args[6], 3 * sizeof(__u64), (void *)(REG_SP(ctx) + 8)) == 0)
			ev->flags |= GPUEXT_F_STACK_VALID;
		else
			ev->flags |= GPUEXT_F_READ_FAULT;
	}
	if (cookie & GPUEXT_CK_LAUNCHCFG) {
		/* CUlaunchConfig starts with the 40 bytes of gpuext_launch_aux. */
		if (bpf_probe_read_user(&ev->aux.launch, sizeof(ev->aux.launch), (void *)ev->args[0]) == 0)
			ev->flags |= GPUEXT_F_AUX_VALID;
		else
			ev->flags |= GPUEXT_F_READ_FAULT;
	} else if (cookie & GPUEXT_CK_MEMCPY2D) {
		/* CUDA_MEMCPY2D: srcMemoryType@16 dstMemoryType@72 WidthInBytes@112 Height@120 */
		const char *p = (const char *)ev->args[0];
		long err = bpf_probe_read_user(&ev->aux.copy.width_bytes, 16, p + 112);

		err |= bpf_probe_read_user(&ev->aux.copy.src_type, 4, p + 16);
		err |= bpf_probe_read_user(&ev->aux.copy.dst_type, 4, p + 72);
		ev->aux.copy.depth = 1;
		ev->flags |= err ? GPUEXT_F_READ_FAULT : GPUEXT_F_AUX_VALID;
	} else if (cookie & GPUEXT_CK_MEMCPY3D) {
		/* CUDA_MEMCPY3D: srcMemoryType@32 dstMemoryType@120 WidthInBytes@176 Height@184 Depth@192 */
		const char *p = (const char *)ev->args[0];
		long err = bpf_probe_read_user(&ev->aux.copy.width_bytes, 24, p + 176);

		err |= bpf_probe_read_user(&ev->aux.copy.src_type, 4, p + 32);
		err |= bpf_probe_read_user(&ev->aux.copy.dst_type, 4, p + 120);
		ev->flags |= err ? GPUEXT_F_READ_FAULT : GPUEXT_F_AUX_VALID;
	}

	ev->start_ns = bpf_ktime_get_ns();
	if (cookie & GPUEXT_CK_ENTRY_ONLY) {
		/* Lean mode for launches: one trap per call instead of two. */
		ev->end_ns = ev->start_ns;
		ev->flags |= GPUEXT_F_NO_RETURN;
		if (bpf_ringbuf_output(&events, ev, sizeof(*ev), 0) != 0)
			count_drop(GPUEXT_DROP_RING_FULL);
		return 0;
	}

	key.pid_tgid = pid_tgid;
	key.sp = REG_SP(ctx);
	if (bpf_map_update_elem(&inflight, &key, ev, BPF_ANY) != 0)
		count_drop(GPUEXT_DROP_INFLIGHT_FULL);
	return 0;
}

static __always_inline __u64 arg_at(const struct gpuext_event *ev, __u32 idx)
{
	/* idx is 1-based and at most 9; the mask keeps the verifier satisfied. */
	return ev->args[(idx - 1) & 7];
}

SEC("uretprobe")
int cuda_exit(struct pt_regs *ctx)
{
	__u64 end = bpf_ktime_get_ns();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 out_idx = (cookie >> GPUEXT_CK_OUT_SHIFT) & 0xf;
	__u32 name_idx = (cookie >> GPUEXT_CK_NAME_SHIFT) & 0xf;
	struct inflight_key key = {};
	struct gpuext_event *ev;

	key.pid_tgid = bpf_get_current_pid_tgid();
	key.sp = REG_SP(ctx) - 8;
	ev = bpf_map_lookup_elem(&inflight, &key);
	if (!ev || ev->api != (cookie & GPUEXT_CK_API_MASK)) {
		/* Attached while the call was running, or filtered at entry. */
		if (traced(key.pid_tgid >> 32))
			count_drop(GPUEXT_DROP_UNMATCHED);
		return 0;
	}

	ev->end_ns = end;
	ev->result = (__s32)REG_RET(ctx);
	if (out_idx && out_idx <= 8) {
		if (bpf_probe_read_user(&ev->out, sizeof(ev->out), (void *)arg_at(ev, out_idx)) == 0)
			ev->flags |= GPUEXT_F_OUT_VALID;
		else
			ev->flags |= GPUEXT_F_READ_FAULT;
	}

	if (name_idx && name_idx <= 8) {
		struct gpuext_named_event *ne;
		long n;

		ne = bpf_ringbuf_reserve(&events, sizeof(*ne), 0);
		if (!ne) {
			count_drop(GPUEXT_DROP_RING_FULL);
			goto out;
		}
		ev->kind = GPUEXT_KIND_CALL_NAMED;
		__builtin_memcpy(&ne->ev, ev, sizeof(*ev));
		n = bpf_probe_read_user_str(ne->name, sizeof(ne->name), (void *)arg_at(ev, name_idx));
		if (n < 0) {
			ne->name[0] = 0;
			ne->ev.flags |= GPUEXT_F_READ_FAULT;
		} else if (n == sizeof(ne->name)) {
			ne->ev.flags |= GPUEXT_F_NAME_TRUNC;
		}
		bpf_ringbuf_submit(ne, 0);
		goto out;
	}

	if (bpf_ringbuf_output(&events, ev, sizeof(*ev), 0) != 0)
		count_drop(GPUEXT_DROP_RING_FULL);
out:
	bpf_map_delete_elem(&inflight, &key);
	return 0;
}

static __always_inline int process_event(__u16 kind)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gpuext_event *ev;

	/* Thread exits are not interesting; only the thread group's. */
	if (kind == GPUEXT_KIND_EXIT && (__u32)pid_tgid != (pid_tgid >> 32))
		return 0;
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_drop(GPUEXT_DROP_RING_FULL);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->source = GPUEXT_SOURCE_UPROBE;
	ev->pid = pid_tgid >> 32;
	ev->tid = (__u32)pid_tgid;
	ev->start_ns = bpf_ktime_get_ns();
	ev->end_ns = ev->start_ns;
	ev->cgroup_id = bpf_get_current_cgroup_id();
	/* The new program's name, for rules on processes that exit before the
	 * collector can read /proc (args[0..1], NUL-padded, 16 bytes). */
	bpf_get_current_comm(&ev->args[0], 16);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("raw_tracepoint/sched_process_exec")
int proc_exec(void *ctx)
{
	return process_event(GPUEXT_KIND_EXEC);
}

SEC("raw_tracepoint/sched_process_exit")
int proc_exit(void *ctx)
{
	return process_event(GPUEXT_KIND_EXIT);
}
