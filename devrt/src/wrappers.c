// SPDX-License-Identifier: Apache-2.0
/*
 * wrappers.c - the exported functions: one per row of api_table.h.
 *
 * A generated wrapper (rows X) captures its arguments as 64-bit words in
 * ABI order, the way the uprobe reads registers: 32-bit values
 * zero-extended, a CUmemLocation passed by value as the one register that
 * holds it.  It asks devrt_begin whether the call is reported; if not, it
 * calls the real function and returns its result, and nothing else happens.
 * The rows H are written out below: the runtime launches (dim3 by value;
 * cudaLaunchKernelExC, whose stub's registration goes out first), the
 * void __cudaRegisterFunction, cuCtxSynchronize (no arguments) and the
 * entry-point APIs, which are not reported but hand out wrappers.
 *
 * Every wrapper returns exactly what the real function returned and never
 * touches its arguments.  If the real function cannot be found (a program
 * called devrt's symbol without any libcuda) there is nothing to forward
 * to: the wrapper returns CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND.
 */
#include <string.h>

#include "devrt.h"
#include "inject.h"

/* ---- arguments as the registers hold them ------------------------------- */

static inline __u64 arg_ptr(const volatile void *p) { return (__u64)(uintptr_t)p; }
static inline __u64 arg_s32(int v) { return (__u32)v; }
static inline __u64 arg_u32(unsigned int v) { return v; }
static inline __u64 arg_u16(unsigned short v) { return v; }
static inline __u64 arg_u8(unsigned char v) { return v; }
static inline __u64 arg_ul(unsigned long v) { return v; }
static inline __u64 arg_ull(unsigned long long v) { return v; }

static inline __u64 arg_loc(CUmemLocation l)
{
	__u64 v;

	memcpy(&v, &l, sizeof(v));	/* type in the low word, id above */
	return v;
}

/* Any other integer type is a compile error (no conversion to a pointer). */
#define ARG(x) _Generic((x),						\
	int: arg_s32, unsigned int: arg_u32,				\
	unsigned short: arg_u16, unsigned char: arg_u8,			\
	unsigned long: arg_ul, unsigned long long: arg_ull,		\
	CUmemLocation: arg_loc, default: arg_ptr)(x)

/* ARGS((a, b, c)) is ARG(a), ARG(b), ARG(c); up to 11 arguments. */
#define M_1(f, x) f(x)
#define M_2(f, x, ...) f(x), M_1(f, __VA_ARGS__)
#define M_3(f, x, ...) f(x), M_2(f, __VA_ARGS__)
#define M_4(f, x, ...) f(x), M_3(f, __VA_ARGS__)
#define M_5(f, x, ...) f(x), M_4(f, __VA_ARGS__)
#define M_6(f, x, ...) f(x), M_5(f, __VA_ARGS__)
#define M_7(f, x, ...) f(x), M_6(f, __VA_ARGS__)
#define M_8(f, x, ...) f(x), M_7(f, __VA_ARGS__)
#define M_9(f, x, ...) f(x), M_8(f, __VA_ARGS__)
#define M_10(f, x, ...) f(x), M_9(f, __VA_ARGS__)
#define M_11(f, x, ...) f(x), M_10(f, __VA_ARGS__)
#define NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, n, ...) n
#define NARGS(...) NARGS_(__VA_ARGS__, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define MAP_(f, ...) CAT(M_, NARGS(__VA_ARGS__))(f, __VA_ARGS__)
#define UNPAREN(...) __VA_ARGS__
#define ARGS(names) MAP_(ARG, UNPAREN names)

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- generated wrappers ------------------------------------------------- */

/* The driver's launches (the rows inject.h redirects) are DEVRT_HOT. */
#define WRAP_HOT(sym) \
	DEVRT_INJ_IF_(DEVRT_INJ_SECOND(DEVRT_INJ_RD_##sym, 0, ~))(DEVRT_HOT)

#define WRAP(sym, api, ck, df, params, names)				\
WRAP_HOT(sym) DEVRT_EXPORT CUresult sym params				\
{									\
	__typeof__(&sym) real_ =					\
		(__typeof__(&sym))devrt_real(DEVRT_SYM_##sym);		\
	struct devrt_call call_;					\
	CUresult res_;							\
									\
	if (unlikely(!real_))						\
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;	\
	if (((df) & (DF_KERNEL | DF_COPY)) && devrt_folded())		\
		return DEVRT_INJECT_CALL(sym, real_ names);		\
	const __u64 args_[] = { ARGS(names) };				\
	if (!devrt_begin(&call_, DEVRT_SYM_##sym, args_, NELEM(args_)))	\
		return DEVRT_INJECT_CALL(sym, real_ names);		\
	res_ = DEVRT_INJECT_CALL(sym, real_ names);			\
	devrt_end(&call_, res_);					\
	return res_;							\
}

#define SKIP(...)

DEVRT_SYMBOLS(WRAP, SKIP)

/* ---- written by hand ----------------------------------------------------- */

DEVRT_EXPORT CUresult cuCtxSynchronize(void)
{
	__typeof__(&cuCtxSynchronize) real =
		(__typeof__(&cuCtxSynchronize))devrt_real(DEVRT_SYM_cuCtxSynchronize);
	struct devrt_call c;
	CUresult r;

	if (unlikely(!real))
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	if (!devrt_begin(&c, DEVRT_SYM_cuCtxSynchronize, NULL, 0))
		return real();
	r = real();
	devrt_end(&c, r);
	return r;
}

typedef cudaError_t (*rt_launch_fn)(const void *, dim3, dim3, void **, size_t,
				    cudaStream_t);

/*
 * cudaLaunchKernel(func, dim3 grid, dim3 block, args, sharedMem, stream):
 * each 12-byte dim3 travels in two registers (x | y << 32, then z), which
 * leaves sharedMem and stream on the stack (arguments 7 and 8).  Inlined
 * into each of the four exported launches: a call to one shared function
 * moved all eight arguments again (16 instructions of PyTorch's launch,
 * bench/devrt_footprint.sh).
 */
static inline __attribute__((always_inline)) cudaError_t
launch_rt(enum devrt_sym id, const void *func, dim3 grid, dim3 block,
	  void **args, size_t shmem, cudaStream_t s)
{
	rt_launch_fn real = (rt_launch_fn)devrt_real(id);
	const __u64 a[] = {
		arg_ptr(func),
		grid.x | (__u64)grid.y << 32, grid.z,
		block.x | (__u64)block.y << 32, block.z,
		arg_ptr(args), shmem, arg_ptr(s), 0,
	};
	struct devrt_call c;
	cudaError_t r;

	if (unlikely(!real))
		return cudaErrorSharedObjectSymbolNotFound;
	/* __cudaLaunchKernel's trampoline, if it entered cudaLaunchKernel
	 * through the PLT: the same launch, reported once already. */
	if (devrt_t.outer && devrt_t.outer->ev.api == GPUEXT_API_cudaLaunchKernel)
		return real(func, grid, block, args, shmem, s);
	if (!devrt_begin(&c, id, a, NELEM(a)))
		return real(func, grid, block, args, shmem, s);
	/* The stub's registration record, before the first launch's. */
	devrt_reg_launch(func);
	r = real(func, grid, block, args, shmem, s);
	devrt_end(&c, r);
	return r;
}

DEVRT_HOT
DEVRT_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim,
					  dim3 blockDim, void **args,
					  size_t sharedMem, cudaStream_t stream)
{
	return launch_rt(DEVRT_SYM_cudaLaunchKernel, func, gridDim, blockDim,
			 args, sharedMem, stream);
}

DEVRT_HOT
DEVRT_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim,
					       dim3 blockDim, void **args,
					       size_t sharedMem,
					       cudaStream_t stream)
{
	return launch_rt(DEVRT_SYM_cudaLaunchKernel_ptsz, func, gridDim,
			 blockDim, args, sharedMem, stream);
}

/*
 * What CUDA 13's nvcc host stubs call: libcudart's trampolines into
 * cudaLaunchKernel[_ptsz], whose internal call does not reach devrt.
 * Reported as cudaLaunchKernel (api_table.h); a runtime without them never
 * calls these.
 */
DEVRT_HOT
DEVRT_EXPORT cudaError_t __cudaLaunchKernel(const void *func, dim3 gridDim,
					    dim3 blockDim, void **args,
					    size_t sharedMem,
					    cudaStream_t stream)
{
	return launch_rt(DEVRT_SYM___cudaLaunchKernel, func, gridDim, blockDim,
			 args, sharedMem, stream);
}

DEVRT_HOT
DEVRT_EXPORT cudaError_t __cudaLaunchKernel_ptsz(const void *func,
						 dim3 gridDim, dim3 blockDim,
						 void **args, size_t sharedMem,
						 cudaStream_t stream)
{
	return launch_rt(DEVRT_SYM___cudaLaunchKernel_ptsz, func, gridDim,
			 blockDim, args, sharedMem, stream);
}

typedef cudaError_t (*rt_launch_ex_fn)(const cudaLaunchConfig_t *,
				       const void *, void **);

/*
 * cudaLaunchKernelExC(const cudaLaunchConfig_t *config, func, args): the
 * geometry and stream are read from config (CK_LCFG), as cuLaunchKernelEx's;
 * func is the host stub, as cudaLaunchKernel's.
 */
DEVRT_HOT
static cudaError_t launch_rt_ex(enum devrt_sym id,
				const cudaLaunchConfig_t *config,
				const void *func, void **args)
{
	rt_launch_ex_fn real = (rt_launch_ex_fn)devrt_real(id);
	const __u64 a[] = { arg_ptr(config), arg_ptr(func), arg_ptr(args) };
	struct devrt_call c;
	cudaError_t r;

	if (unlikely(!real))
		return cudaErrorSharedObjectSymbolNotFound;
	if (!devrt_begin(&c, id, a, NELEM(a)))
		return real(config, func, args);
	/* The stub's registration record, before the first launch's. */
	devrt_reg_launch(func);
	r = real(config, func, args);
	devrt_end(&c, r);
	return r;
}

DEVRT_HOT
DEVRT_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config,
					     const void *func, void **args)
{
	return launch_rt_ex(DEVRT_SYM_cudaLaunchKernelExC, config, func, args);
}

DEVRT_HOT
DEVRT_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(
	const cudaLaunchConfig_t *config, const void *func, void **args)
{
	return launch_rt_ex(DEVRT_SYM_cudaLaunchKernelExC_ptsz, config, func,
			    args);
}

/*
 * void: the record's result is 0; the name is deviceName (argument 4).  The
 * record is kept until the first launch of hostFun (reg.c).
 */
DEVRT_EXPORT void __cudaRegisterFunction(void **fatCubinHandle,
					 const char *hostFun, char *deviceFun,
					 const char *deviceName,
					 int thread_limit, uint3 *tid,
					 uint3 *bid, dim3 *bDim, dim3 *gDim,
					 int *wSize)
{
	__typeof__(&__cudaRegisterFunction) real =
		(__typeof__(&__cudaRegisterFunction))devrt_real(
			DEVRT_SYM___cudaRegisterFunction);
	const __u64 a[] = {
		arg_ptr(fatCubinHandle), arg_ptr(hostFun), arg_ptr(deviceFun),
		arg_ptr(deviceName), arg_s32(thread_limit), arg_ptr(tid),
	};
	struct devrt_call c;

	if (unlikely(!real))
		return;
	if (!devrt_begin(&c, DEVRT_SYM___cudaRegisterFunction, a, NELEM(a))) {
		real(fatCubinHandle, hostFun, deviceFun, deviceName,
		     thread_limit, tid, bid, bDim, gDim, wSize);
		return;
	}
	real(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid,
	     bid, bDim, gDim, wSize);
	devrt_end_register(&c, hostFun);
}

/* ---- driver entry points: the real answer, then devrt's wrapper ---------- */

DEVRT_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
				       int cudaVersion, cuuint64_t flags)
{
	__typeof__(&cuGetProcAddress) real =
		(__typeof__(&cuGetProcAddress))devrt_real(DEVRT_SYM_cuGetProcAddress);
	CUresult r;

	if (unlikely(!real))
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	r = real(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS) {
		devrt_note_driver((void *)real);
		devrt_map_entry(symbol, pfn);
	}
	return r;
}

DEVRT_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
					  int cudaVersion, cuuint64_t flags,
					  CUdriverProcAddressQueryResult *status)
{
	__typeof__(&cuGetProcAddress_v2) real =
		(__typeof__(&cuGetProcAddress_v2))devrt_real(
			DEVRT_SYM_cuGetProcAddress_v2);
	CUresult r;

	if (unlikely(!real))
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	r = real(symbol, pfn, cudaVersion, flags, status);
	if (r == CUDA_SUCCESS) {
		devrt_note_driver((void *)real);
		devrt_map_entry(symbol, pfn);
	}
	return r;
}

DEVRT_EXPORT cudaError_t cudaGetDriverEntryPoint(
	const char *symbol, void **funcPtr, unsigned long long flags,
	cudaDriverEntryPointQueryResult *driverStatus)
{
	__typeof__(&cudaGetDriverEntryPoint) real =
		(__typeof__(&cudaGetDriverEntryPoint))devrt_real(
			DEVRT_SYM_cudaGetDriverEntryPoint);
	cudaError_t r;

	if (unlikely(!real))
		return cudaErrorSharedObjectSymbolNotFound;
	r = real(symbol, funcPtr, flags, driverStatus);
	if (r == 0)
		devrt_map_entry(symbol, funcPtr);
	return r;
}

DEVRT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
	const char *symbol, void **funcPtr, unsigned int cudaVersion,
	unsigned long long flags, cudaDriverEntryPointQueryResult *driverStatus)
{
	__typeof__(&cudaGetDriverEntryPointByVersion) real =
		(__typeof__(&cudaGetDriverEntryPointByVersion))devrt_real(
			DEVRT_SYM_cudaGetDriverEntryPointByVersion);
	cudaError_t r;

	if (unlikely(!real))
		return cudaErrorSharedObjectSymbolNotFound;
	r = real(symbol, funcPtr, cudaVersion, flags, driverStatus);
	if (r == 0)
		devrt_map_entry(symbol, funcPtr);
	return r;
}

/* ---- devrt's own function of every symbol -------------------------------- */

#define ADDR(sym, ...) [DEVRT_SYM_##sym] = (void *)sym,

void *const devrt_wrappers[DEVRT_NSYMS] = {
	DEVRT_SYMBOLS(ADDR, ADDR)
};
