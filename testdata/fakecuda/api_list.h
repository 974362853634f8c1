/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_list.h - every entry point fakecuda exports, in one place.
 *
 * Why this exists: the same list drives the driver's per-API call counters,
 * the workload's JSON keys and check-symbols.sh (which parses the D(...) and
 * R(...) lines below, so keep one entry per line).  Adding a function to a
 * library means adding it here; check-symbols.sh fails if the two disagree.
 */
#ifndef FAKECUDA_API_LIST_H
#define FAKECUDA_API_LIST_H

/* libcuda.so.1 */
#define FAKECUDA_DRIVER_APIS(D)			\
	D(cuInit)				\
	D(cuDriverGetVersion)			\
	D(cuDeviceGet)				\
	D(cuDeviceGetCount)			\
	D(cuGetErrorName)			\
	D(cuGetErrorString)			\
	D(cuGetProcAddress)			\
	D(cuGetProcAddress_v2)			\
	D(cuDevicePrimaryCtxRetain)		\
	D(cuDevicePrimaryCtxRelease_v2)		\
	D(cuCtxCreate_v2)			\
	D(cuCtxCreate_v3)			\
	D(cuCtxCreate_v4)			\
	D(cuCtxDestroy_v2)			\
	D(cuCtxSetCurrent)			\
	D(cuCtxGetCurrent)			\
	D(cuCtxPushCurrent_v2)			\
	D(cuCtxPopCurrent_v2)			\
	D(cuCtxSynchronize)			\
	D(cuModuleLoadData)			\
	D(cuModuleLoadDataEx)			\
	D(cuModuleLoadFatBinary)		\
	D(cuModuleLoad)				\
	D(cuModuleUnload)			\
	D(cuModuleGetFunction)			\
	D(cuLibraryLoadData)			\
	D(cuLibraryLoadFromFile)		\
	D(cuLibraryUnload)			\
	D(cuLibraryGetKernel)			\
	D(cuKernelGetFunction)			\
	D(cuFuncSetAttribute)			\
	D(cuKernelSetAttribute)		\
	D(cuFuncGetAttribute)			\
	D(cuKernelGetAttribute)		\
	D(cuModuleGetGlobal_v2)		\
	D(cuLibraryGetGlobal)			\
	D(cuLibraryGetModule)			\
	D(cuFuncGetModule)			\
	D(cuMemHostRegister_v2)		\
	D(cuMemHostUnregister)			\
	D(cuMemHostGetDevicePointer_v2)	\
	D(cuCtxGetDevice)			\
	D(cuDeviceGetUuid_v2)			\
	D(cuDeviceGetAttribute)		\
	D(cuStreamCreate)			\
	D(cuStreamDestroy_v2)			\
	D(cuStreamQuery)			\
	D(cuStreamWriteValue32_v2)		\
	D(cuStreamSynchronize)			\
	D(cuStreamSynchronize_ptsz)		\
	D(cuStreamWaitEvent)			\
	D(cuStreamWaitEvent_ptsz)		\
	D(cuEventCreate)			\
	D(cuEventRecord)			\
	D(cuEventRecord_ptsz)			\
	D(cuEventQuery)				\
	D(cuEventSynchronize)			\
	D(cuEventElapsedTime)			\
	D(cuEventDestroy_v2)			\
	D(cuLaunchKernel)			\
	D(cuLaunchKernel_ptsz)			\
	D(cuLaunchKernelEx)			\
	D(cuLaunchKernelEx_ptsz)		\
	D(cuLaunchCooperativeKernel)		\
	D(cuLaunchCooperativeKernel_ptsz)	\
	D(cuGraphCreate)			\
	D(cuGraphAddKernelNode_v2)		\
	D(cuGraphKernelNodeSetParams_v2)	\
	D(cuGraphExecKernelNodeSetParams_v2)	\
	D(cuGraphKernelNodeGetParams_v2)	\
	D(cuGraphAddKernelNode)			\
	D(cuGraphKernelNodeSetParams)		\
	D(cuGraphExecKernelNodeSetParams)	\
	D(cuGraphKernelNodeGetParams)		\
	D(cuGraphAddNode)			\
	D(cuGraphAddNode_v2)			\
	D(cuGraphNodeSetParams)			\
	D(cuGraphExecNodeSetParams)		\
	D(cuGraphInstantiateWithFlags)		\
	D(cuGraphLaunch)			\
	D(cuGraphLaunch_ptsz)			\
	D(cuGraphExecDestroy)			\
	D(cuGraphDestroy)			\
	D(cuMemAlloc_v2)			\
	D(cuMemAllocManaged)			\
	D(cuMemAllocAsync)			\
	D(cuMemAllocAsync_ptsz)			\
	D(cuMemAllocHost_v2)			\
	D(cuMemHostAlloc)			\
	D(cuMemFree_v2)				\
	D(cuMemFreeAsync)			\
	D(cuMemFreeAsync_ptsz)			\
	D(cuMemFreeHost)			\
	D(cuMemPrefetchAsync)			\
	D(cuMemPrefetchAsync_ptsz)		\
	D(cuMemPrefetchAsync_v2)		\
	D(cuMemPrefetchAsync_v2_ptsz)		\
	D(cuMemAdvise)				\
	D(cuMemAdvise_v2)			\
	D(cuMemcpy)				\
	D(cuMemcpy_ptds)			\
	D(cuMemcpyAsync)			\
	D(cuMemcpyAsync_ptsz)			\
	D(cuMemcpyHtoD_v2)			\
	D(cuMemcpyHtoD_v2_ptds)			\
	D(cuMemcpyDtoH_v2)			\
	D(cuMemcpyDtoH_v2_ptds)			\
	D(cuMemcpyDtoD_v2)			\
	D(cuMemcpyDtoD_v2_ptds)			\
	D(cuMemcpyHtoDAsync_v2)			\
	D(cuMemcpyHtoDAsync_v2_ptsz)		\
	D(cuMemcpyDtoHAsync_v2)			\
	D(cuMemcpyDtoHAsync_v2_ptsz)		\
	D(cuMemcpyDtoDAsync_v2)			\
	D(cuMemcpyDtoDAsync_v2_ptsz)		\
	D(cuMemcpyPeer)				\
	D(cuMemcpyPeer_ptds)			\
	D(cuMemcpyPeerAsync)			\
	D(cuMemcpyPeerAsync_ptsz)		\
	D(cuMemcpy2D_v2)			\
	D(cuMemcpy2D_v2_ptds)			\
	D(cuMemcpy2DUnaligned_v2)		\
	D(cuMemcpy2DUnaligned_v2_ptds)		\
	D(cuMemcpy2DAsync_v2)			\
	D(cuMemcpy2DAsync_v2_ptsz)		\
	D(cuMemcpy3D_v2)			\
	D(cuMemcpy3D_v2_ptds)			\
	D(cuMemcpy3DAsync_v2)			\
	D(cuMemcpy3DAsync_v2_ptsz)		\
	D(cuMemsetD8_v2)			\
	D(cuMemsetD8_v2_ptds)			\
	D(cuMemsetD16_v2)			\
	D(cuMemsetD16_v2_ptds)			\
	D(cuMemsetD32_v2)			\
	D(cuMemsetD32_v2_ptds)			\
	D(cuMemsetD8Async)			\
	D(cuMemsetD8Async_ptsz)			\
	D(cuMemsetD16Async)			\
	D(cuMemsetD16Async_ptsz)		\
	D(cuMemsetD32Async)			\
	D(cuMemsetD32Async_ptsz)		\
	D(cuMemsetD2D8_v2)			\
	D(cuMemsetD2D8_v2_ptds)			\
	D(cuMemsetD2D16_v2)			\
	D(cuMemsetD2D16_v2_ptds)		\
	D(cuMemsetD2D32_v2)			\
	D(cuMemsetD2D32_v2_ptds)		\
	D(cuMemsetD2D8Async)			\
	D(cuMemsetD2D8Async_ptsz)		\
	D(cuMemsetD2D16Async)			\
	D(cuMemsetD2D16Async_ptsz)		\
	D(cuMemsetD2D32Async)			\
	D(cuMemsetD2D32Async_ptsz)

/* libcudart.so.12 */
#define FAKECUDA_RUNTIME_APIS(R)		\
	R(cudaLaunchKernel)			\
	R(cudaLaunchKernel_ptsz)		\
	R(cudaLaunchKernelExC)			\
	R(cudaLaunchKernelExC_ptsz)		\
	R(__cudaLaunchKernel)			\
	R(__cudaLaunchKernel_ptsz)		\
	R(cudaGraphLaunch)			\
	R(cudaGraphLaunch_ptsz)			\
	R(cudaMalloc)				\
	R(cudaFree)				\
	R(cudaMemcpy)				\
	R(cudaDeviceSynchronize)		\
	R(cudaGetErrorName)			\
	R(cudaGetErrorString)			\
	R(cudaGetDriverEntryPoint)		\
	R(cudaGetDriverEntryPointByVersion)	\
	R(__cudaRegisterFatBinary)		\
	R(__cudaRegisterFatBinaryEnd)		\
	R(__cudaUnregisterFatBinary)		\
	R(__cudaRegisterFunction)

#endif /* FAKECUDA_API_LIST_H */
