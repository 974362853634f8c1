// SPDX-License-Identifier: Apache-2.0
/*
 * libcudart.c - a stand-in for the CUDA runtime (libcudart.so.12).
 *
 * Why this exists: since CUDA 12 the real runtime does not link against
 * libcuda.  It dlopen()s libcuda.so.1 on first use, looks up a single symbol,
 * cuGetProcAddress_v2, and obtains every other driver entry point through it.
 * A tracer therefore cannot rely on PLT/GOT interposition or on the runtime's
 * imports: only uprobes on the driver's own symbols see those calls.  This
 * library reproduces that path so the probes are tested against it:
 *
 *   - no cu* symbol is imported (check-symbols.sh verifies it);
 *   - __cudaRegisterFatBinary loads the embedded image with cuModuleLoadData;
 *   - __cudaRegisterFunction remembers host stub -> device function name;
 *   - cudaLaunchKernel (and cudaLaunchKernelExC) maps the stub to a
 *     CUfunction (cuModuleGetFunction, once per stub) and calls
 *     cuLaunchKernel through the pointer.
 *
 * Driver calls made by the runtime itself, for tests that count them:
 *   first runtime call in the process:  18 x cuGetProcAddress_v2,
 *                                       cuDriverGetVersion, cuInit,
 *                                       cuDevicePrimaryCtxRetain
 *   first runtime call in each thread:  cuCtxSetCurrent(primary)
 *   __cudaRegisterFatBinary:            cuModuleLoadData
 *   first launch of each stub:          cuModuleGetFunction
 *   __cudaUnregisterFatBinary:          cuModuleUnload
 *   cudaLaunchKernel[_ptsz]:            cuLaunchKernel[_ptsz]
 *   cudaLaunchKernelExC[_ptsz]:         cuLaunchKernel[_ptsz] (the
 *                                       config's attributes are ignored)
 *   __cudaLaunchKernel[_ptsz]:          as cudaLaunchKernel[_ptsz], which
 *                                       it calls (not through the PLT)
 *   cudaGraphLaunch[_ptsz]:             cuGraphLaunch[_ptsz]
 *   cudaMalloc / cudaFree (non-NULL):   cuMemAlloc_v2 / cuMemFree_v2
 *   cudaMemcpy:                         cuMemcpyHtoD_v2, cuMemcpyDtoH_v2,
 *                                       cuMemcpyDtoD_v2 or cuMemcpy by kind
 *                                       (HostToHost is a plain memmove)
 *   cudaDeviceSynchronize:              cuCtxSynchronize
 *   cudaGetDriverEntryPoint[ByVersion]: cuGetProcAddress_v2
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"

#define RT_API __attribute__((noinline, used, visibility("default")))

#define RT_CUDART_VERSION	12080	/* the version we ask the driver for */
#define RT_MIN_DRIVER_VERSION	12000
#define RT_MAX_FUNCS		4096

/* ------------------------------------------------------------------------ */
/* Driver entry points                                                      */
/* ------------------------------------------------------------------------ */

/* __typeof__ borrows each prototype without referencing the symbol. */
#define DRV_PTR(name) __typeof__(&name)

static struct {
	DRV_PTR(cuGetProcAddress_v2) cuGetProcAddress;
	DRV_PTR(cuDriverGetVersion) cuDriverGetVersion;
	DRV_PTR(cuInit) cuInit;
	DRV_PTR(cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain;
	DRV_PTR(cuCtxSetCurrent) cuCtxSetCurrent;
	DRV_PTR(cuCtxSynchronize) cuCtxSynchronize;
	DRV_PTR(cuModuleLoadData) cuModuleLoadData;
	DRV_PTR(cuModuleUnload) cuModuleUnload;
	DRV_PTR(cuModuleGetFunction) cuModuleGetFunction;
	DRV_PTR(cuLaunchKernel) cuLaunchKernel;
	DRV_PTR(cuLaunchKernel_ptsz) cuLaunchKernel_ptsz;
	DRV_PTR(cuGraphLaunch) cuGraphLaunch;
	DRV_PTR(cuGraphLaunch_ptsz) cuGraphLaunch_ptsz;
	DRV_PTR(cuMemAlloc_v2) cuMemAlloc;
	DRV_PTR(cuMemFree_v2) cuMemFree;
	DRV_PTR(cuMemcpy) cuMemcpy;
	DRV_PTR(cuMemcpyHtoD_v2) cuMemcpyHtoD;
	DRV_PTR(cuMemcpyDtoH_v2) cuMemcpyDtoH;
	DRV_PTR(cuMemcpyDtoD_v2) cuMemcpyDtoD;
} drv;

#define LEGACY	CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define PTDS	CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define ENTRY(sym, flags, field) \
	{ sym, flags, offsetof(__typeof__(drv), field) }

/* Base names, as cuGetProcAddress wants them; the driver picks the version. */
static const struct {
	const char *symbol;
	cuuint64_t flags;
	size_t offset;
} rt_entries[] = {
	ENTRY("cuDriverGetVersion", LEGACY, cuDriverGetVersion),
	ENTRY("cuInit", LEGACY, cuInit),
	ENTRY("cuDevicePrimaryCtxRetain", LEGACY, cuDevicePrimaryCtxRetain),
	ENTRY("cuCtxSetCurrent", LEGACY, cuCtxSetCurrent),
	ENTRY("cuCtxSynchronize", LEGACY, cuCtxSynchronize),
	ENTRY("cuModuleLoadData", LEGACY, cuModuleLoadData),
	ENTRY("cuModuleUnload", LEGACY, cuModuleUnload),
	ENTRY("cuModuleGetFunction", LEGACY, cuModuleGetFunction),
	ENTRY("cuLaunchKernel", LEGACY, cuLaunchKernel),
	ENTRY("cuLaunchKernel", PTDS, cuLaunchKernel_ptsz),
	ENTRY("cuGraphLaunch", LEGACY, cuGraphLaunch),
	ENTRY("cuGraphLaunch", PTDS, cuGraphLaunch_ptsz),
	ENTRY("cuMemAlloc", LEGACY, cuMemAlloc),
	ENTRY("cuMemFree", LEGACY, cuMemFree),
	ENTRY("cuMemcpy", LEGACY, cuMemcpy),
	ENTRY("cuMemcpyHtoD", LEGACY, cuMemcpyHtoD),
	ENTRY("cuMemcpyDtoH", LEGACY, cuMemcpyDtoH),
	ENTRY("cuMemcpyDtoD", LEGACY, cuMemcpyDtoD),
};

/* ------------------------------------------------------------------------ */
/* Initialization                                                           */
/* ------------------------------------------------------------------------ */

static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static cudaError_t rt_init_err;
static CUcontext rt_primary;
static __thread int t_ctx_bound;

/* Driver result -> runtime error.  The numbers we use coincide. */
static cudaError_t rt_err(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_OUT_OF_MEMORY:
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
	case CUDA_ERROR_INVALID_IMAGE:
	case CUDA_ERROR_INVALID_CONTEXT:
	case CUDA_ERROR_INVALID_HANDLE:
	case CUDA_ERROR_NOT_FOUND:
	case CUDA_ERROR_NOT_READY:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
		return r;
	default:
		return cudaErrorUnknown;
	}
}

static void rt_init(void)
{
	DRV_PTR(cuGetProcAddress_v2) get_proc;
	void *lib;
	size_t i;
	int version = 0;
	CUresult r;

	rt_init_err = cudaErrorInsufficientDriver;
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return;
	get_proc = (DRV_PTR(cuGetProcAddress_v2))dlsym(lib,
						       "cuGetProcAddress_v2");
	if (!get_proc)
		return;
	drv.cuGetProcAddress = get_proc;
	for (i = 0; i < sizeof(rt_entries) / sizeof(rt_entries[0]); i++) {
		CUdriverProcAddressQueryResult status;
		void *fn = NULL;

		r = get_proc(rt_entries[i].symbol, &fn, RT_CUDART_VERSION,
			     rt_entries[i].flags, &status);
		if (r != CUDA_SUCCESS || !fn ||
		    status != CU_GET_PROC_ADDRESS_SUCCESS)
			return;
		memcpy((char *)&drv + rt_entries[i].offset, &fn, sizeof(fn));
	}
	if (drv.cuDriverGetVersion(&version) != CUDA_SUCCESS ||
	    version < RT_MIN_DRIVER_VERSION)
		return;
	r = drv.cuInit(0);
	if (r == CUDA_SUCCESS)
		r = drv.cuDevicePrimaryCtxRetain(&rt_primary, 0);
	rt_init_err = rt_err(r);
}

/* Every API starts here: the process is initialized and this thread bound. */
static cudaError_t rt_ready(void)
{
	CUresult r;

	pthread_once(&rt_once, rt_init);
	if (rt_init_err)
		return rt_init_err;
	if (!t_ctx_bound) {
		r = drv.cuCtxSetCurrent(rt_primary);
		if (r)
			return rt_err(r);
		t_ctx_bound = 1;
	}
	return cudaSuccess;
}

/* ------------------------------------------------------------------------ */
/* Registration of device code                                              */
/* ------------------------------------------------------------------------ */

struct rt_fatbin {
	CUmodule module;	/* first, as the handle points at it */
	cudaError_t err;
};

/*
 * Append-only: launches scan it without the lock.  An unregistered entry
 * keeps its slot with host_fun cleared.
 */
struct rt_func {
	const void *host_fun;
	struct rt_fatbin *fatbin;
	char *name;
	CUfunction fn;		/* resolved on first launch */
};

static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_func rt_funcs[RT_MAX_FUNCS];
static unsigned int rt_nfuncs;

/* Used when the wrapper carries no image. */
static const char rt_dummy_image[] =
	"//\n// fakecuda runtime: placeholder module\n//\n"
	".version 8.0\n.target sm_90\n.address_size 64\n";

RT_API void **__cudaRegisterFatBinary(void *fatCubin)
{
	const struct fatbin_wrapper *w = fatCubin;
	const void *image = fatCubin;
	struct rt_fatbin *fb;

	fb = calloc(1, sizeof(*fb));
	if (!fb)
		return NULL;
	if (w && w->magic == FATBINC_MAGIC)
		image = w->data;
	if (!image)
		image = rt_dummy_image;
	fb->err = rt_ready();
	if (!fb->err)
		fb->err = rt_err(drv.cuModuleLoadData(&fb->module, image));
	return (void **)fb;
}

RT_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
	(void)fatCubinHandle;	/* the module is already loaded */
}

RT_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
				   char *deviceFun, const char *deviceName,
				   int thread_limit, uint3 *tid, uint3 *bid,
				   dim3 *bDim, dim3 *gDim, int *wSize)
{
	const char *name = deviceFun ? deviceFun : deviceName;
	struct rt_func *e;

	(void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim;
	(void)wSize;
	if (!fatCubinHandle || !hostFun || !name)
		return;
	pthread_mutex_lock(&rt_lock);
	if (rt_nfuncs < RT_MAX_FUNCS) {
		e = &rt_funcs[rt_nfuncs];
		e->fatbin = (struct rt_fatbin *)fatCubinHandle;
		e->name = strdup(name);
		e->fn = NULL;
		__atomic_store_n(&e->host_fun, e->name ? hostFun : NULL,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&rt_nfuncs, rt_nfuncs + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&rt_lock);
}

RT_API void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
	struct rt_fatbin *fb = (struct rt_fatbin *)fatCubinHandle;
	unsigned int i;

	if (!fb)
		return;
	pthread_mutex_lock(&rt_lock);
	for (i = 0; i < rt_nfuncs; i++) {
		if (rt_funcs[i].fatbin != fb)
			continue;
		__atomic_store_n(&rt_funcs[i].host_fun, NULL, __ATOMIC_RELEASE);
		free(rt_funcs[i].name);
		rt_funcs[i].name = NULL;
		rt_funcs[i].fatbin = NULL;
	}
	pthread_mutex_unlock(&rt_lock);
	if (!fb->err && fb->module)
		drv.cuModuleUnload(fb->module);
	free(fb);
}

/* Host stub -> CUfunction, resolving it once. */
static cudaError_t rt_function(const void *func, CUfunction *out)
{
	unsigned int i, n = __atomic_load_n(&rt_nfuncs, __ATOMIC_ACQUIRE);
	cudaError_t err = cudaErrorInvalidDeviceFunction;
	struct rt_func *e = NULL;
	CUresult r;

	if (!func)
		return cudaErrorInvalidDeviceFunction;
	for (i = 0; i < n; i++) {
		if (__atomic_load_n(&rt_funcs[i].host_fun, __ATOMIC_ACQUIRE) ==
		    func) {
			e = &rt_funcs[i];
			break;
		}
	}
	if (!e)
		return cudaErrorInvalidDeviceFunction;
	*out = __atomic_load_n(&e->fn, __ATOMIC_ACQUIRE);
	if (*out)
		return cudaSuccess;

	pthread_mutex_lock(&rt_lock);
	if (e->host_fun != func) {
		err = cudaErrorInvalidDeviceFunction;	/* just unregistered */
	} else if (e->fn) {
		*out = e->fn;
		err = cudaSuccess;
	} else if (e->fatbin->err) {
		err = e->fatbin->err;
	} else {
		r = drv.cuModuleGetFunction(out, e->fatbin->module, e->name);
		if (r == CUDA_SUCCESS)
			__atomic_store_n(&e->fn, *out, __ATOMIC_RELEASE);
		err = r == CUDA_ERROR_NOT_FOUND ?
		      cudaErrorInvalidDeviceFunction : rt_err(r);
	}
	pthread_mutex_unlock(&rt_lock);
	return err;
}

/* ------------------------------------------------------------------------ */
/* Launches                                                                 */
/* ------------------------------------------------------------------------ */

/* A bad geometry is a configuration error at this level. */
static cudaError_t rt_launch_err(CUresult r)
{
	return r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidConfiguration :
					       rt_err(r);
}

static cudaError_t rt_launch(int ptsz, const void *func, dim3 grid,
			     dim3 block, void **args, size_t sharedMem,
			     cudaStream_t stream)
{
	cudaError_t err = rt_ready();
	CUfunction f;
	CUresult r;

	if (err)
		return err;
	if (sharedMem > UINT_MAX)
		return cudaErrorInvalidValue;
	err = rt_function(func, &f);
	if (err)
		return err;
	r = (ptsz ? drv.cuLaunchKernel_ptsz : drv.cuLaunchKernel)(
		f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
		(unsigned int)sharedMem, stream, args, NULL);
	return rt_launch_err(r);
}

RT_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim,
				    dim3 blockDim, void **args,
				    size_t sharedMem, cudaStream_t stream)
{
	return rt_launch(0, func, gridDim, blockDim, args, sharedMem, stream);
}

RT_API cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim,
					 dim3 blockDim, void **args,
					 size_t sharedMem, cudaStream_t stream)
{
	return rt_launch(1, func, gridDim, blockDim, args, sharedMem, stream);
}

/*
 * CUDA 13's nvcc host stubs call __cudaLaunchKernel[_ptsz], which the real
 * runtime exports as a trampoline into cudaLaunchKernel[_ptsz].  Here too:
 * each calls the exported function's body at its own address (so a uprobe
 * on cudaLaunchKernel sees the call), through a hidden alias, not through
 * the PLT (so an interposer of cudaLaunchKernel does not see it twice).
 */
extern cudaError_t rt_cudaLaunchKernel(const void *, dim3, dim3, void **,
				       size_t, cudaStream_t)
	__attribute__((alias("cudaLaunchKernel"), visibility("hidden")));
extern cudaError_t rt_cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **,
					    size_t, cudaStream_t)
	__attribute__((alias("cudaLaunchKernel_ptsz"), visibility("hidden")));

RT_API cudaError_t __cudaLaunchKernel(const void *func, dim3 gridDim,
				      dim3 blockDim, void **args,
				      size_t sharedMem, cudaStream_t stream)
{
	return rt_cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem,
				   stream);
}

RT_API cudaError_t __cudaLaunchKernel_ptsz(const void *func, dim3 gridDim,
					   dim3 blockDim, void **args,
					   size_t sharedMem,
					   cudaStream_t stream)
{
	return rt_cudaLaunchKernel_ptsz(func, gridDim, blockDim, args,
					sharedMem, stream);
}

/* The config's attributes are not interpreted: no scenario sets any. */
static cudaError_t rt_launch_ex(int ptsz, const cudaLaunchConfig_t *config,
				const void *func, void **args)
{
	if (!config)
		return cudaErrorInvalidValue;
	return rt_launch(ptsz, func, config->gridDim, config->blockDim, args,
			 config->dynamicSmemBytes, config->stream);
}

RT_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config,
				       const void *func, void **args)
{
	return rt_launch_ex(0, config, func, args);
}

RT_API cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config,
					    const void *func, void **args)
{
	return rt_launch_ex(1, config, func, args);
}

RT_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec,
				   cudaStream_t stream)
{
	cudaError_t err = rt_ready();

	return err ? err : rt_err(drv.cuGraphLaunch(graphExec, stream));
}

RT_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec,
					cudaStream_t stream)
{
	cudaError_t err = rt_ready();

	return err ? err : rt_err(drv.cuGraphLaunch_ptsz(graphExec, stream));
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

RT_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	cudaError_t err = rt_ready();
	CUdeviceptr p;

	if (err)
		return err;
	if (!devPtr)
		return cudaErrorInvalidValue;
	if (!size) {		/* allowed, and no driver call */
		*devPtr = NULL;
		return cudaSuccess;
	}
	err = rt_err(drv.cuMemAlloc(&p, size));
	if (!err)
		*devPtr = (void *)(uintptr_t)p;
	return err;
}

/* cudaFree(NULL) is the classic way to initialize the runtime. */
RT_API cudaError_t cudaFree(void *devPtr)
{
	cudaError_t err = rt_ready();

	if (err || !devPtr)
		return err;
	return rt_err(drv.cuMemFree((CUdeviceptr)(uintptr_t)devPtr));
}

RT_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
			      enum cudaMemcpyKind kind)
{
	CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst;
	CUdeviceptr s = (CUdeviceptr)(uintptr_t)src;
	cudaError_t err = rt_ready();

	if (err || !count)
		return err;
	switch (kind) {
	case cudaMemcpyHostToHost:
		if (!dst || !src)
			return cudaErrorInvalidValue;
		memmove(dst, src, count);
		return cudaSuccess;
	case cudaMemcpyHostToDevice:
		return rt_err(drv.cuMemcpyHtoD(d, src, count));
	case cudaMemcpyDeviceToHost:
		return rt_err(drv.cuMemcpyDtoH(dst, s, count));
	case cudaMemcpyDeviceToDevice:
		return rt_err(drv.cuMemcpyDtoD(d, s, count));
	case cudaMemcpyDefault:
		return rt_err(drv.cuMemcpy(d, s, count));
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
}

RT_API cudaError_t cudaDeviceSynchronize(void)
{
	cudaError_t err = rt_ready();

	return err ? err : rt_err(drv.cuCtxSynchronize());
}

/* ------------------------------------------------------------------------ */
/* Driver entry points                                                      */
/* ------------------------------------------------------------------------ */

/* Like the real runtime: the driver's cuGetProcAddress answers. */
static cudaError_t rt_entry_point(const char *symbol, void **funcPtr,
				  int cudaVersion, unsigned long long flags,
				  cudaDriverEntryPointQueryResult *status)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	cudaError_t err = rt_ready();

	if (err)
		return err;
	if (!symbol || !funcPtr)
		return cudaErrorInvalidValue;
	err = rt_err(drv.cuGetProcAddress(symbol, funcPtr, cudaVersion, flags,
					  &st));
	if (status && !err)
		*status = st;
	return err;
}

RT_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
					   unsigned long long flags,
					   cudaDriverEntryPointQueryResult
					   *driverStatus)
{
	return rt_entry_point(symbol, funcPtr, RT_CUDART_VERSION, flags,
			      driverStatus);
}

RT_API cudaError_t cudaGetDriverEntryPointByVersion(
	const char *symbol, void **funcPtr, unsigned int cudaVersion,
	unsigned long long flags,
	cudaDriverEntryPointQueryResult *driverStatus)
{
	if (cudaVersion > INT_MAX)
		return cudaErrorInvalidValue;
	return rt_entry_point(symbol, funcPtr, (int)cudaVersion, flags,
			      driverStatus);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

static const struct {
	cudaError_t code;
	const char *name;
	const char *text;
} rt_errors[] = {
	{ cudaSuccess, "cudaSuccess", "no error" },
	{ cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument" },
	{ cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation",
	  "out of memory" },
	{ cudaErrorInitializationError, "cudaErrorInitializationError",
	  "initialization error" },
	{ cudaErrorCudartUnloading, "cudaErrorCudartUnloading",
	  "driver shutting down" },
	{ cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
	  "invalid configuration argument" },
	{ cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
	  "invalid copy direction for memcpy" },
	{ cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
	  "CUDA driver version is insufficient for CUDA runtime version" },
	{ cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction",
	  "invalid device function" },
	{ cudaErrorNoDevice, "cudaErrorNoDevice",
	  "no CUDA-capable device is detected" },
	{ cudaErrorInvalidDevice, "cudaErrorInvalidDevice",
	  "invalid device ordinal" },
	{ cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage",
	  "device kernel image is invalid" },
	{ cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized",
	  "invalid device context" },
	{ cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
	  "invalid resource handle" },
	{ cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound",
	  "named symbol not found" },
	{ cudaErrorNotReady, "cudaErrorNotReady", "device not ready" },
	{ cudaErrorLaunchFailure, "cudaErrorLaunchFailure",
	  "unspecified launch failure" },
	{ cudaErrorCooperativeLaunchTooLarge,
	  "cudaErrorCooperativeLaunchTooLarge",
	  "too many blocks in cooperative launch" },
	{ cudaErrorUnknown, "cudaErrorUnknown", "unknown error" },
};

static const char *rt_error_text(cudaError_t error, int text)
{
	size_t i;

	for (i = 0; i < sizeof(rt_errors) / sizeof(rt_errors[0]); i++)
		if (rt_errors[i].code == error)
			return text ? rt_errors[i].text : rt_errors[i].name;
	return "unrecognized error code";
}

RT_API const char *cudaGetErrorName(cudaError_t error)
{
	return rt_error_text(error, 0);
}

RT_API const char *cudaGetErrorString(cudaError_t error)
{
	return rt_error_text(error, 1);
}
