// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * xid.bpf.c - Xid errors from NVIDIA's kernel module, as the driver reports
 * them: the nvidia:nvidia_dev_xid tracepoint (driver 580 and later) carries
 * the device's PCI bus id, the Xid code and the driver's message. NVML's
 * event API sees the same Xids without the message, and only for
 * processes that subscribed; the tracepoint sees every one.
 *
 * The tracepoint's record (from its tracefs format):
 *   offset  8: __data_loc char[] dev
 *   offset 12: u32 error_code
 *   offset 16: __data_loc char[] msg
 * A __data_loc field holds the string's offset from the record's start in
 * its low 16 bits and its length in the high 16 bits.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "include/gpuext_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const struct gpuext_xid_event *unused_xid_event __attribute__((unused));

struct nvidia_dev_xid_args {
	__u64 common;     /* common_type, flags, preempt_count, pid */
	__u32 dev_loc;    /* __data_loc char[] dev */
	__u32 error_code;
	__u32 msg_loc;    /* __data_loc char[] msg */
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} xids SEC(".maps");

/* Xids lost because the ring was full. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} xid_drops SEC(".maps");

SEC("tracepoint/nvidia/nvidia_dev_xid")
int nvidia_dev_xid(struct nvidia_dev_xid_args *ctx)
{
	struct gpuext_xid_event *ev;
	__u32 zero = 0;

	ev = bpf_ringbuf_reserve(&xids, sizeof(*ev), 0);
	if (!ev) {
		__u64 *n = bpf_map_lookup_elem(&xid_drops, &zero);

		if (n)
			__sync_fetch_and_add(n, 1);
		return 0;
	}
	ev->kind = GPUEXT_KIND_XID;
	ev->_pad = 0;
	ev->_pad2 = 0;
	ev->pid = bpf_get_current_pid_tgid() >> 32;
	ev->ts_ns = bpf_ktime_get_ns();
	ev->xid = ctx->error_code;
	if (bpf_probe_read_kernel_str(ev->dev, sizeof(ev->dev), (char *)ctx + (ctx->dev_loc & 0xffff)) < 0)
		ev->dev[0] = 0;
	if (bpf_probe_read_kernel_str(ev->msg, sizeof(ev->msg), (char *)ctx + (ctx->msg_loc & 0xffff)) < 0)
		ev->msg[0] = 0;
	bpf_ringbuf_submit(ev, 0);
	return 0;
}
