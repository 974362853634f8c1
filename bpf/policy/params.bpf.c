// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

/*
 * params.bpf.c - no programs: an object whose BTF carries the parameter
 * records and enums of gpu_ext_policy.h, so that bpf2go generates their Go
 * types (params_x86_bpfel.go) from the one C definition. Never loaded.
 */
#include "gpu_ext_policy.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const struct gpuext_mem_cfg *unused_mem_cfg __attribute__((unused));
const struct gpuext_sched_cfg *unused_sched_cfg __attribute__((unused));
const struct gpuext_class_params *unused_class_params __attribute__((unused));
const struct gpuext_comm_key *unused_comm_key __attribute__((unused));
const enum gpuext_evict_algo *unused_evict_algo __attribute__((unused));
const enum gpuext_prefetch_algo *unused_prefetch_algo __attribute__((unused));
const enum gpuext_mem_stat *unused_mem_stat __attribute__((unused));
const enum gpuext_sched_class *unused_sched_class __attribute__((unused));
const enum gpuext_sched_stat *unused_sched_stat __attribute__((unused));
const enum gpuext_policy_abi *unused_policy_abi __attribute__((unused));
