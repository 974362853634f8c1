/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_min.h - the few CUDA driver and runtime types devrt uses.
 *
 * devrt builds without CUDA headers or libraries: it finds libcuda at run
 * time (dlopen/dlsym) and forwards every call unchanged, so it only needs the
 * argument types of the functions it interposes, declared here from the
 * public API documentation with the same sizes and field order.  The layout
 * checks at the bottom pin the offsets devrt reads, the same ones
 * bpf/cuda.bpf.c reads.
 */
#ifndef DEVRT_CUDA_MIN_H
#define DEVRT_CUDA_MIN_H

#include <stddef.h>

typedef int CUresult;	/* an enum in cuda.h */
typedef int cudaError_t;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_NOT_READY = 600,
	/* what a wrapper returns when the real function cannot be found */
	CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND = 302,
};

#define cudaErrorSharedObjectSymbolNotFound 302

typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef struct { char bytes[16]; } CUuuid;
typedef unsigned long long cuuint64_t;

typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUkern_st *CUkernel;
typedef struct CUlib_st *CUlibrary;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUarray_st *CUarray;

/* Passed by pointer only. */
typedef struct CUexecAffinityParam_st CUexecAffinityParam;
typedef struct CUctxCreateParams_st CUctxCreateParams;
typedef struct CUlaunchAttribute_st CUlaunchAttribute;

typedef int CUjit_option;
typedef int CUlibraryOption;
typedef int CUmem_advise;
typedef int CUmemorytype;
typedef int CUdriverProcAddressQueryResult;
typedef int cudaDriverEntryPointQueryResult;

#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DEFAULT 0x0
#define CU_MEMHOSTREGISTER_PORTABLE 0x1
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x2
#define CU_STREAM_WRITE_VALUE_DEFAULT 0x0

typedef struct CUmemLocation_st {
	int type;
	int id;
} CUmemLocation;

typedef struct CUDA_MEMCPY2D_st {
	size_t srcXInBytes, srcY;
	CUmemorytype srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	CUarray srcArray;
	size_t srcPitch;
	size_t dstXInBytes, dstY;
	CUmemorytype dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	CUarray dstArray;
	size_t dstPitch;
	size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

typedef struct CUDA_MEMCPY3D_st {
	size_t srcXInBytes, srcY, srcZ, srcLOD;
	CUmemorytype srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	CUarray srcArray;
	void *reserved0;
	size_t srcPitch, srcHeight;
	size_t dstXInBytes, dstY, dstZ, dstLOD;
	CUmemorytype dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	CUarray dstArray;
	void *reserved1;
	size_t dstPitch, dstHeight;
	size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;

typedef struct CUlaunchConfig_st {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

typedef struct dim3 {
	unsigned int x, y, z;
} dim3;

typedef struct uint3 {
	unsigned int x, y, z;
} uint3;

typedef CUstream cudaStream_t;
typedef CUgraphExec cudaGraphExec_t;
typedef struct cudaLaunchAttribute_st cudaLaunchAttribute;

/* cudaLaunchKernelExC's config: its first 40 bytes are gpuext_launch_aux
 * (dynamicSmemBytes's low half is the shared memory, little-endian). */
typedef struct cudaLaunchConfig_st {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	cudaLaunchAttribute *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;

#define DEVRT_CHECK_OFFSET(type, field, off) \
	_Static_assert(offsetof(type, field) == (off), #type "." #field)

_Static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation travels in one register");
_Static_assert(sizeof(CUDA_MEMCPY2D) == 128, "CUDA_MEMCPY2D size");
DEVRT_CHECK_OFFSET(CUDA_MEMCPY2D, srcMemoryType, 16);
DEVRT_CHECK_OFFSET(CUDA_MEMCPY2D, dstMemoryType, 72);
DEVRT_CHECK_OFFSET(CUDA_MEMCPY2D, WidthInBytes, 112);
DEVRT_CHECK_OFFSET(CUDA_MEMCPY2D, Height, 120);
_Static_assert(sizeof(CUDA_MEMCPY3D) == 200, "CUDA_MEMCPY3D size");
DEVRT_CHECK_OFFSET(CUDA_MEMCPY3D, srcMemoryType, 32);
DEVRT_CHECK_OFFSET(CUDA_MEMCPY3D, dstMemoryType, 120);
DEVRT_CHECK_OFFSET(CUDA_MEMCPY3D, WidthInBytes, 176);
DEVRT_CHECK_OFFSET(CUDA_MEMCPY3D, Depth, 192);
_Static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig size");

/* The fields of a kernel node's parameters in CUDA 11 (v1); CUDA 12's
 * (v2) add kern and ctx. */
#define CU_KERNEL_NODE_FIELDS						\
	CUfunction func;						\
	unsigned int gridDimX, gridDimY, gridDimZ;			\
	unsigned int blockDimX, blockDimY, blockDimZ;			\
	unsigned int sharedMemBytes;					\
	void **kernelParams;						\
	void **extra;

/* A graph kernel node's parameters (CUDA_KERNEL_NODE_PARAMS_v2, CUDA 12:
 * the kernel is func, or kern in ctx). */
typedef struct CUDA_KERNEL_NODE_PARAMS_st {
	CU_KERNEL_NODE_FIELDS
	CUkernel kern;
	CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;
_Static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS) == 72, "CUDA_KERNEL_NODE_PARAMS_v2 size");

/* CUDA 11's (the entry points without _v2): v2's first 56 bytes. */
typedef struct CUDA_KERNEL_NODE_PARAMS_v1_st {
	CU_KERNEL_NODE_FIELDS
} CUDA_KERNEL_NODE_PARAMS_v1;
_Static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v1) == 56, "CUDA_KERNEL_NODE_PARAMS_v1 size");

/* cuGraphAddNode's parameters (CUDA 12.2): a node type (0: a kernel) and
 * the type's parameters at 16. */
#define CU_GRAPH_NODE_TYPE_KERNEL 0
typedef struct CUgraphNodeParams_st {
	int type;
	int reserved0[3];
	union {
		long long reserved1[29];
		CUDA_KERNEL_NODE_PARAMS kernel;
	} u;
	long long reserved2;
} CUgraphNodeParams;
_Static_assert(sizeof(CUgraphNodeParams) == 256, "CUgraphNodeParams size");
typedef struct CUgraphEdgeData_st CUgraphEdgeData;
DEVRT_CHECK_OFFSET(CUlaunchConfig, sharedMemBytes, 24);
DEVRT_CHECK_OFFSET(CUlaunchConfig, hStream, 32);
_Static_assert(sizeof(dim3) == 12, "dim3 size");
_Static_assert(sizeof(cudaLaunchConfig_t) == 56, "cudaLaunchConfig_t size");
DEVRT_CHECK_OFFSET(cudaLaunchConfig_t, gridDim, 0);
DEVRT_CHECK_OFFSET(cudaLaunchConfig_t, blockDim, 12);
DEVRT_CHECK_OFFSET(cudaLaunchConfig_t, dynamicSmemBytes, 24);
DEVRT_CHECK_OFFSET(cudaLaunchConfig_t, stream, 32);

#endif /* DEVRT_CUDA_MIN_H */
