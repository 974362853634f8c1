/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_types.h - the few CUDA driver/runtime types fakecuda needs.
 *
 * Why this exists: the fake driver (libcuda.so.1), the fake runtime
 * (libcudart.so.12) and the workload must be ABI-compatible with the real
 * CUDA libraries, because the eBPF uprobes we test read arguments by
 * register and by struct offset exactly as they would on a GPU machine.
 * We cannot ship NVIDIA's headers, so the types are declared here from the
 * public API documentation: same sizes, same field order, same numeric
 * values.  Only what fakecuda uses is declared.
 *
 * Layout checks at the bottom of this file pin the offsets the probes rely on.
 */
#ifndef FAKECUDA_CUDA_TYPES_H
#define FAKECUDA_CUDA_TYPES_H

#include <stddef.h>

/* ---- Driver API: results ------------------------------------------------ */

/* CUresult is an enum in the real header; an enum there is an int here. */
typedef int CUresult;

enum {
	CUDA_SUCCESS				= 0,
	CUDA_ERROR_INVALID_VALUE		= 1,
	CUDA_ERROR_OUT_OF_MEMORY		= 2,
	CUDA_ERROR_NOT_INITIALIZED		= 3,
	CUDA_ERROR_DEINITIALIZED		= 4,
	CUDA_ERROR_NO_DEVICE			= 100,
	CUDA_ERROR_INVALID_DEVICE		= 101,
	CUDA_ERROR_INVALID_IMAGE		= 200,
	CUDA_ERROR_INVALID_CONTEXT		= 201,
	CUDA_ERROR_FILE_NOT_FOUND		= 301,
	CUDA_ERROR_INVALID_HANDLE		= 400,
	CUDA_ERROR_NOT_FOUND			= 500,
	CUDA_ERROR_NOT_READY			= 600,
	CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED	= 713,
	CUDA_ERROR_LAUNCH_FAILED		= 719,
	CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE	= 720,
	CUDA_ERROR_UNKNOWN			= 999,
};

/* ---- Driver API: scalar and handle types ------------------------------- */

typedef unsigned long long CUdeviceptr;	/* CUdeviceptr_v2 on 64-bit hosts */
typedef int CUdevice;
typedef unsigned long long cuuint64_t;

#define CU_DEVICE_CPU ((CUdevice)-1)

/* Opaque handles: pointers to structs that only the driver knows. */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUkern_st *CUkernel;
typedef struct CUlib_st *CUlibrary;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUarray_st *CUarray;

/* The fields of a kernel node's parameters in CUDA 11 (v1); CUDA 12's
 * (v2) add kern and ctx. */
#define CU_KERNEL_NODE_FIELDS						\
	CUfunction func;						\
	unsigned int gridDimX, gridDimY, gridDimZ;			\
	unsigned int blockDimX, blockDimY, blockDimZ;			\
	unsigned int sharedMemBytes;					\
	void **kernelParams;						\
	void **extra;

/* A kernel node's parameters (CUDA_KERNEL_NODE_PARAMS_v2: func or kern). */
typedef struct CUDA_KERNEL_NODE_PARAMS_st {
	CU_KERNEL_NODE_FIELDS
	CUkernel kern;
	CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;

/* CUDA 11's (the entry points without _v2): v2's first fields. */
typedef struct CUDA_KERNEL_NODE_PARAMS_v1_st {
	CU_KERNEL_NODE_FIELDS
} CUDA_KERNEL_NODE_PARAMS_v1;

/* cuGraphAddNode's (CUDA 12.2): a type (0: kernel) and its parameters. */
typedef struct CUgraphNodeParams_st {
	int type;
	int reserved0[3];
	union {
		long long reserved1[29];
		CUDA_KERNEL_NODE_PARAMS kernel;
	} u;
	long long reserved2;
} CUgraphNodeParams;
typedef struct CUgraphEdgeData_st CUgraphEdgeData;

/* Passed by pointer only; fakecuda never looks inside them. */
typedef struct CUexecAffinityParam_st CUexecAffinityParam;
typedef struct CUctxCreateParams_st CUctxCreateParams;
typedef struct CUlaunchAttribute_st CUlaunchAttribute;

/* Special stream handles. */
#define CU_STREAM_LEGACY	((CUstream)0x1)
#define CU_STREAM_PER_THREAD	((CUstream)0x2)

/* Enums that the real header declares as enum types (all int-sized). */
typedef int CUjit_option;
typedef int CUlibraryOption;
typedef int CUfunction_attribute;
typedef int CUmem_advise;
typedef int CUmemorytype;
typedef int CUmemLocationType;
typedef int CUdriverProcAddressQueryResult;

enum {	/* CUmemorytype */
	CU_MEMORYTYPE_HOST	= 1,
	CU_MEMORYTYPE_DEVICE	= 2,
	CU_MEMORYTYPE_ARRAY	= 3,
	CU_MEMORYTYPE_UNIFIED	= 4,
};

enum {	/* CUmemLocationType */
	CU_MEM_LOCATION_TYPE_INVALID		= 0,
	CU_MEM_LOCATION_TYPE_DEVICE		= 1,
	CU_MEM_LOCATION_TYPE_HOST		= 2,
	CU_MEM_LOCATION_TYPE_HOST_NUMA		= 3,
	CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT	= 4,
};

enum {	/* CUmem_advise */
	CU_MEM_ADVISE_SET_READ_MOSTLY		= 1,
	CU_MEM_ADVISE_UNSET_READ_MOSTLY		= 2,
	CU_MEM_ADVISE_SET_PREFERRED_LOCATION	= 3,
	CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION	= 4,
	CU_MEM_ADVISE_SET_ACCESSED_BY		= 5,
	CU_MEM_ADVISE_UNSET_ACCESSED_BY		= 6,
};

/* cuMemAllocManaged flags */
#define CU_MEM_ATTACH_GLOBAL	0x1
#define CU_MEM_ATTACH_HOST	0x2

/* cuMemHostAlloc flags */
#define CU_MEMHOSTALLOC_PORTABLE	0x1
#define CU_MEMHOSTALLOC_DEVICEMAP	0x2
#define CU_MEMHOSTALLOC_WRITECOMBINED	0x4

/* cuStreamCreate / cuEventCreate / cuStreamWaitEvent flags */
#define CU_STREAM_DEFAULT		0x0
#define CU_STREAM_NON_BLOCKING		0x1
#define CU_EVENT_DEFAULT		0x0
#define CU_EVENT_BLOCKING_SYNC		0x1
#define CU_EVENT_DISABLE_TIMING		0x2
#define CU_EVENT_INTERPROCESS		0x4
#define CU_EVENT_WAIT_DEFAULT		0x0
#define CU_EVENT_WAIT_EXTERNAL		0x1

/* cuGetProcAddress flags and symbolStatus values */
#define CU_GET_PROC_ADDRESS_DEFAULT			0ULL
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM		(1ULL << 0)
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM	(1ULL << 1)

enum {
	CU_GET_PROC_ADDRESS_SUCCESS			= 0,
	CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND		= 1,
	CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT	= 2,
};

/* ---- Driver API: structs ------------------------------------------------ */

typedef struct CUmemLocation_st {
	CUmemLocationType type;
	int id;
} CUmemLocation;

/* Parameters of cuMemcpy2D*: 128 bytes. */
typedef struct CUDA_MEMCPY2D_st {
	size_t srcXInBytes;
	size_t srcY;
	CUmemorytype srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	CUarray srcArray;
	size_t srcPitch;

	size_t dstXInBytes;
	size_t dstY;
	CUmemorytype dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	CUarray dstArray;
	size_t dstPitch;

	size_t WidthInBytes;
	size_t Height;
} CUDA_MEMCPY2D;

/* Parameters of cuMemcpy3D*: 200 bytes. */
typedef struct CUDA_MEMCPY3D_st {
	size_t srcXInBytes;
	size_t srcY;
	size_t srcZ;
	size_t srcLOD;
	CUmemorytype srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	CUarray srcArray;
	void *reserved0;	/* must be NULL */
	size_t srcPitch;
	size_t srcHeight;

	size_t dstXInBytes;
	size_t dstY;
	size_t dstZ;
	size_t dstLOD;
	CUmemorytype dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	CUarray dstArray;
	void *reserved1;	/* must be NULL */
	size_t dstPitch;
	size_t dstHeight;

	size_t WidthInBytes;
	size_t Height;
	size_t Depth;
} CUDA_MEMCPY3D;

/* Parameters of cuLaunchKernelEx: 56 bytes. */
typedef struct CUlaunchConfig_st {
	unsigned int gridDimX;
	unsigned int gridDimY;
	unsigned int gridDimZ;
	unsigned int blockDimX;
	unsigned int blockDimY;
	unsigned int blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

/* ---- Runtime API -------------------------------------------------------- */

typedef int cudaError_t;

enum {
	cudaSuccess				= 0,
	cudaErrorInvalidValue			= 1,
	cudaErrorMemoryAllocation		= 2,
	cudaErrorInitializationError		= 3,
	cudaErrorCudartUnloading		= 4,
	cudaErrorInvalidConfiguration		= 9,
	cudaErrorInvalidMemcpyDirection		= 21,
	cudaErrorInsufficientDriver		= 35,
	cudaErrorInvalidDeviceFunction		= 98,
	cudaErrorNoDevice			= 100,
	cudaErrorInvalidDevice			= 101,
	cudaErrorInvalidKernelImage		= 200,
	cudaErrorDeviceUninitialized		= 201,
	cudaErrorInvalidResourceHandle		= 400,
	cudaErrorSymbolNotFound			= 500,
	cudaErrorNotReady			= 600,
	cudaErrorLaunchFailure			= 719,
	cudaErrorCooperativeLaunchTooLarge	= 720,
	cudaErrorUnknown			= 999,
};

/* enum cudaMemcpyKind */
enum cudaMemcpyKind {
	cudaMemcpyHostToHost		= 0,
	cudaMemcpyHostToDevice		= 1,
	cudaMemcpyDeviceToHost		= 2,
	cudaMemcpyDeviceToDevice	= 3,
	cudaMemcpyDefault		= 4,
};

/* enum cudaDriverEntryPointQueryResult: CUdriverProcAddressQueryResult's
 * values; cudaGetDriverEntryPoint's flags are cuGetProcAddress's. */
typedef int cudaDriverEntryPointQueryResult;

/* The runtime's handles are the driver's handles. */
typedef CUstream cudaStream_t;
typedef CUgraphExec cudaGraphExec_t;

typedef struct dim3 {
	unsigned int x, y, z;
} dim3;

typedef struct uint3 {
	unsigned int x, y, z;
} uint3;

/* Parameters of cudaLaunchKernelExC: 56 bytes.  The first 40 match
 * CUlaunchConfig's (a size_t shared memory size where it has an unsigned
 * int and padding). */
typedef struct cudaLaunchAttribute_st cudaLaunchAttribute;
typedef struct cudaLaunchConfig_st {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	cudaLaunchAttribute *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;

/*
 * What nvcc passes to __cudaRegisterFatBinary: a small wrapper around the
 * embedded fat binary.  The runtime hands `data` to cuModuleLoadData.
 */
#define FATBINC_MAGIC		0x466243b1
#define FATBIN_DATA_MAGIC	0xba55ed50u	/* first word of a fat binary */
/* A fat binary of no parts, as two 64-bit words: magic, version 1, header
 * size 16, then a payload size of 0. */
#define FATBIN_EMPTY { 16ULL << 48 | 1ULL << 32 | FATBIN_DATA_MAGIC, 0 }

struct fatbin_wrapper {
	int magic;
	int version;
	const void *data;
	void *filename_or_fatbins;
};

/* ---- Layout checks (x86-64 / aarch64 LP64) ------------------------------ */

#define FC_CHECK_OFFSET(type, field, off)				\
	_Static_assert(offsetof(type, field) == (off),			\
		       #type "." #field " offset")

_Static_assert(sizeof(CUdeviceptr) == 8, "CUdeviceptr is 64-bit");
_Static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation size");
_Static_assert(sizeof(CUDA_MEMCPY2D) == 128, "CUDA_MEMCPY2D size");
FC_CHECK_OFFSET(CUDA_MEMCPY2D, srcMemoryType, 16);
FC_CHECK_OFFSET(CUDA_MEMCPY2D, srcHost, 24);
FC_CHECK_OFFSET(CUDA_MEMCPY2D, srcDevice, 32);
FC_CHECK_OFFSET(CUDA_MEMCPY2D, dstXInBytes, 56);
FC_CHECK_OFFSET(CUDA_MEMCPY2D, dstMemoryType, 72);
FC_CHECK_OFFSET(CUDA_MEMCPY2D, dstDevice, 88);
FC_CHECK_OFFSET(CUDA_MEMCPY2D, WidthInBytes, 112);
FC_CHECK_OFFSET(CUDA_MEMCPY2D, Height, 120);
_Static_assert(sizeof(CUDA_MEMCPY3D) == 200, "CUDA_MEMCPY3D size");
FC_CHECK_OFFSET(CUDA_MEMCPY3D, srcMemoryType, 32);
FC_CHECK_OFFSET(CUDA_MEMCPY3D, srcDevice, 48);
FC_CHECK_OFFSET(CUDA_MEMCPY3D, dstXInBytes, 88);
FC_CHECK_OFFSET(CUDA_MEMCPY3D, dstMemoryType, 120);
FC_CHECK_OFFSET(CUDA_MEMCPY3D, dstDevice, 136);
FC_CHECK_OFFSET(CUDA_MEMCPY3D, WidthInBytes, 176);
FC_CHECK_OFFSET(CUDA_MEMCPY3D, Height, 184);
FC_CHECK_OFFSET(CUDA_MEMCPY3D, Depth, 192);
_Static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig size");
FC_CHECK_OFFSET(CUlaunchConfig, sharedMemBytes, 24);
FC_CHECK_OFFSET(CUlaunchConfig, hStream, 32);
FC_CHECK_OFFSET(CUlaunchConfig, attrs, 40);
FC_CHECK_OFFSET(CUlaunchConfig, numAttrs, 48);
_Static_assert(sizeof(dim3) == 12, "dim3 size");
_Static_assert(sizeof(cudaLaunchConfig_t) == 56, "cudaLaunchConfig_t size");
FC_CHECK_OFFSET(cudaLaunchConfig_t, gridDim, 0);
FC_CHECK_OFFSET(cudaLaunchConfig_t, blockDim, 12);
FC_CHECK_OFFSET(cudaLaunchConfig_t, dynamicSmemBytes, 24);
FC_CHECK_OFFSET(cudaLaunchConfig_t, stream, 32);
FC_CHECK_OFFSET(cudaLaunchConfig_t, attrs, 40);
FC_CHECK_OFFSET(cudaLaunchConfig_t, numAttrs, 48);

#endif /* FAKECUDA_CUDA_TYPES_H */
