// SPDX-License-Identifier: Apache-2.0
/*
 * resolve.c - the real functions, and the two ways a program gets
 * driver functions without going through devrt's exported symbols.
 *
 * 1. dlsym with a handle.  The CUDA runtime (since 12) does
 *    dlopen("libcuda.so.1") and dlsym(handle, "cuGetProcAddress_v2"), and
 *    Triton looks up cuLaunchKernelEx the same way.  A lookup in a handle
 *    does not see LD_PRELOADed symbols, so devrt interposes dlsym itself:
 *    for a symbol it wraps, it remembers the real function and hands out
 *    its wrapper.  Every other lookup goes to the real dlsym as a tail call,
 *    so that dlsym(RTLD_NEXT, ...) still finds what follows its caller.
 *
 * 2. cuGetProcAddress[_v2], cudaGetDriverEntryPoint[ByVersion].  They map
 *    a base name ("cuMemAlloc") to a versioned function by the caller's
 *    CUDA version and flags.  The wrappers call the real one, then find
 *    which exported variant the returned pointer is (the real functions of
 *    cuMemAlloc, cuMemAlloc_v2, ..._ptds, looked up in libcuda) and return
 *    devrt's wrapper of exactly that variant.  A pointer that is none of
 *    them is returned unchanged: that function is simply not traced.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "devrt.h"

typedef void *(*dlsym_fn)(void *, const char *);

void *devrt_real_fn[DEVRT_NSYMS];
struct devrt_driver devrt_drv;
__u64 devrt_drv_calls[DEVRT_NDRV];
const char *const devrt_drv_names[DEVRT_NDRV] = {
#define DEVRT_DRV_NAME(name, type) #name,
	DEVRT_DRIVER_FNS(DEVRT_DRV_NAME)
	DEVRT_DRIVER_OPT_FNS(DEVRT_DRV_NAME)
#undef DEVRT_DRV_NAME
};

static dlsym_fn real_dlsym;
static void *cuda_handle;           /* libcuda, held open once found */
static int by_name[DEVRT_NSYMS];    /* symbol ids sorted by name */

static dlsym_fn dlsym_get(void)
{
	dlsym_fn fn = __atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE);

	if (likely(fn))
		return fn;
	/* glibc 2.34 moved dlsym into libc with a new version; older ones
	 * (and the GPU machines' 2.39 still) also have the 2.2.5 one. */
	fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!fn)
		fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	__atomic_store_n(&real_dlsym, fn, __ATOMIC_RELEASE);
	return fn;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(devrt_syms[*(const int *)a].name,
		      devrt_syms[*(const int *)b].name);
}

void devrt_resolve_init(void)
{
	int i;

	for (i = 0; i < DEVRT_NSYMS; i++)
		by_name[i] = i;
	qsort(by_name, DEVRT_NSYMS, sizeof(by_name[0]), cmp_name);
	dlsym_get();
}

/* The id of a symbol devrt wraps, or -1.  Cheap for every other name. */
static int lookup(const char *name)
{
	int lo = 0, hi = DEVRT_NSYMS;

	if (!name || !((name[0] == 'c' && name[1] == 'u') ||
		       (name[0] == '_' && name[1] == '_' && name[2] == 'c')))
		return -1;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		int c = strcmp(name, devrt_syms[by_name[mid]].name);

		if (!c)
			return by_name[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

int devrt_is_wrapper(const void *p)
{
	int i;

	for (i = 0; i < DEVRT_NSYMS; i++)
		if (devrt_wrappers[i] == p)
			return 1;
	return 0;
}

static int is_runtime(const char *name)
{
	return !strncmp(name, "cuda", 4) || !strncmp(name, "__cuda", 6);
}

/* libcuda, from a function known to be in it. Holding it open keeps the
 * driver mapped for the poller until the process ends. */
void devrt_note_driver(void *fn)
{
	void *h = NULL, *none = NULL;
	Dl_info info;

	if (__atomic_load_n(&cuda_handle, __ATOMIC_ACQUIRE) || !fn ||
	    !dladdr(fn, &info) || !info.dli_fname)
		return;
	h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (h && !__atomic_compare_exchange_n(&cuda_handle, &none, h, 0,
					      __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		dlclose(h);
}

static void *driver_handle(void)
{
	void *h = __atomic_load_n(&cuda_handle, __ATOMIC_ACQUIRE), *none = NULL;

	if (h)
		return h;
	h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (h && !__atomic_compare_exchange_n(&cuda_handle, &none, h, 0,
					      __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
		dlclose(h);
		h = none;
	}
	return h;
}

/* A function of the driver that devrt calls itself, or NULL. */
void *devrt_driver_sym(const char *name)
{
	void *h = driver_handle();
	dlsym_fn sym = dlsym_get();

	return h && sym ? sym(h, name) : NULL;
}

/*
 * The real function of a wrapper called before anything told devrt where
 * it is: a driver symbol from libcuda, a runtime one from whatever follows
 * devrt in the lookup order.  NULL if there is none.
 */
void *devrt_real_slow(enum devrt_sym id)
{
	const char *name = devrt_syms[id].name;
	dlsym_fn sym = dlsym_get();
	void *p = NULL, *none = NULL;

	if (!sym)
		return NULL;
	if (!is_runtime(name))
		p = devrt_driver_sym(name);
	if (!p)
		p = sym(RTLD_NEXT, name);
	if (!p || p == devrt_wrappers[id])
		return NULL;
	if (!__atomic_compare_exchange_n(&devrt_real_fn[id], &none, p, 0,
					 __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		p = none;
	return p;
}

/* Makes p the real function of id.  False if another one already is. */
static int adopt(int id, void *p)
{
	void *cur = NULL;

	if (__atomic_compare_exchange_n(&devrt_real_fn[id], &cur, p, 0,
					__ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		return 1;
	return cur == p;
}

static __attribute__((noinline)) void *dlsym_hook(dlsym_fn sym, void *handle,
						  const char *name, int id)
{
	void *p = sym(handle, name);

	if (!p || devrt_is_wrapper(p) ||
	    (devrt.cfg.faults & DEVRT_FAULT_PROCADDR))
		return p;
	if (!is_runtime(name))
		devrt_note_driver(p);
	/* Another library's function of that name: not ours to wrap. */
	if (!adopt(id, p))
		return p;
	return devrt_wrappers[id];
}

/*
 * The interposed dlsym.  The pass-through path must be a tail call: glibc
 * resolves RTLD_NEXT relative to its caller's return address.
 */
DEVRT_EXPORT void *dlsym(void *handle, const char *name)
{
	dlsym_fn sym = dlsym_get();
	int id;

	if (handle != RTLD_NEXT && (id = lookup(name)) >= 0 && sym)
		return dlsym_hook(sym, handle, name, id);
#if defined(__clang__) && __has_attribute(musttail)
	__attribute__((musttail))
#endif
	return sym(handle, name);
}

/* Is sym a variant of base: base, then _vN, then _ptsz or _ptds? */
static int variant_of(const char *sym, const char *base)
{
	size_t n = strlen(base);

	if (strncmp(sym, base, n))
		return 0;
	sym += n;
	if (sym[0] == '_' && sym[1] == 'v' && sym[2] >= '0' && sym[2] <= '9') {
		sym += 3;
		while (*sym >= '0' && *sym <= '9')
			sym++;
	}
	return !*sym || !strcmp(sym, "_ptsz") || !strcmp(sym, "_ptds");
}

/*
 * *pfn is the driver function the entry-point API returned for base: make
 * it devrt's wrapper of the same variant, or leave it alone.
 */
void devrt_map_entry(const char *base, void **pfn)
{
	void *p;
	int i;

	if (!base || !pfn || !(p = *pfn) || devrt_is_wrapper(p) ||
	    (devrt.cfg.faults & DEVRT_FAULT_PROCADDR))
		return;
	for (i = 0; i < DEVRT_NSYMS; i++) {
		if (!variant_of(devrt_syms[i].name, base) ||
		    devrt_real(i) != p)
			continue;
		*pfn = devrt_wrappers[i];
		return;
	}
}

_Static_assert(sizeof(struct devrt_driver) == DEVRT_NDRV * sizeof(void *),
	       "devrt_driver is an array of function pointers");

/* The driver functions GPU execution timing needs (-1 if one is missing),
 * and those it uses when the driver has them. */
int devrt_driver_load(void)
{
	void *p;
	int i;

	if (devrt.cfg.faults & DEVRT_FAULT_DRIVER)
		return -1;
	for (i = 0; i < DEVRT_NDRV; i++) {
		p = devrt_driver_sym(devrt_drv_names[i]);
		if (!p && i < DEVRT_NDRV_REQUIRED)
			return -1;
		memcpy((char *)&devrt_drv + i * sizeof(void *), &p, sizeof(p));
	}
	return 0;
}
