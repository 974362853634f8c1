// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * abi.bpf.c - no programs: an object whose BTF carries the records of
 * gpuext_abi.h that no BPF program uses (the devrt ring, its control page
 * and the GPU execution record), so the Go side can check its view of their
 * layout against what clang made of the header (internal/gpuevent and
 * internal/devring tests). The kernel never loads it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "include/gpuext_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const struct gpuext_gpu_exec *unused_gpu_exec __attribute__((unused));
const struct gpuext_ring_hdr *unused_ring_hdr __attribute__((unused));
const struct gpuext_slot *unused_slot __attribute__((unused));
const struct gpuext_ctl *unused_ctl __attribute__((unused));
const enum gpuext_ring_drop *unused_ring_drop __attribute__((unused));
const enum gpuext_source *unused_source __attribute__((unused));
/* gpu_ext policy contexts: checked by internal/gpuext. */
const struct gpuext_mem_ctx *unused_mem_ctx __attribute__((unused));
const struct gpuext_prefetch_ctx *unused_prefetch_ctx __attribute__((unused));
const struct gpuext_sched_ctx *unused_sched_ctx __attribute__((unused));
/* gpu_ext_sim records: checked by internal/gpuextsim. */
const struct gpuext_sim_access *unused_sim_access __attribute__((unused));
const struct gpuext_sim_mem_config *unused_sim_mem_config __attribute__((unused));
const struct gpuext_sim_mem_result *unused_sim_mem_result __attribute__((unused));
const struct gpuext_sim_sched_config *unused_sim_sched_config __attribute__((unused));
const struct gpuext_sim_job *unused_sim_job __attribute__((unused));
const struct gpuext_sim_sched_result *unused_sim_sched_result __attribute__((unused));
const struct gpuext_sim_bench *unused_sim_bench __attribute__((unused));
const enum gpuext_hook *unused_sim_hook __attribute__((unused));
const enum gpuext_sim_access_flags *unused_sim_access_flags __attribute__((unused));
const enum gpuext_sim_mem_flags *unused_sim_mem_flags __attribute__((unused));
