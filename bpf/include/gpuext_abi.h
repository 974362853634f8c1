/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * gpuext_abi.h - the one definition of every record shared between the BPF
 * programs, the in-process device runtime (devrt) and the Go collector.
 *
 * Rules:
 *  - fixed-width types only, explicit padding, no pointers: the same bytes are
 *    written by BPF (x86-64 kernel), by devrt (x86-64 user space) and read by Go;
 *  - append-only: new fields go into reserved space or new record kinds, and
 *    GPUEXT_ABI_VERSION changes when a layout does;
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
#define GPUEXT_CK_LAUNCHCFG (1ULL << 17)  /* arg1 is a CUlaunchConfig * */
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

#define GPUEXT_NARGS 9
#define GPUEXT_NAME_MAX 512

/* Launch geometry, laid out like the first 40 bytes of CUlaunchConfig. */
struct gpuext_launch_aux {
	__u32 grid[3];
	__u32 block[3];
	__u32 shared_mem;
	__u32 _pad;
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
	__u32 _reserved;
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

#endif /* GPUEXT_ABI_H */
