// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * launch_latency.bpf.c - when a launch's first thread (thread 0 of block
 * 0) started on the GPU. The receiver matches each struct
 * gpuext_dev_launch with devrt's host enqueue record of the same kernel
 * (both clocks calibrated) for gpu.kernel.launch.latency.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} gx_launch_ring SEC(".maps");

/* In block (0, 0, 0) only: the other blocks branch around the site on
 * their index, a uniform test, so their warps run no body (at every
 * entry, the election, the reads and the test cost a short memory-bound
 * kernel 2-6%; so 1-3%: devrt/jit/README.md). The test of the block
 * stays: a harness may call the program anywhere. */
SEC("gpu/entry_block0/*")
int launch_entry(const struct gpuext_dev_ctx *ctx)
{
	struct gpuext_dev_launch rec = {};

	if (!gpuext_first_block() || !gpuext_first_thread())
		return 0;
	rec.kernel_id = ctx->kernel_id;
	rec.start_ns = bpf_get_globaltimer();
	rec.smid = bpf_get_sm_id();
	bpf_ringbuf_output(&gx_launch_ring, &rec, sizeof(rec), 0);
	return 1;
}
