/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * gpuext_abi.h - the one definition of every record shared between the BPF
 * programs, the in-process device runtime (devrt) and the Go collector.
 *
 * Rules:
 *  - fixed-width types only, explicit padding, no pointers: the same bytes are
 *    written by BPF (x86-64 kernel), by devrt (x86-64 user space) and read by Go;
 *  - append-only: new fields go into reserved space or new record kinds, and
 *    GPUEXT_ABI_VERSION changes when a layout does; a field put into padding
 *    where 0 means unknown (gpuext_ring_hdr.pidns_ino) keeps the version, which
 *    readers require equal;
 *  - the Go side (internal/gpuevent) checks every size and offset in tests.
 */
#ifndef GPUEXT_ABI_H
#define GPUEXT_ABI_H

#include <linux/types.h>

#define GPUEXT_ABI_VERSION 1

/* Record kinds: the first field of every record. */
enum gpuext_kind {
	GPUEXT_KIND_CALL = 1,       /* struct gpuext_event: one completed API call */
	GPUEXT_KIND_CALL_NAMED = 2, /* struct gpuext_named_event: a call that names a handle */
	GPUEXT_KIND_EXEC = 3,       /* struct gpuext_event: a process called execve;
	                             * args[0..1] hold its new comm (16 bytes) */
	GPUEXT_KIND_EXIT = 4,       /* struct gpuext_event: a process (thread group) exited */
	GPUEXT_KIND_XID = 5,        /* struct gpuext_xid_event: the driver reported an Xid */
	GPUEXT_KIND_GPU_EXEC = 6,   /* struct gpuext_gpu_exec: when enqueued work ran on the GPU */
	GPUEXT_KIND_UVM = 7,        /* struct gpuext_uvm_event: what nvidia_uvm did (fentry backend) */
};

/* Who produced a record. */
enum gpuext_source {
	GPUEXT_SOURCE_UPROBE = 1,
	GPUEXT_SOURCE_DEVRT = 2,
};

/*
 * API identifiers. Versioned and per-thread-stream variants of one function
 * (cuMemAlloc_v2, cuLaunchKernel_ptsz, ...) share one id unless their
 * arguments differ (the _v2/_v3/_v4 ids below); the
 * numbers are stable and never reused.
 */
enum gpuext_api {
	GPUEXT_API_NONE = 0,
	/* launches */
	GPUEXT_API_cuLaunchKernel = 1,
	GPUEXT_API_cuLaunchKernelEx = 2,
	GPUEXT_API_cuLaunchCooperativeKernel = 3,
	GPUEXT_API_cuGraphLaunch = 4,
	GPUEXT_API_cudaLaunchKernel = 5,
	GPUEXT_API_cudaGraphLaunch = 6,
	GPUEXT_API_cudaLaunchKernelExC = 7, /* cudaLaunchConfig_t: GPUEXT_CK_LAUNCHCFG */
	/* memory */
	GPUEXT_API_cuMemAlloc = 10,
	GPUEXT_API_cuMemAllocManaged = 11,
	GPUEXT_API_cuMemAllocAsync = 12,
	GPUEXT_API_cuMemAllocHost = 13,
	GPUEXT_API_cuMemHostAlloc = 14,
	GPUEXT_API_cuMemFree = 15,
	GPUEXT_API_cuMemFreeAsync = 16,
	GPUEXT_API_cuMemFreeHost = 17,
	GPUEXT_API_cuMemPrefetchAsync = 18,
	GPUEXT_API_cuMemAdvise = 19,
	GPUEXT_API_cuMemPrefetchAsync_v2 = 20, /* CUmemLocation instead of a device */
	GPUEXT_API_cuMemAdvise_v2 = 21,
	/* copies */
	GPUEXT_API_cuMemcpy = 30,
	GPUEXT_API_cuMemcpyAsync = 31,
	GPUEXT_API_cuMemcpyHtoD = 32,
	GPUEXT_API_cuMemcpyDtoH = 33,
	GPUEXT_API_cuMemcpyDtoD = 34,
	GPUEXT_API_cuMemcpyHtoDAsync = 35,
	GPUEXT_API_cuMemcpyDtoHAsync = 36,
	GPUEXT_API_cuMemcpyDtoDAsync = 37,
	GPUEXT_API_cuMemcpyPeer = 38,
	GPUEXT_API_cuMemcpyPeerAsync = 39,
	GPUEXT_API_cuMemcpy2D = 40,
	GPUEXT_API_cuMemcpy2DAsync = 41,
	GPUEXT_API_cuMemcpy2DUnaligned = 42,
	GPUEXT_API_cuMemcpy3D = 43,
	GPUEXT_API_cuMemcpy3DAsync = 44,
	/* sets */
	GPUEXT_API_cuMemsetD8 = 50,
	GPUEXT_API_cuMemsetD16 = 51,
	GPUEXT_API_cuMemsetD32 = 52,
	GPUEXT_API_cuMemsetD8Async = 53,
	GPUEXT_API_cuMemsetD16Async = 54,
	GPUEXT_API_cuMemsetD32Async = 55,
	GPUEXT_API_cuMemsetD2D8 = 56,
	GPUEXT_API_cuMemsetD2D16 = 57,
	GPUEXT_API_cuMemsetD2D32 = 58,
	GPUEXT_API_cuMemsetD2D8Async = 59,
	GPUEXT_API_cuMemsetD2D16Async = 60,
	GPUEXT_API_cuMemsetD2D32Async = 61,
	/* synchronisation */
	GPUEXT_API_cuCtxSynchronize = 70,
	GPUEXT_API_cuStreamSynchronize = 71,
	GPUEXT_API_cuEventSynchronize = 72,
	GPUEXT_API_cuStreamWaitEvent = 73,
	/* contexts and modules */
	GPUEXT_API_cuCtxCreate = 80,
	GPUEXT_API_cuDevicePrimaryCtxRetain = 81,
	GPUEXT_API_cuCtxDestroy = 82,
	GPUEXT_API_cuModuleLoadData = 83,
	GPUEXT_API_cuModuleLoadDataEx = 84,
	GPUEXT_API_cuModuleLoadFatBinary = 85,
	GPUEXT_API_cuLibraryLoadData = 86,
	GPUEXT_API_cuModuleGetFunction = 87,
	GPUEXT_API_cuLibraryGetKernel = 88,
	GPUEXT_API_cuKernelGetFunction = 89,
	GPUEXT_API_cudaRegisterFunction = 90, /* __cudaRegisterFunction */
	GPUEXT_API_cuCtxCreate_v3 = 91, /* exec-affinity parameters before the device */
	GPUEXT_API_cuCtxCreate_v4 = 92, /* CUctxCreateParams before the device */
	GPUEXT_API_cuModuleLoad = 93, /* from a file (PyTorch's static Triton launcher) */
	GPUEXT_API_cuLibraryLoadFromFile = 94,
	GPUEXT_API_MAX = 128,
};

/*
 * How a probe reads a call, packed into the uprobe's BPF cookie next to the
 * API id, so one entry and one return program serve every function:
 *   bits  0-15  enum gpuext_api
 *   bits 16-23  GPUEXT_CK_* flags
 *   bits 24-27  1-based index of an argument pointing at a value the call
 *               writes (CUdeviceptr *, CUfunction *, ...), read at return
 *   bits 28-31  1-based index of an argument pointing at a NUL-terminated
 *               name, read at return into a gpuext_named_event
 */
#define GPUEXT_CK_API_MASK 0xffffULL
#define GPUEXT_CK_STACK (1ULL << 16)      /* capture stack arguments 7..9 */
#define GPUEXT_CK_LAUNCHCFG (1ULL << 17)  /* arg1 is a CUlaunchConfig * (or cudaLaunchConfig_t *) */
#define GPUEXT_CK_MEMCPY2D (1ULL << 18)   /* arg1 is a CUDA_MEMCPY2D * */
#define GPUEXT_CK_MEMCPY3D (1ULL << 19)   /* arg1 is a CUDA_MEMCPY3D * */
#define GPUEXT_CK_ENTRY_ONLY (1ULL << 20) /* no return probe: report at entry */
#define GPUEXT_CK_OUT_SHIFT 24
#define GPUEXT_CK_NAME_SHIFT 28

/* Record flags (struct gpuext_event.flags). */
#define GPUEXT_F_OUT_VALID (1 << 0)  /* out holds the value read at return */
#define GPUEXT_F_AUX_VALID (1 << 1)  /* aux was read from the argument */
#define GPUEXT_F_STACK_VALID (1 << 2)/* args[6..8] were read from the stack */
#define GPUEXT_F_NAME_TRUNC (1 << 3) /* the name filled the whole buffer */
#define GPUEXT_F_READ_FAULT (1 << 4) /* a user-memory read failed */
#define GPUEXT_F_NO_RETURN (1 << 5)  /* reported at entry: no result, end = start */
#define GPUEXT_F_DEVICE_VALID (1 << 6) /* a launch's aux.launch.device is set (devrt,
                                        * while device probes are in: launch latency
                                        * is matched per GPU) */

#define GPUEXT_NARGS 9
#define GPUEXT_NAME_MAX 512

/* Launch geometry, laid out like the first 40 bytes of CUlaunchConfig and of
 * cudaLaunchConfig_t (whose size_t dynamicSmemBytes has shared_mem as its low
 * half on little-endian). device is padding in both: devrt puts the launch's
 * device there (any launch record, GPUEXT_F_DEVICE_VALID). */
struct gpuext_launch_aux {
	__u32 grid[3];
	__u32 block[3];
	__u32 shared_mem;
	__u32 device; /* ordinal of the current context's device at the launch */
	__u64 stream;
};

/* Copy shape from CUDA_MEMCPY2D / CUDA_MEMCPY3D. */
struct gpuext_copy_aux {
	__u64 width_bytes;
	__u64 height;
	__u64 depth;
	__u32 src_type; /* CUmemorytype */
	__u32 dst_type;
	__u64 _pad;
};

/*
 * struct gpuext_event - one completed call (or a process event). 168 bytes.
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns); args are the raw
 * integer arguments in ABI order, interpreted per API by the decoder.
 */
struct gpuext_event {
	__u16 kind;   /* enum gpuext_kind */
	__u16 api;    /* enum gpuext_api */
	__u16 source; /* enum gpuext_source */
	__u16 flags;  /* GPUEXT_F_* */
	__u32 pid;    /* thread group id */
	__u32 tid;
	__u64 start_ns;
	__u64 end_ns;
	__u64 cgroup_id;
	__s32 result; /* CUresult / cudaError_t */
	__u32 corr;   /* devrt: per-process call number, links GPU_EXEC records
	               * to the call; 0 from the uprobes */
	__u64 args[GPUEXT_NARGS];
	__u64 out; /* value behind the out argument, see GPUEXT_F_OUT_VALID */
	union {
		__u64 raw[5];
		struct gpuext_launch_aux launch;
		struct gpuext_copy_aux copy;
	} aux;
};

/* struct gpuext_named_event - a call whose argument names a handle. 680 bytes. */
struct gpuext_named_event {
	struct gpuext_event ev;
	char name[GPUEXT_NAME_MAX];
};

#define GPUEXT_XID_DEV_MAX 32
#define GPUEXT_XID_MSG_MAX 224

/*
 * struct gpuext_xid_event - one Xid error, from the nvidia:nvidia_dev_xid
 * tracepoint of NVIDIA's kernel module. 288 bytes.
 */
struct gpuext_xid_event {
	__u16 kind; /* GPUEXT_KIND_XID */
	__u16 _pad;
	__u32 pid;  /* thread group current when the driver reported it */
	__u64 ts_ns;
	__u32 xid;  /* error_code */
	__u32 _pad2;
	char dev[GPUEXT_XID_DEV_MAX];  /* PCI bus id, "0000:00:06.0" */
	char msg[GPUEXT_XID_MSG_MAX];  /* the driver's text, NUL-terminated */
};

/* Drop counters, indexes of the per-CPU drops map. */
enum gpuext_drop {
	GPUEXT_DROP_RING_FULL = 0,     /* ring buffer reservation failed */
	GPUEXT_DROP_INFLIGHT_FULL = 1, /* entry could not be stored */
	GPUEXT_DROP_UNMATCHED = 2,     /* return without entry (attached mid-call) */
	GPUEXT_DROP_MAX = 4,
};

/* Values of the pid_filter map. A pid absent from the map is traced. */
enum gpuext_filter {
	GPUEXT_FILTER_TRACE = 1,
	GPUEXT_FILTER_SKIP = 2,
};

/*
 * struct gpuext_gpu_exec - when work enqueued by a sampled call (a kernel
 * launch, a graph launch, an async or sync copy or set) ran on the GPU.
 * devrt brackets the work with CUDA events on its stream and maps the event
 * times onto the host's CLOCK_MONOTONIC. 80 bytes.
 */
struct gpuext_gpu_exec {
	__u16 kind;   /* GPUEXT_KIND_GPU_EXEC */
	__u16 api;    /* the call that enqueued the work */
	__u16 source; /* GPUEXT_SOURCE_DEVRT */
	__u16 flags;  /* GPUEXT_XF_* */
	__u32 pid;
	__u32 tid;           /* thread that made the call */
	__u64 call_start_ns; /* start_ns of that call's record */
	__u64 gpu_start_ns;  /* CLOCK_MONOTONIC ns the work started on the GPU */
	__u64 gpu_end_ns;    /* ... and ended */
	__u64 stream;        /* CUstream it ran on (0: the legacy default stream) */
	__u64 handle;        /* CUfunction or CUgraphExec; 0 for copies and sets */
	__u64 bytes;         /* copies and sets: bytes moved or written */
	__u32 corr;          /* corr of the call's record */
	__u32 _pad;
	__u64 _reserved;
};

/* struct gpuext_gpu_exec.flags */
#define GPUEXT_XF_CLAMPED (1 << 0) /* start was before the call (clock skew): moved to it, duration kept */
#define GPUEXT_XF_CALL_FAILED (1 << 1) /* the call returned an error; times are the events' */

/*
 * devrt's shared-memory ring: one file per process, created by devrt as
 * <dir>/gpuext-devrt-<pid>-<created_ns>.ring (dir: $GPUEXT_DEVRT_DIR,
 * default /dev/shm), mapped by devrt and by the collector. created_ns, not
 * the process start time: an exec keeps pid and start time, and its new
 * image makes a ring of its own.
 *
 *   offset 0     struct gpuext_ring_hdr (one page)
 *   offset 4096  struct gpuext_ctl      (one page, written by the collector)
 *   offset 8192  capacity slots of GPUEXT_SLOT_SIZE bytes (capacity: 2^n)
 *
 * Producers (any thread of the process) and the one consumer (the
 * collector) follow a bounded MPSC queue with a sequence number per slot:
 *   - slot i starts with seq = i. A record of n slots (n = nslots, the
 *     record's bytes cut into GPUEXT_SLOT_PAYLOAD-byte pieces) at position p
 *     may be written when the seq of slot (p+n-1) & (capacity-1) == p+n-1;
 *     a producer claims positions p..p+n-1 with a compare-and-swap of head
 *     from p to p+n. If that seq is lower than p+n-1 the ring is full: the
 *     record is dropped and drops[GPUEXT_RDROP_FULL] incremented.
 *   - after writing, the producer stores seq = q+1 in each slot q of the
 *     record, the first slot last, with release order.
 *   - the consumer reads at tail: when the seq of the first slot == tail+1
 *     the record is complete (its slots were committed before the first);
 *     it copies it out, stores seq = q + capacity in each of its slots
 *     (release), and advances tail by nslots.
 * No lock, allocation or system call on the producer's path.
 */
#define GPUEXT_RING_MAGIC 0x31474e5254584547ULL /* "GEXTRNG1" */
#define GPUEXT_CTL_MAGIC 0x314c544354584547ULL  /* "GEXTCTL1" */
#define GPUEXT_RING_PAGE 4096
#define GPUEXT_SLOT_SIZE 192
#define GPUEXT_SLOT_HDR 16
#define GPUEXT_SLOT_PAYLOAD (GPUEXT_SLOT_SIZE - GPUEXT_SLOT_HDR) /* 176 */
#define GPUEXT_RING_MIN_SLOTS 64
#define GPUEXT_RING_MAX_SLOTS (1U << 20)

/* One ring slot. A record longer than GPUEXT_SLOT_PAYLOAD continues in the
 * payload of the next nslots-1 slots (len and nslots are set in the first
 * slot only). */
struct gpuext_slot {
	__u64 seq;
	__u32 len;    /* record bytes (first slot) */
	__u16 nslots; /* slots the record spans (first slot) */
	__u16 _pad;
	__u8 data[GPUEXT_SLOT_PAYLOAD];
};

/* Ring drop counters, indexes of gpuext_ring_hdr.drops. */
enum gpuext_ring_drop {
	GPUEXT_RDROP_FULL = 0,     /* no free slots */
	GPUEXT_RDROP_DISABLED = 1, /* devrt turned itself off (fail open) */
	GPUEXT_RDROP_TIMING = 2,   /* a sampled launch could not be timed (no free event pair) */
	GPUEXT_RDROP_MAX = 8,
};

/* gpuext_ring_hdr.state */
#define GPUEXT_RING_ACTIVE 1
#define GPUEXT_RING_DISABLED 2 /* devrt failed internally and passes calls through */
#define GPUEXT_RING_CLOSED 3   /* the process is exiting: drain and remove */

struct gpuext_ring_hdr {
	__u64 magic;        /* GPUEXT_RING_MAGIC */
	__u32 abi_version;  /* GPUEXT_ABI_VERSION */
	__u32 slot_size;    /* GPUEXT_SLOT_SIZE */
	__u32 capacity;     /* slots, a power of two */
	__u32 pid;
	__u64 start_time;   /* process start, clock ticks after boot (/proc/pid/stat #22) */
	__u64 created_ns;   /* CLOCK_MONOTONIC: devrt reports every call from here on */
	__u32 ctl_offset;   /* GPUEXT_RING_PAGE */
	__u32 data_offset;  /* 2 * GPUEXT_RING_PAGE */
	__u32 state;        /* GPUEXT_RING_* */
	__u32 disabled_reason; /* devrt's internal error code when DISABLED */
	char version[16];   /* devrt's version, NUL-terminated */
	__u64 pidns_ino;    /* devrt's pid namespace (the number of /proc/self/ns/pid's
	                     * "pid:[N]"): which process of the file name's pid the ring
	                     * is, among containers sharing the directory; 0: unknown
	                     * (an older devrt, or the link unreadable) */
	__u64 head __attribute__((aligned(64))); /* producers' next position */
	__u64 tail __attribute__((aligned(64))); /* consumer's next position */
	__u64 drops[GPUEXT_RDROP_MAX] __attribute__((aligned(64)));
	__u64 records;      /* records committed */
	__u64 timed;        /* GPU_EXEC records committed */
};

/* Event classes: bits of gpuext_ctl.classes, one per gpuevent class. */
#define GPUEXT_CLASS_LAUNCH (1U << 0)
#define GPUEXT_CLASS_MEMORY (1U << 1)
#define GPUEXT_CLASS_COPY (1U << 2)
#define GPUEXT_CLASS_SYNC (1U << 3)
#define GPUEXT_CLASS_MODULE (1U << 4) /* contexts and modules */
#define GPUEXT_CLASS_EXEC (1U << 5)   /* GPU execution timing of sampled work */
#define GPUEXT_CLASS_ALL 0x3fU       /* every call once: the default */
/* Also the driver launches and copies the CUDA runtime makes inside a
 * reported runtime launch or copy (cudaLaunchKernel -> cuLaunchKernel): off
 * by default, the runtime call's record stands for both (the uprobes, which
 * cannot tell, report both). */
#define GPUEXT_CLASS_NESTED (1U << 6)
#define GPUEXT_CLASS_MASK 0x7fU

/* A policy action slot of the control page (filled by the gpupolicy
 * processor; devrt applies kinds it knows when generation changes). */
struct gpuext_ctl_action {
	__u32 kind;  /* 0: empty */
	__u32 flags;
	__u64 args[3];
};

#define GPUEXT_CTL_ACTIONS 16
#define GPUEXT_CTL_MAX_GAP_US 10000000 /* sample_gap_us: 10 s */

/*
 * struct gpuext_ctl - the control page. The collector writes it as a
 * seqlock: generation odd while writing, even when done; devrt reads the
 * fields with relaxed loads on its hot path and re-reads a consistent copy
 * when generation changed.
 */
struct gpuext_ctl {
	__u64 magic;        /* GPUEXT_CTL_MAGIC (devrt writes it at creation) */
	__u32 generation;
	__u32 classes;      /* GPUEXT_CLASS_* to report */
	__u32 sample_every; /* time 1 of every N launches/copies per thread; 0: none */
	__u32 consumer_pid; /* collector's pid; 0: none attached */
	__u64 heartbeat_ns; /* CLOCK_MONOTONIC of the collector's last drain */
	__u32 sample_gap_us; /* a thread times no call sooner than this after its
	                      * previous timed one (the sample is skipped, the
	                      * next is sample_every calls on); 0: no minimum;
	                      * at most GPUEXT_CTL_MAX_GAP_US */
	__u32 _pad0;
	__u64 _reserved[3];
	struct gpuext_ctl_action actions[GPUEXT_CTL_ACTIONS];
};

/*
 * The UVM fentry backend (bpf/uvm.bpf.c): fentry/fexit programs on
 * nvidia_uvm functions, relocated with CO-RE against the module's BTF.
 * Enum values of the driver are translated in BPF (CO-RE enum relocations)
 * into the stable values below, so the decoder needs no driver BTF.
 */
enum gpuext_uvm_type {
	GPUEXT_UVM_GPU_FAULT = 1,     /* uvm_perf_event_notify(FAULT) from a GPU */
	GPUEXT_UVM_CPU_FAULT = 2,     /* uvm_perf_event_notify(FAULT) from the CPU */
	GPUEXT_UVM_MIGRATION = 3,     /* uvm_perf_event_notify(MIGRATION): one contiguous range copied */
	GPUEXT_UVM_REPLAY = 4,        /* uvm_tools_broadcast_replay: a fault batch ended in a replay */
	GPUEXT_UVM_THRASHING = 5,     /* uvm_tools_record_thrashing */
	GPUEXT_UVM_THROTTLING = 6,    /* uvm_tools_record_throttling_start */
	GPUEXT_UVM_EVICTION = 7,      /* fexit uvm_va_block_evict_chunks: a VA block's chunks left a root chunk */
	GPUEXT_UVM_PREFETCH = 8,      /* fexit uvm_perf_prefetch_get_hint_va_block: pages the prefetcher chose */
	GPUEXT_UVM_FAULT_BATCH = 9,   /* fentry/fexit service_fault_batch: one batch serviced */
	GPUEXT_UVM_FAULT_SERVICE = 10,/* fentry/fexit uvm_parent_gpu_service_replayable_faults */
	GPUEXT_UVM_ROOT_EVICTION = 11,/* fentry/fexit evict_root_chunk: a 2 MiB root chunk evicted */
};

/* Why the driver made memory resident (uvm_make_resident_cause_t). */
enum gpuext_uvm_cause {
	GPUEXT_UVM_CAUSE_UNKNOWN = 0,
	GPUEXT_UVM_CAUSE_REPLAYABLE_FAULT = 1,
	GPUEXT_UVM_CAUSE_NON_REPLAYABLE_FAULT = 2,
	GPUEXT_UVM_CAUSE_ACCESS_COUNTER = 3,
	GPUEXT_UVM_CAUSE_PREFETCH = 4,
	GPUEXT_UVM_CAUSE_EVICTION = 5,
	GPUEXT_UVM_CAUSE_API_TOOLS = 6,
	GPUEXT_UVM_CAUSE_API_MIGRATE = 7,
	GPUEXT_UVM_CAUSE_API_SET_RANGE_GROUP = 8,
	GPUEXT_UVM_CAUSE_API_HINT = 9,
};

/* Faulting access (uvm_fault_access_type_t); 1-4 as the tools API numbers them. */
enum gpuext_uvm_access {
	GPUEXT_UVM_ACCESS_UNKNOWN = 0,
	GPUEXT_UVM_ACCESS_READ = 1,
	GPUEXT_UVM_ACCESS_WRITE = 2,
	GPUEXT_UVM_ACCESS_ATOMIC = 3,      /* strong atomic */
	GPUEXT_UVM_ACCESS_PREFETCH = 4,
	GPUEXT_UVM_ACCESS_ATOMIC_WEAK = 5,
};

/* gpuext_uvm_event.fault_type: the tools API's UvmEventFaultType numbers
 * (0 invalid, 1 invalid_pde, 2 invalid_pte, 3 write, 4 atomic, 5.. the fatal
 * types), translated from uvm_fault_type_t; a driver type the tools API
 * does not name (read) is 0. */

/* gpuext_uvm_event.flags */
#define GPUEXT_UVM_F_NO_OWNER (1 << 0)  /* pid unknown: no mm (multi-process sharing) or no owner */
#define GPUEXT_UVM_F_DUPLICATE (1 << 1) /* GPU fault: same page as the previous fault of the batch */
#define GPUEXT_UVM_F_THROTTLED (1 << 2) /* fault batch: some faults were throttled */
#define GPUEXT_UVM_F_FATAL (1 << 3)     /* fault batch: a fatal fault was found */
#define GPUEXT_UVM_F_CANCEL (1 << 4)    /* fault batch: serviced to cancel faults, not regularly */
#define GPUEXT_UVM_F_NO_START (1 << 5)  /* timed record whose entry was not seen: start_ns = end_ns */
#define GPUEXT_UVM_F_PMA (1 << 6)       /* root eviction asked by RM's allocator (PMA), not by UVM */

/* Processor ids as the driver numbers them (uvm_processor_id_t): 0 is the
 * CPU, a GPU is 1 + its index (the tools API's V2 processor index). */
#define GPUEXT_UVM_CPU 0

/*
 * struct gpuext_uvm_event - one thing nvidia_uvm did. 104 bytes.
 * Times are CLOCK_MONOTONIC ns (bpf_ktime_get_ns). gpu is the UUID of the
 * physical GPU the record is about (zero when none or unknown). Per type:
 *   GPU_FAULT   pid, gpu, address, batch, count = instances (the fault and
 *               those merged with it), access, fault_type, src = GPU id,
 *               value = the GPU's timestamp of the fault; F_DUPLICATE
 *   CPU_FAULT   pid, tid, address, access (read/write), value = pc, aux[0] = cpu
 *   MIGRATION   pid, src, dst, src_nid, dst_nid, address, bytes, cause; gpu is
 *               the destination GPU, or the source for GPU-to-CPU
 *   REPLAY      gpu, src = GPU id, batch (not per process: pid 0)
 *   THRASHING   pid, address, bytes = region size, value = processors 0-63
 *   THROTTLING  pid, gpu, src = GPU id, address
 *   EVICTION    pid, gpu, src = GPU id, address = VA block start, status
 *               (the bytes are in the MIGRATION records of cause EVICTION)
 *   PREFETCH    pid, gpu (new residency), dst, address = VA block start,
 *               count = pages, bytes = pages * 4096
 *   FAULT_BATCH gpu, batch, start/end, status, count = faults fetched,
 *               aux[0] coalesced, aux[1] duplicates, aux[2] invalid prefetch,
 *               value = replays; F_THROTTLED, F_FATAL, F_CANCEL
 *   FAULT_SERVICE gpu, start/end, count = batches serviced, batch = last id
 *   ROOT_EVICTION gpu, start/end, status, address = root chunk's GPU physical
 *               address, bytes = its size; F_PMA
 */
struct gpuext_uvm_event {
	__u16 kind;       /* GPUEXT_KIND_UVM */
	__u8 type;        /* enum gpuext_uvm_type */
	__u8 flags;       /* GPUEXT_UVM_F_* */
	__u32 pid;        /* owning process (thread group id); 0: none or unknown */
	__u64 start_ns;
	__u64 end_ns;     /* timed records: at exit; others: = start_ns */
	__u8 gpu[16];
	__u64 address;
	__u64 bytes;
	__u64 value;
	__u32 batch;
	__u32 count;
	__u16 src;        /* processor ids, GPUEXT_UVM_CPU or a GPU */
	__u16 dst;
	__s16 src_nid;    /* migrations: CPU NUMA node of a CPU end; -1: none */
	__s16 dst_nid;
	__u8 cause;       /* enum gpuext_uvm_cause */
	__u8 access;      /* enum gpuext_uvm_access */
	__u8 fault_type;
	__u8 _pad;
	__u32 tid;
	__s32 status;     /* NV_STATUS the function returned (0: NV_OK) */
	__u32 aux[3];
};

/* ------------------------------------------------------------------------
 * gpu_ext kernel module (kernel-modules/gpu_ext): the contexts its struct_ops
 * policies read. A driver fills one of these with what it observed and calls
 * a gpu_ext entry point (kernel-modules/gpu_ext/gpu_ext.h); the module copies
 * it into module memory, runs the attached policy on the copy, and validates
 * what the policy asked for (through kfuncs) after the callback returns.
 * Policies read contexts and cannot write them (the verifier refuses), so no
 * policy ever touches driver memory. GPUEXT_KMOD_ABI_VERSION changes with any
 * layout, callback or kfunc change; the module carries it in BTF
 * (enum gpu_ext_abi) and the Go loader refuses a different one.
 * ------------------------------------------------------------------------ */
#define GPUEXT_KMOD_ABI_VERSION 1

#define GPUEXT_CHUNK_SHIFT 21             /* root chunks and VA blocks: 2 MiB */
#define GPUEXT_PAGE_SHIFT 12              /* prefetch regions count 4 KiB pages */
#define GPUEXT_BLOCK_PAGES 512            /* pages in one VA block */
#define GPUEXT_EVICT_MAX_SKIPS 8          /* evict_prepare: spared candidates per eviction */
#define GPUEXT_TIMESLICE_MIN_US 100ULL    /* set_timeslice clamps into [MIN, MAX] */
#define GPUEXT_TIMESLICE_MAX_US 10000000ULL

/* What a prefetch callback returns. */
enum gpuext_action {
	GPUEXT_ACTION_DEFAULT = 0,    /* run the driver's own algorithm */
	GPUEXT_ACTION_BYPASS = 1,     /* use the region the policy set (none set: no prefetch) */
	GPUEXT_ACTION_ENTER_LOOP = 2, /* walk the driver's region tree, calling page_prefetch_iter per level */
};

/* The memory hooks; also the index of a hook in the module's counters. */
enum gpuext_hook {
	GPUEXT_HOOK_BLOCK_ACTIVATE = 0,
	GPUEXT_HOOK_BLOCK_ACCESS = 1,
	GPUEXT_HOOK_EVICT_PREPARE = 2,
	GPUEXT_HOOK_PAGE_PREFETCH = 3,
	GPUEXT_HOOK_PAGE_PREFETCH_ITER = 4,
	GPUEXT_HOOK_TASK_INIT = 5,
	GPUEXT_HOOK_TASK_BIND = 6,
	GPUEXT_HOOK_TASK_DESTROY = 7,
	GPUEXT_HOOK_MAX = 8,
};

/* Lists of the memory manager: chunks are evicted from the head. */
enum gpuext_list {
	GPUEXT_LIST_NONE = 0,
	GPUEXT_LIST_USED = 1,   /* chunks backing VA blocks */
	GPUEXT_LIST_UNUSED = 2, /* allocated chunks holding no live data: evicted before USED */
};

/* A block move request. HEAD: evict sooner; TAIL: keep longer (in
 * evict_prepare, TAIL spares the candidate and the driver picks again). */
enum gpuext_pos {
	GPUEXT_POS_NONE = 0, /* no request: the driver's default */
	GPUEXT_POS_HEAD = 1,
	GPUEXT_POS_TAIL = 2,
};

enum gpuext_interleave {
	GPUEXT_INTERLEAVE_DEFAULT = 0,
	GPUEXT_INTERLEAVE_LOW = 1,
	GPUEXT_INTERLEAVE_MEDIUM = 2,
	GPUEXT_INTERLEAVE_HIGH = 3,
};

/*
 * struct gpuext_mem_ctx - a 2 MiB root chunk at block_activate (it was given
 * to a VA block and put on the used list), block_access (a resident chunk
 * served a fault) and evict_prepare (the driver needs a victim; the chunk is
 * the candidate it would take). 64 bytes.
 * Request: bpf_gpu_ext_block_move(ctx, enum gpuext_pos).
 */
struct gpuext_mem_ctx {
	__u64 chunk_id;        /* the driver's stable id of the root chunk */
	__u64 va_start;        /* start of the VA block it backs; 0: none or unknown */
	__u64 cgroup_id;       /* owner's cgroup v2 id; 0: unknown */
	__u32 pid;             /* owner (thread group id); 0: unknown */
	__u32 gpu;             /* the driver's GPU index */
	__u32 hook;            /* enum gpuext_hook */
	__u32 list;            /* enum gpuext_list: where the chunk is now */
	__u32 used_chunks;     /* length of the used list */
	__u32 unused_chunks;   /* length of the unused list */
	__u32 capacity_chunks; /* root chunks the memory manager can hold */
	__u32 skips;           /* evict_prepare: candidates already spared in this eviction */
	__u64 access_count;    /* the driver's count of accesses to this chunk, if it keeps one */
};

/*
 * struct gpuext_prefetch_ctx - a GPU fault in a VA block, at page_prefetch
 * and (after ENTER_LOOP) at each level of the driver's region tree in
 * page_prefetch_iter. Pages are 4 KiB indexes from va_start. 72 bytes.
 * Request: bpf_gpu_ext_set_prefetch_region(ctx, first, outer); the module
 * clamps it into [max_first, max_outer).
 */
struct gpuext_prefetch_ctx {
	__u64 va_start;        /* VA block start */
	__u64 cgroup_id;
	__u32 pid;
	__u32 gpu;
	__u32 hook;            /* GPUEXT_HOOK_PAGE_PREFETCH or _ITER */
	__u32 page_index;      /* the faulting page */
	__u32 max_first;       /* the bound the driver allows: [max_first, max_outer) */
	__u32 max_outer;
	__u32 faulted_pages;   /* pages of the block faulted in this batch */
	__u32 resident_pages;  /* pages of the block already resident on the GPU */
	__u32 iter_first;      /* _ITER: the tree node's region [iter_first, iter_outer) */
	__u32 iter_outer;
	__u32 iter_count;      /* _ITER: faulted + resident pages in that node */
	__u32 iter_level;      /* _ITER: 0 = the leaf level */
	__u64 _reserved;
};

/*
 * struct gpuext_sched_ctx - a channel group (TSG) at task_init (created),
 * task_bind (scheduled on a runlist) and task_destroy. 72 bytes.
 * Requests: bpf_gpu_ext_set_timeslice(ctx, us), bpf_gpu_ext_set_interleave(ctx,
 * enum gpuext_interleave), bpf_gpu_ext_reject_bind(ctx) (task_bind only).
 */
struct gpuext_sched_ctx {
	__u64 tsg_id;
	__u64 cgroup_id;
	__u64 timeslice_us;    /* the driver's current (at init: default) timeslice */
	__u32 pid;
	__u32 gpu;
	__u32 hook;            /* GPUEXT_HOOK_TASK_* */
	__u32 engine_type;
	__u32 runlist_id;
	__u32 channel_count;
	__u32 interleave;      /* enum gpuext_interleave */
	__u32 _pad;
	char comm[16];
};

/* ------------------------------------------------------------------------
 * gpu_ext_sim (kernel-modules/sim): a simulated UVM memory manager and GPU
 * scheduler in a module, driving the gpu_ext entry points like a patched
 * driver would. Userspace talks to /dev/gpu_ext_sim with these records
 * (internal/gpuextsim is the Go client); every field is validated and a bad
 * record gets a clear errno. Owner: kernel-modules/sim.
 *
 * Protocol (one session per open file):
 *   ioctl MEM_RESET(config)    start a memory session (empty GPU memory)
 *   write(accesses[])          replay them in order (a whole write is
 *                              checked first; a record with unknown flags
 *                              or pid 0 fails it with EINVAL, nothing done)
 *   ioctl MEM_RESULT(result)   counters so far
 *   ioctl SCHED_RESET(config)  start a scheduling session with its tasks
 *   write(jobs[])              queue jobs (checked as a whole, EINVAL)
 *   ioctl SCHED_RUN(result)    run all queued jobs to completion, then drop them
 *   ioctl BENCH(bench)         call one entry point bench.calls times
 * A write or result in the wrong session kind fails with EBADFD.
 * ------------------------------------------------------------------------ */
#include <linux/ioctl.h>

#define GPUEXT_SIM_MAX_CHUNKS 65536U       /* capacity_chunks bound */
#define GPUEXT_SIM_MAX_BLOCKS 262144U      /* distinct VA blocks in one memory session (ENOSPC) */
#define GPUEXT_SIM_MAX_TENANTS 16U         /* distinct pids in one memory session (ENOSPC) */
#define GPUEXT_SIM_MAX_WRITE 65536U        /* records in one write() (EINVAL beyond) */
#define GPUEXT_SIM_MAX_TASKS 16U
#define GPUEXT_SIM_MAX_JOBS 65536U         /* queued jobs (ENOSPC beyond) */
#define GPUEXT_SIM_MAX_JOB_NS 10000000000ULL      /* 10 s: one job's duration */
#define GPUEXT_SIM_MAX_TOTAL_NS 100000000000ULL   /* 100 s: queued work in all (ENOSPC) */
#define GPUEXT_SIM_MAX_SUBMIT_NS (1ULL << 50)     /* latest submit time */
#define GPUEXT_SIM_MAX_SWITCH_NS 1000000000ULL    /* context switch cost bound */
#define GPUEXT_SIM_MAX_BENCH_CALLS (1ULL << 24)
#define GPUEXT_SIM_PREFETCH_THRESHOLD 51U  /* default prefetch: % of a tree node */

/* struct gpuext_sim_access.flags */
enum gpuext_sim_access_flags {
	GPUEXT_SIM_ACCESS_WRITE = 1U << 0,   /* a write (counted like a read) */
	GPUEXT_SIM_ACCESS_RELEASE = 1U << 1, /* the VA block's data is dropped: its
	                                      * chunk moves to the unused list */
};

/* struct gpuext_sim_access - one GPU access in a memory trace. 16 bytes. */
struct gpuext_sim_access {
	__u64 va;    /* the byte address; 2 MiB block va >> 21, 4 KiB page va >> 12 */
	__u32 pid;   /* the accessing process (tenant); never 0 */
	__u32 flags; /* enum gpuext_sim_access_flags */
};

/* struct gpuext_sim_mem_config.flags */
enum gpuext_sim_mem_flags {
	GPUEXT_SIM_MEM_NO_PREFETCH = 1U << 0, /* never prefetch, never call page_prefetch */
};

/* struct gpuext_sim_mem_config - MEM_RESET's argument. 32 bytes. */
struct gpuext_sim_mem_config {
	__u32 capacity_chunks; /* 2 MiB root chunks of GPU memory: 1..GPUEXT_SIM_MAX_CHUNKS */
	__u32 flags;           /* enum gpuext_sim_mem_flags */
	__u64 _reserved[3];    /* must be 0 */
};

/* struct gpuext_sim_tenant - one pid's share of a memory session. 56 bytes.
 * Faulted and prefetched bytes count for the faulting pid, evictions and
 * evicted bytes for the evicted block's owner (its first accessing pid). */
struct gpuext_sim_tenant {
	__u32 pid;
	__u32 _pad;
	__u64 accesses;
	__u64 faults;
	__u64 hits;
	__u64 evictions;
	__u64 prefetched_bytes;
	__u64 migrated_bytes;
};

/* struct gpuext_sim_mem_result - MEM_RESULT's argument (filled). 968 bytes. */
struct gpuext_sim_mem_result {
	__u64 accesses;         /* access records replayed (RELEASE ones not counted) */
	__u64 faults;           /* accesses to a non-resident page */
	__u64 hits;             /* accesses to a resident page */
	__u64 evictions;        /* chunks taken from a block to serve another */
	__u64 prefetched_bytes; /* pages made resident by prefetch, x 4 KiB */
	__u64 migrated_bytes;   /* faulted + prefetched pages in, evicted pages out, x 4 KiB */
	__u64 evict_skips;      /* candidates spared by evict_prepare (TAIL) */
	__u32 used_chunks;      /* lengths of the lists now */
	__u32 unused_chunks;
	__u32 blocks;           /* distinct VA blocks seen */
	__u32 ntenants;         /* valid entries of tenants, in order of first access */
	struct gpuext_sim_tenant tenants[GPUEXT_SIM_MAX_TENANTS];
};

/* struct gpuext_sim_task - a channel group of a scheduling session. 24 bytes. */
struct gpuext_sim_task {
	__u32 pid; /* never 0 */
	__u32 _pad;
	char comm[16];
};

/* struct gpuext_sim_sched_config - SCHED_RESET's argument. 408 bytes. */
struct gpuext_sim_sched_config {
	__u64 switch_ns;            /* cost of a context switch between channel groups */
	__u64 default_timeslice_us; /* the driver's timeslice, in [GPUEXT_TIMESLICE_MIN_US, _MAX_US] */
	__u32 ntasks;               /* 1..GPUEXT_SIM_MAX_TASKS */
	__u32 _pad;
	struct gpuext_sim_task tasks[GPUEXT_SIM_MAX_TASKS];
};

/* struct gpuext_sim_job - one piece of GPU work of a task. 24 bytes. */
struct gpuext_sim_job {
	__u32 task;        /* index into the config's tasks */
	__u32 _pad;
	__u64 submit_ns;   /* simulated time it is queued: <= GPUEXT_SIM_MAX_SUBMIT_NS */
	__u64 duration_ns; /* GPU time it needs: 1..GPUEXT_SIM_MAX_JOB_NS */
};

/* struct gpuext_sim_task_result - one task after SCHED_RUN. 80 bytes.
 * Latency: submit to finish; wait: submit to first run. p99: nearest rank. */
struct gpuext_sim_task_result {
	__u32 pid;
	__u32 interleave;      /* the level used (enum gpuext_interleave) */
	__u64 timeslice_us;    /* the timeslice used */
	__u64 jobs;            /* jobs completed */
	__u64 dropped;         /* jobs never run: the bind was rejected */
	__u64 mean_latency_ns;
	__u64 p99_latency_ns;
	__u64 mean_wait_ns;
	__u64 p99_wait_ns;
	__u64 busy_ns;         /* GPU time it ran */
	__u32 rejected;        /* 1: the policy rejected its bind */
	__u32 _pad;
};

/* struct gpuext_sim_sched_result - SCHED_RUN's argument (filled). 1304 bytes. */
struct gpuext_sim_sched_result {
	__u64 makespan_ns; /* simulated time when the last job finished */
	__u64 switches;    /* context switches */
	__u32 ntasks;
	__u32 _pad;
	struct gpuext_sim_task_result tasks[GPUEXT_SIM_MAX_TASKS];
};

/* struct gpuext_sim_bench - BENCH's argument. 24 bytes. */
struct gpuext_sim_bench {
	__u32 hook;       /* enum gpuext_hook: which entry point */
	__u32 _pad;
	__u64 calls;      /* 1..GPUEXT_SIM_MAX_BENCH_CALLS */
	__u64 elapsed_ns; /* out: ktime for all calls */
};

#define GPUEXT_SIM_IOC_MAGIC 'G'
#define GPUEXT_SIM_IOC_MEM_RESET _IOW(GPUEXT_SIM_IOC_MAGIC, 1, struct gpuext_sim_mem_config)
#define GPUEXT_SIM_IOC_MEM_RESULT _IOR(GPUEXT_SIM_IOC_MAGIC, 2, struct gpuext_sim_mem_result)
#define GPUEXT_SIM_IOC_SCHED_RESET _IOW(GPUEXT_SIM_IOC_MAGIC, 3, struct gpuext_sim_sched_config)
#define GPUEXT_SIM_IOC_SCHED_RUN _IOR(GPUEXT_SIM_IOC_MAGIC, 4, struct gpuext_sim_sched_result)
#define GPUEXT_SIM_IOC_BENCH _IOWR(GPUEXT_SIM_IOC_MAGIC, 5, struct gpuext_sim_bench)

/* ------------------------------------------------------------------------
 * devrt injection protocol (issue 7, device probes): devrt asks the
 * collector for a patched PTX of each module a process loads, loads it
 * beside the original and redirects launches of the patched kernels.
 * Owner: internal/devrtinject (collector side) and devrt/src/inject*.c.
 *
 * Transport: a unix stream socket, <ring dir>/gpuext-inject.sock (the
 * collector creates it; $GPUEXT_DEVRT_INJECT_SOCK overrides the path). One
 * request and one response per connection, little-endian, every length
 * checked against the limits below by both sides:
 *
 *   request:  struct gpuext_inj_req, ptx_len bytes of PTX (no NUL), then
 *             names_len bytes: nkernels NUL-terminated .entry names
 *   response: struct gpuext_inj_resp, reason_len bytes of text (no NUL),
 *             ptx_len bytes of patched PTX (PATCHED only), names_len bytes:
 *             nkernels NUL-terminated names of the patched kernels, then
 *             init_len bytes: the region's initial contents, entries of
 *             struct gpuext_inj_init each followed by its len bytes padded
 *             to 8 (the maps' headers; the rest of the region starts zero)
 *
 * The shared region the probes' maps live in is device memory (cuMemAlloc
 * in the loading context; its device pointer goes into the patched module's
 * __gpuext_shared), one per process, context and probe set, shared by every
 * module patched for it. devrt mirrors it into a file beside the ring,
 * <ring dir>/gpuext-devmaps-<pid>-<created_ns>.maps, which the collector
 * maps read-only: first with the initial contents, then with a device-to-
 * host copy on a stream of its own every GPUEXT_DEVRT_PROBE_SYNC_MS
 * (default 100 ms), at the unload of the region's last module and at exit.
 * Map atomics so stay in the GPU's L2 instead of crossing PCIe.
 *
 * devrt bounds the whole exchange (GPUEXT_INJ_TIMEOUT_MS by default) and
 * loads the original module on any failure: injection never changes what a
 * program computes or whether its load succeeds.
 * ---------------------------------------------------------------------- */
#define GPUEXT_INJ_REQ_MAGIC 0x51524a47U  /* "GJRQ" */
#define GPUEXT_INJ_RESP_MAGIC 0x53524a47U /* "GJRS" */
#define GPUEXT_INJ_VERSION 2
#define GPUEXT_INJ_MAX_PTX (64U << 20)      /* PTX bytes, either way */
#define GPUEXT_INJ_MAX_NAMES (4U << 20)     /* bytes of kernel names */
#define GPUEXT_INJ_MAX_KERNELS 65536        /* names in one message */
#define GPUEXT_INJ_MAX_REASON 1024          /* bytes of reason text */
#define GPUEXT_INJ_MAX_SHARED (1ULL << 30)  /* shared region bytes */
#define GPUEXT_INJ_MAX_INIT (1U << 20)      /* bytes of initial contents */
#define GPUEXT_INJ_TIMEOUT_MS 2000          /* devrt's default bound */
#define GPUEXT_INJ_SOCK_NAME "gpuext-inject.sock"
#define GPUEXT_INJ_SHARED_GLOBAL "__gpuext_shared"
/* A patched kernel N may come with a second .entry N GPUEXT_INJ_GRID1D_SUFFIX
 * of the same parameters: the same instrumented kernel specialised for a
 * one-dimensional grid (its block sampling reads %ctaid.x and %nctaid.x
 * only), which would sample the wrong blocks of a 2-D or 3-D grid. devrt
 * launches it for launches with gridDimY == gridDimZ == 1 only; a kernel
 * without one (optional, no protocol change) runs N's twin for every grid. */
#define GPUEXT_INJ_GRID1D_SUFFIX "__gx1d"
/* With GPUEXT_INJ_RF_VARS, a patched kernel N may come with a third .entry
 * N GPUEXT_INJ_PLAIN_SUFFIX: N exactly as the program's module has it, in
 * the twin (so with the twin's variables). devrt makes the program's
 * settings of N on it too, and makes a launch N's twin refuses again with
 * it, where a module without variables would go back to the original; if
 * it takes the launch, it runs N's launches from then on (optional, no
 * protocol change: a kernel without one fails such a launch with the
 * twin's error). */
#define GPUEXT_INJ_PLAIN_SUFFIX "__gxplain"

/* What the collector did with a module (struct gpuext_inj_resp.status). */
enum gpuext_inj_status {
	GPUEXT_INJ_PATCHED = 1,   /* here is the patched PTX: load it */
	GPUEXT_INJ_UNCHANGED = 2, /* no probe applies: keep the original */
	GPUEXT_INJ_REJECTED = 3,  /* a probe applies but cannot be applied safely */
	GPUEXT_INJ_ERROR = 4,     /* the request was bad or the collector failed */
};

/* Where the PTX came from (struct gpuext_inj_req.image). */
enum gpuext_inj_image {
	GPUEXT_INJ_IMAGE_PTX = 1,    /* the image was PTX text */
	GPUEXT_INJ_IMAGE_FATBIN = 2, /* the PTX entry of a fat binary */
	GPUEXT_INJ_IMAGE_TRITON = 3, /* a cubin's PTX, from Triton's cache beside it */
};

/* struct gpuext_inj_req.flags: what this devrt can do */
#define GPUEXT_INJ_QF_VARS (1U << 0) /* it honours GPUEXT_INJ_RF_VARS */

/* struct gpuext_inj_resp.flags */
#define GPUEXT_INJ_RF_CACHED (1U << 0) /* answered from the collector's cache */
/*
 * The module declares variables of its own (.global or .const at module
 * scope: __device__ and __constant__ variables, which the program reads and
 * writes by name with cuModuleGetGlobal / cuLibraryGetGlobal, through
 * cudaMemcpyToSymbol and the like). The patched module has copies of its
 * own, so its twin must own them: the names list every kernel of the
 * module, patched or not, and devrt redirects them all, hands the program
 * the twin's variables (cuModuleGetGlobal, cuLibraryGetGlobal,
 * cuLibraryGetModule, cuFuncGetModule) and never falls back to the
 * original once the module is patched (a launch the twin refuses runs the
 * kernel's plain copy, GPUEXT_INJ_PLAIN_SUFFIX, or fails with the twin's
 * error if it has none; a library context the twin cannot be bound in
 * runs it without a region; a graph kernel node the program makes runs
 * the plain copy).
 * Sent only to a devrt that set GPUEXT_INJ_QF_VARS; any other is answered
 * REJECTED for such a module.
 */
#define GPUEXT_INJ_RF_VARS (1U << 1)

/* The request header. 80 bytes. */
struct gpuext_inj_req {
	__u32 magic;       /* GPUEXT_INJ_REQ_MAGIC */
	__u16 version;     /* GPUEXT_INJ_VERSION */
	__u16 hdr_size;    /* sizeof(struct gpuext_inj_req) */
	__u32 pid;         /* the loading process, in its own pid namespace */
	__u32 sm_arch;     /* compute capability major * 10 + minor; 0: unknown */
	__u64 ptx_len;
	__u32 names_len;
	__u32 nkernels;
	__u16 api;         /* enum gpuext_api of the load call */
	__u16 image;       /* enum gpuext_inj_image */
	__u32 flags;       /* GPUEXT_INJ_QF_* */
	__u8 sha256[32];   /* SHA-256 of the ptx_len bytes of PTX */
	__u64 _reserved;
};

/* The response header. 88 bytes. */
struct gpuext_inj_resp {
	__u32 magic;       /* GPUEXT_INJ_RESP_MAGIC */
	__u16 version;     /* GPUEXT_INJ_VERSION */
	__u16 hdr_size;    /* sizeof(struct gpuext_inj_resp) */
	__u32 status;      /* enum gpuext_inj_status */
	__u32 reason_len;
	__u64 ptx_len;     /* PATCHED: > 0; otherwise 0 */
	__u32 names_len;
	__u32 nkernels;    /* PATCHED: >= 1 */
	__u64 shared_size; /* bytes of the shared region the probes use; 0: none */
	__u64 probe_version; /* the probe set that patched it */
	__u32 flags;       /* GPUEXT_INJ_RF_* */
	__u32 init_len;    /* PATCHED: bytes of initial region contents; else 0 */
	__u8 sha256[32];   /* the request's, echoed */
};

/* One range of the region's initial contents (its len bytes follow). 16 bytes. */
struct gpuext_inj_init {
	__u64 offset;      /* in the region; offset + len <= shared_size */
	__u32 len;         /* > 0 */
	__u32 _pad;
};

/*
 * struct gpuext_devmaps_info - the device a region belongs to. A region
 * file is the region's page-rounded bytes (region_len, what devrt's copies
 * of the device memory overwrite) and one more page that only devrt
 * writes: this record fills the last GPUEXT_DEVMAPS_INFO_SIZE bytes of the
 * file. A file without it (or with another magic) names no device. After
 * each copy of the device's memory into the file, devrt stores when that
 * copy was issued and when it was seen complete (CLOCK_MONOTONIC ns;
 * copy_start_ns first, then copy_end_ns with release order; 0: none yet):
 * the region's contents are then at least as new as the GPU at
 * copy_start_ns, which tells the collector how far the GPU's clock has
 * gone while no kernel writes anything (warp occupancy's buckets). 64
 * bytes.
 */
#define GPUEXT_DEVMAPS_INFO_MAGIC 0x4f464e49U /* "INFO" */
#define GPUEXT_DEVMAPS_INFO_VERSION 1
#define GPUEXT_DEVMAPS_INFO_SIZE 64
#define GPUEXT_DEVMAPS_TRAILER 4096   /* bytes after region_len */
#define GPUEXT_DMI_UUID (1U << 0)     /* uuid holds cuDeviceGetUuid's bytes */

struct gpuext_devmaps_info {
	__u32 magic;       /* GPUEXT_DEVMAPS_INFO_MAGIC */
	__u16 version;     /* GPUEXT_DEVMAPS_INFO_VERSION */
	__u16 size;        /* sizeof(struct gpuext_devmaps_info) */
	__u64 region_len;  /* the file's bytes before the trailer page */
	__s32 device;      /* the context's CUdevice (the process's ordinal,
	                    * after CUDA_VISIBLE_DEVICES) */
	__u32 flags;       /* GPUEXT_DMI_* */
	__u8 uuid[16];     /* the GPU's UUID (hw.id "GPU-" + its 8-4-4-4-12 hex) */
	__u64 ctx;         /* the CUcontext */
	__u64 copy_start_ns; /* the last device -> file copy: issued */
	__u64 copy_end_ns;   /* and seen complete (0: no copy yet) */
};

/*
 * struct gpuext_inject_event - what devrt did with one module load: one
 * record per load of an image with PTX (or none) while an injection socket
 * exists; written to the ring after the load call's own record. One slot:
 * 176 bytes. Kind number 8 continues enum gpuext_kind (kept out of that
 * enum so the BPF objects' BTF does not change).
 */
#define GPUEXT_KIND_INJECT 8

enum gpuext_inj_outcome {
	GPUEXT_INJ_OUT_PATCHED = 1,        /* launches of `kernels` kernels go to the patched module */
	GPUEXT_INJ_OUT_UNCHANGED = 2,      /* the collector had nothing to add */
	GPUEXT_INJ_OUT_REJECTED = 3,       /* the collector refused (text says why) */
	GPUEXT_INJ_OUT_NOT_INSTRUMENTABLE = 4, /* no PTX to patch (reason) */
	GPUEXT_INJ_OUT_FAILED = 5,         /* original kept after a failure (reason) */
};

enum gpuext_inj_reason {
	GPUEXT_INJ_R_NONE = 0,
	GPUEXT_INJ_R_SASS_ONLY = 1,    /* an ELF cubin, or a fat binary of cubins only */
	GPUEXT_INJ_R_COMPRESSED = 2,   /* the fat binary's PTX is compressed */
	GPUEXT_INJ_R_BAD_IMAGE = 3,    /* not PTX, cubin or fat binary as devrt reads them */
	GPUEXT_INJ_R_TOO_LARGE = 4,    /* PTX or response over the limits */
	GPUEXT_INJ_R_CONNECT = 5,      /* the socket exists but no collector answers */
	GPUEXT_INJ_R_TIMEOUT = 6,      /* no complete answer within the timeout */
	GPUEXT_INJ_R_IO = 7,           /* the connection failed mid-way */
	GPUEXT_INJ_R_BAD_RESPONSE = 8, /* the answer broke the protocol */
	GPUEXT_INJ_R_SERVER = 9,       /* the collector answered ERROR */
	GPUEXT_INJ_R_LOAD = 10,        /* the driver refused the patched PTX (cuda_result) */
	GPUEXT_INJ_R_SHARED = 11,      /* the shared region could not be made or bound */
	GPUEXT_INJ_R_FUNCTION = 12,    /* a patched kernel is missing in either module */
	GPUEXT_INJ_R_NO_MEMORY = 13,
	GPUEXT_INJ_R_DRIVER = 14,      /* a driver function injection needs is missing */
	GPUEXT_INJ_R_TABLE_FULL = 15,  /* devrt's redirect table is full */
	GPUEXT_INJ_R_REFUSED = 16,     /* later: the twin refused a setting or a launch
	                                * the original took; the module's redirects are
	                                * dropped (a record of its own, api 0); with
	                                * GPUEXT_IF_GRID1D only one kernel's 1-D twin;
	                                * with GPUEXT_IF_VARS none (see that flag) */
	GPUEXT_INJ_R_FILE = 17,        /* the file a module was loaded from could not
	                                * be read again (cuModuleLoad, cuLibraryLoadFromFile) */
	GPUEXT_INJ_R_VARS_LIMITS = 18, /* the module's variables are the twin's, and a
	                                * twin's kernel takes fewer threads a block than
	                                * its original (cuFuncGetAttribute): launches the
	                                * original takes would fail (GPUEXT_INJ_RF_VARS) */
};

/* struct gpuext_inject_event.flags */
#define GPUEXT_IF_COLLECTOR_CACHE (1U << 0) /* the collector answered from its cache */
#define GPUEXT_IF_LIBRARY (1U << 1)         /* module and patched are CUlibrary handles */
#define GPUEXT_IF_REGION_SHARED (1U << 2)   /* the region was made for an earlier module */
#define GPUEXT_IF_OTHER_CONTEXT (1U << 3)   /* not a load: a patched library's binding to
                                             * another context, at the first launch of one
                                             * of its kernels there (PATCHED or FAILED) */
#define GPUEXT_IF_GRID1D (1U << 4)          /* not a load (R_REFUSED): a kernel's 1-D twin
                                             * refused what its twin took; that kernel runs
                                             * its twin for every grid, the module stays
                                             * patched */
#define GPUEXT_IF_VARS (1U << 5)            /* the twin owns the module's variables
                                             * (GPUEXT_INJ_RF_VARS): every kernel is
                                             * redirected; with R_REFUSED (not a load) the
                                             * module stays patched and the text says what
                                             * was refused: "launch (plain copy now)" (the
                                             * kernel's plain copy took it and runs it from
                                             * then on), "launch" (the kernel has no plain copy
                                             * to try: the launch failed with cuda_result; one
                                             * record a module), a setting (the twin's, kept
                                             * without it), or "... (plain copy)" (a setting
                                             * the plain copy refused: it is forgotten) */

struct gpuext_inject_event {
	__u16 kind;        /* GPUEXT_KIND_INJECT */
	__u16 api;         /* the load call (enum gpuext_api) */
	__u16 source;      /* GPUEXT_SOURCE_DEVRT */
	__u16 flags;       /* GPUEXT_IF_* */
	__u32 pid;
	__u32 tid;
	__u64 ts_ns;       /* CLOCK_MONOTONIC when the outcome was known */
	__u64 module;      /* the original CUmodule / CUlibrary (what the program got) */
	__u64 patched;     /* the patched one; 0 if none */
	__u64 shared_dptr; /* device pointer written to __gpuext_shared (the
	                    * region, device memory); 0 if none */
	__u64 shared_size;
	__u64 ask_ns;      /* asking the collector (connect to last byte) */
	__u64 load_ns;     /* loading the patched PTX (the driver's JIT) */
	__u64 total_ns;    /* everything injection added to the load call */
	__u64 ptx_len;     /* bytes of the original PTX; 0 if none */
	__u32 outcome;     /* enum gpuext_inj_outcome */
	__u32 reason;      /* enum gpuext_inj_reason */
	__u32 sm_arch;
	__u32 kernels;     /* PATCHED: kernels redirected */
	__s32 cuda_result; /* R_LOAD, R_SHARED, R_FUNCTION: the driver's result */
	__u32 _pad;
	__u8 sha256[16];   /* the first 16 bytes of the PTX's SHA-256 */
	char text[48];     /* the collector's reason (REJECTED, R_SERVER), NUL-padded */
};

/* ------------------------------------------------------------------------
 * Device probes (devrt/jit, issue 7): eBPF programs compiled to PTX and
 * called from inside GPU kernels. Owner: devrt/jit.
 * ---------------------------------------------------------------------- */

/* Where a probe was called from (struct gpuext_dev_ctx.kind). */
enum gpuext_dev_site {
	GPUEXT_DEV_SITE_ENTRY = 1, /* kernel entry, before its first instruction */
	GPUEXT_DEV_SITE_EXIT = 2,  /* before every ret/exit */
	GPUEXT_DEV_SITE_LOAD = 3,  /* before a global (or generic) load */
	GPUEXT_DEV_SITE_STORE = 4, /* before a global (or generic) store */
};

/*
 * struct gpuext_dev_ctx - what a device probe gets in r1. Read-only for
 * the program. 24 bytes. The call site passes it by value, as three .u64
 * .param arguments (site << 32 | kind, addr, kernel_id: the struct's three
 * little-endian words); the probe's code reads them directly, or copies
 * them into .local memory for r1 when the program reads the ctx at a
 * variable offset (devrt/ptx, devrt/jit).
 */
struct gpuext_dev_ctx {
	__u32 kind; /* enum gpuext_dev_site */
	__u32 site; /* the rewriter's index of the call site in the kernel */
	union {
		__u64 addr;      /* LOAD/STORE: the generic address */
		__u64 entry_ret; /* EXIT: what the entry program of the same object
		                  * (the first, for the same kernels) returned to
		                  * this thread (its warp, at warp level), carried
		                  * in a register of the kernel; 0 if none. Only
		                  * for an exit program that reads it. ENTRY: 0 */
	};
	__u64 kernel_id; /* FNV-1a 64 of the kernel's (mangled) name */
};

/*
 * GPU map types, as BPF map types in SEC(".maps") (bpftime's numbers where
 * they exist). The standard BPF_MAP_TYPE_ARRAY, _HASH and _RINGBUF map onto
 * GPUEXT_GPUMAP_ARRAY, _HASH and _RINGBUF.
 */
enum gpuext_gpumap_type {
	GPUEXT_GPUMAP_HASH = 1501,             /* open addressing, atom.cas on bucket state */
	GPUEXT_GPUMAP_PER_THREAD_ARRAY = 1502, /* one copy per global thread id (map_extra copies) */
	GPUEXT_GPUMAP_ARRAY = 1503,            /* one copy shared by all threads */
	GPUEXT_GPUMAP_RINGBUF = 1527,          /* records to the host, fixed-size slots, overwriting */
	GPUEXT_GPUMAP_PER_WARP_ARRAY = 1540,   /* one copy per global warp id (map_extra copies) */
	GPUEXT_GPUMAP_PER_SM_ARRAY = 1541,     /* one copy per %smid (map_extra copies, default 256) */
	GPUEXT_GPUMAP_PER_BLOCK_ARRAY = 1542,  /* one copy per thread block, in its shared
	                                        * memory, zeroed when the block starts; the
	                                        * host never sees it (its region entry is
	                                        * the header alone); at most
	                                        * GPUEXT_GPUMAP_BLOCK_MAX bytes in all */
};

/* The shared memory a probe set's per-block arrays may take, per block. */
enum gpuext_gpumap_limit {
	GPUEXT_GPUMAP_BLOCK_MAX = 1024,
};

/* Helper ids a device probe may call (bpftime's 501-511 where they exist). */
enum gpuext_dev_helper {
	GPUEXT_HELPER_MAP_LOOKUP = 1,     /* void *(map, key) */
	GPUEXT_HELPER_MAP_UPDATE = 2,     /* long (map, key, value, flags) */
	GPUEXT_HELPER_MAP_DELETE = 3,     /* long (map, key): hash only */
	GPUEXT_HELPER_KTIME = 5,          /* u64 (): = GLOBALTIMER */
	GPUEXT_HELPER_RINGBUF_OUTPUT = 130, /* long (ring, data, size, flags) */
	GPUEXT_HELPER_GLOBALTIMER = 502,  /* u64 (): %globaltimer, ns */
	GPUEXT_HELPER_BLOCK_IDX = 503,    /* long (u64 *x, u64 *y, u64 *z): %ctaid */
	GPUEXT_HELPER_BLOCK_DIM = 504,    /* long (u64 *x, u64 *y, u64 *z): %ntid */
	GPUEXT_HELPER_THREAD_IDX = 505,   /* long (u64 *x, u64 *y, u64 *z): %tid */
	GPUEXT_HELPER_GRID_DIM = 508,     /* long (u64 *x, u64 *y, u64 *z): %nctaid */
	GPUEXT_HELPER_SMID = 509,         /* u64 (): %smid */
	GPUEXT_HELPER_WARPID = 510,       /* u64 (): %warpid (slot on the SM) */
	GPUEXT_HELPER_LANEID = 511,       /* u64 (): %laneid */
	GPUEXT_HELPER_NSMID = 540,        /* u64 (): %nsmid */
	GPUEXT_HELPER_MAP_ADD = 541,      /* long (map, key, u64 delta): atomic add to the
	                                   * value's first 8 bytes; a hash inserts the key */
	GPUEXT_HELPER_GLOBAL_WARP = 542,  /* u64 (): linear block id * warps per block + warp in block */
	GPUEXT_HELPER_BLOCK_LINEAR = 543, /* u64 (): linear block id (x fastest) */
	GPUEXT_HELPER_ACTIVE_LANES = 544, /* u64 (): lanes this run of the body stands for:
	                                   * popc(activemask) at warp level, 1 per thread */
	GPUEXT_HELPER_GRID_ID = 545,      /* u64 (): %gridid, the launch (unique in its
	                                   * CUDA context while the process runs) */
	GPUEXT_HELPER_BLOCK_WEIGHT = 546, /* u64 (): the blocks of the launch this block
	                                   * stands for under block sampling: 1 when
	                                   * every block runs the probes, n for 1 in n
	                                   * (block_sample, or the launch's own under
	                                   * blocks_per_launch); a probe that counts
	                                   * multiplies by it */
	GPUEXT_HELPER_RING_CLAIM = 547,   /* u64 (ring, u64 sm): the next record index
	                                   * of SM sm's shard (sm % shards: pass
	                                   * bpf_get_sm_id(), read once), taken without
	                                   * waiting for the atomic, so a block's thread
	                                   * 0 can claim at entry, carrying the index in
	                                   * a register to its exit (gpu/entry_thread),
	                                   * and its last warp write the record at exit;
	                                   * of the lanes of a warp that call it
	                                   * together the lowest claims, the others get
	                                   * GPUEXT_RING_NO_CLAIM */
	GPUEXT_HELPER_RING_OUTPUT_AT = 548, /* long (ring, u64 sm, u64 index, data, size):
	                                     * writes record index of SM sm's shard (the
	                                     * claim's sm); -ENOENT, nothing written, for
	                                     * GPUEXT_RING_NO_CLAIM */
};

/* The index gpuext_ring_claim gives a lane that claimed nothing. */
#define GPUEXT_RING_NO_CLAIM (~0ULL)

/* "GMP2": the maps of 2026-11-27 on (block records with weights, the
 * header's blocks_per_launch); "GMAP" before: a region of those is
 * another probe set's */
#define GPUEXT_GPUMAP_MAGIC 0x32504d47U

/*
 * struct gpuext_gpumap_hdr - the header of one GPU map inside the shared
 * region (device memory, device pointer in __gpuext_shared, mirrored into a
 * file by devrt); the map's data follows it. Maps sit at 128-byte aligned
 * offsets the compiler chose. The static fields come from the collector
 * (Layout.Init, sent as the region's initial contents); the probes use
 * compiled-in constants and only touch head, drops and count. The host
 * never writes the region (its copy is overwritten by every mirror):
 * readers keep their ring tail and their own losses. 128 bytes.
 *
 * Data: ARRAY kinds: slots x max_entries elements of stride bytes (copy of
 * slot s, key k at (s*max_entries + k)*stride; stride is value_size rounded
 * to 8, except in a per-SM array whose copy would be smaller than 128
 * bytes: its elements are padded until a copy fills a line). HASH: slots buckets of
 * struct gpuext_gpuhash_bucket + key + value (each rounded to 8). RINGBUF:
 * slots records of struct gpuext_gpuring_rec + payload (value_size rounded
 * to 16: the probes write it in 16-byte stores); record i (0-based count
 * of reservations) sits at i % slots.
 */
struct gpuext_gpumap_hdr {
	__u32 magic;       /* GPUEXT_GPUMAP_MAGIC once initialised */
	__u32 type;        /* enum gpuext_gpumap_type */
	__u32 key_size;
	__u32 value_size;  /* ring: the largest record payload */
	__u32 max_entries; /* arrays, hash: entries; ring: slots */
	__u32 slots;       /* arrays: copies (1 for ARRAY); hash: buckets; ring: slots */
	__u32 stride;      /* bytes per element, bucket or ring slot */
	__u32 flags;
	__u64 data_size;   /* bytes of data after the header */
	__u64 head;        /* ring: records reserved (device, atom.add) */
	__u64 drops;       /* copy index beyond slots, hash full or probe limit
	                    * (device; a ring's overwritten records the reader counts) */
	__u64 count;       /* hash: keys inserted */
	__u64 tail;        /* unused (0): the reader keeps its ring tail */
	__u32 shards;      /* ring: shards (map_extra; 1 if 0): SM s writes shard
	                    * s % shards, whose {head, tail} line is at data +
	                    * s * 128 when shards > 1 (then the slots follow,
	                    * slots / shards per shard); head above is shard 0's
	                    * only for one shard */
	__u32 block_sample; /* 1 in block_sample thread blocks of each instrumented
	                     * kernel runs the probes (a hash of the block's
	                     * linear index picks them; block 0 always does);
	                     * 1: every block, unless blocks_per_launch. The same
	                     * in every map of a region */
	__u32 blocks_per_launch; /* instead of block_sample (0: not): a launch of
	                          * b blocks runs the probes in 1 of 2^s, the least
	                          * s (at most 16) with b / 2^s <= blocks_per_launch
	                          * (a power of two). Either way the probes weigh
	                          * what they count by GPUEXT_HELPER_BLOCK_WEIGHT:
	                          * readers do not scale */
	__u32 _pad;
	__u64 _reserved[5];
};

/* Hash bucket state (struct gpuext_gpuhash_bucket.state). */
enum gpuext_gpuhash_state {
	GPUEXT_GPUHASH_EMPTY = 0,
	GPUEXT_GPUHASH_BUSY = 1,    /* a lane is writing the key */
	GPUEXT_GPUHASH_FULL = 2,    /* key valid */
	GPUEXT_GPUHASH_DELETED = 3, /* tombstone: lookups go on, inserts never reuse it */
};

/* struct gpuext_gpuhash_bucket - precedes the key and the value of a bucket. */
struct gpuext_gpuhash_bucket {
	__u32 state; /* enum gpuext_gpuhash_state */
	__u32 _pad;
};

/*
 * struct gpuext_gpuring_rec - precedes the payload of a ring slot. The ring
 * never blocks a kernel: a lane takes record index i with one atom.add on
 * head (lanes that call together take consecutive indexes with one add;
 * gpuext_ring_claim takes it ahead of the write, at a block's start) and
 * writes slot i % slots with plain stores, nothing waited for: the
 * payload, then len and check, then seq = (i + 1) << 1. The host takes
 * record i when seq reads (i + 1) << 1 before and after it copies the
 * payload and check is GPUEXT_GPURING_CHECK of what it read; a record not
 * whole yet (claimed and unwritten, or its stores not all visible) is
 * kept pending and read again later, records after it meanwhile. A later
 * lap in seq, or head - i > slots, means the record was overwritten
 * before the host read it: the host skips it and counts it in drops. A
 * writer of an earlier lap that writes late (after the ring lapped it)
 * can only cost records, never forge one. 16 bytes.
 */
struct gpuext_gpuring_rec {
	__u64 seq;   /* (record index + 1) << 1 */
	__u32 len;   /* payload bytes */
	__u32 check; /* GPUEXT_GPURING_CHECK(seq, len, payload) */
};

/*
 * GPUEXT_GPURING_CHECK: the sum, modulo 2^32, of len * KEY(0), seq's low
 * and high 32 bits times KEY(1) and KEY(2), and each 32-bit little-endian
 * half j of the payload (the last one zero-padded) times KEY(3 + j). The
 * terms are independent: a writer sums its payload's while it waits for
 * the ring index, and two multiply-adds follow. A torn read (one write's
 * header over another's payload) passes only if the differences of the
 * halves it mixed up, each times its key, sum to zero: never for one
 * half, with probability about 2^-32 otherwise. GPUEXT_GPURING_KEY(i):
 * (i + 1) * 0x9e3779b9 through murmur3's 32-bit finaliser, made odd.
 */
#define GPUEXT_GPURING_FMIX1(x) ((__u32)(((x) ^ ((x) >> 16)) * 0x85ebca6bU))
#define GPUEXT_GPURING_FMIX2(x) ((__u32)(((x) ^ ((x) >> 13)) * 0xc2b2ae35U))
#define GPUEXT_GPURING_KEY(i)                                                  \
	((__u32)((GPUEXT_GPURING_FMIX2(GPUEXT_GPURING_FMIX1(                  \
		  (__u32)(((__u32)(i) + 1U) * 0x9e3779b9U))) ^                 \
		  (GPUEXT_GPURING_FMIX2(GPUEXT_GPURING_FMIX1(                  \
			  (__u32)(((__u32)(i) + 1U) * 0x9e3779b9U))) >> 16)) | \
		 1U))

/* Records and map values of the shipped probes (bpf/device/). */

/* block_sched: the block in flight (per-block array gx_blk, in the
 * block's shared memory, zero when the block starts). */
struct gpuext_dev_block_state {
	__u64 start_ns;   /* %globaltimer at thread 0's entry probe */
	__u64 index;      /* the block's ring record, claimed at thread 0's entry
	                   * (gpuext_ring_claim), published by thread 0's exit */
	__u32 sm;         /* thread 0's SM at the claim (the record's shard) */
	__u32 lanes_done; /* threads of the block that reached an exit (32 bits:
	                   * shared memory has native 32-bit atomics; a 64-bit
	                   * add is a compare-and-swap loop the warps queue on) */
};

/* block_sched: one finished thread block (ring gx_block_ring). 56 bytes. */
struct gpuext_dev_block {
	__u64 kernel_id;
	__u64 block;
	__u64 start_ns;   /* thread 0's entry */
	__u64 end_ns;     /* last thread's exit */
	__u16 smid;
	__u16 threads;    /* threads of the block (at most 1024) */
	__u32 weight;     /* blocks of its launch it stands for (block sampling;
	                   * 1: every block ran the probes) */
	__u64 grid_id;    /* %gridid: the launch, unique in its context, so the
	                   * receiver groups blocks by launch whatever order the
	                   * ring's shards hand them over in */
	__u64 grid_blocks; /* blocks of the launch (%nctaid.x * y * z): with the
	                    * weight, which of them ran the probes, so the
	                    * receiver knows when it has all their records */
};

/* launch_latency: thread 0 of block 0 of a launch started (ring
 * gx_launch_ring). 24 bytes. */
struct gpuext_dev_launch {
	__u64 kernel_id;
	__u64 start_ns;
	__u32 smid;
	__u32 _pad;
};

/* sm_load: per-SM totals (per-SM array gx_sm, key 0). 24 bytes. */
struct gpuext_dev_sm {
	__u64 blocks;     /* blocks that ran on the SM (counted at thread 0's exit) */
	__u64 threads;    /* their threads */
	__u64 lane_ns;    /* sum over exits of (ns since the warp's entry) x lanes */
};

/*
 * warp_occupancy: warps resident on one SM in one time bucket. A per-SM
 * array gx_occ of GPUEXT_DEV_OCC_BUCKETS slots used round robin: bucket b
 * (%globaltimer >> GPUEXT_DEV_OCC_SHIFT, ~1.05 ms) lives in slot
 * b % GPUEXT_DEV_OCC_BUCKETS. Its counts are cumulative over every bucket
 * the slot has had; epoch is the newest of them (a plain store by every
 * probe that starts writing a bucket: no probe reads it or claims the
 * slot). The host takes a bucket's counts as the slot's minus what it
 * held when its previous bucket was over, so it must read each slot at
 * least once a lap (GPUEXT_DEV_OCC_BUCKETS buckets, ~268 ms; devrt copies
 * the region every 100 ms by default); a lap missed leaves the counts
 * whole but their buckets unknown (internal/proberegion, Occupancy). The
 * counts are of the threads that entered or left in a bucket (entries
 * less exits, and each's ns to the bucket's end): the sum of an SM's
 * threads over all its slots is the threads resident on it, from which
 * the host counts those resident through a bucket, which need no write.
 * GPUEXT_DEV_OCC_RESETTING was an earlier design's reset marker, never
 * written now: a slot holding it is corrupt.
 */
#define GPUEXT_DEV_OCC_SHIFT 20
#define GPUEXT_DEV_OCC_BUCKETS 256
#define GPUEXT_DEV_OCC_RESETTING 0xffffffffffffffffULL
struct gpuext_dev_occ {
	__u64 epoch;      /* the newest bucket the slot has held */
	/* In its buckets (mod 2^64, as two's complement: each bucket's share
	 * can be negative), weighed by the blocks' sampling weight: */
	__u64 threads;    /* threads that entered (their blocks' thread 0's
	                   * entry) less the lanes that exited */
	__u64 lane_ns;    /* the same, each times the ns from its entry or exit
	                   * to the bucket's end: threads resident at the
	                   * bucket's start (the earlier buckets' threads)
	                   * times its length, plus this, is its lane-ns */
};

#endif /* GPUEXT_ABI_H */
