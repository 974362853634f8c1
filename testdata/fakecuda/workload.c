// SPDX-License-Identifier: Apache-2.0
/*
 * workload.c - a CUDA program with known, fixed behaviour, for probe tests.
 *
 * Why this exists: tests of the gpuebpf receiver start this program, let the
 * collector attach its uprobes, and compare what the collector reports with
 * what the program did.  Every scenario makes a fixed sequence of calls, so a
 * test can assert exact numbers from the table below; the program also prints
 * what it did as one JSON line on stdout, and (against fakecuda's libcuda)
 * what the driver itself counted, so a test can cross-check both.
 *
 * It calls the driver directly (linked with -lcuda), through pointers from
 * cuGetProcAddress_v2, and through the runtime (linked with -lcudart, which
 * itself reaches the driver only through cuGetProcAddress_v2).
 *
 * Usage: workload SCENARIO [ARGS...]
 *
 * Environment:
 *   FAKECUDA_WAIT_FILE=path       before anything else, wait (10 ms polls, at
 *                                 most 30 s, else exit 3) until path exists
 *   FAKECUDA_FORK_DELAY_MS=n      fork-child: pause before fork (default 100)
 *   FAKECUDA_CHILD_WAIT_FILE=path fork-child: the child's FAKECUDA_WAIT_FILE
 *                                 (by default the child does not wait)
 *
 * The program sets its timer slack to 1 ns, so that the fake driver's
 * FAKECUDA_DELAY_US sleeps last about what they say.
 *
 * Exit status: 0 if every call returned what the scenario expects, 1 if not
 * (each mismatch is described on stderr), 2 for a usage error, 3 if the wait
 * file never appeared.
 *
 * Scenarios and the driver/runtime calls they make.  "setup" is cuInit,
 * cuDevicePrimaryCtxRetain, cuCtxSetCurrent (1 each); "teardown" is
 * cuDevicePrimaryCtxRelease_v2 (1).  All calls succeed unless marked.
 *
 * launch-storm [N=1000]
 *   setup; cuStreamCreate 1; cuModuleLoadData 1;
 *   cuModuleGetFunction("_Z6vecAddPfS_S_i") 1;
 *   cuLaunchKernel N (grid 128x1x1, block 256x1x1, shared 1024 B, on the
 *   created non-NULL stream); cuCtxSynchronize 1; cuStreamDestroy_v2 1;
 *   cuModuleUnload 1; teardown.
 *
 * alloc-leak
 *   setup;
 *   cuMemAlloc_v2 10 x 1 MiB; cuMemFree_v2 of 7 of them (3 MiB leaked);
 *   cuMemAllocManaged 1 x 4 MiB (CU_MEM_ATTACH_GLOBAL);
 *   cuMemPrefetchAsync 1 (whole managed buffer -> device 0, NULL stream);
 *   cuMemAdvise 1 (SET_READ_MOSTLY, device 0); cuMemFree_v2 1 (managed);
 *   cuMemAllocHost_v2 1 x 64 KiB; cuMemFreeHost 1;
 *   cuMemAllocAsync 1 x 2 MiB; cuMemFreeAsync 1 (both NULL stream);
 *   teardown.
 *   Totals: cuMemFree_v2 8; device alloc 10485760 B, freed 7340032 B,
 *   leaked 3145728 B; managed 4194304 B; host 65536 B; async 2097152 B.
 *
 * copies
 *   setup; cuMemAlloc_v2 2 x 64 KiB; cuStreamCreate 1;
 *   cuMemcpyHtoD_v2        3 x 4096  B
 *   cuMemcpyDtoH_v2        2 x 8192  B
 *   cuMemcpyDtoD_v2        1 x 65536 B
 *   cuMemcpyHtoDAsync_v2   1 x 1000  B (stream)
 *   cuMemcpyDtoHAsync_v2   1 x 2000  B (stream)
 *   cuMemcpyPeer           1 x 512   B (device to device, same context)
 *   cuMemcpy2D_v2          1: host -> device, WidthInBytes 256 x Height 4
 *                          = 1024 B (src pitch 256, dst pitch 512)
 *   cuMemcpy3D_v2          1: device -> host, 64 x 4 x 2 = 512 B
 *   cuMemsetD8_v2          1 x 4096 elements = 4096 B
 *   cuMemsetD32_v2         1 x 1024 elements = 4096 B
 *   cuStreamSynchronize 1; cuStreamDestroy_v2 1; cuMemFree_v2 2; teardown.
 *   Bytes: htod 14312 (3*4096 + 1000 + 1024), dtoh 18896 (2*8192 + 2000
 *   + 512), dtod 65536, peer 512, memset 8192.  Host buffers are plain
 *   malloc() memory.
 *
 * errors
 *   setup; cuModuleLoadData 1;
 *   cuMemAlloc_v2(0 bytes)                -> CUDA_ERROR_INVALID_VALUE   (1)
 *   cuMemFree_v2(0xdeadbeef000)           -> CUDA_ERROR_INVALID_VALUE   (1)
 *   cuModuleGetFunction("missing_kernel") -> CUDA_ERROR_NOT_FOUND       (500)
 *   cuCtxDestroy_v2(NULL)                 -> CUDA_ERROR_INVALID_CONTEXT (201)
 *   cuLaunchKernel(NULL function)         -> CUDA_ERROR_INVALID_HANDLE  (400)
 *   cuModuleUnload 1; teardown.  5 failed calls in all.
 *
 * threads [T=4] [N=1000]
 *   main thread: setup; cuModuleLoadData 1; cuModuleGetFunction 1;
 *   each of T threads: cuCtxSetCurrent 1, cuStreamCreate 1, cuLaunchKernel N
 *   (as in launch-storm, on its own stream), cuStreamSynchronize 1,
 *   cuStreamDestroy_v2 1;
 *   main thread: cuCtxSynchronize 1; cuModuleUnload 1; teardown.
 *   Totals: cuLaunchKernel T*N, cuCtxSetCurrent 1+T.  The JSON lists the
 *   threads' kernel thread ids ("tids").
 *
 * fork-child [N=100]
 *   parent: setup; sleep FAKECUDA_FORK_DELAY_MS; fork, and the child execs
 *   /proc/self/exe (the path it links to) with "launch-storm N": a new
 *   process with its own counts, as in launch-storm.  The parent waits for
 *   it, then cuCtxSynchronize 1; teardown.  The child's JSON line is
 *   embedded in the parent's as "child".
 *
 * fork-noexec [N=100]
 *   parent: setup; cuModuleLoadData 1; cuModuleGetFunction 1;
 *   cuLaunchKernel N (as in launch-storm, on the NULL stream); fork; the
 *   child, the same image without exec, makes N more cuLaunchKernel and
 *   cuCtxSynchronize 1 (its JSON, scenario "fork-noexec-child", is
 *   embedded as "child") and exits with exit(); the parent waits, then
 *   cuLaunchKernel N, cuCtxSynchronize 1, cuModuleUnload 1, teardown.
 *
 * runtime [N=100]
 *   __cudaRegisterFatBinary 1; __cudaRegisterFunction 1 (host stub
 *   _Z11saxpyKernelfPKfPf, the ELF symbol of a function in this program);
 *   __cudaRegisterFatBinaryEnd 1; N calls of the stub, each calling
 *   cudaLaunchKernel (grid 64x1x1, block 128x1x1, no shared memory, NULL
 *   stream); cudaDeviceSynchronize 1; __cudaUnregisterFatBinary 1.
 *   The driver sees (see libcudart.c): cuModuleLoadData 1,
 *   cuModuleGetFunction 1, cuLaunchKernel N, cuCtxSynchronize 1,
 *   cuModuleUnload 1, plus, if the runtime was not used before in this
 *   process, 18 cuGetProcAddress_v2, cuDriverGetVersion, cuInit,
 *   cuDevicePrimaryCtxRetain and cuCtxSetCurrent (1 each).
 *
 * runtime-ex [N=100]
 *   As "runtime", each call of the stub calling cudaLaunchKernelExC with a
 *   cudaLaunchConfig_t of grid 32x2x1, block 64x2x1, dynamicSmemBytes 256,
 *   NULL stream, no attributes.  The driver sees the same calls as in
 *   "runtime" (cuLaunchKernel N, with shared memory 256).
 *
 * runtime-stub [N=100]
 *   As "runtime", each call of the stub calling __cudaLaunchKernel (what
 *   CUDA 13's nvcc stubs call; the runtime's trampoline into
 *   cudaLaunchKernel) with grid 16x4x1, block 32x4x1, sharedMem 128, NULL
 *   stream.  The driver sees the same calls as in "runtime"
 *   (cuLaunchKernel N, with shared memory 128).
 *
 * runtime-unlaunched
 *   As "runtime" without the launches: __cudaRegisterFatBinary 1;
 *   __cudaRegisterFunction 1 (the saxpy stub); __cudaRegisterFatBinaryEnd 1;
 *   cudaDeviceSynchronize 1; __cudaUnregisterFatBinary 1.
 *
 * runtime-many [N=20000]
 *   As "runtime" with N more kernels registered after the saxpy stub (host
 *   stubs: N consecutive bytes of a buffer, names "_Z7kernel<i>v"; the fake
 *   runtime keeps the first 4096 kernels only), then 1 launch of the saxpy
 *   stub: __cudaRegisterFunction N+1, cudaLaunchKernel 1.
 *
 * runtime-errors
 *   cudaLaunchKernel(unregistered stub)  -> cudaErrorInvalidDeviceFunction
 *                                           (98), no driver call
 *   cudaFree(0xdeadbeef000)              -> cudaErrorInvalidValue (1), via
 *                                           cuMemFree_v2 -> INVALID_VALUE
 *   cudaMalloc(0 bytes)                  -> cudaSuccess, NULL, no driver call
 *   cudaGetErrorName(98) 1.
 *   Plus the runtime's one-time initialization as in "runtime".
 *
 * procaddr [N=100]
 *   setup; cuModuleLoadData 1; cuModuleGetFunction 1;
 *   cuGetProcAddress_v2 3 ("cuLaunchKernel", "cuMemAlloc", "cuMemFree" at
 *   CUDA 12.8, default flags -> cuLaunchKernel, cuMemAlloc_v2, cuMemFree_v2);
 *   through those pointers: cuLaunchKernel N (as in launch-storm but on the
 *   NULL stream), cuMemAlloc_v2 N x 4096 B, cuMemFree_v2 N;
 *   cuCtxSynchronize 1; cuModuleUnload 1; teardown.
 *
 * procaddr-table
 *   cuGetProcAddress_v2 22, cuGetProcAddress 1, checking that base names
 *   resolve to the versioned symbol the real driver returns (the table is
 *   procaddr_cases below).  Of the 22, 17 resolve, 3 are misses reported
 *   as CUDA_SUCCESS with a NULL pointer and the reason in symbolStatus, and
 *   2 fail with CUDA_ERROR_INVALID_VALUE (a version newer than the driver's
 *   13000; an unknown flag).  The cuGetProcAddress call is a miss, which the
 *   CUDA 11 signature reports as CUDA_ERROR_NOT_FOUND.
 *
 * every-api
 *   Calls every exported driver and runtime function, all succeeding.
 *   Direct calls: each once, except cuCtxDestroy_v2 3, cuModuleUnload 4,
 *   cuLibraryUnload 2 (cuModuleLoad and cuLibraryLoadFromFile load vecAdd's
 *   PTX from a temporary file),
 *   cuMemFree_v2 3, cuMemAlloc_v2 2, cuEventCreate 2, cuEventDestroy_v2 2,
 *   cuMemFreeHost 2 (module 1 and the library load vecAdd with the
 *   __gpuext_shared global, which cuModuleGetGlobal_v2 and
 *   cuLibraryGetGlobal find; cuLibraryGetModule gives the library's module,
 *   cuFuncGetModule module 1's for its function).  The runtime part adds, at the driver, 3 each of
 *   cuLaunchKernel and cuLaunchKernel_ptsz (cudaLaunchKernel[_ptsz],
 *   cudaLaunchKernelExC[_ptsz] and __cudaLaunchKernel[_ptsz]), 1 each of
 *   cuModuleLoadData,
 *   cuModuleGetFunction, cuModuleUnload, cuGraphLaunch, cuGraphLaunch_ptsz,
 *   cuMemAlloc_v2,
 *   cuMemcpyHtoD_v2, cuMemFree_v2, cuCtxSynchronize, 2 cuGetProcAddress_v2
 *   (cudaGetDriverEntryPoint and cudaGetDriverEntryPointByVersion), plus
 *   the runtime's one-time initialization.  Fails if the driver's counters
 *   show an entry point it never reached.
 *
 * timed [N=8]
 *   Work whose GPU time is known: run it with FAKECUDA_KERNEL_NS and
 *   FAKECUDA_COPY_NS (libcuda.c).  setup; cuModuleLoadData 1;
 *   cuModuleGetFunction 1; cuStreamCreate 2 (s0, s1); cuMemAlloc_v2 1 x
 *   4096 B; cuGraphCreate 1, cuGraphInstantiateWithFlags 1; pointers from
 *   cuGetProcAddress_v2 1 ("cuLaunchKernel", per-thread default stream ->
 *   cuLaunchKernel_ptsz) and cudaGetDriverEntryPoint 1 ("cuLaunchKernel"
 *   -> cuLaunchKernel, plus the runtime's one-time initialization);
 *   N x cuLaunchKernel on s0 (direct); N x cuLaunchKernel on s1 (through
 *   the runtime's pointer); N x cuLaunchKernel_ptsz on the per-thread
 *   default stream (NULL, through the driver's pointer); then
 *   cuMemcpyHtoDAsync_v2 1 x 4096 B on s0, cuMemsetD8Async 1 x 4096 on s1,
 *   cuGraphLaunch 1 on s0, cuMemcpyHtoD_v2 1 x 4096 B (synchronous, legacy
 *   stream); cuCtxSynchronize 1; cuGraphExecDestroy 1, cuGraphDestroy 1,
 *   cuMemFree_v2 1, cuStreamDestroy_v2 2, cuModuleUnload 1; teardown.
 *   Launches 3N + 1; pieces of GPU work 3N + 4, all back to back on their
 *   stream, so each starts when the one before it on that stream ends.
 *
 * inject [N=10]
 *   What device probe injection handles (devrt/src/inject.c): setup;
 *   cuModuleLoadData 2 (vecAdd PTX; an ELF cubin), cuModuleLoadDataEx 1
 *   (vecAdd PTX again), cuModuleLoadFatBinary 1 (a fat binary of the scale
 *   kernel's PTX for sm_80 and a cubin), cuModuleGetFunction 4,
 *   cuLibraryLoadData 1 (add_kernel PTX), cuLibraryGetKernel 1,
 *   cuKernelGetFunction 1; cuFuncSetAttribute 1 and cuKernelSetAttribute 1
 *   (64 KiB of dynamic shared memory for vecAdd of module 1 and the
 *   library's kernel); N x (cuLaunchKernel of vecAdd with 64 KiB,
 *   cuLaunchKernel_ptsz, cuLaunchKernelEx, cuLaunchCooperativeKernel,
 *   cuLaunchKernel of the library's function with 64 KiB); the runtime: __cudaRegisterFatBinary 1 (the same
 *   fat binary), __cudaRegisterFunction 1 (the saxpy stub as scale),
 *   __cudaRegisterFatBinaryEnd 1, N x cudaLaunchKernel, cudaDeviceSynchronize
 *   1, __cudaUnregisterFatBinary 1; cuCtxSynchronize 1; cuModuleUnload 4,
 *   cuLibraryUnload 1; teardown.  The JSON's "handles" are the handles the
 *   program got.
 *
 * inject-files [N=10]
 *   Modules loaded from files (devrt maps them to read): setup; writes into
 *   a new directory under $TMPDIR (else /tmp) vecadd.ptx, lib.ptx, a
 *   Triton-style cache entry k/scale.cubin with scale.ptx and scale.json
 *   beside it, and lone/scale.cubin (other bytes, nothing beside it);
 *   cuModuleLoad 4 (vecadd.ptx; k/scale.cubin; lone/scale.cubin; a file
 *   that does not exist: CUDA_ERROR_FILE_NOT_FOUND), cuModuleGetFunction 3,
 *   cuLibraryLoadFromFile 1 (lib.ptx), cuLibraryGetKernel 1; N x
 *   (cuLaunchKernel of vecAdd, of each scale, of the library's CUkernel);
 *   cuCtxSynchronize 1; cuModuleUnload 3, cuLibraryUnload 1; the files are
 *   removed; teardown.  "handles" as inject's.
 *
 * inject-shared [N=10]
 *   Kernels that may take all the shared memory, as cuBLAS sets one of
 *   its kernels up: setup; cuModuleLoadData 1 (vecAdd PTX),
 *   cuModuleGetFunction 1, cuLibraryLoadData 1 (add_kernel PTX),
 *   cuLibraryGetKernel 1; cuFuncSetAttribute 1 and cuKernelSetAttribute 1
 *   (dynamic shared memory 227 KiB, all an sm_90 has); N x (cuLaunchKernel
 *   of vecAdd, of the CUkernel, each with 64 KiB); 1 x each with 227 KiB;
 *   N x each with 64 KiB again; cuCtxSynchronize 1; cuModuleUnload 1,
 *   cuLibraryUnload 1; teardown (4N + 2 launches).  "handles" as inject's.
 *
 * inject-contexts [N=10]
 *   A library used in two contexts, as the CUDA runtime uses a program's
 *   fat binary on two GPUs: setup; cuLibraryLoadData 1 (add_kernel PTX),
 *   cuLibraryGetKernel 1; N x cuLaunchKernel of the CUkernel in the
 *   primary context; cuCtxCreate_v2 1 (a second context, made current);
 *   cuKernelGetFunction 1 there (that context's own CUfunction) and N
 *   launches of it, then 3N of the CUkernel; cuCtxPopCurrent_v2 1; N more
 *   of the CUkernel in the primary context, cuKernelGetFunction 1 and N
 *   launches of that function; cuCtxSynchronize 1; cuLibraryUnload 1;
 *   cuCtxDestroy_v2 1; teardown (7N launches: 3N in the primary context,
 *   4N in the other).  "handles" has the library, kernel, both contexts
 *   and both functions.
 *
 * inject-grid [N=10]
 *   Patched kernels launched with 1-D and with 2-D or 3-D grids, for 1-D
 *   twins (GPUEXT_INJ_GRID1D_SUFFIX), which devrt must launch for 1-D grids
 *   only: setup; cuModuleLoadData 1 (vecAdd PTX), cuModuleGetFunction 1,
 *   cuLibraryLoadData 1 (add_kernel PTX), cuLibraryGetKernel 1,
 *   cuKernelGetFunction 1; cuFuncSetAttribute 1 and cuKernelSetAttribute 1
 *   (64 KiB of dynamic shared memory); cuLaunchKernelEx 1 with a NULL
 *   config (CUDA_ERROR_INVALID_VALUE); N x (vecAdd with 64 KiB by each of
 *   cuLaunchKernel[_ptsz], cuLaunchKernelEx[_ptsz] and
 *   cuLaunchCooperativeKernel[_ptsz] with a grid of 4x2x1, then each with
 *   4x1x2, then each with 8x1x1; the library: cuLaunchKernel of the
 *   CUkernel 2x2x1 with 64 KiB, cuLaunchKernelEx of its function 2x1x2,
 *   cuLaunchKernel of the CUkernel 2x1x1 with 64 KiB,
 *   cuLaunchCooperativeKernel of the function 2x1x1); cuCtxCreate_v2 1 (a
 *   second context, made current), cuKernelGetFunction 1 there, N x
 *   (cuLaunchKernel_ptsz of that function 1x3x1, then 2x1x1);
 *   cuCtxPopCurrent_v2 1; cuCtxSynchronize 1; cuModuleUnload 1,
 *   cuLibraryUnload 1, cuCtxDestroy_v2 1; teardown (24N launches, 9N of
 *   them 1-D).  "handles" has the module, library, kernel and the three
 *   functions.
 *
 * inject-vars [N=10]
 *   A module with variables of its own (a __device__ counter and a
 *   __constant__ array: GPUEXT_INJ_RF_VARS), whose twin must own them:
 *   setup; cuModuleLoadData 1 (its PTX: kernels vk_a and vk_b),
 *   cuModuleGetFunction 2, cuModuleGetGlobal_v2 1 (coeffs), cuMemcpyHtoD_v2
 *   1 (16 bytes into it); cuLibraryLoadData 1 (the same PTX),
 *   cuLibraryGetKernel 2, cuLibraryGetGlobal 1 (coeffs), cuLibraryGetModule
 *   1, cuModuleGetGlobal_v2 1 (counter, on that module), cuFuncGetModule
 *   1 (vk_b's) and cuModuleGetGlobal_v2 1 (counter, on it); N x
 *   cuLaunchKernel of each of the four; cuCtxSynchronize 1; cuModuleUnload
 *   1, cuLibraryUnload 1; teardown (4N launches).  The launches expect
 *   $WORKLOAD_VARS_EXPECT (a CUresult, default 0); with
 *   $WORKLOAD_VARS_SHMEM bytes, each kernel is set up for that much
 *   dynamic shared memory first (cuFuncSetAttribute 2, cuKernelSetAttribute
 *   2) and launched with it; with $WORKLOAD_VARS_BAD, vk_a's function and
 *   CUkernel are first launched once each with 100000 bytes of dynamic
 *   shared memory never set up (CUDA_ERROR_INVALID_VALUE); with
 *   $WORKLOAD_VARS_GRAPH, after the launches, a graph of four kernel
 *   nodes (cuGraphCreate 1; cuGraphAddKernelNode_v2 2: vk_a's function,
 *   vk_a's CUkernel as kern; cuGraphAddKernelNode 1: vk_b's function;
 *   cuGraphAddNode 1: vk_b's CUkernel; each set again with
 *   cuGraphKernelNodeSetParams[_v2], cuGraphNodeSetParams or, after
 *   cuGraphInstantiateWithFlags 1, cuGraphExec[Kernel]NodeSetParams[_v2];
 *   the function nodes read back with cuGraphKernelNodeGetParams[_v2])
 *   launched N times, then destroyed (cuGraphExecDestroy 1,
 *   cuGraphDestroy 1).  "handles" has the
 *   module, library, its module, both functions and both kernels; "vars"
 *   the three variables' device pointers the program got.
 *
 * inject-grid-names [N=10]
 *   A module whose own kernels are a kernel and one named as its 1-D twin
 *   would be (GPUEXT_INJ_GRID1D_SUFFIX: gx_step and gx_step__gx1d, other
 *   parameters), which devrt must not take for one: setup;
 *   cuModuleLoadData 1 (their PTX), cuModuleGetFunction 2,
 *   cuLibraryLoadData 1 (the same PTX), cuLibraryGetKernel 2,
 *   cuKernelGetFunction 1 (gx_step's); N x (cuLaunchKernel of the
 *   module's gx_step 4x2x1, then 8x1x1, of its gx_step__gx1d 8x1x1; of the
 *   library's gx_step CUkernel 4x2x1, then 8x1x1, of its function 8x1x1,
 *   of the gx_step__gx1d CUkernel 8x1x1); cuCtxSynchronize 1;
 *   cuModuleUnload 1, cuLibraryUnload 1; teardown (7N launches, 5N of
 *   them 1-D).  "handles" has the module, library, both functions, both
 *   kernels and the kernel's function.
 *
 * all
 *   launch-storm 100, alloc-leak, copies, errors, runtime 10, procaddr 10 in
 *   sequence, in one process; the JSON has the sums and each part in
 *   "parts".  For example cuLaunchKernel: 111 calls by the program (100 +
 *   1 failing + 10 through a pointer) and 121 at the driver (+10 from the
 *   runtime); cuMemAlloc_v2: 23 (10 + 2 + 1 failing + 10).
 *
 * JSON keys: scenario, args, pid, ok, unexpected, wall_ms, calls (what this
 * program called, by ELF symbol; calls through cuGetProcAddress pointers
 * count as the symbol they resolve to), errors (failed calls by API and
 * code), launches (kernel and graph launches made, not counting those meant
 * to fail), bytes (htod, dtoh, dtod, peer, memset), memory (allocated and
 * freed bytes by kind), leaked_bytes, driver_calls (what fakecuda's libcuda
 * counted during the scenario, including the runtime's own calls; absent
 * with another libcuda, empty with FAKECUDA_COUNT=0), and per scenario
 * tids, child or parts.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api_list.h"
#include "cuda_api.h"

/* ------------------------------------------------------------------------ */
/* Bookkeeping: what this program did                                       */
/* ------------------------------------------------------------------------ */

enum w_api {
#define W_ID(name) W_##name,
	FAKECUDA_DRIVER_APIS(W_ID)
	FAKECUDA_RUNTIME_APIS(W_ID)
#undef W_ID
	W_NUM
};

#define W_FIRST_RUNTIME W_cudaLaunchKernel	/* driver APIs come first */

static const char *const w_names[W_NUM] = {
#define W_NAME(name) #name,
	FAKECUDA_DRIVER_APIS(W_NAME)
	FAKECUDA_RUNTIME_APIS(W_NAME)
#undef W_NAME
};

enum { B_HTOD, B_DTOH, B_DTOD, B_PEER, B_MEMSET, B_NUM };
static const char *const b_names[B_NUM] = {
	"htod", "dtoh", "dtod", "peer", "memset",
};

enum {
	M_DEVICE_ALLOC, M_DEVICE_FREE, M_MANAGED_ALLOC, M_MANAGED_FREE,
	M_ASYNC_ALLOC, M_ASYNC_FREE, M_HOST_ALLOC, M_HOST_FREE, M_NUM
};
static const char *const m_names[M_NUM] = {
	"device_alloc", "device_free", "managed_alloc", "managed_free",
	"async_alloc", "async_free", "host_alloc", "host_free",
};

#define MAX_ERRS 32

struct err_count {
	int api;
	int code;
	unsigned long long n;
};

/* One scenario run.  Counters are updated atomically (threads scenario). */
struct run {
	const char *scenario;
	unsigned long args[2];
	int nargs;
	unsigned long long calls[W_NUM];
	struct err_count errs[MAX_ERRS];
	int nerrs;
	unsigned long long unexpected;
	unsigned long long launches;
	unsigned long long bytes[B_NUM];
	unsigned long long mem[M_NUM];
	unsigned long long drv_before[W_FIRST_RUNTIME];
	unsigned long long drv_delta[W_FIRST_RUNTIME];
	int have_drv;
	double wall_ms;
	char *extra;		/* more JSON members, each starting with ',' */
};

static pthread_mutex_t w_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *driver_error_name(int code)
{
	switch (code) {
	case CUDA_SUCCESS: return "CUDA_SUCCESS";
	case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
	case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
	case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
	case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
	case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
	case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
	case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
	case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
	case CUDA_ERROR_FILE_NOT_FOUND: return "CUDA_ERROR_FILE_NOT_FOUND";
	case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
	case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
	case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
	case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
	default: return "CUDA_ERROR_UNKNOWN";
	}
}

static const char *runtime_error_name(int code)
{
	switch (code) {
	case cudaSuccess: return "cudaSuccess";
	case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
	case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
	case cudaErrorInvalidConfiguration:
		return "cudaErrorInvalidConfiguration";
	case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
	case cudaErrorInvalidDeviceFunction:
		return "cudaErrorInvalidDeviceFunction";
	case cudaErrorInvalidResourceHandle:
		return "cudaErrorInvalidResourceHandle";
	default: return "cudaErrorUnknown";
	}
}

static const char *error_name(int api, int code)
{
	return api >= W_FIRST_RUNTIME ? runtime_error_name(code) :
					driver_error_name(code);
}

static void count_call(struct run *r, int api)
{
	__atomic_fetch_add(&r->calls[api], 1, __ATOMIC_RELAXED);
}

/* Counts the call, records a failure, and says whether it was expected. */
static int check(struct run *r, int api, int expect, int got, int line)
{
	int i;

	count_call(r, api);
	if (got != 0) {
		pthread_mutex_lock(&w_lock);
		for (i = 0; i < r->nerrs; i++)
			if (r->errs[i].api == api && r->errs[i].code == got)
				break;
		if (i == r->nerrs && r->nerrs < MAX_ERRS)
			r->errs[r->nerrs++] = (struct err_count){ api, got, 0 };
		if (i < MAX_ERRS)
			r->errs[i].n++;
		pthread_mutex_unlock(&w_lock);
	}
	if (got == expect)
		return 1;
	__atomic_fetch_add(&r->unexpected, 1, __ATOMIC_RELAXED);
	fprintf(stderr,
		"workload.c:%d: %s returned %d (%s), expected %d (%s)\n",
		line, w_names[api], got, error_name(api, got), expect,
		error_name(api, expect));
	return 0;
}

/* A failed self-check that is not an API result. */
static void fail(struct run *r, int line, const char *what)
{
	__atomic_fetch_add(&r->unexpected, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "workload.c:%d: %s\n", line, what);
}

/* Call fn(...), count it as fn, expect `expect`.  True if it matched. */
#define CU(r, expect, fn, ...) \
	check((r), W_##fn, (expect), fn(__VA_ARGS__), __LINE__)
/* The same through a function pointer, counted as the driver symbol `as`. */
#define CU_PTR(r, expect, as, ptr, ...) \
	check((r), W_##as, (expect), (ptr)(__VA_ARGS__), __LINE__)
#define COUNT(r, fn)		count_call((r), W_##fn)
#define EXPECT(r, cond)		((cond) ? 1 : (fail((r), __LINE__, #cond), 0))

static void add(unsigned long long *slot, unsigned long long n)
{
	__atomic_fetch_add(slot, n, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------ */
/* The driver's own counters (fakecuda's libcuda only)                      */
/* ------------------------------------------------------------------------ */

static const unsigned long long *drv_counts;
static const char *const *drv_names;
static int drv_n;

static void drv_counts_open(void)
{
	fakecuda_call_counts_fn fn;

	fn = (fakecuda_call_counts_fn)dlsym(RTLD_DEFAULT,
					    "fakecuda_call_counts");
	if (fn)
		drv_n = fn(&drv_names, &drv_counts);
	if (drv_n != W_FIRST_RUNTIME)	/* another build: do not guess */
		drv_n = 0;
}

static void drv_snapshot(unsigned long long *out)
{
	int i;

	for (i = 0; i < drv_n; i++)
		out[i] = __atomic_load_n(&drv_counts[i], __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------ */
/* Shared pieces of the scenarios                                           */
/* ------------------------------------------------------------------------ */

/* vecAdd(float *, float *, float *, int) */
#define KERNEL_NAME	"_Z6vecAddPfS_S_i"
#define MiB		(1024ULL * 1024)

static const char vecadd_ptx[] =
	"//\n// fakecuda workload: one kernel, no body worth running\n//\n"
	".version 8.0\n"
	".target sm_90\n"
	".address_size 64\n"
	"\n"
	".visible .entry " KERNEL_NAME "(\n"
	"\t.param .u64 a,\n\t.param .u64 b,\n\t.param .u64 c,\n"
	"\t.param .u32 n\n"
	")\n{\n\tret;\n}\n";

/* A fat binary: header only (magic, version 1, header size 16, no parts). */
static const unsigned long long saxpy_fatbin[2] = FATBIN_EMPTY;

/* What nvcc emits as __fatDeviceText and passes to __cudaRegisterFatBinary. */
static struct fatbin_wrapper saxpy_wrapper = {
	.magic = FATBINC_MAGIC,
	.version = 1,
	.data = saxpy_fatbin,
};

static char saxpy_device_name[] = "_Z11saxpyKernelfPKfPf";

/* vecAdd with the global device probes reach their maps through
 * (devrt/src/inject.c): what a patched module declares. */
static const char vecadd_probed_ptx[] =
	"//\n// fakecuda workload: vecAdd as a patched module declares it\n//\n"
	".version 8.0\n"
	".target sm_90\n"
	".address_size 64\n"
	"\n"
	".visible .const .align 8 .u64 __gpuext_shared;\n"
	"\n"
	".visible .entry " KERNEL_NAME "(\n"
	"\t.param .u64 a,\n\t.param .u64 b,\n\t.param .u64 c,\n"
	"\t.param .u32 n\n"
	")\n{\n\tret;\n}\n";

/* The kernels of the inject scenario's fat binary and library. */
#define SCALE_NAME	"_Z5scalePfi"
#define LIB_NAME	"add_kernel"

static const char scale_ptx[] =
	"//\n// fakecuda workload: scale, the PTX entry of a fat binary\n//\n"
	".version 8.0\n.target sm_80\n.address_size 64\n\n"
	".visible .entry " SCALE_NAME "(\n\t.param .u64 x,\n\t.param .u32 n\n"
	")\n{\n\tret;\n}\n";

static const char lib_ptx[] =
	"//\n// fakecuda workload: a Triton-style library kernel\n//\n"
	".version 8.0\n.target sm_90a\n.address_size 64\n\n"
	".visible .entry " LIB_NAME "(\n\t.param .u64 x,\n\t.param .u64 y\n"
	")\n.maxntid 128, 1, 1\n{\n\tret;\n}\n";

/* An ELF cubin as far as anyone looks without a GPU: the ELF magic. */
static const unsigned char sass_cubin[64] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };

/*
 * A fat binary of a PTX entry (ptx, for sm_<arch>) and an ELF entry (the
 * cubin above, sm_90), laid out as nvcc does: 16-byte header, then per
 * entry a 64-byte header {kind 1 PTX / 2 ELF, 0x0101, header size, payload
 * size, compressed size, options offset, minor, major, arch, name offset,
 * name length, flags (64-bit | Linux), 0, decompressed size} (a PTX
 * entry's is 72 bytes: its options at 64, the offset and size of ptxas
 * options, none here) and the payload, padded to 8 bytes.  Returns the bytes, 8-aligned (static).
 */
static const void *build_fatbin(const char *ptx, unsigned int arch)
{
	static unsigned long long buf[1024];
	unsigned char *b = (unsigned char *)buf, *e;
	size_t plen = (strlen(ptx) + 1 + 7) & ~(size_t)7, off = 16;
	unsigned long long size, flags = 0x11;
	unsigned int u32;
	unsigned short u16;

	memset(buf, 0, sizeof(buf));
	u32 = 0xba55ed50u, memcpy(b, &u32, 4);
	u16 = 1, memcpy(b + 4, &u16, 2);
	u16 = 16, memcpy(b + 6, &u16, 2);
	/* PTX */
	e = b + off;
	u16 = 1, memcpy(e, &u16, 2);
	u16 = 0x0101, memcpy(e + 2, &u16, 2);
	u32 = 72, memcpy(e + 4, &u32, 4);
	size = plen, memcpy(e + 8, &size, 8);
	u32 = 64, memcpy(e + 20, &u32, 4);
	u16 = 8, memcpy(e + 26, &u16, 2);
	memcpy(e + 28, &arch, 4);
	memcpy(e + 40, &flags, 8);
	memcpy(e + 72, ptx, strlen(ptx));
	off += 72 + plen;
	/* ELF */
	e = b + off;
	u16 = 2, memcpy(e, &u16, 2);
	u16 = 0x0101, memcpy(e + 2, &u16, 2);
	u32 = 64, memcpy(e + 4, &u32, 4);
	size = sizeof(sass_cubin), memcpy(e + 8, &size, 8);
	u32 = 90, memcpy(e + 28, &u32, 4);
	memcpy(e + 40, &flags, 8);
	memcpy(e + 64, sass_cubin, sizeof(sass_cubin));
	off += 64 + sizeof(sass_cubin);
	size = off - 16, memcpy(b + 8, &size, 8);
	return buf;
}

/* Kernel arguments: placeholders, the fake driver does not read them. */
struct vecadd_args {
	CUdeviceptr a, b, c;
	int n;
	void *params[4];
};

/* lib_ptx loaded as a library, and its kernel LIB_NAME. */
static void load_lib(struct run *r, CUlibrary *lib, CUkernel *kern)
{
	CU(r, CUDA_SUCCESS, cuLibraryLoadData, lib, lib_ptx, NULL, NULL, 0,
	   NULL, NULL, 0);
	CU(r, CUDA_SUCCESS, cuLibraryGetKernel, kern, *lib, LIB_NAME);
}

static void vecadd_args_init(struct vecadd_args *k)
{
	k->a = k->b = k->c = 0;
	k->n = 1 << 20;
	k->params[0] = &k->a;
	k->params[1] = &k->b;
	k->params[2] = &k->c;
	k->params[3] = &k->n;
}

static CUcontext setup(struct run *r)
{
	CUcontext ctx = NULL;

	CU(r, CUDA_SUCCESS, cuInit, 0);
	CU(r, CUDA_SUCCESS, cuDevicePrimaryCtxRetain, &ctx, 0);
	CU(r, CUDA_SUCCESS, cuCtxSetCurrent, ctx);
	return ctx;
}

static void teardown(struct run *r)
{
	CU(r, CUDA_SUCCESS, cuDevicePrimaryCtxRelease_v2, 0);
}

static CUmodule load_vecadd(struct run *r, CUfunction *f)
{
	CUmodule mod = NULL;

	CU(r, CUDA_SUCCESS, cuModuleLoadData, &mod, vecadd_ptx);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, f, mod, KERNEL_NAME);
	return mod;
}

static void storm(struct run *r, CUfunction f, CUstream s, unsigned long n)
{
	struct vecadd_args k;
	unsigned long i;

	vecadd_args_init(&k);
	for (i = 0; i < n; i++)
		CU(r, CUDA_SUCCESS, cuLaunchKernel, f, 128, 1, 1, 256, 1, 1,
		   1024, s, k.params, NULL);
	add(&r->launches, n);
}

static void extra_appendf(struct run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void extra_appendf(struct run *r, const char *fmt, ...)
{
	size_t old = r->extra ? strlen(r->extra) : 0;
	va_list ap;
	char *more;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&more, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	r->extra = realloc(r->extra, old + n + 1);
	if (r->extra)
		memcpy(r->extra + old, more, n + 1);
	free(more);
}

/* ------------------------------------------------------------------------ */
/* Scenarios                                                                */
/* ------------------------------------------------------------------------ */

static void sc_launch_storm(struct run *r)
{
	CUstream s = NULL;
	CUfunction f = NULL;
	CUmodule mod;

	setup(r);
	CU(r, CUDA_SUCCESS, cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
	mod = load_vecadd(r, &f);
	storm(r, f, s, r->args[0]);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuStreamDestroy_v2, s);
	CU(r, CUDA_SUCCESS, cuModuleUnload, mod);
	teardown(r);
}

static void sc_alloc_leak(struct run *r)
{
	CUdeviceptr d[10] = { 0 }, managed = 0, async = 0;
	void *host = NULL;
	int i;

	setup(r);
	for (i = 0; i < 10; i++)
		if (CU(r, CUDA_SUCCESS, cuMemAlloc_v2, &d[i], 1 * MiB))
			add(&r->mem[M_DEVICE_ALLOC], 1 * MiB);
	for (i = 0; i < 7; i++)		/* d[7..9] leak */
		if (CU(r, CUDA_SUCCESS, cuMemFree_v2, d[i]))
			add(&r->mem[M_DEVICE_FREE], 1 * MiB);

	if (CU(r, CUDA_SUCCESS, cuMemAllocManaged, &managed, 4 * MiB,
	       CU_MEM_ATTACH_GLOBAL))
		add(&r->mem[M_MANAGED_ALLOC], 4 * MiB);
	CU(r, CUDA_SUCCESS, cuMemPrefetchAsync, managed, 4 * MiB, 0, NULL);
	CU(r, CUDA_SUCCESS, cuMemAdvise, managed, 4 * MiB,
	   CU_MEM_ADVISE_SET_READ_MOSTLY, 0);
	if (CU(r, CUDA_SUCCESS, cuMemFree_v2, managed))
		add(&r->mem[M_MANAGED_FREE], 4 * MiB);

	if (CU(r, CUDA_SUCCESS, cuMemAllocHost_v2, &host, 64 * 1024))
		add(&r->mem[M_HOST_ALLOC], 64 * 1024);
	if (CU(r, CUDA_SUCCESS, cuMemFreeHost, host))
		add(&r->mem[M_HOST_FREE], 64 * 1024);

	if (CU(r, CUDA_SUCCESS, cuMemAllocAsync, &async, 2 * MiB, NULL))
		add(&r->mem[M_ASYNC_ALLOC], 2 * MiB);
	if (CU(r, CUDA_SUCCESS, cuMemFreeAsync, async, NULL))
		add(&r->mem[M_ASYNC_FREE], 2 * MiB);
	teardown(r);
}

static void sc_copies(struct run *r)
{
	CUdeviceptr d1 = 0, d2 = 0;
	CUDA_MEMCPY2D c2;
	CUDA_MEMCPY3D c3;
	CUstream s = NULL;
	CUcontext ctx;
	char *h;
	int i;

	h = calloc(1, 64 * 1024);
	if (!EXPECT(r, h != NULL))
		return;
	ctx = setup(r);
	for (i = 0; i < 2; i++)
		if (CU(r, CUDA_SUCCESS, cuMemAlloc_v2, i ? &d2 : &d1, 65536))
			add(&r->mem[M_DEVICE_ALLOC], 65536);
	CU(r, CUDA_SUCCESS, cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);

	for (i = 0; i < 3; i++)
		if (CU(r, CUDA_SUCCESS, cuMemcpyHtoD_v2, d1 + i * 4096, h,
		       4096))
			add(&r->bytes[B_HTOD], 4096);
	for (i = 0; i < 2; i++)
		if (CU(r, CUDA_SUCCESS, cuMemcpyDtoH_v2, h, d1 + i * 8192,
		       8192))
			add(&r->bytes[B_DTOH], 8192);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoD_v2, d2, d1, 65536))
		add(&r->bytes[B_DTOD], 65536);
	if (CU(r, CUDA_SUCCESS, cuMemcpyHtoDAsync_v2, d1, h, 1000, s))
		add(&r->bytes[B_HTOD], 1000);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoHAsync_v2, h, d2, 2000, s))
		add(&r->bytes[B_DTOH], 2000);
	if (CU(r, CUDA_SUCCESS, cuMemcpyPeer, d2, ctx, d1, ctx, 512))
		add(&r->bytes[B_PEER], 512);

	/* 256 x 4 rows from a packed host buffer into a pitched device one. */
	memset(&c2, 0, sizeof(c2));
	c2.srcMemoryType = CU_MEMORYTYPE_HOST;
	c2.srcHost = h;
	c2.srcPitch = 256;
	c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c2.dstDevice = d1;
	c2.dstPitch = 512;
	c2.WidthInBytes = 256;
	c2.Height = 4;
	if (CU(r, CUDA_SUCCESS, cuMemcpy2D_v2, &c2))
		add(&r->bytes[B_HTOD], 256 * 4);

	/* A 64 x 4 x 2 box from device to host. */
	memset(&c3, 0, sizeof(c3));
	c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c3.srcDevice = d2;
	c3.srcPitch = 64;
	c3.srcHeight = 4;
	c3.dstMemoryType = CU_MEMORYTYPE_HOST;
	c3.dstHost = h;
	c3.dstPitch = 64;
	c3.dstHeight = 4;
	c3.WidthInBytes = 64;
	c3.Height = 4;
	c3.Depth = 2;
	if (CU(r, CUDA_SUCCESS, cuMemcpy3D_v2, &c3))
		add(&r->bytes[B_DTOH], 64 * 4 * 2);

	if (CU(r, CUDA_SUCCESS, cuMemsetD8_v2, d1, 0xab, 4096))
		add(&r->bytes[B_MEMSET], 4096);
	if (CU(r, CUDA_SUCCESS, cuMemsetD32_v2, d2, 0xdeadbeef, 1024))
		add(&r->bytes[B_MEMSET], 1024 * 4);

	CU(r, CUDA_SUCCESS, cuStreamSynchronize, s);
	CU(r, CUDA_SUCCESS, cuStreamDestroy_v2, s);
	if (CU(r, CUDA_SUCCESS, cuMemFree_v2, d1))
		add(&r->mem[M_DEVICE_FREE], 65536);
	if (CU(r, CUDA_SUCCESS, cuMemFree_v2, d2))
		add(&r->mem[M_DEVICE_FREE], 65536);
	teardown(r);
	free(h);
}

static void sc_errors(struct run *r)
{
	CUcontext none = NULL;
	CUdeviceptr p = 0;
	CUfunction f = NULL;
	CUmodule mod = NULL;

	setup(r);
	CU(r, CUDA_SUCCESS, cuModuleLoadData, &mod, vecadd_ptx);
	CU(r, CUDA_ERROR_INVALID_VALUE, cuMemAlloc_v2, &p, 0);
	CU(r, CUDA_ERROR_INVALID_VALUE, cuMemFree_v2, 0xdeadbeef000ULL);
	CU(r, CUDA_ERROR_NOT_FOUND, cuModuleGetFunction, &f, mod,
	   "missing_kernel");
	CU(r, CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy_v2, none);
	CU(r, CUDA_ERROR_INVALID_HANDLE, cuLaunchKernel, NULL, 1, 1, 1, 1, 1,
	   1, 0, NULL, NULL, NULL);
	CU(r, CUDA_SUCCESS, cuModuleUnload, mod);
	teardown(r);
}

struct thread_arg {
	struct run *r;
	CUcontext ctx;
	CUfunction f;
	unsigned long n;
	pid_t tid;
	pthread_t thread;
};

static void *launcher(void *p)
{
	struct thread_arg *t = p;
	CUstream s = NULL;

	t->tid = (pid_t)syscall(SYS_gettid);
	CU(t->r, CUDA_SUCCESS, cuCtxSetCurrent, t->ctx);
	CU(t->r, CUDA_SUCCESS, cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
	storm(t->r, t->f, s, t->n);
	CU(t->r, CUDA_SUCCESS, cuStreamSynchronize, s);
	CU(t->r, CUDA_SUCCESS, cuStreamDestroy_v2, s);
	return NULL;
}

static void sc_threads(struct run *r)
{
	unsigned long i, nthreads = r->args[0];
	struct thread_arg *t;
	CUfunction f = NULL;
	CUcontext ctx;
	CUmodule mod;

	t = calloc(nthreads ? nthreads : 1, sizeof(*t));
	if (!EXPECT(r, t != NULL))
		return;
	ctx = setup(r);
	mod = load_vecadd(r, &f);
	for (i = 0; i < nthreads; i++) {
		t[i] = (struct thread_arg){ r, ctx, f, r->args[1], 0, 0 };
		if (pthread_create(&t[i].thread, NULL, launcher, &t[i])) {
			fail(r, __LINE__, "pthread_create failed");
			nthreads = i;
		}
	}
	extra_appendf(r, ",\"tids\":[");
	for (i = 0; i < nthreads; i++) {
		pthread_join(t[i].thread, NULL);
		extra_appendf(r, "%s%d", i ? "," : "", (int)t[i].tid);
	}
	extra_appendf(r, "]");
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuModuleUnload, mod);
	teardown(r);
	free(t);
}

/* Reads fd to EOF; the result is NUL-terminated, without trailing newline. */
static char *read_all(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	while (buf) {
		if (len + 1 == cap) {
			char *more = realloc(buf, cap *= 2);

			if (!more) {
				free(buf);
				return NULL;
			}
			buf = more;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	if (!buf)
		return NULL;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	buf[len] = '\0';
	return buf;
}

struct scenario {
	const char *name;
	void (*fn)(struct run *r);
	int nargs;
	unsigned long defaults[2];
};

static char *run_json(const struct run *r, char **parts, int nparts);
static void run_scenario(const struct scenario *sc, struct run *r);

/*
 * Forks.  The child runs child(arg) with its stdout on a pipe and does not
 * return (it execs or exits); the parent embeds the child's JSON line in
 * its own as "child".  Returns 0 if there was no child.
 */
static int fork_child(struct run *r, void (*child)(void *), void *arg)
{
	int fds[2], status = 0;
	char *child_json;
	pid_t pid;

	fflush(NULL);
	if (pipe(fds)) {
		fail(r, __LINE__, "pipe failed");
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		child(arg);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		fail(r, __LINE__, "fork failed");
		return 0;
	}
	child_json = read_all(fds[0]);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	EXPECT(r, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	extra_appendf(r,
		      ",\"child\":{\"pid\":%d,\"exit_status\":%d,"
		      "\"result\":%s}", (int)pid,
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		      child_json && child_json[0] == '{' ? child_json : "null");
	free(child_json);
	return 1;
}

/* fork-child's child: this program again, as launch-storm N. */
static void exec_storm(void *arg)
{
	const char *w = getenv("FAKECUDA_CHILD_WAIT_FILE");
	char self[4096];
	ssize_t n;

	if (w)
		setenv("FAKECUDA_WAIT_FILE", w, 1);
	else
		unsetenv("FAKECUDA_WAIT_FILE");
	/* Where /proc/self/exe points (valgrind emulates this). */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	execl(n > 0 ? self : "/proc/self/exe", "workload", "launch-storm",
	      (const char *)arg, (char *)NULL);
}

static void sc_fork_child(struct run *r)
{
	const char *delay = getenv("FAKECUDA_FORK_DELAY_MS");
	long ms = delay ? atol(delay) : 100;
	struct timespec ts;
	char nbuf[32];

	setup(r);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);

	snprintf(nbuf, sizeof(nbuf), "%lu", r->args[0]);
	if (fork_child(r, exec_storm, nbuf))
		CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	teardown(r);
}

/* fork-noexec's child: more launches in the forked copy, no exec. */
static CUfunction noexec_fn;

static void sc_noexec_child(struct run *r)
{
	storm(r, noexec_fn, NULL, r->args[0]);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
}

static const struct scenario noexec_child = {
	"fork-noexec-child", sc_noexec_child, 1, { 0 },
};

static void storm_in_child(void *arg)
{
	struct run *c = calloc(1, sizeof(*c));
	char *json;

	if (!c)
		exit(1);
	c->nargs = 1;
	c->args[0] = *(unsigned long *)arg;
	run_scenario(&noexec_child, c);
	json = run_json(c, NULL, 0);
	if (json)
		printf("%s\n", json);
	fflush(stdout);
	/* exit, not _exit: the child's atexit handlers run, as a program's do. */
	exit(c->unexpected || !json ? 1 : 0);
}

static void sc_fork_noexec(struct run *r)
{
	CUfunction f = NULL;
	CUmodule mod;

	setup(r);
	mod = load_vecadd(r, &f);
	storm(r, f, NULL, r->args[0]);
	noexec_fn = f;
	fork_child(r, storm_in_child, &r->args[0]);
	storm(r, f, NULL, r->args[0]);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuModuleUnload, mod);
	teardown(r);
}

/*
 * The host stub nvcc would generate for
 *     __global__ void saxpyKernel(float a, const float *x, float *y);
 * Its ELF symbol is the kernel's mangled name, so a tracer that symbolizes
 * cudaLaunchKernel's first argument finds "_Z11saxpyKernelfPKfPf".  Like a
 * real stub it takes the launch configuration from a side channel (nvcc uses
 * __cudaPopCallConfiguration) and calls cudaLaunchKernel itself, or, with
 * stub_ex set, cudaLaunchKernelExC (as PyTorch built for CUDA 13 does), or,
 * with stub_tramp set, __cudaLaunchKernel (as CUDA 13's nvcc stubs do).
 */
void saxpy_stub(float a, const float *x, float *y)
	__asm__("_Z11saxpyKernelfPKfPf");

static struct run *stub_run;
static dim3 stub_grid, stub_block;
static int stub_ptsz, stub_ex, stub_tramp;
static size_t stub_shmem;	/* cudaLaunchKernelExC, __cudaLaunchKernel */

__attribute__((noinline)) void saxpy_stub(float a, const float *x, float *y)
{
	void *args[] = { &a, &x, &y };
	const cudaLaunchConfig_t cfg = {
		.gridDim = stub_grid, .blockDim = stub_block,
		.dynamicSmemBytes = stub_shmem, .stream = NULL,
	};

	if (stub_ex && stub_ptsz)
		CU(stub_run, cudaSuccess, cudaLaunchKernelExC_ptsz, &cfg,
		   (const void *)saxpy_stub, args);
	else if (stub_ex)
		CU(stub_run, cudaSuccess, cudaLaunchKernelExC, &cfg,
		   (const void *)saxpy_stub, args);
	else if (stub_tramp && stub_ptsz)
		CU(stub_run, cudaSuccess, __cudaLaunchKernel_ptsz,
		   (const void *)saxpy_stub, stub_grid, stub_block, args,
		   stub_shmem, NULL);
	else if (stub_tramp)
		CU(stub_run, cudaSuccess, __cudaLaunchKernel,
		   (const void *)saxpy_stub, stub_grid, stub_block, args,
		   stub_shmem, NULL);
	else if (stub_ptsz)
		CU(stub_run, cudaSuccess, cudaLaunchKernel_ptsz,
		   (const void *)saxpy_stub, stub_grid, stub_block, args, 0,
		   NULL);
	else
		CU(stub_run, cudaSuccess, cudaLaunchKernel,
		   (const void *)saxpy_stub, stub_grid, stub_block, args, 0,
		   NULL);
}

/* A host function that was never registered as a kernel stub. */
__attribute__((noinline)) static void unregistered_stub(void)
{
	__asm__ volatile("" ::: "memory");
}

static void **register_saxpy(struct run *r)
{
	void **handle;

	handle = __cudaRegisterFatBinary(&saxpy_wrapper);
	COUNT(r, __cudaRegisterFatBinary);
	if (!EXPECT(r, handle != NULL))
		return NULL;
	__cudaRegisterFunction(handle, (const char *)saxpy_stub,
			       saxpy_device_name, saxpy_device_name, -1, NULL,
			       NULL, NULL, NULL, NULL);
	COUNT(r, __cudaRegisterFunction);
	__cudaRegisterFatBinaryEnd(handle);
	COUNT(r, __cudaRegisterFatBinaryEnd);
	return handle;
}

static void unregister_saxpy(struct run *r, void **handle)
{
	if (!handle)
		return;
	__cudaUnregisterFatBinary(handle);
	COUNT(r, __cudaUnregisterFatBinary);
}

/* register, N launches of the saxpy stub as configured, sync, unregister;
 * ex: through cudaLaunchKernelExC, tramp: through __cudaLaunchKernel */
static void runtime_launches(struct run *r, dim3 grid, dim3 block,
			     size_t shmem, int ex, int tramp)
{
	unsigned long i;
	void **handle;

	handle = register_saxpy(r);
	if (!handle)
		return;
	stub_run = r;
	stub_grid = grid;
	stub_block = block;
	stub_shmem = shmem;
	stub_ptsz = 0;
	stub_ex = ex;
	stub_tramp = tramp;
	for (i = 0; i < r->args[0]; i++)
		saxpy_stub(2.0f, NULL, NULL);
	stub_ex = 0;
	stub_tramp = 0;
	stub_shmem = 0;
	add(&r->launches, r->args[0]);
	CU(r, cudaSuccess, cudaDeviceSynchronize);
	unregister_saxpy(r, handle);
}

static void sc_runtime(struct run *r)
{
	runtime_launches(r, (dim3){ 64, 1, 1 }, (dim3){ 128, 1, 1 }, 0, 0, 0);
}

static void sc_runtime_ex(struct run *r)
{
	runtime_launches(r, (dim3){ 32, 2, 1 }, (dim3){ 64, 2, 1 }, 256, 1, 0);
}

static void sc_runtime_stub(struct run *r)
{
	runtime_launches(r, (dim3){ 16, 4, 1 }, (dim3){ 32, 4, 1 }, 128, 0, 1);
}

static void sc_runtime_unlaunched(struct run *r)
{
	void **handle;

	handle = register_saxpy(r);
	if (!handle)
		return;
	CU(r, cudaSuccess, cudaDeviceSynchronize);
	unregister_saxpy(r, handle);
}

static void sc_runtime_many(struct run *r)
{
	unsigned long i, n = r->args[0];
	char *stubs, *names;
	void **handle;

	stubs = calloc(n ? n : 1, 1);
	names = calloc(n ? n : 1, 32);
	if (!EXPECT(r, stubs && names))
		goto out;
	handle = register_saxpy(r);
	if (!handle)
		goto out;
	for (i = 0; i < n; i++) {
		snprintf(names + i * 32, 32, "_Z7kernel%luv", i);
		__cudaRegisterFunction(handle, stubs + i, names + i * 32,
				       names + i * 32, -1, NULL, NULL, NULL,
				       NULL, NULL);
		COUNT(r, __cudaRegisterFunction);
	}
	stub_run = r;
	stub_grid = (dim3){ 64, 1, 1 };
	stub_block = (dim3){ 128, 1, 1 };
	stub_ptsz = 0;
	saxpy_stub(2.0f, NULL, NULL);
	add(&r->launches, 1);
	CU(r, cudaSuccess, cudaDeviceSynchronize);
	unregister_saxpy(r, handle);
out:
	free(stubs);
	free(names);
}

static void sc_runtime_errors(struct run *r)
{
	dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
	void *p = &p;
	const char *name;

	CU(r, cudaErrorInvalidDeviceFunction, cudaLaunchKernel,
	   (const void *)unregistered_stub, grid, block, NULL, 0, NULL);
	CU(r, cudaErrorInvalidValue, cudaFree, (void *)0xdeadbeef000ULL);
	if (CU(r, cudaSuccess, cudaMalloc, &p, 0))
		EXPECT(r, p == NULL);
	name = cudaGetErrorName(cudaErrorInvalidDeviceFunction);
	COUNT(r, cudaGetErrorName);
	EXPECT(r, strcmp(name, "cudaErrorInvalidDeviceFunction") == 0);
}

typedef __typeof__(&cuLaunchKernel) launch_fn;
typedef __typeof__(&cuMemAlloc_v2) alloc_fn;
typedef __typeof__(&cuMemFree_v2) free_fn;

static void *get_proc(struct run *r, const char *symbol)
{
	CUdriverProcAddressQueryResult status = -1;
	void *fn = NULL;

	CU(r, CUDA_SUCCESS, cuGetProcAddress_v2, symbol, &fn, 12080,
	   CU_GET_PROC_ADDRESS_DEFAULT, &status);
	EXPECT(r, status == CU_GET_PROC_ADDRESS_SUCCESS && fn != NULL);
	return fn;
}

static void sc_procaddr(struct run *r)
{
	struct vecadd_args k;
	CUfunction f = NULL;
	launch_fn launch;
	unsigned long i;
	alloc_fn alloc;
	free_fn release;
	CUmodule mod;

	setup(r);
	mod = load_vecadd(r, &f);
	launch = (launch_fn)get_proc(r, "cuLaunchKernel");
	alloc = (alloc_fn)get_proc(r, "cuMemAlloc");
	release = (free_fn)get_proc(r, "cuMemFree");
	/* The pointers are the exported symbols, not private copies. */
	EXPECT(r, launch == cuLaunchKernel);
	EXPECT(r, alloc == cuMemAlloc_v2);
	EXPECT(r, release == cuMemFree_v2);
	if (!launch || !alloc || !release) {
		teardown(r);
		return;
	}
	vecadd_args_init(&k);
	for (i = 0; i < r->args[0]; i++) {
		CUdeviceptr p = 0;

		CU_PTR(r, CUDA_SUCCESS, cuLaunchKernel, launch, f, 128, 1, 1,
		       256, 1, 1, 1024, NULL, k.params, NULL);
		if (CU_PTR(r, CUDA_SUCCESS, cuMemAlloc_v2, alloc, &p, 4096))
			add(&r->mem[M_DEVICE_ALLOC], 4096);
		if (CU_PTR(r, CUDA_SUCCESS, cuMemFree_v2, release, p))
			add(&r->mem[M_DEVICE_FREE], 4096);
	}
	add(&r->launches, r->args[0]);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuModuleUnload, mod);
	teardown(r);
}

#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define LG CU_GET_PROC_ADDRESS_LEGACY_STREAM

/*
 * Base name, version, flags -> the symbol the driver must return (NULL: none)
 * and the result it must give.
 */
static const struct {
	const char *symbol;
	int version;
	cuuint64_t flags;
	const char *expect;
	CUresult result;
	CUdriverProcAddressQueryResult status;
} procaddr_cases[] = {
	{ "cuLaunchKernel", 12080, 0, "cuLaunchKernel", 0, 0 },
	{ "cuLaunchKernel", 12080, LG, "cuLaunchKernel", 0, 0 },
	{ "cuLaunchKernel", 12080, PT, "cuLaunchKernel_ptsz", 0, 0 },
	{ "cuMemAlloc", 12080, 0, "cuMemAlloc_v2", 0, 0 },
	{ "cuMemcpyHtoD", 12080, 0, "cuMemcpyHtoD_v2", 0, 0 },
	{ "cuMemcpyHtoD", 12080, PT, "cuMemcpyHtoD_v2_ptds", 0, 0 },
	{ "cuMemcpyHtoDAsync", 12080, PT, "cuMemcpyHtoDAsync_v2_ptsz", 0, 0 },
	{ "cuCtxCreate", 12050, 0, "cuCtxCreate_v4", 0, 0 },
	{ "cuCtxCreate", 12040, 0, "cuCtxCreate_v3", 0, 0 },
	{ "cuCtxCreate", 11030, 0, "cuCtxCreate_v2", 0, 0 },
	{ "cuMemPrefetchAsync", 12000, 0, "cuMemPrefetchAsync", 0, 0 },
	{ "cuMemPrefetchAsync", 12080, PT, "cuMemPrefetchAsync_v2_ptsz", 0, 0 },
	{ "cuMemAdvise", 12020, 0, "cuMemAdvise_v2", 0, 0 },
	{ "cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", 0, 0 },
	{ "cuGetProcAddress", 11080, 0, "cuGetProcAddress", 0, 0 },
	{ "cuGraphLaunch", 13000, PT, "cuGraphLaunch_ptsz", 0, 0 },
	{ "cuCtxSynchronize", 12080, PT, "cuCtxSynchronize", 0, 0 },
	/* misses: CUDA 12+ reports them in the status, not the result */
	{ "cuLaunchKernelEx", 11040, 0, NULL, CUDA_SUCCESS,
	  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT },
	{ "cuMemAlloc_v2", 12080, 0, NULL, CUDA_SUCCESS,
	  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND },
	{ "cuNoSuchFunction", 12080, 0, NULL, CUDA_SUCCESS,
	  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND },
	/* a version newer than the driver, and a bad flag */
	{ "cuLaunchKernel", 13010, 0, NULL, CUDA_ERROR_INVALID_VALUE, -1 },
	{ "cuLaunchKernel", 12080, 1ULL << 5, NULL, CUDA_ERROR_INVALID_VALUE,
	  -1 },
};

static void sc_procaddr_table(struct run *r)
{
	char msg[256];
	size_t i;
	void *fn;

	for (i = 0; i < sizeof(procaddr_cases) / sizeof(procaddr_cases[0]);
	     i++) {
		CUdriverProcAddressQueryResult status = -1;
		void *want = NULL;

		fn = (void *)1;
		if (procaddr_cases[i].expect)
			want = dlsym(RTLD_DEFAULT, procaddr_cases[i].expect);
		if (!CU(r, procaddr_cases[i].result, cuGetProcAddress_v2,
			procaddr_cases[i].symbol, &fn,
			procaddr_cases[i].version, procaddr_cases[i].flags,
			&status))
			continue;
		if (procaddr_cases[i].result)
			continue;
		if (fn != want || status != procaddr_cases[i].status) {
			snprintf(msg, sizeof(msg),
				 "cuGetProcAddress_v2(%s, %d, %#llx): got %p "
				 "status %d, want %s (%p) status %d",
				 procaddr_cases[i].symbol,
				 procaddr_cases[i].version,
				 procaddr_cases[i].flags, fn, status,
				 procaddr_cases[i].expect ?
				 procaddr_cases[i].expect : "NULL",
				 want, procaddr_cases[i].status);
			fail(r, __LINE__, msg);
		}
	}
	/* The CUDA 11 signature reports a miss as an error. */
	CU(r, CUDA_ERROR_NOT_FOUND, cuGetProcAddress, "cuNoSuchFunction", &fn,
	   11080, 0);
}

/* Every exported function at least once, all succeeding. */
static void sc_every_api(struct run *r)
{
	static const char host_src[4096];
	static char host_reg[8192] __attribute__((aligned(4096)));
	CUdeviceptr d1 = 0, d2 = 0, m = 0, a1 = 0, a2 = 0, gp = 0;
	size_t gsize = 0;
	CUmodule m1 = NULL, m2 = NULL, m3 = NULL;
	CUcontext ctx, c2 = NULL, c3 = NULL, c4 = NULL, cur = NULL;
	CUmemLocation dev0 = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
	CUmemLocation host = { CU_MEM_LOCATION_TYPE_HOST, 0 };
	CUevent e0 = NULL, e1 = NULL;
	CUfunction f = NULL, kf = NULL;
	CUgraphExec ge = NULL;
	CUgraphNode gn = NULL;
	CUlibrary lib = NULL;
	CUkernel kern = NULL;
	CUstream s = NULL;
	CUgraph g = NULL;
	CUdriverProcAddressQueryResult st;
	struct vecadd_args k;
	CUlaunchConfig cfg;
	CUDA_MEMCPY2D c2d;
	CUDA_MEMCPY3D c3d;
	void *h1 = NULL, *h2 = NULL, *p = NULL, *fn = NULL, **handle;
	const char *str = NULL;
	int v = 0, n = 0;
	CUdevice dev = -1;
	float ms = -1;
	int i;

	/* init, devices, errors, entry points, contexts */
	ctx = setup(r);
	if (CU(r, CUDA_SUCCESS, cuDriverGetVersion, &v))
		EXPECT(r, v == 13000);
	CU(r, CUDA_SUCCESS, cuDeviceGet, &dev, 0);
	if (CU(r, CUDA_SUCCESS, cuDeviceGetCount, &n))
		EXPECT(r, n == 1);
	if (CU(r, CUDA_SUCCESS, cuGetErrorName, CUDA_ERROR_INVALID_VALUE, &str))
		EXPECT(r, strcmp(str, "CUDA_ERROR_INVALID_VALUE") == 0);
	CU(r, CUDA_SUCCESS, cuGetErrorString, CUDA_ERROR_OUT_OF_MEMORY, &str);
	if (CU(r, CUDA_SUCCESS, cuGetProcAddress, "cuMemAlloc", &fn, 11080, 0))
		EXPECT(r, fn == (void *)cuMemAlloc_v2);
	if (CU(r, CUDA_SUCCESS, cuGetProcAddress_v2, "cuLaunchKernel", &fn,
	       12080, PT, &st))
		EXPECT(r, fn == (void *)cuLaunchKernel_ptsz);
	if (CU(r, CUDA_SUCCESS, cuCtxGetCurrent, &cur))
		EXPECT(r, cur == ctx);
	CU(r, CUDA_SUCCESS, cuCtxPushCurrent_v2, ctx);
	if (CU(r, CUDA_SUCCESS, cuCtxPopCurrent_v2, &cur))
		EXPECT(r, cur == ctx);
	CU(r, CUDA_SUCCESS, cuCtxCreate_v2, &c2, 0, 0);
	CU(r, CUDA_SUCCESS, cuCtxDestroy_v2, c2);
	CU(r, CUDA_SUCCESS, cuCtxCreate_v3, &c3, NULL, 0, 0, 0);
	CU(r, CUDA_SUCCESS, cuCtxDestroy_v2, c3);
	CU(r, CUDA_SUCCESS, cuCtxCreate_v4, &c4, NULL, 0, 0);
	CU(r, CUDA_SUCCESS, cuCtxDestroy_v2, c4);

	/* modules, libraries, kernels */
	CU(r, CUDA_SUCCESS, cuModuleLoadData, &m1, vecadd_probed_ptx);
	CU(r, CUDA_SUCCESS, cuModuleLoadDataEx, &m2, vecadd_ptx, 0, NULL, NULL);
	CU(r, CUDA_SUCCESS, cuModuleLoadFatBinary, &m3, saxpy_fatbin);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f, m1, KERNEL_NAME);
	CU(r, CUDA_SUCCESS, cuLibraryLoadData, &lib, vecadd_probed_ptx, NULL,
	   NULL, 0, NULL, NULL, 0);
	CU(r, CUDA_SUCCESS, cuLibraryGetKernel, &kern, lib, KERNEL_NAME);
	CU(r, CUDA_SUCCESS, cuKernelGetFunction, &kf, kern);
	/* the same from a file */
	{
		const char *tmp = getenv("TMPDIR");
		char path[256];
		CUmodule mf = NULL;
		CUlibrary lf = NULL;
		int fd;

		snprintf(path, sizeof(path), "%s/fakecuda-every-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		fd = mkstemp(path);
		if (EXPECT(r, fd >= 0)) {
			EXPECT(r, write(fd, vecadd_ptx, strlen(vecadd_ptx)) ==
				      (ssize_t)strlen(vecadd_ptx));
			close(fd);
			CU(r, CUDA_SUCCESS, cuModuleLoad, &mf, path);
			CU(r, CUDA_SUCCESS, cuLibraryLoadFromFile, &lf, path,
			   NULL, NULL, 0, NULL, NULL, 0);
			unlink(path);
			CU(r, CUDA_SUCCESS, cuModuleUnload, mf);
			CU(r, CUDA_SUCCESS, cuLibraryUnload, lf);
		}
	}

	/* module globals, mapped host memory, the device */
	if (CU(r, CUDA_SUCCESS, cuModuleGetGlobal_v2, &gp, &gsize, m1,
	       "__gpuext_shared"))
		EXPECT(r, gsize == 8);
	if (CU(r, CUDA_SUCCESS, cuLibraryGetGlobal, &gp, &gsize, lib,
	       "__gpuext_shared"))
		EXPECT(r, gsize == 8);
	{
		CUmodule lm = NULL;

		if (CU(r, CUDA_SUCCESS, cuLibraryGetModule, &lm, lib))
			EXPECT(r, lm != NULL);
	}
	{
		CUmodule fm = NULL;

		if (CU(r, CUDA_SUCCESS, cuFuncGetModule, &fm, f))
			EXPECT(r, fm == m1);
	}
	CU(r, CUDA_SUCCESS, cuMemHostRegister_v2, (void *)host_reg,
	   sizeof(host_reg), 0x02);
	if (CU(r, CUDA_SUCCESS, cuMemHostGetDevicePointer_v2, &gp,
	       (void *)host_reg, 0))
		EXPECT(r, gp == (CUdeviceptr)(uintptr_t)host_reg);
	if (CU(r, CUDA_SUCCESS, cuCtxGetDevice, &dev))
		EXPECT(r, dev == 0);
	{
		CUuuid u;

		if (CU(r, CUDA_SUCCESS, cuDeviceGetUuid_v2, &u, dev))
			EXPECT(r, !memcmp(u.bytes, "fakecuda-gpu", 12));
	}
	if (CU(r, CUDA_SUCCESS, cuDeviceGetAttribute, &v, 75, dev))
		EXPECT(r, v == 9);
	CU(r, CUDA_SUCCESS, cuFuncSetAttribute, f, 8, 64 * 1024);
	CU(r, CUDA_SUCCESS, cuKernelSetAttribute, 8, 64 * 1024, kern, 0);
	if (CU(r, CUDA_SUCCESS, cuFuncGetAttribute, &v, 8, f))
		EXPECT(r, v == 64 * 1024);
	if (CU(r, CUDA_SUCCESS, cuKernelGetAttribute, &v, 1, kern, 0))
		EXPECT(r, v == 0);

	/* streams, events, launches, graphs */
	CU(r, CUDA_SUCCESS, cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
	CU(r, CUDA_SUCCESS, cuStreamQuery, s);
	/* a stream memory operation on the mapped host memory (what devrt's
	 * anchor does) */
	CU(r, CUDA_SUCCESS, cuStreamWriteValue32_v2, s,
	   (CUdeviceptr)(uintptr_t)host_reg, 1, 0);
	EXPECT(r, __atomic_load_n((unsigned int *)host_reg, __ATOMIC_ACQUIRE) == 1);
	CU(r, CUDA_SUCCESS, cuMemHostUnregister, (void *)host_reg);
	CU(r, CUDA_SUCCESS, cuEventCreate, &e0, CU_EVENT_DEFAULT);
	CU(r, CUDA_SUCCESS, cuEventCreate, &e1, CU_EVENT_DEFAULT);
	CU(r, CUDA_SUCCESS, cuEventRecord, e0, s);
	vecadd_args_init(&k);
	CU(r, CUDA_SUCCESS, cuLaunchKernel, f, 128, 1, 1, 256, 1, 1, 1024, s,
	   k.params, NULL);
	CU(r, CUDA_SUCCESS, cuLaunchKernel_ptsz, f, 128, 1, 1, 256, 1, 1, 1024,
	   NULL, k.params, NULL);
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = 128, cfg.gridDimY = 1, cfg.gridDimZ = 1;
	cfg.blockDimX = 256, cfg.blockDimY = 1, cfg.blockDimZ = 1;
	cfg.sharedMemBytes = 1024;
	cfg.hStream = s;
	CU(r, CUDA_SUCCESS, cuLaunchKernelEx, &cfg, f, k.params, NULL);
	cfg.hStream = NULL;
	CU(r, CUDA_SUCCESS, cuLaunchKernelEx_ptsz, &cfg, kf, k.params, NULL);
	CU(r, CUDA_SUCCESS, cuLaunchCooperativeKernel, f, 64, 1, 1, 256, 1, 1,
	   0, s, k.params);
	CU(r, CUDA_SUCCESS, cuLaunchCooperativeKernel_ptsz, f, 64, 1, 1, 256, 1,
	   1, 0, NULL, k.params);
	CU(r, CUDA_SUCCESS, cuGraphCreate, &g, 0);
	{	/* one kernel node, its parameters set again, in the graph and
		 * in its exec */
		CUDA_KERNEL_NODE_PARAMS np;

		memset(&np, 0, sizeof(np));
		np.func = f;
		np.gridDimX = np.gridDimY = np.gridDimZ = 1;
		np.blockDimX = 64, np.blockDimY = np.blockDimZ = 1;
		np.kernelParams = k.params;
		CUDA_KERNEL_NODE_PARAMS_v1 v1;
		CUgraphNodeParams gp;
		CUgraphNode g1 = NULL, g2 = NULL, g3 = NULL;

		CU(r, CUDA_SUCCESS, cuGraphAddKernelNode_v2, &gn, g, NULL, 0, &np);
		CU(r, CUDA_SUCCESS, cuGraphKernelNodeSetParams_v2, gn, &np);
		if (CU(r, CUDA_SUCCESS, cuGraphKernelNodeGetParams_v2, gn, &np))
			EXPECT(r, np.func == f);
		memcpy(&v1, &np, sizeof(v1));
		CU(r, CUDA_SUCCESS, cuGraphAddKernelNode, &g1, g, NULL, 0, &v1);
		CU(r, CUDA_SUCCESS, cuGraphKernelNodeSetParams, g1, &v1);
		if (CU(r, CUDA_SUCCESS, cuGraphKernelNodeGetParams, g1, &v1))
			EXPECT(r, v1.func == f);
		memset(&gp, 0, sizeof(gp));
		gp.u.kernel = np;
		CU(r, CUDA_SUCCESS, cuGraphAddNode, &g2, g, NULL, 0, &gp);
		CU(r, CUDA_SUCCESS, cuGraphAddNode_v2, &g3, g, NULL, NULL, 0, &gp);
		CU(r, CUDA_SUCCESS, cuGraphNodeSetParams, g2, &gp);
		CU(r, CUDA_SUCCESS, cuGraphInstantiateWithFlags, &ge, g, 0);
		CU(r, CUDA_SUCCESS, cuGraphExecKernelNodeSetParams_v2, ge, gn, &np);
		CU(r, CUDA_SUCCESS, cuGraphExecKernelNodeSetParams, ge, g1, &v1);
		CU(r, CUDA_SUCCESS, cuGraphExecNodeSetParams, ge, g2, &gp);
	}
	CU(r, CUDA_SUCCESS, cuGraphLaunch, ge, s);
	CU(r, CUDA_SUCCESS, cuGraphLaunch_ptsz, ge, NULL);
	add(&r->launches, 8);
	CU(r, CUDA_SUCCESS, cuEventRecord_ptsz, e1, NULL);
	CU(r, CUDA_SUCCESS, cuStreamWaitEvent, s, e1, CU_EVENT_WAIT_DEFAULT);
	CU(r, CUDA_SUCCESS, cuStreamWaitEvent_ptsz, NULL, e0,
	   CU_EVENT_WAIT_DEFAULT);
	CU(r, CUDA_SUCCESS, cuEventSynchronize, e1);
	CU(r, CUDA_SUCCESS, cuEventQuery, e1);
	if (CU(r, CUDA_SUCCESS, cuEventElapsedTime, &ms, e0, e1))
		EXPECT(r, ms >= 0);

	/* memory */
	for (i = 0; i < 2; i++)
		if (CU(r, CUDA_SUCCESS, cuMemAlloc_v2, i ? &d2 : &d1, 65536))
			add(&r->mem[M_DEVICE_ALLOC], 65536);
	if (CU(r, CUDA_SUCCESS, cuMemAllocManaged, &m, 1 * MiB,
	       CU_MEM_ATTACH_GLOBAL))
		add(&r->mem[M_MANAGED_ALLOC], 1 * MiB);
	if (CU(r, CUDA_SUCCESS, cuMemAllocAsync, &a1, 4096, s))
		add(&r->mem[M_ASYNC_ALLOC], 4096);
	if (CU(r, CUDA_SUCCESS, cuMemAllocAsync_ptsz, &a2, 4096, NULL))
		add(&r->mem[M_ASYNC_ALLOC], 4096);
	if (CU(r, CUDA_SUCCESS, cuMemAllocHost_v2, &h1, 65536))
		add(&r->mem[M_HOST_ALLOC], 65536);
	if (CU(r, CUDA_SUCCESS, cuMemHostAlloc, &h2, 65536,
	       CU_MEMHOSTALLOC_PORTABLE))
		add(&r->mem[M_HOST_ALLOC], 65536);
	CU(r, CUDA_SUCCESS, cuMemPrefetchAsync, m, 1 * MiB, 0, s);
	CU(r, CUDA_SUCCESS, cuMemPrefetchAsync_ptsz, m, 1 * MiB, CU_DEVICE_CPU,
	   NULL);
	CU(r, CUDA_SUCCESS, cuMemPrefetchAsync_v2, m, 1 * MiB, dev0, 0, s);
	CU(r, CUDA_SUCCESS, cuMemPrefetchAsync_v2_ptsz, m, 1 * MiB, host, 0,
	   NULL);
	CU(r, CUDA_SUCCESS, cuMemAdvise, m, 1 * MiB,
	   CU_MEM_ADVISE_SET_READ_MOSTLY, 0);
	CU(r, CUDA_SUCCESS, cuMemAdvise_v2, m, 1 * MiB,
	   CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev0);

	/* copies: 256 bytes each, unified ones through the host buffer h1 */
#define HOSTPTR(p) ((CUdeviceptr)(uintptr_t)(p))
	if (CU(r, CUDA_SUCCESS, cuMemcpy, d2, d1, 256))
		add(&r->bytes[B_DTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy_ptds, d1, HOSTPTR(h1), 256))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyAsync, d2, d1, 256, s))
		add(&r->bytes[B_DTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyAsync_ptsz, HOSTPTR(h1), d2, 256, NULL))
		add(&r->bytes[B_DTOH], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyHtoD_v2, d1, h1, 256))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyHtoD_v2_ptds, d1, h1, 256))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoH_v2, h1, d1, 256))
		add(&r->bytes[B_DTOH], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoH_v2_ptds, h1, d1, 256))
		add(&r->bytes[B_DTOH], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoD_v2, d2, d1, 256))
		add(&r->bytes[B_DTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoD_v2_ptds, d2, d1, 256))
		add(&r->bytes[B_DTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyHtoDAsync_v2, d1, h1, 256, s))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyHtoDAsync_v2_ptsz, d1, h1, 256, NULL))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoHAsync_v2, h1, d1, 256, s))
		add(&r->bytes[B_DTOH], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoHAsync_v2_ptsz, h1, d1, 256, NULL))
		add(&r->bytes[B_DTOH], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoDAsync_v2, d2, d1, 256, s))
		add(&r->bytes[B_DTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyDtoDAsync_v2_ptsz, d2, d1, 256, NULL))
		add(&r->bytes[B_DTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyPeer, d2, ctx, d1, ctx, 256))
		add(&r->bytes[B_PEER], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyPeer_ptds, d2, ctx, d1, ctx, 256))
		add(&r->bytes[B_PEER], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyPeerAsync, d2, ctx, d1, ctx, 256, s))
		add(&r->bytes[B_PEER], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpyPeerAsync_ptsz, d2, ctx, d1, ctx, 256,
	       NULL))
		add(&r->bytes[B_PEER], 256);

	memset(&c2d, 0, sizeof(c2d));	/* host -> device, 64 x 4 */
	c2d.srcMemoryType = CU_MEMORYTYPE_HOST;
	c2d.srcHost = h1;
	c2d.srcPitch = 64;
	c2d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c2d.dstDevice = d1;
	c2d.dstPitch = 128;
	c2d.WidthInBytes = 64;
	c2d.Height = 4;
	if (CU(r, CUDA_SUCCESS, cuMemcpy2D_v2, &c2d))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy2D_v2_ptds, &c2d))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy2DUnaligned_v2, &c2d))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy2DUnaligned_v2_ptds, &c2d))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy2DAsync_v2, &c2d, s))
		add(&r->bytes[B_HTOD], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy2DAsync_v2_ptsz, &c2d, NULL))
		add(&r->bytes[B_HTOD], 256);

	memset(&c3d, 0, sizeof(c3d));	/* device -> host, 32 x 4 x 2 */
	c3d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c3d.srcDevice = d2;
	c3d.srcPitch = 32;
	c3d.srcHeight = 4;
	c3d.dstMemoryType = CU_MEMORYTYPE_HOST;
	c3d.dstHost = h1;
	c3d.dstPitch = 32;
	c3d.dstHeight = 4;
	c3d.WidthInBytes = 32;
	c3d.Height = 4;
	c3d.Depth = 2;
	if (CU(r, CUDA_SUCCESS, cuMemcpy3D_v2, &c3d))
		add(&r->bytes[B_DTOH], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy3D_v2_ptds, &c3d))
		add(&r->bytes[B_DTOH], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy3DAsync_v2, &c3d, s))
		add(&r->bytes[B_DTOH], 256);
	if (CU(r, CUDA_SUCCESS, cuMemcpy3DAsync_v2_ptsz, &c3d, NULL))
		add(&r->bytes[B_DTOH], 256);

	/* memsets: 256 bytes each */
	CU(r, CUDA_SUCCESS, cuMemsetD8_v2, d1, 1, 256);
	CU(r, CUDA_SUCCESS, cuMemsetD8_v2_ptds, d1, 1, 256);
	CU(r, CUDA_SUCCESS, cuMemsetD16_v2, d1, 1, 128);
	CU(r, CUDA_SUCCESS, cuMemsetD16_v2_ptds, d1, 1, 128);
	CU(r, CUDA_SUCCESS, cuMemsetD32_v2, d1, 1, 64);
	CU(r, CUDA_SUCCESS, cuMemsetD32_v2_ptds, d1, 1, 64);
	CU(r, CUDA_SUCCESS, cuMemsetD8Async, d1, 1, 256, s);
	CU(r, CUDA_SUCCESS, cuMemsetD8Async_ptsz, d1, 1, 256, NULL);
	CU(r, CUDA_SUCCESS, cuMemsetD16Async, d1, 1, 128, s);
	CU(r, CUDA_SUCCESS, cuMemsetD16Async_ptsz, d1, 1, 128, NULL);
	CU(r, CUDA_SUCCESS, cuMemsetD32Async, d1, 1, 64, s);
	CU(r, CUDA_SUCCESS, cuMemsetD32Async_ptsz, d1, 1, 64, NULL);
	CU(r, CUDA_SUCCESS, cuMemsetD2D8_v2, d1, 128, 1, 64, 4);
	CU(r, CUDA_SUCCESS, cuMemsetD2D8_v2_ptds, d1, 128, 1, 64, 4);
	CU(r, CUDA_SUCCESS, cuMemsetD2D16_v2, d1, 128, 1, 32, 4);
	CU(r, CUDA_SUCCESS, cuMemsetD2D16_v2_ptds, d1, 128, 1, 32, 4);
	CU(r, CUDA_SUCCESS, cuMemsetD2D32_v2, d1, 128, 1, 16, 4);
	CU(r, CUDA_SUCCESS, cuMemsetD2D32_v2_ptds, d1, 128, 1, 16, 4);
	CU(r, CUDA_SUCCESS, cuMemsetD2D8Async, d1, 128, 1, 64, 4, s);
	CU(r, CUDA_SUCCESS, cuMemsetD2D8Async_ptsz, d1, 128, 1, 64, 4, NULL);
	CU(r, CUDA_SUCCESS, cuMemsetD2D16Async, d1, 128, 1, 32, 4, s);
	CU(r, CUDA_SUCCESS, cuMemsetD2D16Async_ptsz, d1, 128, 1, 32, 4, NULL);
	CU(r, CUDA_SUCCESS, cuMemsetD2D32Async, d1, 128, 1, 16, 4, s);
	CU(r, CUDA_SUCCESS, cuMemsetD2D32Async_ptsz, d1, 128, 1, 16, 4, NULL);
	add(&r->bytes[B_MEMSET], 24 * 256);

	/* the runtime, on the same context (it binds the primary one) */
	handle = register_saxpy(r);
	if (CU(r, cudaSuccess, cudaMalloc, &p, 4096))
		add(&r->mem[M_DEVICE_ALLOC], 4096);
	if (CU(r, cudaSuccess, cudaMemcpy, p, host_src, 4096,
	       cudaMemcpyHostToDevice))
		add(&r->bytes[B_HTOD], 4096);
	stub_run = r;
	stub_grid = (dim3){ 64, 1, 1 };
	stub_block = (dim3){ 128, 1, 1 };
	stub_ptsz = 0;
	saxpy_stub(1.0f, NULL, NULL);
	stub_ptsz = 1;
	saxpy_stub(1.0f, NULL, NULL);
	stub_ex = 1;
	saxpy_stub(1.0f, NULL, NULL);
	stub_ptsz = 0;
	saxpy_stub(1.0f, NULL, NULL);
	stub_ex = 0;
	stub_tramp = 1;
	saxpy_stub(1.0f, NULL, NULL);
	stub_ptsz = 1;
	saxpy_stub(1.0f, NULL, NULL);
	stub_ptsz = 0;
	stub_tramp = 0;
	CU(r, cudaSuccess, cudaGraphLaunch, ge, NULL);
	CU(r, cudaSuccess, cudaGraphLaunch_ptsz, ge, NULL);
	add(&r->launches, 8);
	CU(r, cudaSuccess, cudaDeviceSynchronize);
	if (CU(r, cudaSuccess, cudaFree, p))
		add(&r->mem[M_DEVICE_FREE], 4096);
	str = cudaGetErrorName(cudaSuccess);
	COUNT(r, cudaGetErrorName);
	EXPECT(r, strcmp(str, "cudaSuccess") == 0);
	str = cudaGetErrorString(cudaErrorInvalidValue);
	COUNT(r, cudaGetErrorString);
	EXPECT(r, strcmp(str, "invalid argument") == 0);
	if (CU(r, cudaSuccess, cudaGetDriverEntryPoint, "cuLaunchKernel", &fn,
	       PT, &st))
		EXPECT(r, fn == (void *)cuLaunchKernel_ptsz);
	if (CU(r, cudaSuccess, cudaGetDriverEntryPointByVersion, "cuMemAlloc",
	       &fn, 12000, 0, &st))
		EXPECT(r, fn == (void *)cuMemAlloc_v2);
	unregister_saxpy(r, handle);

	/* sync, free, destroy */
	CU(r, CUDA_SUCCESS, cuStreamSynchronize, s);
	CU(r, CUDA_SUCCESS, cuStreamSynchronize_ptsz, NULL);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	if (CU(r, CUDA_SUCCESS, cuMemFreeAsync, a1, s))
		add(&r->mem[M_ASYNC_FREE], 4096);
	if (CU(r, CUDA_SUCCESS, cuMemFreeAsync_ptsz, a2, NULL))
		add(&r->mem[M_ASYNC_FREE], 4096);
	if (CU(r, CUDA_SUCCESS, cuMemFree_v2, d1))
		add(&r->mem[M_DEVICE_FREE], 65536);
	if (CU(r, CUDA_SUCCESS, cuMemFree_v2, d2))
		add(&r->mem[M_DEVICE_FREE], 65536);
	if (CU(r, CUDA_SUCCESS, cuMemFree_v2, m))
		add(&r->mem[M_MANAGED_FREE], 1 * MiB);
	if (CU(r, CUDA_SUCCESS, cuMemFreeHost, h1))
		add(&r->mem[M_HOST_FREE], 65536);
	if (CU(r, CUDA_SUCCESS, cuMemFreeHost, h2))
		add(&r->mem[M_HOST_FREE], 65536);
	CU(r, CUDA_SUCCESS, cuGraphExecDestroy, ge);
	CU(r, CUDA_SUCCESS, cuGraphDestroy, g);
	CU(r, CUDA_SUCCESS, cuEventDestroy_v2, e0);
	CU(r, CUDA_SUCCESS, cuEventDestroy_v2, e1);
	CU(r, CUDA_SUCCESS, cuStreamDestroy_v2, s);
	CU(r, CUDA_SUCCESS, cuLibraryUnload, lib);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m1);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m2);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m3);
	teardown(r);
	(void)dev;
}

static void sc_timed(struct run *r)
{
	CUdriverProcAddressQueryResult st = -1;
	static char host[4096];
	launch_fn rt_launch = NULL, pt_launch = NULL;
	CUstream s0 = NULL, s1 = NULL;
	CUgraphExec ge = NULL;
	struct vecadd_args k;
	CUfunction f = NULL;
	CUdeviceptr d = 0;
	CUgraph g = NULL;
	unsigned long i, n = r->args[0];
	CUmodule mod;

	setup(r);
	mod = load_vecadd(r, &f);
	CU(r, CUDA_SUCCESS, cuStreamCreate, &s0, CU_STREAM_NON_BLOCKING);
	CU(r, CUDA_SUCCESS, cuStreamCreate, &s1, CU_STREAM_NON_BLOCKING);
	if (CU(r, CUDA_SUCCESS, cuMemAlloc_v2, &d, 4096))
		add(&r->mem[M_DEVICE_ALLOC], 4096);
	CU(r, CUDA_SUCCESS, cuGraphCreate, &g, 0);
	CU(r, CUDA_SUCCESS, cuGraphInstantiateWithFlags, &ge, g, 0);
	CU(r, CUDA_SUCCESS, cuGetProcAddress_v2, "cuLaunchKernel",
	   (void **)&pt_launch, 12080, PT, &st);
	EXPECT(r, pt_launch == cuLaunchKernel_ptsz);
	CU(r, cudaSuccess, cudaGetDriverEntryPoint, "cuLaunchKernel",
	   (void **)&rt_launch, 0, &st);
	EXPECT(r, rt_launch == cuLaunchKernel);
	if (!pt_launch || !rt_launch) {
		teardown(r);
		return;
	}

	vecadd_args_init(&k);
	for (i = 0; i < n; i++)
		CU(r, CUDA_SUCCESS, cuLaunchKernel, f, 128, 1, 1, 256, 1, 1,
		   1024, s0, k.params, NULL);
	for (i = 0; i < n; i++)
		CU_PTR(r, CUDA_SUCCESS, cuLaunchKernel, rt_launch, f, 128, 1,
		       1, 256, 1, 1, 1024, s1, k.params, NULL);
	for (i = 0; i < n; i++)
		CU_PTR(r, CUDA_SUCCESS, cuLaunchKernel_ptsz, pt_launch, f, 128,
		       1, 1, 256, 1, 1, 1024, NULL, k.params, NULL);
	if (CU(r, CUDA_SUCCESS, cuMemcpyHtoDAsync_v2, d, host, 4096, s0))
		add(&r->bytes[B_HTOD], 4096);
	if (CU(r, CUDA_SUCCESS, cuMemsetD8Async, d, 0, 4096, s1))
		add(&r->bytes[B_MEMSET], 4096);
	CU(r, CUDA_SUCCESS, cuGraphLaunch, ge, s0);
	if (CU(r, CUDA_SUCCESS, cuMemcpyHtoD_v2, d, host, 4096))
		add(&r->bytes[B_HTOD], 4096);
	add(&r->launches, 3 * n + 1);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);

	CU(r, CUDA_SUCCESS, cuGraphExecDestroy, ge);
	CU(r, CUDA_SUCCESS, cuGraphDestroy, g);
	if (CU(r, CUDA_SUCCESS, cuMemFree_v2, d))
		add(&r->mem[M_DEVICE_FREE], 4096);
	CU(r, CUDA_SUCCESS, cuStreamDestroy_v2, s0);
	CU(r, CUDA_SUCCESS, cuStreamDestroy_v2, s1);
	CU(r, CUDA_SUCCESS, cuModuleUnload, mod);
	teardown(r);
}

/* ------------------------------------------------------------------------ */
/* Running and reporting                                                    */
/* ------------------------------------------------------------------------ */


/*
 * inject [N=10]: module loads of every kind device probe injection handles
 * (devrt/src/inject.c), N launches of each kernel, unloads.  The kernels'
 * handles go into the JSON ("handles": what the program got), so a test can
 * tell them from the handles the driver saw launched (FAKECUDA_LAUNCH_FILE).
 */
static void sc_inject(struct run *r)
{
	CUmodule m1 = NULL, m2 = NULL, m3 = NULL, m4 = NULL;
	CUfunction f1 = NULL, f2 = NULL, f3 = NULL, f4 = NULL, kf = NULL;
	const void *fatbin = build_fatbin(scale_ptx, 80);
	struct fatbin_wrapper wrapper = {
		.magic = FATBINC_MAGIC, .version = 1, .data = fatbin,
	};
	unsigned long i, n = r->args[0];
	struct vecadd_args k;
	CUlaunchConfig cfg;
	CUlibrary lib = NULL;
	CUkernel kern = NULL;
	void **handle;

	setup(r);
	vecadd_args_init(&k);
	/* PTX text, twice (the second is the collector's cache hit) */
	CU(r, CUDA_SUCCESS, cuModuleLoadData, &m1, vecadd_ptx);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f1, m1, KERNEL_NAME);
	CU(r, CUDA_SUCCESS, cuModuleLoadDataEx, &m2, vecadd_ptx, 0, NULL, NULL);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f2, m2, KERNEL_NAME);
	/* a fat binary of PTX and SASS */
	CU(r, CUDA_SUCCESS, cuModuleLoadFatBinary, &m3, fatbin);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f3, m3, SCALE_NAME);
	/* SASS only */
	CU(r, CUDA_SUCCESS, cuModuleLoadData, &m4, sass_cubin);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f4, m4, "sass_kernel");
	/* a library, launched through its kernel's function */
	load_lib(r, &lib, &kern);
	CU(r, CUDA_SUCCESS, cuKernelGetFunction, &kf, kern);

	/* More than 48 KiB of dynamic shared memory for vecAdd (module 1) and
	 * the library's kernel: launches asking for it fail without this. */
	CU(r, CUDA_SUCCESS, cuFuncSetAttribute, f1, 8, 64 * 1024);
	CU(r, CUDA_SUCCESS, cuKernelSetAttribute, 8, 64 * 1024, kern, 0);

	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = 8, cfg.gridDimY = 1, cfg.gridDimZ = 1;
	cfg.blockDimX = 128, cfg.blockDimY = 1, cfg.blockDimZ = 1;
	for (i = 0; i < n; i++) {
		CU(r, CUDA_SUCCESS, cuLaunchKernel, f1, 128, 1, 1, 256, 1, 1,
		   64 * 1024, NULL, k.params, NULL);
		CU(r, CUDA_SUCCESS, cuLaunchKernel_ptsz, f2, 128, 1, 1, 256, 1,
		   1, 0, NULL, k.params, NULL);
		CU(r, CUDA_SUCCESS, cuLaunchKernelEx, &cfg, f3, k.params, NULL);
		CU(r, CUDA_SUCCESS, cuLaunchCooperativeKernel, f4, 4, 1, 1, 32,
		   1, 1, 0, NULL, k.params);
		CU(r, CUDA_SUCCESS, cuLaunchKernel, kf, 2, 1, 1, 64, 1, 1,
		   64 * 1024, NULL, k.params, NULL);
	}
	add(&r->launches, 5 * n);

	/* the runtime: the same fat binary, the saxpy stub naming scale */
	handle = __cudaRegisterFatBinary(&wrapper);
	COUNT(r, __cudaRegisterFatBinary);
	if (EXPECT(r, handle != NULL)) {
		__cudaRegisterFunction(handle, (const char *)saxpy_stub,
				       (char *)SCALE_NAME, SCALE_NAME, -1,
				       NULL, NULL, NULL, NULL, NULL);
		COUNT(r, __cudaRegisterFunction);
		__cudaRegisterFatBinaryEnd(handle);
		COUNT(r, __cudaRegisterFatBinaryEnd);
		stub_run = r;
		stub_grid = (dim3){ 4, 1, 1 };
		stub_block = (dim3){ 32, 1, 1 };
		stub_shmem = 0;
		stub_ptsz = stub_ex = stub_tramp = 0;
		for (i = 0; i < n; i++)
			saxpy_stub(2.0f, NULL, NULL);
		add(&r->launches, n);
		CU(r, cudaSuccess, cudaDeviceSynchronize);
		__cudaUnregisterFatBinary(handle);
		COUNT(r, __cudaUnregisterFatBinary);
	}

	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	/* WORKLOAD_INJECT_HOLD_MS: time for a test to watch devrt's copies of
	 * the probes' region while every module is still loaded. */
	if (getenv("WORKLOAD_INJECT_HOLD_MS"))
		usleep(1000 * (useconds_t)atoi(getenv("WORKLOAD_INJECT_HOLD_MS")));
	CU(r, CUDA_SUCCESS, cuModuleUnload, m1);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m2);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m3);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m4);
	CU(r, CUDA_SUCCESS, cuLibraryUnload, lib);
	extra_appendf(r, ",\"handles\":{\"f1\":\"%p\",\"f2\":\"%p\",\"f3\":\"%p\","
		      "\"f4\":\"%p\",\"kf\":\"%p\",\"kern\":\"%p\",\"m1\":\"%p\","
		      "\"m2\":\"%p\",\"m3\":\"%p\",\"m4\":\"%p\",\"lib\":\"%p\"}",
		      (void *)f1, (void *)f2, (void *)f3, (void *)f4, (void *)kf,
		      (void *)kern, (void *)m1, (void *)m2, (void *)m3,
		      (void *)m4, (void *)lib);
	teardown(r);
}

/* dir/name := the n bytes at data; 0, or -1 (errno set). */
static int put_file(const char *dir, const char *name, const void *data,
		    size_t n)
{
	char path[512];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "we")))
		return -1;
	ok = fwrite(data, 1, n, f) == n;
	return fclose(f) || !ok ? -1 : 0;
}

/*
 * inject-files [N=10]: modules loaded from files, as PyTorch's static
 * launcher loads inductor's Triton cubins (cuModuleLoad of a path in
 * Triton's cache) and as a program may load PTX or a library.
 */
static void sc_inject_files(struct run *r)
{
	/* Two cubins of other bytes (the ELF magic, then a byte apart). */
	unsigned char cubin[192] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
	unsigned char lone[192] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 1 };
	const char *tmp = getenv("TMPDIR");
	char dir[256], p[512], k[300], l[300];
	CUmodule m1 = NULL, m2 = NULL, m3 = NULL, bad = NULL;
	CUfunction f1 = NULL, f2 = NULL, f3 = NULL;
	unsigned long i, n = r->args[0];
	struct vecadd_args va;
	CUlibrary lib = NULL;
	CUkernel kern = NULL;

	snprintf(dir, sizeof(dir), "%s/fakecuda-files-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!EXPECT(r, mkdtemp(dir) != NULL))
		return;
	snprintf(k, sizeof(k), "%s/k", dir);
	snprintf(l, sizeof(l), "%s/lone", dir);
	if (!EXPECT(r, mkdir(k, 0700) == 0 && mkdir(l, 0700) == 0 &&
		       !put_file(dir, "vecadd.ptx", vecadd_ptx, strlen(vecadd_ptx)) &&
		       !put_file(dir, "lib.ptx", lib_ptx, strlen(lib_ptx)) &&
		       !put_file(k, "scale.cubin", cubin, sizeof(cubin)) &&
		       !put_file(k, "scale.ptx", scale_ptx, strlen(scale_ptx)) &&
		       !put_file(k, "scale.json", "{}", 2) &&
		       !put_file(l, "scale.cubin", lone, sizeof(lone))))
		goto clean;

	setup(r);
	vecadd_args_init(&va);
	snprintf(p, sizeof(p), "%s/vecadd.ptx", dir);
	CU(r, CUDA_SUCCESS, cuModuleLoad, &m1, p);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f1, m1, KERNEL_NAME);
	snprintf(p, sizeof(p), "%s/scale.cubin", k);
	CU(r, CUDA_SUCCESS, cuModuleLoad, &m2, p);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f2, m2, SCALE_NAME);
	snprintf(p, sizeof(p), "%s/scale.cubin", l);
	CU(r, CUDA_SUCCESS, cuModuleLoad, &m3, p);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f3, m3, SCALE_NAME);
	snprintf(p, sizeof(p), "%s/missing.ptx", dir);
	CU(r, CUDA_ERROR_FILE_NOT_FOUND, cuModuleLoad, &bad, p);
	snprintf(p, sizeof(p), "%s/lib.ptx", dir);
	CU(r, CUDA_SUCCESS, cuLibraryLoadFromFile, &lib, p, NULL, NULL, 0,
	   NULL, NULL, 0);
	CU(r, CUDA_SUCCESS, cuLibraryGetKernel, &kern, lib, LIB_NAME);

	for (i = 0; i < n; i++) {
		CU(r, CUDA_SUCCESS, cuLaunchKernel, f1, 128, 1, 1, 256, 1, 1,
		   0, NULL, va.params, NULL);
		CU(r, CUDA_SUCCESS, cuLaunchKernel, f2, 8, 1, 1, 128, 1, 1, 0,
		   NULL, va.params, NULL);
		CU(r, CUDA_SUCCESS, cuLaunchKernel, f3, 8, 1, 1, 128, 1, 1, 0,
		   NULL, va.params, NULL);
		CU(r, CUDA_SUCCESS, cuLaunchKernel, (CUfunction)kern, 2, 1, 1,
		   64, 1, 1, 0, NULL, va.params, NULL);
	}
	add(&r->launches, 4 * n);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m1);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m2);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m3);
	CU(r, CUDA_SUCCESS, cuLibraryUnload, lib);
	extra_appendf(r, ",\"handles\":{\"f1\":\"%p\",\"f2\":\"%p\",\"f3\":\"%p\","
		      "\"kern\":\"%p\",\"m1\":\"%p\",\"m2\":\"%p\",\"m3\":\"%p\","
		      "\"lib\":\"%p\"}",
		      (void *)f1, (void *)f2, (void *)f3, (void *)kern,
		      (void *)m1, (void *)m2, (void *)m3, (void *)lib);
	teardown(r);
clean:
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	EXPECT(r, system(p) == 0);
}

/*
 * inject-shared [N=10]: kernels set up for all the shared memory there is,
 * launched with part of it, then with all of it, then with part again.
 */
static void sc_inject_shared(struct run *r)
{
	const unsigned int all = 227 * 1024, part = 64 * 1024;
	unsigned long i, n = r->args[0];
	unsigned int phase, shmem;
	struct vecadd_args va;
	CUmodule m = NULL;
	CUfunction f = NULL;
	CUlibrary lib = NULL;
	CUkernel kern = NULL;

	setup(r);
	vecadd_args_init(&va);
	CU(r, CUDA_SUCCESS, cuModuleLoadData, &m, vecadd_ptx);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f, m, KERNEL_NAME);
	load_lib(r, &lib, &kern);
	CU(r, CUDA_SUCCESS, cuFuncSetAttribute, f, 8, (int)all);
	CU(r, CUDA_SUCCESS, cuKernelSetAttribute, 8, (int)all, kern, 0);
	for (phase = 0; phase < 3; phase++) {
		shmem = phase == 1 ? all : part;
		for (i = 0; i < (phase == 1 ? 1 : n); i++) {
			CU(r, CUDA_SUCCESS, cuLaunchKernel, f, 128, 1, 1, 256, 1,
			   1, shmem, NULL, va.params, NULL);
			CU(r, CUDA_SUCCESS, cuLaunchKernel, (CUfunction)kern, 2,
			   1, 1, 64, 1, 1, shmem, NULL, va.params, NULL);
			add(&r->launches, 2);
		}
	}
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m);
	CU(r, CUDA_SUCCESS, cuLibraryUnload, lib);
	extra_appendf(r, ",\"handles\":{\"f\":\"%p\",\"kern\":\"%p\","
		      "\"m\":\"%p\",\"lib\":\"%p\"}", (void *)f, (void *)kern,
		      (void *)m, (void *)lib);
	teardown(r);
}

/*
 * inject-contexts [N=10]: one library's kernel launched by its CUkernel in
 * two contexts, as the CUDA runtime launches a program's kernels on each
 * GPU, and by the CUfunction cuKernelGetFunction gives in each (3N
 * launches in the primary context, 4N in a second).
 */
static void sc_inject_contexts(struct run *r)
{
	CUcontext primary = NULL, other = NULL, popped = NULL;
	CUfunction fo = NULL, fp = NULL;
	unsigned long i, n = r->args[0];
	struct vecadd_args k;
	CUlibrary lib = NULL;
	CUkernel kern = NULL;

	setup(r);
	vecadd_args_init(&k);
	CU(r, CUDA_SUCCESS, cuCtxGetCurrent, &primary);
	load_lib(r, &lib, &kern);
	for (i = 0; i < n; i++)
		CU(r, CUDA_SUCCESS, cuLaunchKernel, (CUfunction)kern, 2, 1, 1,
		   64, 1, 1, 0, NULL, k.params, NULL);
	CU(r, CUDA_SUCCESS, cuCtxCreate_v2, &other, 0, 0);
	CU(r, CUDA_SUCCESS, cuKernelGetFunction, &fo, kern);
	for (i = 0; i < n; i++)
		CU(r, CUDA_SUCCESS, cuLaunchKernel, fo, 2, 1, 1, 64, 1, 1, 0,
		   NULL, k.params, NULL);
	for (i = 0; i < 3 * n; i++)
		CU(r, CUDA_SUCCESS, cuLaunchKernel, (CUfunction)kern, 2, 1, 1,
		   64, 1, 1, 0, NULL, k.params, NULL);
	CU(r, CUDA_SUCCESS, cuCtxPopCurrent_v2, &popped);
	for (i = 0; i < n; i++)
		CU(r, CUDA_SUCCESS, cuLaunchKernel, (CUfunction)kern, 2, 1, 1,
		   64, 1, 1, 0, NULL, k.params, NULL);
	CU(r, CUDA_SUCCESS, cuKernelGetFunction, &fp, kern);
	for (i = 0; i < n; i++)
		CU(r, CUDA_SUCCESS, cuLaunchKernel, fp, 2, 1, 1, 64, 1, 1, 0,
		   NULL, k.params, NULL);
	add(&r->launches, 7 * n);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	if (getenv("WORKLOAD_INJECT_HOLD_MS"))
		usleep(1000 * (useconds_t)atoi(getenv("WORKLOAD_INJECT_HOLD_MS")));
	CU(r, CUDA_SUCCESS, cuLibraryUnload, lib);
	CU(r, CUDA_SUCCESS, cuCtxDestroy_v2, other);
	extra_appendf(r, ",\"handles\":{\"lib\":\"%p\",\"kern\":\"%p\","
		      "\"primary\":\"%p\",\"other\":\"%p\",\"popped\":\"%p\","
		      "\"fo\":\"%p\",\"fp\":\"%p\"}",
		      (void *)lib, (void *)kern, (void *)primary, (void *)other,
		      (void *)popped, (void *)fo, (void *)fp);
	teardown(r);
}

/*
 * One launch of f with a grid of gx x gy x gz (blocks of bx threads, shmem
 * bytes of dynamic shared memory) by launch call `call`: 0 cuLaunchKernel,
 * 1 _ptsz, 2 cuLaunchKernelEx, 3 _ptsz, 4 cuLaunchCooperativeKernel, 5
 * _ptsz.
 */
static void launch_by(struct run *r, int call, CUfunction f, unsigned int gx,
		      unsigned int gy, unsigned int gz, unsigned int bx,
		      unsigned int shmem, void **params)
{
	CUlaunchConfig c;

	memset(&c, 0, sizeof(c));
	c.gridDimX = gx, c.gridDimY = gy, c.gridDimZ = gz;
	c.blockDimX = bx, c.blockDimY = 1, c.blockDimZ = 1;
	c.sharedMemBytes = shmem;
	switch (call) {
	case 0:
		CU(r, CUDA_SUCCESS, cuLaunchKernel, f, gx, gy, gz, bx, 1, 1,
		   shmem, NULL, params, NULL);
		break;
	case 1:
		CU(r, CUDA_SUCCESS, cuLaunchKernel_ptsz, f, gx, gy, gz, bx, 1,
		   1, shmem, NULL, params, NULL);
		break;
	case 2:
		CU(r, CUDA_SUCCESS, cuLaunchKernelEx, &c, f, params, NULL);
		break;
	case 3:
		CU(r, CUDA_SUCCESS, cuLaunchKernelEx_ptsz, &c, f, params, NULL);
		break;
	case 4:
		CU(r, CUDA_SUCCESS, cuLaunchCooperativeKernel, f, gx, gy, gz,
		   bx, 1, 1, shmem, NULL, params);
		break;
	default:
		CU(r, CUDA_SUCCESS, cuLaunchCooperativeKernel_ptsz, f, gx, gy,
		   gz, bx, 1, 1, shmem, NULL, params);
		break;
	}
	add(&r->launches, 1);
}

/*
 * inject-grid [N=10]: patched kernels launched with 1-D and with 2-D or
 * 3-D grids through every launch call devrt redirects, the non-1-D ones
 * first in each round, and a library kernel's function in a second
 * context.
 */
static void sc_inject_grid(struct run *r)
{
	/* 2-D, 3-D with gridDimY 1, then 1-D */
	static const unsigned int grids[3][3] = {
		{ 4, 2, 1 }, { 4, 1, 2 }, { 8, 1, 1 },
	};
	CUcontext other = NULL, popped = NULL;
	CUfunction f = NULL, kf = NULL, fo = NULL;
	unsigned long i, n = r->args[0];
	struct vecadd_args k;
	CUlibrary lib = NULL;
	CUkernel kern = NULL;
	CUmodule m = NULL;
	int g, call;

	setup(r);
	vecadd_args_init(&k);
	CU(r, CUDA_SUCCESS, cuModuleLoadData, &m, vecadd_ptx);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f, m, KERNEL_NAME);
	load_lib(r, &lib, &kern);
	CU(r, CUDA_SUCCESS, cuKernelGetFunction, &kf, kern);
	CU(r, CUDA_SUCCESS, cuFuncSetAttribute, f, 8, 64 * 1024);
	CU(r, CUDA_SUCCESS, cuKernelSetAttribute, 8, 64 * 1024, kern, 0);
	/* No config, so no grid to call 1-D: the driver's error. */
	CU(r, CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx, NULL, f, k.params,
	   NULL);

	for (i = 0; i < n; i++) {
		for (g = 0; g < 3; g++)
			for (call = 0; call < 6; call++)
				launch_by(r, call, f, grids[g][0], grids[g][1],
					  grids[g][2], 256, 64 * 1024, k.params);
		launch_by(r, 0, (CUfunction)kern, 2, 2, 1, 64, 64 * 1024,
			  k.params);
		launch_by(r, 2, kf, 2, 1, 2, 64, 0, k.params);
		launch_by(r, 0, (CUfunction)kern, 2, 1, 1, 64, 64 * 1024,
			  k.params);
		launch_by(r, 4, kf, 2, 1, 1, 64, 0, k.params);
	}
	CU(r, CUDA_SUCCESS, cuCtxCreate_v2, &other, 0, 0);
	CU(r, CUDA_SUCCESS, cuKernelGetFunction, &fo, kern);
	for (i = 0; i < n; i++) {
		launch_by(r, 1, fo, 1, 3, 1, 64, 0, k.params);
		launch_by(r, 1, fo, 2, 1, 1, 64, 0, k.params);
	}
	CU(r, CUDA_SUCCESS, cuCtxPopCurrent_v2, &popped);
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m);
	CU(r, CUDA_SUCCESS, cuLibraryUnload, lib);
	CU(r, CUDA_SUCCESS, cuCtxDestroy_v2, other);
	extra_appendf(r, ",\"handles\":{\"m\":\"%p\",\"f\":\"%p\",\"lib\":\"%p\","
		      "\"kern\":\"%p\",\"kf\":\"%p\",\"fo\":\"%p\"}",
		      (void *)m, (void *)f, (void *)lib, (void *)kern,
		      (void *)kf, (void *)fo);
	teardown(r);
}

/* A kernel, and the program's own kernel named as its 1-D twin would be
 * (GPUEXT_INJ_GRID1D_SUFFIX), with other parameters. */
#define STEP_NAME	"gx_step"
#define STEP_1D_NAME	STEP_NAME "__gx1d"

static const char step_ptx[] =
	"//\n// fakecuda workload: a kernel, and one named as its 1-D twin\n//\n"
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	".visible .entry " STEP_NAME "(\n\t.param .u64 x\n)\n{\n\tret;\n}\n\n"
	".visible .entry " STEP_1D_NAME "(\n\t.param .u64 x,\n\t.param .u64 y,\n"
	"\t.param .u32 n\n)\n{\n\tret;\n}\n";

/*
 * inject-grid-names [N=10]: a kernel and the program's own kernel named
 * as its 1-D twin would be, in a module and in a library, each launched
 * with a 1-D grid (and the first with a 2-D one too).
 */
static void sc_inject_grid_names(struct run *r)
{
	CUfunction f = NULL, f1 = NULL, kf = NULL;
	unsigned long i, n = r->args[0];
	CUkernel kern = NULL, kern1 = NULL;
	struct vecadd_args k;
	CUlibrary lib = NULL;
	CUmodule m = NULL;

	setup(r);
	vecadd_args_init(&k);
	CU(r, CUDA_SUCCESS, cuModuleLoadData, &m, step_ptx);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f, m, STEP_NAME);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &f1, m, STEP_1D_NAME);
	CU(r, CUDA_SUCCESS, cuLibraryLoadData, &lib, step_ptx, NULL, NULL, 0,
	   NULL, NULL, 0);
	CU(r, CUDA_SUCCESS, cuLibraryGetKernel, &kern, lib, STEP_NAME);
	CU(r, CUDA_SUCCESS, cuLibraryGetKernel, &kern1, lib, STEP_1D_NAME);
	CU(r, CUDA_SUCCESS, cuKernelGetFunction, &kf, kern);
	for (i = 0; i < n; i++) {
		launch_by(r, 0, f, 4, 2, 1, 64, 0, k.params);
		launch_by(r, 0, f, 8, 1, 1, 64, 0, k.params);
		launch_by(r, 0, f1, 8, 1, 1, 64, 0, k.params);
		launch_by(r, 0, (CUfunction)kern, 4, 2, 1, 64, 0, k.params);
		launch_by(r, 0, (CUfunction)kern, 8, 1, 1, 64, 0, k.params);
		launch_by(r, 0, kf, 8, 1, 1, 64, 0, k.params);
		launch_by(r, 0, (CUfunction)kern1, 8, 1, 1, 64, 0, k.params);
	}
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m);
	CU(r, CUDA_SUCCESS, cuLibraryUnload, lib);
	extra_appendf(r, ",\"handles\":{\"m\":\"%p\",\"f\":\"%p\",\"f1\":\"%p\","
		      "\"lib\":\"%p\",\"kern\":\"%p\",\"kern1\":\"%p\",\"kf\":\"%p\"}",
		      (void *)m, (void *)f, (void *)f1, (void *)lib,
		      (void *)kern, (void *)kern1, (void *)kf);
	teardown(r);
}

/* A module with variables of its own: what the twin must own. */
static const char vars_ptx[] =
	"//\n// fakecuda workload: kernels reading the module's variables\n//\n"
	".version 8.0\n.target sm_90\n.address_size 64\n\n"
	".global .align 4 .u32 counter;\n"
	".visible .const .align 4 .b8 coeffs[16];\n\n"
	".visible .entry vk_a(\n\t.param .u64 x\n)\n{\n\tret;\n}\n\n"
	".visible .entry vk_b(\n\t.param .u64 x\n)\n{\n\tret;\n}\n";

/*
 * inject-vars [N=10]: a module and a library with variables; the program
 * writes one through cuModuleGetGlobal, asks for the library's by
 * cuLibraryGetGlobal and through cuLibraryGetModule, and launches every
 * kernel N times.
 */
static void sc_inject_vars(struct run *r)
{
	static const float coeffs[4] = { 1, 2, 3, 4 };
	const char *ex = getenv("WORKLOAD_VARS_EXPECT");
	const char *sh = getenv("WORKLOAD_VARS_SHMEM");
	int expect = ex ? atoi(ex) : CUDA_SUCCESS;
	unsigned int shmem = sh ? (unsigned int)atoi(sh) : 0;
	CUdeviceptr mc = 0, lc = 0, lmc = 0, fmc = 0;
	size_t msz = 0, lsz = 0, lmsz = 0, fmsz = 0;
	CUfunction fa = NULL, fb = NULL;
	CUkernel ka = NULL, kb = NULL;
	unsigned long i, n = r->args[0];
	struct vecadd_args k;
	CUlibrary lib = NULL;
	CUmodule m = NULL, lm = NULL, fm = NULL;

	setup(r);
	vecadd_args_init(&k);
	CU(r, CUDA_SUCCESS, cuModuleLoadData, &m, vars_ptx);
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &fa, m, "vk_a");
	CU(r, CUDA_SUCCESS, cuModuleGetFunction, &fb, m, "vk_b");
	CU(r, CUDA_SUCCESS, cuModuleGetGlobal_v2, &mc, &msz, m, "coeffs");
	CU(r, CUDA_SUCCESS, cuMemcpyHtoD_v2, mc, coeffs, sizeof(coeffs));
	CU(r, CUDA_SUCCESS, cuLibraryLoadData, &lib, vars_ptx, NULL, NULL, 0,
	   NULL, NULL, 0);
	CU(r, CUDA_SUCCESS, cuLibraryGetKernel, &ka, lib, "vk_a");
	CU(r, CUDA_SUCCESS, cuLibraryGetKernel, &kb, lib, "vk_b");
	CU(r, CUDA_SUCCESS, cuLibraryGetGlobal, &lc, &lsz, lib, "coeffs");
	CU(r, CUDA_SUCCESS, cuLibraryGetModule, &lm, lib);
	CU(r, CUDA_SUCCESS, cuModuleGetGlobal_v2, &lmc, &lmsz, lm, "counter");
	CU(r, CUDA_SUCCESS, cuFuncGetModule, &fm, fb);
	CU(r, CUDA_SUCCESS, cuModuleGetGlobal_v2, &fmc, &fmsz, fm, "counter");
	EXPECT(r, msz == 16 && lsz == 16 && lmsz == 4 && fmsz == 4);
	if (shmem) {
		CU(r, CUDA_SUCCESS, cuFuncSetAttribute, fa, 8, (int)shmem);
		CU(r, CUDA_SUCCESS, cuFuncSetAttribute, fb, 8, (int)shmem);
		CU(r, CUDA_SUCCESS, cuKernelSetAttribute, 8, (int)shmem, ka, 0);
		CU(r, CUDA_SUCCESS, cuKernelSetAttribute, 8, (int)shmem, kb, 0);
	}
	if (getenv("WORKLOAD_VARS_BAD")) {
		/* the program's own mistake: more dynamic shared memory than
		 * it set up, refused whatever runs */
		CU(r, CUDA_ERROR_INVALID_VALUE, cuLaunchKernel, fa, 2, 1, 1, 64,
		   1, 1, 100000, NULL, k.params, NULL);
		CU(r, CUDA_ERROR_INVALID_VALUE, cuLaunchKernel, (CUfunction)ka,
		   2, 1, 1, 64, 1, 1, 100000, NULL, k.params, NULL);
	}
	for (i = 0; i < n; i++) {
		CU(r, expect, cuLaunchKernel, fa, 2, 1, 1, 64, 1, 1, shmem, NULL,
		   k.params, NULL);
		CU(r, expect, cuLaunchKernel, fb, 2, 1, 1, 64, 1, 1, shmem, NULL,
		   k.params, NULL);
		CU(r, expect, cuLaunchKernel, (CUfunction)ka, 2, 1, 1, 64, 1, 1,
		   shmem, NULL, k.params, NULL);
		CU(r, expect, cuLaunchKernel, (CUfunction)kb, 2, 1, 1, 64, 1, 1,
		   shmem, NULL, k.params, NULL);
	}
	add(&r->launches, 4 * n);
	if (getenv("WORKLOAD_VARS_GRAPH")) {
		/* a graph of four kernel nodes, by every entry point: vk_a's
		 * function (v2), vk_a's CUkernel (v2, kern), vk_b's function
		 * (v1), vk_b's CUkernel (cuGraphAddNode); each set again, in
		 * the graph or its exec; read back, they name the program's
		 * kernels */
		CUDA_KERNEL_NODE_PARAMS np, got;
		CUDA_KERNEL_NODE_PARAMS_v1 v1, got1;
		CUgraphNodeParams gp;
		CUgraphNode na = NULL, nk = NULL, nb = NULL, ng = NULL;
		CUgraphExec ge = NULL;
		CUgraph g = NULL;

		memset(&np, 0, sizeof(np));
		np.func = fa;
		np.gridDimX = 2, np.gridDimY = np.gridDimZ = 1;
		np.blockDimX = 64, np.blockDimY = np.blockDimZ = 1;
		np.sharedMemBytes = shmem;
		np.kernelParams = k.params;
		CU(r, CUDA_SUCCESS, cuGraphCreate, &g, 0);
		CU(r, CUDA_SUCCESS, cuGraphAddKernelNode_v2, &na, g, NULL, 0, &np);
		CU(r, CUDA_SUCCESS, cuGraphKernelNodeSetParams_v2, na, &np);
		if (CU(r, CUDA_SUCCESS, cuGraphKernelNodeGetParams_v2, na, &got))
			EXPECT(r, got.func == fa && !got.kern);
		memcpy(&v1, &np, sizeof(v1));
		v1.func = fb;
		CU(r, CUDA_SUCCESS, cuGraphAddKernelNode, &nb, g, NULL, 0, &v1);
		CU(r, CUDA_SUCCESS, cuGraphKernelNodeSetParams, nb, &v1);
		if (CU(r, CUDA_SUCCESS, cuGraphKernelNodeGetParams, nb, &got1))
			EXPECT(r, got1.func == fb);
		np.func = NULL;
		np.kern = ka;
		CU(r, CUDA_SUCCESS, cuGraphAddKernelNode_v2, &nk, g, NULL, 0, &np);
		memset(&gp, 0, sizeof(gp));
		gp.type = 0;
		gp.u.kernel = np;
		gp.u.kernel.kern = kb;
		CU(r, CUDA_SUCCESS, cuGraphAddNode, &ng, g, NULL, 0, &gp);
		CU(r, CUDA_SUCCESS, cuGraphNodeSetParams, ng, &gp);
		CU(r, CUDA_SUCCESS, cuGraphInstantiateWithFlags, &ge, g, 0);
		CU(r, CUDA_SUCCESS, cuGraphExecKernelNodeSetParams_v2, ge, nk, &np);
		CU(r, CUDA_SUCCESS, cuGraphExecKernelNodeSetParams, ge, nb, &v1);
		CU(r, CUDA_SUCCESS, cuGraphExecNodeSetParams, ge, ng, &gp);
		for (i = 0; i < n; i++)
			CU(r, CUDA_SUCCESS, cuGraphLaunch, ge, NULL);
		add(&r->launches, n);
		CU(r, CUDA_SUCCESS, cuGraphExecDestroy, ge);
		CU(r, CUDA_SUCCESS, cuGraphDestroy, g);
	}
	CU(r, CUDA_SUCCESS, cuCtxSynchronize);
	CU(r, CUDA_SUCCESS, cuModuleUnload, m);
	CU(r, CUDA_SUCCESS, cuLibraryUnload, lib);
	extra_appendf(r, ",\"handles\":{\"m\":\"%p\",\"lib\":\"%p\","
		      "\"lm\":\"%p\",\"fa\":\"%p\",\"fb\":\"%p\","
		      "\"ka\":\"%p\",\"kb\":\"%p\"},\"vars\":{"
		      "\"module_coeffs\":\"0x%llx\",\"library_coeffs\":\"0x%llx\","
		      "\"library_counter\":\"0x%llx\","
		      "\"module_counter\":\"0x%llx\"}",
		      (void *)m, (void *)lib, (void *)lm, (void *)fa,
		      (void *)fb, (void *)ka, (void *)kb,
		      (unsigned long long)mc, (unsigned long long)lc,
		      (unsigned long long)lmc, (unsigned long long)fmc);
	teardown(r);
}

static const struct scenario scenarios[] = {
	{ "launch-storm", sc_launch_storm, 1, { 1000 } },
	{ "alloc-leak", sc_alloc_leak, 0, { 0 } },
	{ "copies", sc_copies, 0, { 0 } },
	{ "errors", sc_errors, 0, { 0 } },
	{ "threads", sc_threads, 2, { 4, 1000 } },
	{ "fork-child", sc_fork_child, 1, { 100 } },
	{ "fork-noexec", sc_fork_noexec, 1, { 100 } },
	{ "runtime", sc_runtime, 1, { 100 } },
	{ "runtime-ex", sc_runtime_ex, 1, { 100 } },
	{ "runtime-stub", sc_runtime_stub, 1, { 100 } },
	{ "runtime-unlaunched", sc_runtime_unlaunched, 0, { 0 } },
	{ "runtime-many", sc_runtime_many, 1, { 20000 } },
	{ "runtime-errors", sc_runtime_errors, 0, { 0 } },
	{ "procaddr", sc_procaddr, 1, { 100 } },
	{ "procaddr-table", sc_procaddr_table, 0, { 0 } },
	{ "every-api", sc_every_api, 0, { 0 } },
	{ "timed", sc_timed, 1, { 8 } },
	{ "inject", sc_inject, 1, { 10 } },
	{ "inject-files", sc_inject_files, 1, { 10 } },
	{ "inject-shared", sc_inject_shared, 1, { 10 } },
	{ "inject-contexts", sc_inject_contexts, 1, { 10 } },
	{ "inject-grid", sc_inject_grid, 1, { 10 } },
	{ "inject-grid-names", sc_inject_grid_names, 1, { 10 } },
	{ "inject-vars", sc_inject_vars, 1, { 10 } },
};

/* The parts of "all", with their arguments. */
static const struct {
	const char *name;
	unsigned long arg;
} all_parts[] = {
	{ "launch-storm", 100 }, { "alloc-leak", 0 }, { "copies", 0 },
	{ "errors", 0 }, { "runtime", 10 }, { "procaddr", 10 },
};

static const struct scenario *find_scenario(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(scenarios[i].name, name))
			return &scenarios[i];
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void run_scenario(const struct scenario *sc, struct run *r)
{
	double t0;
	int i;

	r->scenario = sc->name;
	drv_snapshot(r->drv_before);
	t0 = now_ms();
	sc->fn(r);
	r->wall_ms = now_ms() - t0;
	drv_snapshot(r->drv_delta);
	for (i = 0; i < drv_n; i++)
		r->drv_delta[i] -= r->drv_before[i];
	r->have_drv = drv_n != 0;
}

static void json_counts(FILE *f, const char *key,
			const unsigned long long *v, const char *const *names,
			int n)
{
	const char *sep = "";
	int i;

	fprintf(f, ",\"%s\":{", key);
	for (i = 0; i < n; i++) {
		if (!v[i])
			continue;
		fprintf(f, "%s\"%s\":%llu", sep, names[i], v[i]);
		sep = ",";
	}
	fputc('}', f);
}

static char *run_json(const struct run *r, char **parts, int nparts)
{
	unsigned long long leaked;
	size_t len;
	char *buf;
	FILE *f;
	int i;

	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fprintf(f, "{\"scenario\":\"%s\",\"args\":[", r->scenario);
	for (i = 0; i < r->nargs; i++)
		fprintf(f, "%s%lu", i ? "," : "", r->args[i]);
	fprintf(f, "],\"pid\":%d,\"ok\":%s,\"unexpected\":%llu,"
		"\"wall_ms\":%.3f", (int)getpid(),
		r->unexpected ? "false" : "true", r->unexpected, r->wall_ms);
	json_counts(f, "calls", r->calls, w_names, W_NUM);
	fputs(",\"errors\":[", f);
	for (i = 0; i < r->nerrs; i++)
		fprintf(f, "%s{\"api\":\"%s\",\"code\":%d,\"name\":\"%s\","
			"\"count\":%llu}", i ? "," : "",
			w_names[r->errs[i].api], r->errs[i].code,
			error_name(r->errs[i].api, r->errs[i].code),
			r->errs[i].n);
	fprintf(f, "],\"launches\":%llu", r->launches);
	json_counts(f, "bytes", r->bytes, b_names, B_NUM);
	json_counts(f, "memory", r->mem, m_names, M_NUM);
	leaked = r->mem[M_DEVICE_ALLOC] + r->mem[M_MANAGED_ALLOC] +
		 r->mem[M_ASYNC_ALLOC] - r->mem[M_DEVICE_FREE] -
		 r->mem[M_MANAGED_FREE] - r->mem[M_ASYNC_FREE];
	fprintf(f, ",\"leaked_bytes\":%llu", leaked);
	if (r->have_drv)
		json_counts(f, "driver_calls", r->drv_delta, drv_names, drv_n);
	if (r->extra)
		fputs(r->extra, f);
	if (parts) {
		fputs(",\"parts\":[", f);
		for (i = 0; i < nparts; i++)
			fprintf(f, "%s%s", i ? "," : "", parts[i]);
		fputc(']', f);
	}
	fputc('}', f);
	fclose(f);
	return buf;
}

/* Adds a part's counts into the totals of "all". */
static void run_sum(struct run *total, const struct run *part)
{
	int i, j;

	for (i = 0; i < W_NUM; i++)
		total->calls[i] += part->calls[i];
	for (i = 0; i < B_NUM; i++)
		total->bytes[i] += part->bytes[i];
	for (i = 0; i < M_NUM; i++)
		total->mem[i] += part->mem[i];
	total->unexpected += part->unexpected;
	total->launches += part->launches;
	for (i = 0; i < part->nerrs; i++) {
		for (j = 0; j < total->nerrs; j++)
			if (total->errs[j].api == part->errs[i].api &&
			    total->errs[j].code == part->errs[i].code)
				break;
		if (j == total->nerrs) {
			if (j == MAX_ERRS)
				continue;
			total->errs[total->nerrs++] = (struct err_count){
				part->errs[i].api, part->errs[i].code, 0 };
		}
		total->errs[j].n += part->errs[i].n;
	}
}

static int run_all(void)
{
	enum { NPARTS = sizeof(all_parts) / sizeof(all_parts[0]) };
	struct run *total = calloc(1, sizeof(*total));
	struct run *part = calloc(1, sizeof(*part));
	char *parts[NPARTS] = { NULL };
	int i, status;
	char *json;
	double t0;

	if (!total || !part)
		return 1;
	total->scenario = "all";
	drv_snapshot(total->drv_before);
	t0 = now_ms();
	for (i = 0; i < NPARTS; i++) {
		const struct scenario *sc = find_scenario(all_parts[i].name);

		memset(part, 0, sizeof(*part));
		part->nargs = sc->nargs;
		part->args[0] = all_parts[i].arg;
		run_scenario(sc, part);
		parts[i] = run_json(part, NULL, 0);
		run_sum(total, part);
		free(part->extra);
	}
	total->wall_ms = now_ms() - t0;
	drv_snapshot(total->drv_delta);
	for (i = 0; i < drv_n; i++)
		total->drv_delta[i] -= total->drv_before[i];
	total->have_drv = drv_n != 0;

	json = run_json(total, parts, NPARTS);
	if (json)
		printf("%s\n", json);
	fflush(stdout);
	status = total->unexpected || !json ? 1 : 0;
	free(json);
	for (i = 0; i < NPARTS; i++)
		free(parts[i]);
	free(part);
	free(total);
	return status;
}

/* The driver's own counters must show every exported driver API. */
static void check_every_api(struct run *r)
{
	char msg[128];
	int i;

	if (!r->have_drv)
		return;
	for (i = 0; i < drv_n; i++) {
		if (r->drv_delta[i])
			continue;
		snprintf(msg, sizeof(msg), "every-api never reached %s",
			 drv_names[i]);
		fail(r, __LINE__, msg);
	}
	for (i = W_FIRST_RUNTIME; i < W_NUM; i++) {
		if (r->calls[i])
			continue;
		snprintf(msg, sizeof(msg), "every-api never called %s",
			 w_names[i]);
		fail(r, __LINE__, msg);
	}
}

static void wait_for_release(void)
{
	const char *path = getenv("FAKECUDA_WAIT_FILE");
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int i;

	if (!path || !*path)
		return;
	for (i = 0; i < 3000; i++) {
		if (access(path, F_OK) == 0)
			return;
		nanosleep(&tick, NULL);
	}
	fprintf(stderr, "workload: %s did not appear within 30 s\n", path);
	exit(3);
}

static int usage(void)
{
	size_t i;

	fprintf(stderr, "usage: workload SCENARIO [N...]\nscenarios:");
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		fprintf(stderr, " %s", scenarios[i].name);
	fprintf(stderr, " all\n");
	return 2;
}

int main(int argc, char **argv)
{
	const struct scenario *sc = NULL;
	struct run *r;
	int i, status;
	char *json, *end;

	if (argc < 2)
		return usage();
	if (strcmp(argv[1], "all")) {
		sc = find_scenario(argv[1]);
		if (!sc || argc - 2 > sc->nargs)
			return usage();
	} else if (argc > 2) {
		return usage();
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return 1;
	if (sc) {
		r->nargs = sc->nargs;
		for (i = 0; i < sc->nargs; i++) {
			r->args[i] = sc->defaults[i];
			if (i + 2 >= argc)
				continue;
			errno = 0;
			r->args[i] = strtoul(argv[i + 2], &end, 10);
			if (errno || *end || !*argv[i + 2] ||
			    argv[i + 2][0] == '-') {
				free(r);
				return usage();
			}
		}
		if (sc->fn == sc_threads && r->args[0] > 1024) {
			fprintf(stderr, "workload: at most 1024 threads\n");
			free(r);
			return 2;
		}
	}

	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	wait_for_release();
	drv_counts_open();
	if (!sc) {
		free(r);
		return run_all();
	}
	run_scenario(sc, r);
	if (sc->fn == sc_every_api)
		check_every_api(r);
	json = run_json(r, NULL, 0);
	if (json)
		printf("%s\n", json);
	fflush(stdout);
	status = r->unexpected || !json ? 1 : 0;
	free(json);
	free(r->extra);
	free(r);
	return status;
}
