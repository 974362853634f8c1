/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * gpu_ext_policy.h - what every gpu_ext struct_ops policy shares: the two
 * struct_ops types (kernel-modules/gpu_ext/gpu_ext.h, included, which brings
 * the contexts of gpuext_abi.h), the kfuncs a policy records its requests
 * with, and the parameter records the Go loader (internal/gpuext) writes into
 * the policies' pinned maps under /sys/fs/bpf/gpuext/.
 *
 * Parameters are records here, not in gpuext_abi.h, because only the policies
 * and the loader read them: bpf2go generates their Go types from this file
 * (bpf/policy), so this header is their one definition.
 */
#ifndef GPU_EXT_POLICY_H
#define GPU_EXT_POLICY_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

/* The struct_ops types gpu_mem_ops and gpu_sched_ops: the contract itself.
 * gpu_ext.h is kernel C; the two kernel typedefs it uses are all it needs
 * here (its entry point prototypes are never called from BPF). */
typedef __u32 u32;
typedef __u64 u64;
typedef _Bool bool;
#include "../../kernel-modules/gpu_ext/gpu_ext.h"

/* The module ABI (GPUEXT_KMOD_ABI_VERSION) these policies are compiled
 * against, as an enum so that Go gets it from BTF. */
enum gpuext_policy_abi {
	GPUEXT_POLICY_ABI = GPUEXT_KMOD_ABI_VERSION,
};

/* kfuncs of the gpu_ext module: each only records a request in the module's
 * per-call decision; the module validates and clamps it after the callback. */
extern int bpf_gpu_ext_block_move(struct gpuext_mem_ctx *ctx, __u32 pos) __ksym;
extern int bpf_gpu_ext_set_prefetch_region(struct gpuext_prefetch_ctx *ctx, __u32 first,
					   __u32 outer) __ksym;
extern int bpf_gpu_ext_set_timeslice(struct gpuext_sched_ctx *ctx, __u64 us) __ksym;
extern int bpf_gpu_ext_set_interleave(struct gpuext_sched_ctx *ctx, __u32 level) __ksym;
extern int bpf_gpu_ext_reject_bind(struct gpuext_sched_ctx *ctx) __ksym;

/* ------------------------------------------------------------------------
 * Memory policy parameters (mem.bpf.c): one record in the array map
 * "mem_cfg"; the loader rewrites it to switch algorithms on a running policy.
 * ------------------------------------------------------------------------ */

/* Which chunk the memory manager gives up first. */
enum gpuext_evict_algo {
	GPUEXT_EVICT_LRU = 0,      /* least recently used (the driver's own order, asked for explicitly) */
	GPUEXT_EVICT_LFU = 1,      /* least frequently used: new chunks first, hot chunks spared */
	GPUEXT_EVICT_MRU = 2,      /* most recently used: for scans larger than memory */
	GPUEXT_EVICT_FIFO = 3,     /* first activated, whatever its accesses */
	GPUEXT_EVICT_PRIORITY = 4, /* chunks of owners at or above protect_priority are spared */
	GPUEXT_EVICT_MAX = 5,
};

/* Which pages a fault brings in beyond the faulting one. */
enum gpuext_prefetch_algo {
	GPUEXT_PREFETCH_DEFAULT = 0,    /* the driver's own (UVM: 51% tree threshold) */
	GPUEXT_PREFETCH_NONE = 1,       /* only the faulting page */
	GPUEXT_PREFETCH_ALWAYS_MAX = 2, /* the whole region the driver allows */
	GPUEXT_PREFETCH_SEQUENTIAL = 3, /* seq_pages from the faulting page on */
	GPUEXT_PREFETCH_STRIDE = 4,     /* the next stride_ahead strides once one is confident */
	GPUEXT_PREFETCH_THRESHOLD = 5,  /* the driver's tree, with threshold_pct instead of 51% */
	GPUEXT_PREFETCH_MAX = 6,
};

/* Bounds the loader enforces and the policy relies on. */
#define GPUEXT_POLICY_MAX_PRIORITY 7       /* priorities 0 (lowest) .. 7 */
#define GPUEXT_POLICY_STRIDE_MAX_CONF 15   /* stride confidence saturates here */
#define GPUEXT_POLICY_STRIDE_MAX_AHEAD 64  /* strides prefetched at most */
#define GPUEXT_POLICY_LFU_MAX_FREQ 0xffff  /* LFU counts saturate here */
#define GPUEXT_POLICY_TABLE_ENTRIES 4096   /* per-chunk, per-pid and per-cgroup maps */

struct gpuext_mem_cfg {
	__u32 eviction;          /* enum gpuext_evict_algo */
	__u32 prefetch;          /* enum gpuext_prefetch_algo */
	__u32 seq_pages;         /* SEQUENTIAL: pages from the faulting one; 0: to the end of the block */
	__u32 stride_min_conf;   /* STRIDE: repeats of one stride before prefetching (1..15) */
	__u32 stride_ahead;      /* STRIDE: strides prefetched (1..64) */
	__u32 threshold_pct;     /* THRESHOLD: a tree node is prefetched when more than this % is in (0..100) */
	__u32 lfu_hot;           /* LFU: a candidate with at least this many accesses is spared */
	__u32 lfu_decay_period;  /* LFU: counts halve every this many accesses (0: never) */
	__u32 protect_priority;  /* PRIORITY: owners at or above it are spared (1..7) */
	__u32 default_priority;  /* PRIORITY: owners in neither map (0..7) */
};

/* What the memory policy did, per CPU, indexed by enum gpuext_mem_stat. */
enum gpuext_mem_stat {
	GPUEXT_MEM_STAT_ACTIVATE = 0,    /* block_activate callbacks */
	GPUEXT_MEM_STAT_ACCESS = 1,      /* block_access callbacks */
	GPUEXT_MEM_STAT_EVICT = 2,       /* evict_prepare callbacks */
	GPUEXT_MEM_STAT_SPARED = 3,      /* candidates the policy asked to spare */
	GPUEXT_MEM_STAT_PREFETCH = 4,    /* page_prefetch callbacks */
	GPUEXT_MEM_STAT_REGION = 5,      /* prefetch regions set (page_prefetch and _iter) */
	GPUEXT_MEM_STAT_STRIDE_HIT = 6,  /* faults that repeated the tracked stride */
	GPUEXT_MEM_STAT_TABLE_FULL = 7,  /* per-chunk/per-pid records that did not fit */
	GPUEXT_MEM_STAT_MAX = 8,
};

/* ------------------------------------------------------------------------
 * Scheduling policy parameters (sched.bpf.c): a task's class comes from
 * "class_pid" (pid), else "class_cgroup" (cgroup id), else "class_comm"
 * (16-byte comm, NUL padded), else sched_cfg.default_class; the class's
 * record in "class_params" says what the driver is asked for.
 * ------------------------------------------------------------------------ */
#define GPUEXT_SCHED_CLASSES 8 /* class 0 (default) .. 7 */

/* Conventional classes; any of the 8 may be configured. */
enum gpuext_sched_class {
	GPUEXT_CLASS_DEFAULT = 0, /* no requests unless configured */
	GPUEXT_CLASS_LC = 1,      /* latency-critical */
	GPUEXT_CLASS_BE = 2,      /* best-effort */
};

struct gpuext_class_params {
	__u64 timeslice_us; /* 0: leave the driver's; else clamped by the module */
	__u32 interleave;   /* enum gpuext_interleave; 0: leave the driver's */
	__u32 reject;       /* non-zero: refuse binds of this class */
};

struct gpuext_sched_cfg {
	__u32 default_class;
	__u32 _pad;
};

struct gpuext_comm_key {
	char comm[16];
};

/* What the scheduling policy did, per class (index class * GPUEXT_SCHED_STAT_MAX + stat). */
enum gpuext_sched_stat {
	GPUEXT_SCHED_STAT_INIT = 0,     /* task_init callbacks */
	GPUEXT_SCHED_STAT_BIND = 1,     /* task_bind callbacks */
	GPUEXT_SCHED_STAT_REJECT = 2,   /* binds the policy refused */
	GPUEXT_SCHED_STAT_DESTROY = 3,  /* task_destroy callbacks */
	GPUEXT_SCHED_STAT_MAX = 4,
};

#endif /* GPU_EXT_POLICY_H */
