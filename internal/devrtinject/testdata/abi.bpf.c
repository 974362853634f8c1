// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * abi.bpf.c - no programs: the injection protocol's records of
 * gpuext_abi.h in BTF, compiled by abi_test.go with clang at test time and
 * compared with the Go view of their layout.
 */
#include <linux/types.h>

#include "gpuext_abi.h"

const struct gpuext_inj_req *unused_req __attribute__((unused));
const struct gpuext_inj_resp *unused_resp __attribute__((unused));
const struct gpuext_inj_init *unused_init __attribute__((unused));
const struct gpuext_inject_event *unused_event __attribute__((unused));
const struct gpuext_devmaps_info *unused_devmaps_info __attribute__((unused));
const enum gpuext_inj_status *unused_status __attribute__((unused));
const enum gpuext_inj_image *unused_image __attribute__((unused));
const enum gpuext_inj_outcome *unused_outcome __attribute__((unused));
const enum gpuext_inj_reason *unused_reason __attribute__((unused));
