/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mem_maps.h - the maps of the memory policy (mem.bpf.c). The loader pins
 * each under /sys/fs/bpf/gpuext/mem/<map name>; the config and priority maps
 * are the parameters, the others are the algorithms' own state.
 */
#ifndef GPUEXT_MEM_MAPS_H
#define GPUEXT_MEM_MAPS_H

#include "gpu_ext_policy.h"

/* The parameters: one record, rewritten by the loader on a running policy. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpuext_mem_cfg);
} mem_cfg SEC(".maps");

/* PRIORITY: owner priority by pid, then by cgroup id (0 lowest .. 7). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
} prio_pid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, __u64);
	__type(value, __u32);
} prio_cgroup SEC(".maps");

/* Per-process prefetch algorithm (enum gpuext_prefetch_algo), overriding
 * mem_cfg.prefetch for that pid's faults: what the gpupolicy processor
 * advises for one process it can enforce for that process alone. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
} prefetch_pid SEC(".maps");

/* What the policy did (enum gpuext_mem_stat), summed over CPUs by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GPUEXT_MEM_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} mem_stats SEC(".maps");

/* LFU: per-chunk access counts; epoch says when the count was last decayed. */
struct lfu_rec {
	__u32 count;
	__u32 epoch;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, __u64);
	__type(value, struct lfu_rec);
} lfu_count SEC(".maps");

/* FIFO: each resident chunk's activation number, and the activation order. */
struct fifo_ent {
	__u64 chunk_id;
	__u64 seq;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, __u64);
	__type(value, __u64);
} fifo_seq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(value, struct fifo_ent);
} fifo_order SEC(".maps");

/* Counters the algorithms share: accesses seen (LFU decay), activations (FIFO). */
struct mem_clock {
	__u64 accesses;
	__u64 activations;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mem_clock);
} mem_clock SEC(".maps");

/* STRIDE: per-pid stride tracking over absolute 4 KiB page numbers. */
struct stride_rec {
	__u64 last_page;
	__s64 stride;
	__u32 conf;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GPUEXT_POLICY_TABLE_ENTRIES);
	__type(key, __u32);
	__type(value, struct stride_rec);
} stride_state SEC(".maps");

static __always_inline void mem_stat(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&mem_stats, &stat);

	if (v)
		*v += 1;
}

static __always_inline struct gpuext_mem_cfg *mem_config(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&mem_cfg, &zero);
}

static __always_inline struct mem_clock *mem_clock_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&mem_clock, &zero);
}

#endif /* GPUEXT_MEM_MAPS_H */
