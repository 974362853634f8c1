// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * abi.bpf.c - no programs: its BTF carries the device-probe records of
 * gpuext_abi.h, so devrt/jit's tests check the Go layout (gpumap, the
 * interpreter's ctx) against what clang made of the header.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "../../../../bpf/include/gpuext_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const struct gpuext_dev_ctx *unused_ctx __attribute__((unused));
const struct gpuext_gpumap_hdr *unused_hdr __attribute__((unused));
const struct gpuext_gpuhash_bucket *unused_bucket __attribute__((unused));
const struct gpuext_gpuring_rec *unused_rec __attribute__((unused));
const struct gpuext_dev_block_state *unused_bs __attribute__((unused));
const struct gpuext_dev_block *unused_b __attribute__((unused));
const struct gpuext_dev_launch *unused_l __attribute__((unused));
const struct gpuext_dev_sm *unused_sm __attribute__((unused));
const struct gpuext_dev_occ *unused_o __attribute__((unused));
const enum gpuext_dev_site *unused_site __attribute__((unused));
const enum gpuext_gpumap_type *unused_type __attribute__((unused));
const enum gpuext_gpumap_limit *unused_limit __attribute__((unused));
const enum gpuext_dev_helper *unused_helper __attribute__((unused));
const enum gpuext_gpuhash_state *unused_state __attribute__((unused));

/* Keys of the ring record check's terms, read back from .rodata by the test
 * (len, seq's halves, the first and a later payload half). */
const volatile __u32 gpuext_gpuring_keys[5] = {
	GPUEXT_GPURING_KEY(0), GPUEXT_GPURING_KEY(1), GPUEXT_GPURING_KEY(2),
	GPUEXT_GPURING_KEY(3), GPUEXT_GPURING_KEY(40),
};
