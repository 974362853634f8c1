// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * empty.bpf.c - probes that do nothing: the benchmark's measure of what a
 * call site and the warp-level election cost by themselves.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../../bpf/device/gpuext_device.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("gpu/entry/*")
int empty_entry(const struct gpuext_dev_ctx *ctx)
{
	return 0;
}

SEC("gpu/exit/*")
int empty_exit(const struct gpuext_dev_ctx *ctx)
{
	return 0;
}
