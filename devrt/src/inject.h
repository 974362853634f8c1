/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inject.h - device probe injection (issue 7): what the rest of devrt sees.
 *
 *   inject.c     module loads: ask the collector for a patched PTX, load
 *                it beside the original, bind the shared region, and the
 *                table that redirects launches (original -> patched)
 *   inject_ask.c the unix-socket client of the injection protocol
 *   fatbin.c     finding the PTX in an image (PTX text, fat binary,
 *                compressed entries; cubins are not instrumentable)
 *   sha256.c     the content hash the collector's cache is keyed by
 *
 * The protocol and the status record: the "devrt injection protocol"
 * section of bpf/include/gpuext_abi.h.  README.md ("Device probe
 * injection") says how it behaves.
 */
#ifndef DEVRT_INJECT_H
#define DEVRT_INJECT_H

#include "devrt.h"

/* ---- the launch hot path ------------------------------------------------- */

/* Patched kernels that launches are redirected to, in this process. */
extern __u32 devrt_inj_live;

void *devrt_inject_lookup(void *fn, int grid1d);

/*
 * The function a launch of f must run: f itself unless f is a kernel of a
 * module devrt patched; then its twin, or the twin's 1-D variant if it has
 * one and grid1d (the launch's grid is one-dimensional) holds.  A macro, so
 * that grid1d (which may read a CUlaunchConfig) is evaluated only when
 * something is patched: with nothing patched, one relaxed load.
 */
#define DEVRT_INJECT_FN(f, grid1d)					\
	(likely(!__atomic_load_n(&devrt_inj_live, __ATOMIC_RELAXED)) ?	\
		 (f) :							\
		 (CUfunction)devrt_inject_lookup((void *)(f), (grid1d)))

/*
 * A launch of orig that what it ran refused (cold; DEVRT_INJECT_CALL):
 * devrt_inject_general is orig's current twin here if ran was not it (its
 * 1-D twin, or one cleared or replaced since by another launch: the launch
 * is made again with it), else NULL; devrt_inject_grid1d_refused
 * says the twin took it (the 1-D twin g1 refused it with twin): orig's 1-D
 * twin is cleared; devrt_inject_refused says what the original did after
 * its twin refused it with twin (res: CUDA_SUCCESS drops the module).
 */
void *devrt_inject_general(void *orig, void *ran);
void devrt_inject_grid1d_refused(void *orig, void *g1, CUresult twin);
void devrt_inject_refused(void *orig, CUresult twin, CUresult res);
/* What a launch of orig that ran refused (with twin) is made again with:
 * orig, or where the twin owns the module's variables (GPUEXT_INJ_RF_VARS)
 * orig's current redirect if another launch changed it, or the kernel's
 * plain copy in the twin, or NULL (none: the launch fails); and, when ran
 * (that plain copy) took it, devrt_inject_took makes it orig's redirect. */
void *devrt_inject_fallback(void *orig, void *ran, CUresult twin);
void devrt_inject_took(void *orig, void *ran, CUresult twin);

/* Names the device of a launch record while patched kernels are live. */
void devrt_inject_launch_device(struct gpuext_event *e);

/*
 * DEVRT_INJECT_CALL(sym, call) in a generated wrapper (wrappers.c) is the
 * real call.  For the launch rows below, whose CUfunction parameter is f,
 * it redirects f (after the record captured the original: the collector
 * names kernels by it).  A launch the 1-D twin refuses is made again with
 * the twin (devrt_inject_general: the twins differ in code, so in
 * registers and what an occupancy-sized grid may be); if the twin takes
 * it, devrt_inject_grid1d_refused clears that 1-D twin, and the module
 * stays patched.  A launch the twin refuses (or both) is made again with
 * the original (devrt_inject_refused drops the module's redirects if the
 * original takes it), unless the twin owns the module's variables
 * (devrt_inject_fallback): then with the kernel's plain copy in the twin,
 * from then on, or, without one, it fails with the twin's error.  All of
 * it on the failure path only.  For every
 * other row, just call.  A row is selected
 * by defining DEVRT_INJ_RD_<sym> as "~, 1", and DEVRT_INJ_1D_<sym> is its
 * launch's "the grid is one-dimensional" (gridDimY == gridDimZ == 1; a
 * NULL config is not), which picks the 1-D twin (GPUEXT_INJ_GRID1D_SUFFIX)
 * where there is one: launched with any other grid it would sample the
 * wrong blocks.
 */
#define DEVRT_INJ_RD_cuLaunchKernel ~, 1
#define DEVRT_INJ_RD_cuLaunchKernel_ptsz ~, 1
#define DEVRT_INJ_RD_cuLaunchKernelEx ~, 1
#define DEVRT_INJ_RD_cuLaunchKernelEx_ptsz ~, 1
#define DEVRT_INJ_RD_cuLaunchCooperativeKernel ~, 1
#define DEVRT_INJ_RD_cuLaunchCooperativeKernel_ptsz ~, 1

/* The parameters' names are api_table.h's (P_LAUNCH, P_EX, P_COOP). */
#define DEVRT_INJ_1D_cuLaunchKernel (gy == 1 && gz == 1)
#define DEVRT_INJ_1D_cuLaunchKernel_ptsz (gy == 1 && gz == 1)
#define DEVRT_INJ_1D_cuLaunchKernelEx				\
	(cfg && cfg->gridDimY == 1 && cfg->gridDimZ == 1)
#define DEVRT_INJ_1D_cuLaunchKernelEx_ptsz				\
	(cfg && cfg->gridDimY == 1 && cfg->gridDimZ == 1)
#define DEVRT_INJ_1D_cuLaunchCooperativeKernel (gy == 1 && gz == 1)
#define DEVRT_INJ_1D_cuLaunchCooperativeKernel_ptsz (gy == 1 && gz == 1)

#define DEVRT_INJ_SECOND_(a, b, ...) b
#define DEVRT_INJ_SECOND(...) DEVRT_INJ_SECOND_(__VA_ARGS__)
#define DEVRT_INJ_IF__(c) DEVRT_INJ_IF_##c
#define DEVRT_INJ_IF_(c) DEVRT_INJ_IF__(c)
#define DEVRT_INJ_IF_0(...)
#define DEVRT_INJ_IF_1(...) __VA_ARGS__
#define DEVRT_INJ_SELECT_(c) DEVRT_INJ_SELECT__(c)
#define DEVRT_INJ_SELECT__(c) DEVRT_INJ_CALL_##c
#define DEVRT_INJ_CALL_0(sym, call) (call)
#define DEVRT_INJ_CALL_1(sym, call)					\
	({								\
		CUfunction o_ = f;					\
		CUresult r_;						\
									\
		f = DEVRT_INJECT_FN(f, DEVRT_INJ_1D_##sym);		\
		r_ = (call);						\
		if (unlikely(r_ != CUDA_SUCCESS && f != o_)) {		\
			CUfunction ran_ = f;				\
			CUresult t_ = r_;				\
									\
			f = (CUfunction)devrt_inject_general((void *)o_, \
							     (void *)f); \
			if (f) {					\
				r_ = (call);				\
				if (r_ == CUDA_SUCCESS)			\
					devrt_inject_grid1d_refused(	\
						(void *)o_,		\
						(void *)ran_, t_);	\
				else					\
					t_ = r_;			\
			}						\
			if (r_ != CUDA_SUCCESS) {			\
				ran_ = f ? f : ran_;			\
				f = (CUfunction)devrt_inject_fallback(	\
					(void *)o_, (void *)ran_, t_);	\
			}						\
			if (r_ != CUDA_SUCCESS && f) {			\
				r_ = (call);				\
				if (f == o_)				\
					devrt_inject_refused((void *)o_, \
							     t_, r_);	\
				else if (r_ == CUDA_SUCCESS)		\
					devrt_inject_took((void *)o_,	\
							  (void *)f, t_); \
			}						\
		}							\
		r_;							\
	})
#define DEVRT_INJECT_CALL(sym, call)					\
	DEVRT_INJ_SELECT_(DEVRT_INJ_SECOND(DEVRT_INJ_RD_##sym, 0, ~))(sym, call)

/* ---- module loads (inject.c) --------------------------------------------- */

/* The wrappers of the loads, cuKernelGetFunction and the unloads (api_table.h
 * rows H). */
CUresult cuModuleLoadData(CUmodule *m, const void *image);
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n,
			    CUjit_option *opts, void **vals);
CUresult cuModuleLoadFatBinary(CUmodule *m, const void *fatbin);
CUresult cuLibraryLoadData(CUlibrary *l, const void *code, CUjit_option *jo,
			   void **jv, unsigned int jn, CUlibraryOption *lo,
			   void **lv, unsigned int ln);
CUresult cuModuleLoad(CUmodule *m, const char *fname);
CUresult cuLibraryLoadFromFile(CUlibrary *l, const char *fname,
			       CUjit_option *jo, void **jv, unsigned int jn,
			       CUlibraryOption *lo, void **lv, unsigned int ln);
CUresult cuKernelGetFunction(CUfunction *f, CUkernel k);
CUresult cuModuleUnload(CUmodule m);
CUresult cuLibraryUnload(CUlibrary l);
/* The program's variables: the twin's where it owns them (inject.c). */
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m,
			      const char *name);
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary l,
			    const char *name);
CUresult cuLibraryGetModule(CUmodule *m, CUlibrary l);
CUresult cuFuncGetModule(CUmodule *m, CUfunction f);
CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph g,
				 const CUgraphNode *deps, size_t ndeps,
				 const CUDA_KERNEL_NODE_PARAMS *p);
CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode n,
				       const CUDA_KERNEL_NODE_PARAMS *p);
CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
					   const CUDA_KERNEL_NODE_PARAMS *p);
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS *p);
CUresult cuGraphAddKernelNode(CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
			      size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult cuGraphKernelNodeSetParams(CUgraphNode n,
				    const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec e, CUgraphNode n,
					const CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult cuGraphKernelNodeGetParams(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v1 *p);
CUresult cuGraphAddNode(CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
			size_t ndeps, CUgraphNodeParams *p);
CUresult cuGraphAddNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
			   const CUgraphEdgeData *edges, size_t ndeps,
			   CUgraphNodeParams *p);
CUresult cuGraphNodeSetParams(CUgraphNode n, CUgraphNodeParams *p);
CUresult cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode n,
				  CUgraphNodeParams *p);
/* Settings of an original, made on its twin too (inject.c). */
CUresult cuFuncSetAttribute(CUfunction f, int attrib, int value);
CUresult cuFuncSetCacheConfig(CUfunction f, int config);
CUresult cuKernelSetAttribute(int attrib, int value, CUkernel k, CUdevice dev);
CUresult cuKernelSetCacheConfig(CUkernel k, int config, CUdevice dev);

/* After a successful load of image, or with image NULL of the file path,
 * into *mod (a CUmodule, or a CUlibrary with lib set) by the call api:
 * patch it if the collector wants to. */
void devrt_inject_module(__u16 api, void *mod, const void *image,
			 const char *path, int lib);
/* Before the program unloads mod: unload its patched twin too. */
void devrt_inject_unload(void *mod);
void devrt_inject_fork_child(void);

/* ---- PTX in an image (fatbin.c) ------------------------------------------ */

struct devrt_ptx {
	const char *ptx;  /* the PTX text (not NUL-terminated), or NULL */
	size_t len;
	__u16 image;      /* enum gpuext_inj_image */
	__u32 reason;     /* enum gpuext_inj_reason when ptx is NULL */
	char *owned;      /* decompressed copy to free, or NULL */
};

/* Finds the PTX to patch in a module image for a device of sm_arch
 * (major * 10 + minor; 0: unknown, the newest PTX), loaded from the file
 * path if not NULL.  0, or -1 with reason. */
int devrt_image_ptx(const void *image, const char *path, __u32 sm_arch,
		    struct devrt_ptx *out);
/* The PTX Triton cached beside the ELF cubin image, loaded from the file
 * path if not NULL (triton.c): 0 with out set (owned), or -1. */
int devrt_triton_ptx(const void *image, const char *path,
		     struct devrt_ptx *out);
void devrt_triton_atfork_child(void);
/* Cache entries (directories) listed so far, for tests. */
extern __u64 devrt_triton_entries_read;
/* LZ4-style block decompression of a compressed fat binary entry: bytes
 * written, or -1 if in is malformed or does not fill exactly out_len. */
long devrt_fatbin_decompress(const unsigned char *in, size_t in_len,
			     unsigned char *out, size_t out_len);
/* A Zstandard frame (libzstd.so.1, dlopened), the same contract; also -1
 * without libzstd. */
long devrt_fatbin_unzstd(const unsigned char *in, size_t in_len,
			 unsigned char *out, size_t out_len);
/* Up to max .entry names of PTX text, NUL-separated into buf (size cap):
 * returns the count, *used the bytes. */
__u32 devrt_ptx_entries(const char *ptx, size_t len, char *buf, size_t cap,
			size_t *used);

/* ---- SHA-256 (sha256.c) -------------------------------------------------- */

void devrt_sha256(const void *data, size_t len, __u8 out[32]);

/* ---- asking the collector (inject_ask.c) --------------------------------- */

struct devrt_inj_answer {
	__u32 status;       /* enum gpuext_inj_status; 0: no answer (reason) */
	__u32 reason;       /* enum gpuext_inj_reason */
	__u32 flags;        /* GPUEXT_INJ_RF_* */
	__u32 nkernels;
	__u64 shared_size;
	char *ptx;          /* NUL-terminated patched PTX (malloc'd), PATCHED */
	size_t ptx_len;
	char *names;        /* nkernels NUL-terminated names (malloc'd) */
	__u8 *init;         /* the region's initial contents (malloc'd): */
	size_t init_len;    /* struct gpuext_inj_init entries, checked */
	__u64 probe_version;
	char text[48];      /* the reason text, NUL-terminated, truncated */
};

/* region.c: the shared region of device probes' maps. */
struct devrt_region;
struct devrt_region *devrt_region_get(__u64 size, __u64 version,
				      const __u8 *init, size_t init_len,
				      int *shared, CUresult *res,
				      const char **step);
CUdeviceptr devrt_region_dptr(const struct devrt_region *g);
__u64 devrt_region_size(const struct devrt_region *g);
void devrt_region_put(struct devrt_region *g);
void devrt_region_atfork_child(void);

int devrt_inject_ask(const char *sock, __u32 timeout_ms,
		     const struct gpuext_inj_req *req, const char *ptx,
		     const char *names, struct devrt_inj_answer *ans);
void devrt_inject_answer_free(struct devrt_inj_answer *ans);

#endif /* DEVRT_INJECT_H */
