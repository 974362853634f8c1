// SPDX-License-Identifier: Apache-2.0
/*
 * inject.c - device probe injection: patched modules and the launches
 * redirected to them (issue 7).
 *
 * When a program loads a module (cuModuleLoadData[Ex], cuModuleLoadFatBinary,
 * cuLibraryLoadData, and through them the CUDA runtime's fat binaries, which
 * since CUDA 12 are loaded with the driver entry points devrt hands out; or
 * from a file, cuModuleLoad and cuLibraryLoadFromFile, which devrt maps
 * to read: PyTorch's static launcher loads inductor's Triton cubins so),
 * the program's load happens first and exactly as asked: the program gets
 * the original module whatever follows.  Then, if the collector listens on
 * the injection socket, devrt finds the PTX (fatbin.c), asks the collector
 * for a patched PTX (inject_ask.c) and, on PATCHED:
 *
 *   1. loads it with the real cuModuleLoadDataEx / cuLibraryLoadData (the
 *      driver JITs it; load_ns in the record);
 *   2. finds or makes the shared region the probes' maps live in: device
 *      memory of the size the collector asked for (one per context and
 *      probe set, shared by the modules patched for it), starting with the
 *      collector's initial contents, mirrored into a file beside the ring,
 *      <dir>/gpuext-devmaps-<pid>-<created_ns>.maps (region.c), and writes
 *      its device pointer into the patched module's __gpuext_shared (.const)
 *      (cuModuleGetGlobal or cuLibraryGetGlobal, then cuMemcpyHtoD);
 *   3. resolves each patched kernel in both modules and enters original ->
 *      patched in the redirect table, which every launch wrapper consults
 *      (DEVRT_INJECT_FN in inject.h: one relaxed load while nothing is
 *      patched; otherwise a lock-free probe of an open-addressing table).
 *
 * A library is context-independent: the CUDA runtime (CUDA 12 and later)
 * loads a program's fat binary once and launches its CUkernels in every
 * context, one per GPU.  The twin's __gpuext_shared is set in the context
 * current at the load only; in any other it is 0 and the probes would do
 * nothing.  So a CUkernel's redirect carries the library's binding (struct
 * lib_bind): the launch asks the driver for the current context
 * (cuCtxGetCurrent) and runs the twin there only once it is bound there
 * (the first launch in a new context makes or finds that context's region
 * and writes its pointer into the twin's global in that context; a record
 * with GPUEXT_IF_OTHER_CONTEXT says how that went), else the original (a
 * twin that owns the module's variables, below, runs there all the same,
 * its probes finding no region).
 *
 * A library kernel's CUfunction is per context too: the one of the load's
 * context is redirected with its CUkernel; one the program gets with
 * cuKernelGetFunction in another context is redirected to the twin's
 * function there when it is asked for (kernel_function), binding the twin
 * in that context first.
 *
 * A patched kernel N may come with a second entry N__gx1d
 * (GPUEXT_INJ_GRID1D_SUFFIX): the same instrumented kernel for
 * one-dimensional grids, whose block sampling reads %ctaid.x and %nctaid.x
 * alone (cheaper on short kernels), and which would sample the wrong blocks
 * of a 2-D or 3-D grid.  resolve looks it up beside each twin (optional:
 * any failure of the lookup means that kernel has none, and so does the
 * name in the original module, the program's own kernel: suffix_twin) and
 * keeps it in the twin's slot; a launch whose gridDimY and gridDimZ are 1
 * runs it (DEVRT_INJ_1D_<sym> in inject.h: a compare more, no driver
 * call), any other grid the twin.  Otherwise the two are one: a library's binding
 * covers both (one library, one __gpuext_shared), settings are made on
 * both, and whatever clears a twin clears its 1-D twin.  A launch or a
 * setting the 1-D twin refuses and the twin takes drops the 1-D twin
 * alone (drop_grid1d: launches of that handle run the twin, the module
 * stays patched); one the twin refuses drops the module's redirects.
 *
 * A module that declares variables of its own (GPUEXT_INJ_RF_VARS) is
 * the exception: its twin holds copies of them, so the twin must own them
 * for good.  Every kernel of the module is redirected, the program's
 * lookups of the original's variables and modules (cuModuleGetGlobal_v2,
 * cuLibraryGetGlobal, cuLibraryGetModule, cuFuncGetModule) give the
 * twin's, and nothing falls back to the original: a patched kernel comes
 * with its plain copy in the twin (N__gxplain), with which a launch the
 * twin refuses is made again, and which runs that kernel's launches from
 * the first it takes (devrt_inject_fallback, devrt_inject_took); without
 * one the launch fails with the twin's error, and a kernel whose twin and
 * plain copy take fewer threads a block than its original keeps the whole
 * module unpatched (vars_limits, at the load).
 *
 * cuModuleGetFunction is not touched: the program sees original handles
 * only (the twin's module where it asks for a module of a twin that owns
 * the variables).  cuModuleUnload / cuLibraryUnload of an original removes
 * its redirects, then unloads the patched twin and lets go of the region
 * (the last module of a region mirrors it a last time and frees it).
 *
 * Fail open: any failure (no answer in time, a broken answer, a driver that
 * refuses the patched PTX, a missing global or kernel) undoes what was done
 * and keeps the original; every load with a socket present leaves one
 * struct gpuext_inject_event in the ring saying what happened and why.
 * Without the socket nothing is asked, hashed or written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject.h"

__u32 devrt_inj_live;

/* ---- configuration -------------------------------------------------------- */

static struct {
	int off;                /* GPUEXT_DEVRT_INJECT=0 */
	__u32 timeout_ms;       /* GPUEXT_DEVRT_INJECT_TIMEOUT_MS */
	char sock[600];         /* GPUEXT_DEVRT_INJECT_SOCK */
} icfg;

static pthread_once_t icfg_once = PTHREAD_ONCE_INIT;

static void icfg_read(void)
{
	const char *s = getenv("GPUEXT_DEVRT_INJECT_SOCK");
	const char *t = getenv("GPUEXT_DEVRT_INJECT_TIMEOUT_MS");
	const char *o = getenv("GPUEXT_DEVRT_INJECT");
	char *end;

	icfg.off = o && !strcmp(o, "0");
	icfg.timeout_ms = GPUEXT_INJ_TIMEOUT_MS;
	if (t && *t) {
		unsigned long v = strtoul(t, &end, 10);

		if (!*end && v && v <= 600000)
			icfg.timeout_ms = (__u32)v;
		else
			devrt_debug("ignoring GPUEXT_DEVRT_INJECT_TIMEOUT_MS=%s", t);
	}
	if (s && *s)
		snprintf(icfg.sock, sizeof(icfg.sock), "%s", s);
	else
		snprintf(icfg.sock, sizeof(icfg.sock), "%s/%s", devrt.cfg.dir,
			 GPUEXT_INJ_SOCK_NAME);
}

/* ---- driver functions injection calls -------------------------------------- */

typedef CUresult (*ld_ex_fn)(CUmodule *, const void *, unsigned int,
			     CUjit_option *, void **);
typedef CUresult (*lib_ld_fn)(CUlibrary *, const void *, CUjit_option *,
			      void **, unsigned int, CUlibraryOption *,
			      void **, unsigned int);
typedef CUresult (*get_fn_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*get_kern_fn)(CUkernel *, CUlibrary, const char *);
typedef CUresult (*kern_fn_fn)(CUfunction *, CUkernel);
typedef CUresult (*unload_fn)(void *);
typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);

static struct {
	CUresult (*ctx_get_device)(CUdevice *);
	CUresult (*dev_attr)(int *, int, CUdevice);
	CUresult (*mod_global)(CUdeviceptr *, size_t *, CUmodule, const char *);
	CUresult (*lib_global)(CUdeviceptr *, size_t *, CUlibrary, const char *);
	CUresult (*ctx_get)(CUcontext *);
} idrv;

static pthread_once_t idrv_once = PTHREAD_ONCE_INIT;

static void idrv_load(void)
{
	devrt_driver_sym_into(&idrv.ctx_get_device, "cuCtxGetDevice");
	devrt_driver_sym_into(&idrv.dev_attr, "cuDeviceGetAttribute");
	devrt_driver_sym_into(&idrv.mod_global, "cuModuleGetGlobal_v2");
	devrt_driver_sym_into(&idrv.lib_global, "cuLibraryGetGlobal");
	devrt_driver_sym_into(&idrv.ctx_get, "cuCtxGetCurrent");
}

/*
 * A launch while patched kernels are live: the record names its device,
 * so the collector pairs launch calls with the launch_latency probe's
 * records of the same GPU (its regions name theirs).  One driver call.
 */
void devrt_inject_launch_device(struct gpuext_event *e)
{
	CUdevice dev;

	if (__atomic_load_n(&devrt_inj_live, __ATOMIC_ACQUIRE) &&
	    idrv.ctx_get_device && idrv.ctx_get_device(&dev) == CUDA_SUCCESS) {
		e->aux.launch.device = (__u32)dev;
		e->flags |= GPUEXT_F_DEVICE_VALID;
	}
}

#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

/* Compute capability of the current context's device, major * 10 + minor. */
static __u32 sm_arch(void)
{
	CUdevice dev;
	int major = 0, minor = 0;

	if (!idrv.ctx_get_device || !idrv.dev_attr ||
	    idrv.ctx_get_device(&dev) != CUDA_SUCCESS ||
	    idrv.dev_attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
			  dev) != CUDA_SUCCESS ||
	    idrv.dev_attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
			  dev) != CUDA_SUCCESS ||
	    major < 0 || major > 100 || minor < 0 || minor > 9)
		return 0;
	return (__u32)(major * 10 + minor);
}

/* ---- the redirect table ---------------------------------------------------- */

/*
 * Open addressing, keyed by the original CUfunction (or CUkernel, which
 * cuLaunchKernel also takes), written under inj_lock, read without a lock.
 * A key is never removed: unloading sets its value to NULL (launches of it
 * run as they are), and a later patch of the same handle sets it again.
 * At most 3/4 full, so a probe always ends at an empty slot.
 *
 * val is the gate: a writer stores g1 and lib first and val last
 * (release), a reader loads val first (acquire), so whoever sees a value
 * sees the 1-D twin and binding published with it.  Clearing stores val
 * NULL, then g1: a launch that read the old val just before may still run
 * the old 1-D twin, as it may the old twin (a launch racing its module's
 * unload is the program's race; a twin already gone refuses it, and the
 * original runs).  A refused 1-D twin is cleared alone, g1 NULL with val
 * kept (drop_grid1d): a launch that still reads the old g1 is refused by
 * it and retried on the twin.
 */
#define RD_SLOTS (1U << 16)
#define RD_MAX (RD_SLOTS / 4 * 3)

struct lib_bind;

struct rd_slot {
	void *key;
	void *val;              /* the twin, or NULL */
	void *g1;               /* its 1-D twin (GPUEXT_INJ_GRID1D_SUFFIX), or NULL */
	struct lib_bind *lib;   /* a library's CUkernel: bound per context */
};

/*
 * The contexts a patched library's twin was bound in (its global set to
 * that context's region), or failed to be.  Published entries never
 * change; lookups read them without a lock.  Never freed: a launch may
 * still hold one after its module's unload (a few hundred bytes per
 * patched library).
 */
#define LIB_CTXS 32

struct lib_bind {
	void *orig;             /* the program's CUlibrary (records) */
	void *twin;             /* the twin; NULL once unloaded (inj_lock) */
	__u64 size, version;    /* the probe set's region */
	__u8 *init;             /* its initial contents (NULL once unloaded) */
	size_t init_len;
	int vars;               /* the twin owns the variables: it runs where
				 * it is not bound too (without a region) */
	__u32 n;                /* entries below, published (release) */
	struct {
		CUcontext ctx;
		struct devrt_region *region; /* other contexts' (the load's: the module's) */
		int ok;
	} c[LIB_CTXS];
};

static void *lib_twin(struct lib_bind *b, void *orig, void *twin);

/* 32-byte slots, never across a cache line. */
static struct rd_slot rd_tab[RD_SLOTS] __attribute__((aligned(64)));
static __u32 rd_keys;
static pthread_mutex_t inj_lock = PTHREAD_MUTEX_INITIALIZER;

static inline __u32 rd_hash(const void *p)
{
	return (__u32)devrt_ptr_mix(p) & (RD_SLOTS - 1);
}

/* The slot of key, or NULL if it has none (keys are never removed). */
static inline struct rd_slot *rd_slot_of(void *key)
{
	__u32 i;
	void *k;

	for (i = rd_hash(key);; i = (i + 1) & (RD_SLOTS - 1)) {
		k = __atomic_load_n(&rd_tab[i].key, __ATOMIC_ACQUIRE);
		if (!k)
			return NULL;
		if (k == key)
			return &rd_tab[i];
	}
}

/* The twin of fn (NULL if none), its 1-D twin (NULL if none) and, for a
 * library's CUkernel, its binding. */
static void *rd_find(void *fn, void **g1, struct lib_bind **lib)
{
	struct rd_slot *sl = rd_slot_of(fn);
	void *v;

	if (!sl)
		return NULL;
	v = __atomic_load_n(&sl->val, __ATOMIC_ACQUIRE);
	/* (ordered after val's acquire) */
	*g1 = __atomic_load_n(&sl->g1, __ATOMIC_RELAXED);
	*lib = __atomic_load_n(&sl->lib, __ATOMIC_RELAXED);
	return v;
}

/*
 * The launch's function: fn's twin (its 1-D twin if grid1d and it has
 * one), in the current context for a library's CUkernel (the binding is
 * the library's, the same for both twins), else fn.
 */
void *devrt_inject_lookup(void *fn, int grid1d)
{
	struct lib_bind *lib;
	void *g1, *v = rd_find(fn, &g1, &lib);

	if (!v)
		return fn;
	if (grid1d && g1)
		v = g1;
	return lib ? lib_twin(lib, fn, v) : v;
}

/* The twins whatever the context (settings, which name a device): fn's
 * twin, fn if none, and into *g1 its 1-D twin or NULL. */
static void *inject_twin(void *fn, void **g1)
{
	struct lib_bind *lib;
	void *v = rd_find(fn, g1, &lib);

	if (!v)
		*g1 = NULL;
	return v ? v : fn;
}

/* Caller holds inj_lock.  key -> val (1-D: g1, or NULL); val NULL clears
 * key (and its 1-D twin).  -1 if the table is full. */
static int rd_set(void *key, void *val, void *g1, struct lib_bind *lib)
{
	__u32 i;
	void *old;

	for (i = rd_hash(key);; i = (i + 1) & (RD_SLOTS - 1)) {
		if (rd_tab[i].key == key) {
			old = rd_tab[i].val;
			if (val) {
				__atomic_store_n(&rd_tab[i].lib, lib,
						 __ATOMIC_RELAXED);
				__atomic_store_n(&rd_tab[i].g1, g1,
						 __ATOMIC_RELAXED);
			}
			__atomic_store_n(&rd_tab[i].val, val, __ATOMIC_RELEASE);
			if (!val)
				__atomic_store_n(&rd_tab[i].g1, NULL,
						 __ATOMIC_RELAXED);
			if (old && !val)
				__atomic_sub_fetch(&devrt_inj_live, 1,
						   __ATOMIC_RELEASE);
			else if (!old && val)
				__atomic_add_fetch(&devrt_inj_live, 1,
						   __ATOMIC_RELEASE);
			return 0;
		}
		if (!rd_tab[i].key)
			break;
	}
	if (!val)
		return 0;
	if (rd_keys >= RD_MAX)
		return -1;
	rd_keys++;
	__atomic_store_n(&rd_tab[i].lib, lib, __ATOMIC_RELAXED);
	__atomic_store_n(&rd_tab[i].g1, g1, __ATOMIC_RELAXED);
	__atomic_store_n(&rd_tab[i].val, val, __ATOMIC_RELAXED);
	__atomic_store_n(&rd_tab[i].key, key, __ATOMIC_RELEASE);
	__atomic_add_fetch(&devrt_inj_live, 1, __ATOMIC_RELEASE);
	return 0;
}

/* ---- patched modules -------------------------------------------------------- */

/* A redirect before it is published: original -> twin (and 1-D twin). */
struct rd_pair {
	void *orig, *twin;
	void *g1;               /* the 1-D twin, or NULL */
	void *plain;            /* the plain copy (vars), or NULL */
	int kernel;             /* a library's CUkernel: bound per context */
};

struct inj_mod {
	struct inj_mod *next;
	void *orig;             /* what the program got */
	void *patched;          /* devrt's twin */
	int lib;                /* CUlibrary handles */
	__u32 nkeys;
	void **keys;            /* redirected originals (publish fills it) */
	void **plains;          /* each key's plain copy (vars), or NULL */
	__u32 npairs;
	struct rd_pair *pairs;  /* resolve's, until publish */
	struct devrt_region *region; /* the shared region, or NULL */
	struct lib_bind *lb;    /* a library with a region: its contexts */
	int vars;               /* the twin owns the module's variables
				 * (GPUEXT_INJ_RF_VARS): no fallback */
	int vars_noted;         /* a refused launch was recorded (inj_lock) */
	int set_noted;          /* a refused setting was (vars; inj_lock) */
};

static struct inj_mod *mods;
/* Patched modules whose twins own their variables, live: while 0 the
 * variable lookups (vars_twin, vars_fn) take no lock. */
static __u32 inj_vars;

static void patched_unload(struct inj_mod *m)
{
	unload_fn fn;

	if (!m->patched)
		return;
	fn = (unload_fn)devrt_real(m->lib ? DEVRT_SYM_cuLibraryUnload :
					    DEVRT_SYM_cuModuleUnload);
	if (fn)
		fn(m->patched);
	m->patched = NULL;
}

static void mod_free(struct inj_mod *m)
{
	struct lib_bind *b = m->lb;
	__u32 i, n = 0;

	if (b) {
		pthread_mutex_lock(&inj_lock);
		b->twin = NULL;	/* no more bindings */
		n = b->n;
		pthread_mutex_unlock(&inj_lock);
	}
	/* The twin first: no launch of it may run on a freed region. */
	patched_unload(m);
	devrt_region_put(m->region);
	m->region = NULL;
	for (i = 0; b && i < n; i++) {
		devrt_region_put(b->c[i].region);
		b->c[i].region = NULL;
	}
	if (b) {
		free(b->init);
		b->init = NULL;
	}
	free(m->pairs);
	free(m->keys);
	free(m->plains);
	free(m);
}

/* ---- one module load -------------------------------------------------------- */

struct inj_try {
	struct gpuext_inject_event ev;
	__u64 t0;
};

static void emit(struct inj_try *x, __u32 outcome, __u32 reason)
{
	struct gpuext_inject_event *e = &x->ev;

	e->outcome = outcome;
	e->reason = reason;
	e->ts_ns = devrt_now();
	e->total_ns = e->ts_ns - x->t0;
	devrt_ring_write(e, sizeof(*e));
}

/* Writes dptr into the patched module's (lib: library's) __gpuext_shared,
 * in the current context. */
static int region_bind(int lib, void *patched, CUdeviceptr dptr,
		       CUresult *res, const char **step)
{
	htod_fn htod = (htod_fn)devrt_real(DEVRT_SYM_cuMemcpyHtoD_v2);
	CUdeviceptr g = 0;
	size_t gsize = 0;

	*step = "driver: no cuModuleGetGlobal";
	if (!htod || !(lib ? (void *)idrv.lib_global : (void *)idrv.mod_global))
		return -1;
	*step = lib ? "cuLibraryGetGlobal" : "cuModuleGetGlobal";
	*res = lib ? idrv.lib_global(&g, &gsize, patched,
				     GPUEXT_INJ_SHARED_GLOBAL) :
		     idrv.mod_global(&g, &gsize, patched,
				     GPUEXT_INJ_SHARED_GLOBAL);
	if (*res != CUDA_SUCCESS)
		return -1;
	if (gsize != sizeof(dptr)) {
		*step = "__gpuext_shared is not 8 bytes";
		return -1;
	}
	*step = "cuMemcpyHtoD";
	*res = htod(g, &dptr, sizeof(dptr));
	return *res == CUDA_SUCCESS ? 0 : -1;
}

/*
 * The 1-D twin of kernel name in m's twin, name GPUEXT_INJ_GRID1D_SUFFIX (a
 * CUkernel for a library, with its function in the current context into
 * *gf if gf is not NULL), or NULL: it is optional, so any failure
 * (CUDA_ERROR_NOT_FOUND: the collector made none for this kernel; no
 * memory for the name) means none, and the twin runs every grid.  The
 * same for its plain copy, name GPUEXT_INJ_PLAIN_SUFFIX (suffix).
 *
 * The name must also be absent from the original (CUDA_ERROR_NOT_FOUND
 * there, nothing else): the collector adds no 1-D twin to a module that
 * has an item of that name already, so a kernel the program's own module
 * calls N__gx1d (an extern "C" name, say) is in the twin as the program's
 * kernel, with its own code and parameters, patched or not.  Launching it
 * for N would run the wrong kernel.  Looked up only when the twin has the
 * name (once per kernel, at the load).
 *
 * *buf (*cap bytes) is the caller's, grown here: names are bounded only by
 * GPUEXT_INJ_MAX_NAMES.
 */
#define ERR_NOT_FOUND 500	/* CUDA_ERROR_NOT_FOUND */

static void *suffix_twin(struct inj_mod *m, const char *name,
			 const char *suffix, char **buf, size_t *cap, void **gf)
{
	get_fn_fn get_fn = (get_fn_fn)devrt_real(DEVRT_SYM_cuModuleGetFunction);
	get_kern_fn get_kern = (get_kern_fn)devrt_real(DEVRT_SYM_cuLibraryGetKernel);
	kern_fn_fn kern_fn = (kern_fn_fn)devrt_real(DEVRT_SYM_cuKernelGetFunction);
	size_t len = strlen(name), need = len + strlen(suffix) + 1;
	void *g = NULL, *f = NULL;
	char *b;

	if (gf)
		*gf = NULL;
	if (need > *cap) {
		if (!(b = realloc(*buf, need)))
			return NULL;
		*buf = b;
		*cap = need;
	}
	memcpy(*buf, name, len);
	memcpy(*buf + len, suffix, strlen(suffix) + 1);
	if ((m->lib ? get_kern((CUkernel *)&g, m->patched, *buf) :
		      get_fn((CUfunction *)&g, m->patched, *buf)) != CUDA_SUCCESS ||
	    (m->lib ? get_kern((CUkernel *)&f, m->orig, *buf) :
		      get_fn((CUfunction *)&f, m->orig, *buf)) != ERR_NOT_FOUND)
		return NULL;
	f = NULL;
	if (gf && kern_fn && g && kern_fn((CUfunction *)&f, g) == CUDA_SUCCESS)
		*gf = f;
	return g;
}

/* Original -> patched for each name; 0, or -1 with what failed in *res. */
static int resolve(struct inj_mod *m, const char *names, __u32 n,
		   CUresult *res)
{
	get_fn_fn get_fn = (get_fn_fn)devrt_real(DEVRT_SYM_cuModuleGetFunction);
	get_kern_fn get_kern = (get_kern_fn)devrt_real(DEVRT_SYM_cuLibraryGetKernel);
	kern_fn_fn kern_fn = (kern_fn_fn)devrt_real(DEVRT_SYM_cuKernelGetFunction);
	const char *s = names;
	char *buf = NULL;
	size_t cap = 0;
	__u32 i;
	int ret = -1;

	/* A library kernel is launched by its CUkernel or by the CUfunction
	 * of the current context: both are keys (two pairs per kernel). */
	m->pairs = calloc((size_t)n * 2, sizeof(*m->pairs));
	m->keys = calloc((size_t)n * 2, sizeof(*m->keys));
	m->plains = calloc((size_t)n * 2, sizeof(*m->plains));
	if (!m->pairs || !m->keys || !m->plains ||
	    (m->lib ? !get_kern : !get_fn))
		return -1;
	for (i = 0; i < n; i++, s += strlen(s) + 1) {
		void *o = NULL, *p = NULL, *g, *gf = NULL, *pl = NULL, *plf = NULL;
		struct rd_pair *pr;

		*res = m->lib ? get_kern((CUkernel *)&o, m->orig, s) :
				get_fn((CUfunction *)&o, m->orig, s);
		if (*res == CUDA_SUCCESS)
			*res = m->lib ? get_kern((CUkernel *)&p, m->patched, s) :
					get_fn((CUfunction *)&p, m->patched, s);
		if (*res != CUDA_SUCCESS || !o || !p)
			goto out;
		g = suffix_twin(m, s, GPUEXT_INJ_GRID1D_SUFFIX, &buf, &cap,
				m->lib ? &gf : NULL);
		if (m->vars)
			pl = suffix_twin(m, s, GPUEXT_INJ_PLAIN_SUFFIX, &buf,
					 &cap, m->lib ? &plf : NULL);
		pr = &m->pairs[m->npairs++];
		pr->orig = o;
		pr->twin = p;
		pr->g1 = g;
		pr->plain = pl;
		pr->kernel = m->lib;
		if (m->lib && kern_fn) {
			void *of = NULL, *pf = NULL;

			if (kern_fn((CUfunction *)&of, o) == CUDA_SUCCESS &&
			    kern_fn((CUfunction *)&pf, p) == CUDA_SUCCESS &&
			    of && pf) {
				pr = &m->pairs[m->npairs++];
				pr->orig = of;
				pr->twin = pf;
				pr->g1 = gf;
				pr->plain = plf;
			}
		}
	}
	ret = 0;
out:
	free(buf);
	return ret;
}

/* Enters m's pairs and m into the tables; -1 if full.  The originals stay
 * in m->keys: unload and drop clear them. */
static int publish(struct inj_mod *m)
{
	struct rd_pair *pairs;
	__u32 i, j;

	pthread_mutex_lock(&inj_lock);
	for (i = 0; i < m->npairs; i++) {
		struct rd_pair *pr = &m->pairs[i];

		if (rd_set(pr->orig, pr->twin, pr->g1,
			   pr->kernel ? m->lb : NULL)) {
			for (j = 0; j < i; j++)
				rd_set(m->pairs[j].orig, NULL, NULL, NULL);
			pthread_mutex_unlock(&inj_lock);
			return -1;
		}
		m->keys[i] = pr->orig;
		m->plains[i] = pr->plain;
	}
	m->nkeys = m->npairs;
	pairs = m->pairs;	/* (m is the unloads' from here) */
	m->pairs = NULL;
	m->npairs = 0;
	m->next = mods;
	mods = m;
	if (m->vars)
		__atomic_add_fetch(&inj_vars, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&inj_lock);
	free(pairs);
	return 0;
}

static CUcontext current_ctx(void)
{
	CUcontext ctx = NULL;

	if (!idrv.ctx_get || idrv.ctx_get(&ctx) != CUDA_SUCCESS)
		return NULL;
	return ctx;
}

/* A library's bindings: bound in the load's context (the module's region),
 * if one was current. */
static struct lib_bind *lib_bind_new(struct inj_mod *m,
				     const struct devrt_inj_answer *a)
{
	struct lib_bind *b = calloc(1, sizeof(*b));

	if (!b || !idrv.ctx_get ||
	    !(b->init = malloc(a->init_len ? a->init_len : 1))) {
		free(b);
		return NULL;
	}
	memcpy(b->init, a->init, a->init_len);
	b->init_len = a->init_len;
	b->orig = m->orig;
	b->twin = m->patched;
	b->size = a->shared_size;
	b->vars = m->vars;
	b->version = a->probe_version;
	if (m->region) {
		b->c[0].ctx = current_ctx();
		b->c[0].ok = 1;
		b->n = 1;
	}
	return b;
}

/*
 * First launch of a patched library's kernel in context ctx: make or find
 * ctx's region and set the twin's global there.  Once per library and
 * context (the outcome is kept, a failure too); a record says how it went.
 */
static void *lib_bind_ctx(struct lib_bind *b, CUcontext ctx, void *orig,
			  void *twin)
{
	struct devrt_region *g = NULL;
	const char *step = "too many contexts";
	CUresult r = CUDA_SUCCESS;
	struct inj_try x;
	int shared = 0, ok = 0;
	__u32 i, n;

	memset(&x, 0, sizeof(x));
	x.t0 = devrt_now();
	devrt_t.busy++;
	pthread_mutex_lock(&inj_lock);
	n = b->n;
	for (i = 0; i < n; i++) {
		if (b->c[i].ctx == ctx) {
			ok = b->c[i].ok;
			pthread_mutex_unlock(&inj_lock);
			devrt_t.busy--;
			return ok || b->vars ? twin : orig;
		}
	}
	if (!b->twin || n == LIB_CTXS) {
		pthread_mutex_unlock(&inj_lock);
		devrt_t.busy--;
		return b->twin && b->vars ? twin : orig;
	}
	g = devrt_region_get(b->size, b->version, b->init, b->init_len,
			     &shared, &r, &step);
	ok = g && !region_bind(1, b->twin, devrt_region_dptr(g), &r, &step);
	if (!ok) {
		devrt_region_put(g);
		g = NULL;
	}
	b->c[n].ctx = ctx;
	b->c[n].region = g;
	b->c[n].ok = ok;
	__atomic_store_n(&b->n, n + 1, __ATOMIC_RELEASE);
	x.ev.kind = GPUEXT_KIND_INJECT;
	x.ev.source = GPUEXT_SOURCE_DEVRT;
	x.ev.flags = GPUEXT_IF_LIBRARY | GPUEXT_IF_OTHER_CONTEXT |
		     (shared ? GPUEXT_IF_REGION_SHARED : 0);
	x.ev.pid = (__u32)devrt.pid;
	x.ev.tid = devrt_tid();
	x.ev.module = (__u64)(uintptr_t)b->orig;
	x.ev.patched = (__u64)(uintptr_t)b->twin;
	x.ev.shared_dptr = g ? devrt_region_dptr(g) : 0;
	x.ev.shared_size = g ? devrt_region_size(g) : 0;
	x.ev.sm_arch = sm_arch();
	pthread_mutex_unlock(&inj_lock);
	if (ok) {
		emit(&x, GPUEXT_INJ_OUT_PATCHED, GPUEXT_INJ_R_NONE);
	} else {
		x.ev.cuda_result = r;
		snprintf(x.ev.text, sizeof(x.ev.text), "%s", step);
		emit(&x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_SHARED);
	}
	devrt_t.busy--;
	return ok || b->vars ? twin : orig;
}

/*
 * The function a launch of a patched library's kernel runs in the current
 * context: its twin where the twin is bound, else the original (the twin
 * all the same if it owns the library's variables: its probes find no
 * region there and do nothing).  One driver call (cuCtxGetCurrent) and a
 * scan of at most LIB_CTXS entries.
 */
static void *lib_twin(struct lib_bind *b, void *orig, void *twin)
{
	CUcontext ctx = current_ctx();
	__u32 i, n;

	if (!ctx)	/* the launch fails as the program's own (the twin's,
			 * if it owns the variables: never the original) */
		return b->vars ? twin : orig;
	n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++)
		if (b->c[i].ctx == ctx)
			return b->c[i].ok || b->vars ? twin : orig;
	return lib_bind_ctx(b, ctx, orig, twin);
}

/*
 * The program asked for the CUfunction of kernel k in the current context
 * (cuKernelGetFunction) and got fn.  In the load's context that function
 * is redirected already (resolve); in any other it is a handle of its
 * own, which the program may launch instead of k: if k has a twin bound
 * here (bound now if it was not), fn is redirected to the twin's function
 * in this context (and, if k still has a 1-D twin (drop_grid1d), to that
 * one's function here for 1-D grids: none if the driver does not give
 * it; and to its plain copy's, if it has one), and unloading or
 * dropping the module clears it with the rest.  Any failure leaves fn
 * running the original.  A library without a region (lib NULL: probes
 * without maps) is redirected so only if its twin owns the variables.
 */
static struct inj_mod *mod_of_key(void *key);

static void kernel_function(CUkernel k, CUfunction fn)
{
	kern_fn_fn kern_fn = (kern_fn_fn)devrt_real(DEVRT_SYM_cuKernelGetFunction);
	struct lib_bind *lib = NULL, *l2;
	void *twin, *g1, *pf = NULL, *gf = NULL, *g2, **keys, **plains;
	void *plain = NULL, *plf = NULL;
	struct inj_mod *m;
	int vars = 0, known = 0;
	__u32 i;

	if (!__atomic_load_n(&devrt_inj_live, __ATOMIC_RELAXED) || !fn ||
	    (void *)fn == (void *)k || !kern_fn)
		return;
	twin = rd_find(k, &g1, &lib);
	if (!twin || rd_find(fn, &g2, &l2))
		return;	/* not a patched library's kernel, or known already */
	pthread_mutex_lock(&inj_lock);
	if ((m = mod_of_key(k)) && m->lib) {
		known = 1;
		if ((vars = m->vars))
			for (i = 0; i < m->nkeys; i++)
				if (m->keys[i] == k)
					plain = m->plains[i];
	}
	pthread_mutex_unlock(&inj_lock);
	/* without a region (lib NULL) the twin runs no probe: only a twin
	 * that owns the variables must run here too */
	if (!known || (!lib && !vars))
		return;
	devrt_t.busy++;
	if ((lib && lib_twin(lib, k, twin) != twin) ||
	    kern_fn((CUfunction *)&pf, twin) != CUDA_SUCCESS || !pf)
		goto out;
	if (g1 && kern_fn((CUfunction *)&gf, g1) != CUDA_SUCCESS)
		gf = NULL;
	if (plain && plain != twin &&
	    kern_fn((CUfunction *)&plf, plain) != CUDA_SUCCESS)
		plf = NULL;
	pthread_mutex_lock(&inj_lock);
	m = mod_of_key(k);	/* (still loaded?) */
	if (m && (keys = realloc(m->keys, (m->nkeys + 1) * sizeof(*keys)))) {
		m->keys = keys;
		if ((plains = realloc(m->plains,
				      (m->nkeys + 1) * sizeof(*plains)))) {
			m->plains = plains;
			if (!rd_set(fn, pf, gf, NULL)) {
				m->plains[m->nkeys] = plf;
				m->keys[m->nkeys++] = fn;
			}
		}
	}
	pthread_mutex_unlock(&inj_lock);
out:
	devrt_t.busy--;
}

static int vars_limits(const struct inj_mod *m, char *why, size_t n);

static int socket_present(void)
{
	struct stat st;

	return stat(icfg.sock, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void patch(struct inj_try *x, struct devrt_inj_answer *a, void *orig,
		  int lib)
{
	struct gpuext_inject_event *e = &x->ev;
	struct inj_mod *m = calloc(1, sizeof(*m));
	CUdeviceptr dptr = 0;
	CUresult r = CUDA_SUCCESS;
	__u64 t;

	if (!m) {
		emit(x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_NO_MEMORY);
		return;
	}
	m->orig = orig;
	m->lib = lib;
	m->vars = !!(a->flags & GPUEXT_INJ_RF_VARS);
	if (m->vars)
		e->flags |= GPUEXT_IF_VARS;
	t = devrt_now();
	if (lib) {
		lib_ld_fn ld = (lib_ld_fn)devrt_real(DEVRT_SYM_cuLibraryLoadData);

		r = ld ? ld((CUlibrary *)&m->patched, a->ptx, NULL, NULL, 0,
			    NULL, NULL, 0) :
			 CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	} else {
		ld_ex_fn ld = (ld_ex_fn)devrt_real(DEVRT_SYM_cuModuleLoadDataEx);

		r = ld ? ld((CUmodule *)&m->patched, a->ptx, 0, NULL, NULL) :
			 CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	}
	e->load_ns = devrt_now() - t;
	if (r != CUDA_SUCCESS || !m->patched) {
		m->patched = NULL;
		e->cuda_result = r;
		mod_free(m);
		emit(x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_LOAD);
		return;
	}
	if (a->shared_size && !(lib && !current_ctx())) {
		/* (A library loaded with no context current is bound in each
		 * context at its first launch there: lib_twin.) */
		const char *step = "";
		int shared = 0;

		m->region = devrt_region_get(a->shared_size, a->probe_version,
					     a->init, a->init_len, &shared,
					     &r, &step);
		if (m->region) {
			dptr = devrt_region_dptr(m->region);
			if (shared)
				e->flags |= GPUEXT_IF_REGION_SHARED;
		}
		if (!m->region || region_bind(m->lib, m->patched, dptr, &r, &step)) {
			e->cuda_result = r;
			snprintf(e->text, sizeof(e->text), "%s", step);
			mod_free(m);
			emit(x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_SHARED);
			return;
		}
	}
	if (resolve(m, a->names, a->nkernels, &r)) {
		e->cuda_result = r;
		mod_free(m);
		emit(x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_FUNCTION);
		return;
	}
	if (m->vars && vars_limits(m, e->text, sizeof(e->text))) {
		mod_free(m);
		emit(x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_VARS_LIMITS);
		return;
	}
	if (lib && a->shared_size && !(m->lb = lib_bind_new(m, a))) {
		mod_free(m);
		emit(x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_NO_MEMORY);
		return;
	}
	if (publish(m)) {
		mod_free(m);
		emit(x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_TABLE_FULL);
		return;
	}
	e->patched = (__u64)(uintptr_t)m->patched;
	e->shared_dptr = dptr;
	e->shared_size = m->region ? devrt_region_size(m->region) : 0;
	e->kernels = a->nkernels;
	emit(x, GPUEXT_INJ_OUT_PATCHED, GPUEXT_INJ_R_NONE);
}

/*
 * The file a module was loaded from, mapped read-only with at least one
 * zero byte after its end (PTX text is read as a C string: a file whose
 * size is a whole number of pages gets an anonymous zero page after it).
 * NULL on any failure.  Cold path: one load.
 */
static void *map_file(const char *path, size_t *maplen)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct stat st;
	void *p, *f;
	size_t len;
	int fd;

	if (!path || pg <= 0)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (__u64)st.st_size > (__u64)SIZE_MAX / 2) {
		close(fd);
		return NULL;
	}
	len = ((size_t)st.st_size + 1 + (size_t)pg - 1) & ~((size_t)pg - 1);
	p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	f = mmap(p, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
	close(fd);
	if (f == MAP_FAILED) {
		munmap(p, len);
		return NULL;
	}
	*maplen = len;
	return p;
}

void devrt_inject_module(__u16 api, void *mod, const void *image,
			 const char *path, int lib)
{
	void *mapped = NULL;
	size_t maplen = 0;
	struct devrt_thread *t = &devrt_t;
	struct gpuext_inj_req req;
	struct devrt_inj_answer a;
	struct devrt_ptx px = { 0 };
	struct inj_try x;
	__u8 sum[32];
	char *names = NULL;
	size_t nlen = 0;
	__u64 ask;

	if (!mod || t->busy ||
	    __atomic_load_n(&devrt.state, __ATOMIC_ACQUIRE) != DEVRT_ACTIVE)
		return;
	pthread_once(&icfg_once, icfg_read);
	if (icfg.off || !socket_present())
		return;
	t->busy++;
	pthread_once(&idrv_once, idrv_load);
	memset(&x, 0, sizeof(x));
	x.t0 = devrt_now();
	x.ev.kind = GPUEXT_KIND_INJECT;
	x.ev.api = api;
	x.ev.source = GPUEXT_SOURCE_DEVRT;
	x.ev.flags = lib ? GPUEXT_IF_LIBRARY : 0;
	x.ev.pid = (__u32)devrt.pid;
	x.ev.tid = devrt_tid();
	x.ev.module = (__u64)(uintptr_t)mod;
	x.ev.sm_arch = sm_arch();

	if (!image && !(image = mapped = map_file(path, &maplen))) {
		emit(&x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_FILE);
		goto out;
	}
	if (devrt_image_ptx(image, path, x.ev.sm_arch, &px)) {
		emit(&x, px.reason == GPUEXT_INJ_R_NO_MEMORY ?
			 GPUEXT_INJ_OUT_FAILED : GPUEXT_INJ_OUT_NOT_INSTRUMENTABLE,
		     px.reason);
		goto out;
	}
	x.ev.ptx_len = px.len;
	devrt_sha256(px.ptx, px.len, sum);
	memcpy(x.ev.sha256, sum, sizeof(x.ev.sha256));
	names = malloc(px.len + 1);
	if (!names) {
		emit(&x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_NO_MEMORY);
		goto out;
	}
	memset(&req, 0, sizeof(req));
	req.magic = GPUEXT_INJ_REQ_MAGIC;
	req.version = GPUEXT_INJ_VERSION;
	req.hdr_size = sizeof(req);
	req.pid = (__u32)devrt.pid;
	req.sm_arch = x.ev.sm_arch;
	req.ptx_len = px.len;
	req.nkernels = devrt_ptx_entries(px.ptx, px.len, names,
					 px.len + 1 < GPUEXT_INJ_MAX_NAMES ?
						 px.len + 1 : GPUEXT_INJ_MAX_NAMES,
					 &nlen);
	req.names_len = (__u32)nlen;
	req.api = api;
	req.image = px.image;
	req.flags = GPUEXT_INJ_QF_VARS;
	memcpy(req.sha256, sum, sizeof(sum));

	ask = devrt_now();
	if (devrt_inject_ask(icfg.sock, icfg.timeout_ms, &req, px.ptx, names,
			     &a)) {
		x.ev.ask_ns = devrt_now() - ask;
		emit(&x, GPUEXT_INJ_OUT_FAILED, a.reason);
		goto out;
	}
	x.ev.ask_ns = devrt_now() - ask;
	if (a.flags & GPUEXT_INJ_RF_CACHED)
		x.ev.flags |= GPUEXT_IF_COLLECTOR_CACHE;
	memcpy(x.ev.text, a.text, sizeof(x.ev.text) - 1);
	switch (a.status) {
	case GPUEXT_INJ_PATCHED:
		patch(&x, &a, mod, lib);
		break;
	case GPUEXT_INJ_UNCHANGED:
		emit(&x, GPUEXT_INJ_OUT_UNCHANGED, GPUEXT_INJ_R_NONE);
		break;
	case GPUEXT_INJ_REJECTED:
		emit(&x, GPUEXT_INJ_OUT_REJECTED, GPUEXT_INJ_R_NONE);
		break;
	default:
		emit(&x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_SERVER);
		break;
	}
	devrt_inject_answer_free(&a);
out:
	free(names);
	free(px.owned);
	if (mapped)
		munmap(mapped, maplen);
	t->busy--;
}

void devrt_inject_unload(void *mod)
{
	struct inj_mod **pp, *m = NULL;
	__u32 i;

	if (!mod || !__atomic_load_n(&mods, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&inj_lock);
	for (pp = &mods; *pp; pp = &(*pp)->next) {
		if ((*pp)->orig == mod) {
			m = *pp;
			*pp = m->next;
			break;
		}
	}
	if (m) {
		for (i = 0; i < m->nkeys; i++)
			rd_set(m->keys[i], NULL, NULL, NULL);
		if (m->vars)
			__atomic_sub_fetch(&inj_vars, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&inj_lock);
	if (m) {
		devrt_t.busy++;
		mod_free(m);
		devrt_t.busy--;
	}
}

/* Caller holds inj_lock.  The patched module whose redirects include key,
 * or NULL. */
static struct inj_mod *mod_of_key(void *key)
{
	struct inj_mod *m;
	__u32 i;

	for (m = mods; m; m = m->next)
		for (i = 0; i < m->nkeys; i++)
			if (m->keys[i] == key)
				return m;
	return NULL;
}

/* The record of a refusal by a twin of module orig (lib: a library): what
 * it refused, and its result; flags GPUEXT_IF_GRID1D for a 1-D twin's. */
static void refused_record(void *orig, int lib, __u16 flags, CUresult twin,
			   const char *what)
{
	struct inj_try x;

	if (__atomic_load_n(&devrt.state, __ATOMIC_ACQUIRE) != DEVRT_ACTIVE)
		return;
	memset(&x, 0, sizeof(x));
	x.t0 = devrt_now();
	x.ev.kind = GPUEXT_KIND_INJECT;
	x.ev.source = GPUEXT_SOURCE_DEVRT;
	x.ev.flags = flags | (lib ? GPUEXT_IF_LIBRARY : 0);
	x.ev.pid = (__u32)devrt.pid;
	x.ev.tid = devrt_tid();
	x.ev.module = (__u64)(uintptr_t)orig;
	x.ev.cuda_result = twin;
	snprintf(x.ev.text, sizeof(x.ev.text), "%s", what);
	emit(&x, GPUEXT_INJ_OUT_FAILED, GPUEXT_INJ_R_REFUSED);
}

/*
 * The twin of a module refused what the original took (a launch, or a
 * setting the program made): the module's kernels run their originals from
 * now on, and a record says so.  Cold path.
 */
static void drop(void *orig_key, CUresult twin, const char *what)
{
	struct inj_mod *m;
	void *orig = NULL;
	int lib = 0, vars = 0, note = 0;
	__u32 i;

	pthread_mutex_lock(&inj_lock);
	if ((m = mod_of_key(orig_key))) {
		/* a twin that owns the variables stays (the original's
		 * kernels would read what the program never wrote): the
		 * setting is on the plain copies, which a launch the twin
		 * then refuses runs; one record a module */
		if (!(vars = m->vars))
			for (i = 0; i < m->nkeys; i++)
				rd_set(m->keys[i], NULL, NULL, NULL);
		note = !vars || !m->set_noted;
		m->set_noted = 1;
		orig = m->orig;
		lib = m->lib;
	}
	pthread_mutex_unlock(&inj_lock);
	if (note)
		refused_record(orig, lib, vars ? GPUEXT_IF_VARS : 0, twin, what);
}

/* Caller holds inj_lock.  The plain copy's slot of key in m, or NULL. */
static void **plain_slot(struct inj_mod *m, void *key)
{
	__u32 i;

	for (i = 0; m && m->plains && i < m->nkeys; i++)
		if (m->keys[i] == key)
			return &m->plains[i];
	return NULL;
}

/*
 * What a launch of key is made again with after ran refused it (with
 * twin): key itself, the original, unless its module's twin owns the
 * variables (GPUEXT_INJ_RF_VARS).  Then key's redirect as it is now, if
 * another launch changed it since ran was read; else the kernel's plain
 * copy in the twin, if it has one and ran was not it (devrt_inject_took
 * makes it key's redirect once it takes the launch); else NULL: the launch
 * fails with ran's error, with one record a module.  Cold path.
 */
void *devrt_inject_fallback(void *key, void *ran, CUresult twin)
{
	struct lib_bind *lib = NULL;
	struct rd_slot *sl;
	struct inj_mod *m;
	void *orig = NULL, *next = NULL, *cur, **ps;
	int islib = 0, note = 0;

	pthread_mutex_lock(&inj_lock);
	if (!(m = mod_of_key(key)) || !m->vars) {
		pthread_mutex_unlock(&inj_lock);
		return key;
	}
	sl = rd_slot_of(key);
	cur = sl ? sl->val : NULL;
	lib = sl ? sl->lib : NULL;
	ps = plain_slot(m, key);
	if (cur && cur != ran)
		next = cur;
	else if (ps && *ps && *ps != ran)
		next = *ps;
	else {
		note = !m->vars_noted;
		m->vars_noted = 1;
		orig = m->orig;
		islib = m->lib;
	}
	pthread_mutex_unlock(&inj_lock);
	if (note)
		refused_record(orig, islib, GPUEXT_IF_VARS, twin, "launch");
	if (!next)
		return NULL;
	return lib ? lib_twin(lib, key, next) : next;
}

/* A launch of key that its twin refused (with twin) ran took: if ran is
 * key's plain copy, it is key's redirect from now on (1-D twin gone), and
 * a record says so.  Cold path. */
void devrt_inject_took(void *key, void *ran, CUresult twin)
{
	struct rd_slot *sl;
	struct inj_mod *m;
	void *orig = NULL, **ps;
	int lib = 0, note = 0;

	pthread_mutex_lock(&inj_lock);
	if ((m = mod_of_key(key)) && m->vars && (ps = plain_slot(m, key)) &&
	    *ps == ran && (sl = rd_slot_of(key)) && sl->val && sl->val != ran) {
		rd_set(key, ran, NULL, sl->lib);
		note = 1;
		orig = m->orig;
		lib = m->lib;
	}
	pthread_mutex_unlock(&inj_lock);
	if (note)
		refused_record(orig, lib, GPUEXT_IF_VARS, twin,
			       "launch (plain copy now)");
}

/* The plain copy of key (vars), or NULL. */
static void *plain_of(void *key)
{
	void *p = NULL, **ps;

	if (!__atomic_load_n(&mods, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&inj_lock);
	if ((ps = plain_slot(mod_of_key(key), key)))
		p = *ps;
	pthread_mutex_unlock(&inj_lock);
	return p;
}

/* key's plain copy refused a setting (with res) the original took: it is
 * forgotten (a launch the twin then refuses fails), and a record says so. */
static void drop_plain(void *key, CUresult res, const char *what)
{
	struct inj_mod *m;
	void *orig = NULL, **ps;
	int lib = 0;

	pthread_mutex_lock(&inj_lock);
	if ((ps = plain_slot((m = mod_of_key(key)), key)) && *ps) {
		*ps = NULL;
		orig = m->orig;
		lib = m->lib;
	} else {
		m = NULL;
	}
	pthread_mutex_unlock(&inj_lock);
	if (m)
		refused_record(orig, lib, GPUEXT_IF_VARS, res, what);
}

/*
 * The 1-D twin g1 of key refused what its twin took (a launch, or a
 * setting the program made on key): launches of key run the twin
 * whatever their grid from now on, the rest of the module stays as it
 * is, and a record says so, once (a launch that read g1 before it was
 * cleared may be refused too, and finds it gone).  Cold path.
 *
 * Only key's slot is cleared.  A library kernel has other keys: its
 * CUkernel and the load context's CUfunction (resolve), and other
 * contexts' CUfunctions (kernel_function); each keeps its own 1-D twin
 * (the same code) until it refuses something too and is cleared the same
 * way, with a record of its own.  A CUfunction asked for in another
 * context after the CUkernel's was cleared gets none.  The store is
 * relaxed, as rd_set clears g1: nothing is published with it, and a
 * launch that still reads the old one is refused and retried as this one
 * was.
 */
static void drop_grid1d(void *key, void *g1, CUresult twin, const char *what)
{
	struct inj_mod *m;
	struct rd_slot *sl;
	void *orig = NULL;
	int lib = 0;

	pthread_mutex_lock(&inj_lock);
	if ((m = mod_of_key(key))) {
		sl = rd_slot_of(key);
		if (sl && sl->val && sl->g1 == g1) {
			__atomic_store_n(&sl->g1, NULL, __ATOMIC_RELAXED);
			orig = m->orig;
			lib = m->lib;
		} else {
			m = NULL;	/* cleared already, or dropped */
		}
	}
	pthread_mutex_unlock(&inj_lock);
	if (m)
		refused_record(orig, lib, GPUEXT_IF_GRID1D, twin, what);
}

void *devrt_inject_general(void *fn, void *ran)
{
	struct lib_bind *lib;
	void *g1, *v = rd_find(fn, &g1, &lib);

	/* ran: the 1-D twin, or one another launch has cleared since
	 * (drop_grid1d), or a twin a fallback has replaced since: the
	 * current twin, if it is not what ran */
	if (!v || ran == v)
		return NULL;
	/* (ran was bound here, so the twin is: one binding for both) */
	v = lib ? lib_twin(lib, fn, v) : v;
	return v != fn ? v : NULL;
}

void devrt_inject_grid1d_refused(void *orig, void *g1, CUresult twin)
{
	drop_grid1d(orig, g1, twin, "launch (1-D twin)");
}

void devrt_inject_refused(void *orig, CUresult twin, CUresult res)
{
	/* Both refused: the program's own error, returned as it is. */
	if (res == CUDA_SUCCESS)
		drop(orig, twin, "launch");
}

/* A forked child keeps its parent's tables (the same handles are as good
 * or as bad in it as the modules themselves); only the lock starts over. */
static void inject_atfork_child(void)
{
	pthread_mutex_init(&inj_lock, NULL);
	devrt_region_atfork_child();
	devrt_triton_atfork_child();
}

__attribute__((constructor)) static void inject_init(void)
{
	pthread_atfork(NULL, NULL, inject_atfork_child);
}

/* ---- the wrappers of module loads and unloads ------------------------------- */

static inline __u64 w(const void *p) { return (__u64)(uintptr_t)p; }

#define INJ_UNPAREN(...) __VA_ARGS__

/* A reported call (as the generated wrappers do it), then, if it
 * succeeded, after. */
#define REPORTED_WRAPPER(sym, params, names, argv, after)		\
DEVRT_EXPORT CUresult sym params					\
{									\
	__typeof__(&sym) real_ =					\
		(__typeof__(&sym))devrt_real(DEVRT_SYM_##sym);		\
	const __u64 a_[] = { INJ_UNPAREN argv };			\
	struct devrt_call c_;						\
	CUresult r_;							\
									\
	if (unlikely(!real_))						\
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;	\
	if (devrt_begin(&c_, DEVRT_SYM_##sym, a_,			\
			sizeof(a_) / sizeof(a_[0]))) {			\
		r_ = real_ names;					\
		devrt_end(&c_, r_);					\
	} else {							\
		r_ = real_ names;					\
	}								\
	if (r_ == CUDA_SUCCESS)						\
		after;							\
	return r_;							\
}

/* A load, then injection. */
#define LOAD_WRAPPER(sym, lib, params, names, argv, out, image)	\
	REPORTED_WRAPPER(sym, params, names, argv,			\
			 if (out) devrt_inject_module(GPUEXT_API_##sym,	\
						      *out, image, NULL, lib))
/* A load from a file, then injection of what the file holds. */
#define FILE_LOAD_WRAPPER(sym, lib, params, names, argv, out, path)	\
	REPORTED_WRAPPER(sym, params, names, argv,			\
			 if (out) devrt_inject_module(GPUEXT_API_##sym,	\
						      *out, NULL, path, lib))

LOAD_WRAPPER(cuModuleLoadData, 0, (CUmodule *m, const void *image),
	     (m, image), (w(m), w(image)), m, image)
LOAD_WRAPPER(cuModuleLoadDataEx, 0,
	     (CUmodule *m, const void *image, unsigned int n,
	      CUjit_option *opts, void **vals),
	     (m, image, n, opts, vals),
	     (w(m), w(image), n, w(opts), w(vals)), m, image)
LOAD_WRAPPER(cuModuleLoadFatBinary, 0, (CUmodule *m, const void *fatbin),
	     (m, fatbin), (w(m), w(fatbin)), m, fatbin)
LOAD_WRAPPER(cuLibraryLoadData, 1,
	     (CUlibrary *l, const void *code, CUjit_option *jo, void **jv,
	      unsigned int jn, CUlibraryOption *lo, void **lv,
	      unsigned int ln),
	     (l, code, jo, jv, jn, lo, lv, ln),
	     (w(l), w(code), w(jo), w(jv), jn, w(lo), w(lv), ln), l, code)
FILE_LOAD_WRAPPER(cuModuleLoad, 0, (CUmodule *m, const char *fname),
		  (m, fname), (w(m), w(fname)), m, fname)
FILE_LOAD_WRAPPER(cuLibraryLoadFromFile, 1,
		  (CUlibrary *l, const char *fname, CUjit_option *jo,
		   void **jv, unsigned int jn, CUlibraryOption *lo, void **lv,
		   unsigned int ln),
		  (l, fname, jo, jv, jn, lo, lv, ln),
		  (w(l), w(fname), w(jo), w(jv), jn, w(lo), w(lv), ln), l, fname)

/* A library kernel's function in the current context: redirected too. */
REPORTED_WRAPPER(cuKernelGetFunction, (CUfunction *f, CUkernel k), (f, k),
		 (w(f), w(k)), if (f) kernel_function(k, *f))

/* Not reported (the uprobes do not probe them either): the patched twin
 * goes first, then the program's module. */
#define UNLOAD_WRAPPER(sym, type)					\
DEVRT_EXPORT CUresult sym(type h)					\
{									\
	__typeof__(&sym) real =						\
		(__typeof__(&sym))devrt_real(DEVRT_SYM_##sym);		\
									\
	if (unlikely(!real))						\
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;	\
	devrt_inject_unload(h);						\
	return real(h);							\
}

UNLOAD_WRAPPER(cuModuleUnload, CUmodule)
UNLOAD_WRAPPER(cuLibraryUnload, CUlibrary)

/*
 * The program's variables.  A module that declares variables of its own
 * (__device__, __constant__: GPUEXT_INJ_RF_VARS) has copies of them in its
 * twin, and every kernel of it runs there; so the program must read and
 * write the twin's, whatever it asks by name: a module's and a library's
 * globals, and a library's module in the current context (on which the
 * program may ask cuModuleGetGlobal, or cuModuleGetFunction: the twin's
 * kernels, which run the probes where the twin is bound).  Anything else
 * is the program's call as it is.  A lock and a walk of the patched
 * modules: these are called at setup, not per launch.
 */
static void *vars_twin(void *orig)
{
	struct inj_mod *m;
	void *twin = NULL;

	if (!orig || !__atomic_load_n(&inj_vars, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&inj_lock);
	for (m = mods; m; m = m->next) {
		if (m->orig == orig) {
			twin = m->vars ? m->patched : NULL;
			break;
		}
	}
	pthread_mutex_unlock(&inj_lock);
	return twin;
}

#define VARS_WRAPPER(sym, params, h, args)				\
DEVRT_EXPORT CUresult sym params					\
{									\
	__typeof__(&sym) real =						\
		(__typeof__(&sym))devrt_real(DEVRT_SYM_##sym);		\
	void *tw;							\
									\
	if (unlikely(!real))						\
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;	\
	if ((tw = vars_twin((void *)(h))))				\
		h = (__typeof__(h))tw;					\
	return real args;						\
}

VARS_WRAPPER(cuModuleGetGlobal_v2,
	     (CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name),
	     m, (dptr, bytes, m, name))
VARS_WRAPPER(cuLibraryGetGlobal,
	     (CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name),
	     l, (dptr, bytes, l, name))
VARS_WRAPPER(cuLibraryGetModule, (CUmodule *m, CUlibrary l), l, (m, l))

/* A function's module: for a kernel of a module whose twin owns the
 * variables, its twin's (what its launches run), so that the program's
 * cuModuleGetGlobal or cuModuleGetFunction on it reach the twin too. */
static void *vars_fn(void *f)
{
	struct inj_mod *m;
	struct rd_slot *sl;
	void *v = NULL;

	if (!f || !__atomic_load_n(&inj_vars, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&inj_lock);
	if ((m = mod_of_key(f)) && m->vars && (sl = rd_slot_of(f)))
		v = sl->val;
	pthread_mutex_unlock(&inj_lock);
	return v;
}

DEVRT_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction f)
{
	__typeof__(&cuFuncGetModule) real =
		(__typeof__(&cuFuncGetModule))devrt_real(DEVRT_SYM_cuFuncGetModule);
	void *tw;

	if (unlikely(!real))
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	if ((tw = vars_fn((void *)f)))
		f = (CUfunction)tw;
	return real(hmod, f);
}

/*
 * Kernel nodes of graphs the program builds itself (a stream capture
 * records the launch wrappers' redirects).  A node of a kernel of a module
 * whose twin owns the variables runs the kernel's plain copy in the twin
 * (the twin's kernel where it has none: an unpatched kernel is its own),
 * never the original; any other node runs as the program made it, the
 * original, uninstrumented (a graph instantiated then must not fail on a
 * twin's resources).  graph_fn: what key's node runs, or NULL to leave it.
 */
static void *graph_fn(void *key)
{
	struct rd_slot *sl;
	struct inj_mod *m;
	void *v = NULL, **ps;

	if (!key || !__atomic_load_n(&inj_vars, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&inj_lock);
	if ((m = mod_of_key(key)) && m->vars) {
		if ((ps = plain_slot(m, key)) && *ps)
			v = *ps;
		else if ((sl = rd_slot_of(key)))
			v = sl->val;
	}
	pthread_mutex_unlock(&inj_lock);
	return v;
}

/* The kernel handle the program made a node of, for the one devrt put in
 * its place (graph_fn): a node's parameters read back name the program's
 * kernel.  h itself if devrt put none. */
static void *graph_unfn(void *h)
{
	struct rd_slot *sl;
	struct inj_mod *m;
	void *k = h;
	__u32 i;

	if (!h || !__atomic_load_n(&inj_vars, __ATOMIC_RELAXED))
		return h;
	pthread_mutex_lock(&inj_lock);
	for (m = mods; m && k == h; m = m->next) {
		if (!m->vars)
			continue;
		for (i = 0; i < m->nkeys; i++) {
			if ((m->plains && m->plains[i] == h) ||
			    ((sl = rd_slot_of(m->keys[i])) && sl->val == h)) {
				k = m->keys[i];
				break;
			}
		}
	}
	pthread_mutex_unlock(&inj_lock);
	return k;
}

/* p, or *copy: p with func and kern taken to what graph_fn says. */
static const CUDA_KERNEL_NODE_PARAMS *
graph_params(const CUDA_KERNEL_NODE_PARAMS *p, CUDA_KERNEL_NODE_PARAMS *copy)
{
	void *f, *k;

	if (!p)
		return p;
	f = graph_fn((void *)p->func);
	k = graph_fn((void *)p->kern);
	if (!f && !k)
		return p;
	*copy = *p;
	if (f)
		copy->func = (CUfunction)f;
	if (k)
		copy->kern = (CUkernel)k;
	return copy;
}

/* sym, its parameters' p taken through map (into a copy of type T; KP,
 * KP1 and NP below name both, expanded before GRAPH_NODE_WRAPPER_). */
#define GRAPH_NODE_WRAPPER(...) GRAPH_NODE_WRAPPER_(__VA_ARGS__)
#define GRAPH_NODE_WRAPPER_(sym, params, args, T, map)			\
DEVRT_EXPORT CUresult sym params					\
{									\
	__typeof__(&sym) real =						\
		(__typeof__(&sym))devrt_real(DEVRT_SYM_##sym);		\
	T copy;								\
									\
	if (unlikely(!real))						\
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;	\
	p = map(p, &copy);						\
	return real args;						\
}

#define KP CUDA_KERNEL_NODE_PARAMS, graph_params
GRAPH_NODE_WRAPPER(cuGraphAddKernelNode_v2,
		   (CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
		    size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p),
		   (n, g, deps, ndeps, p), KP)
GRAPH_NODE_WRAPPER(cuGraphKernelNodeSetParams_v2,
		   (CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p), (n, p), KP)
GRAPH_NODE_WRAPPER(cuGraphExecKernelNodeSetParams_v2,
		   (CUgraphExec e, CUgraphNode n,
		    const CUDA_KERNEL_NODE_PARAMS *p), (e, n, p), KP)

/* CUDA 11's entry points: func only, 56 bytes. */
static const CUDA_KERNEL_NODE_PARAMS_v1 *
graph_params_v1(const CUDA_KERNEL_NODE_PARAMS_v1 *p,
		CUDA_KERNEL_NODE_PARAMS_v1 *copy)
{
	void *f;

	if (!p || !(f = graph_fn((void *)p->func)))
		return p;
	*copy = *p;
	copy->func = (CUfunction)f;
	return copy;
}

#define KP1 CUDA_KERNEL_NODE_PARAMS_v1, graph_params_v1
GRAPH_NODE_WRAPPER(cuGraphAddKernelNode,
		   (CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
		    size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v1 *p),
		   (n, g, deps, ndeps, p), KP1)
GRAPH_NODE_WRAPPER(cuGraphKernelNodeSetParams,
		   (CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p),
		   (n, p), KP1)
GRAPH_NODE_WRAPPER(cuGraphExecKernelNodeSetParams,
		   (CUgraphExec e, CUgraphNode n,
		    const CUDA_KERNEL_NODE_PARAMS_v1 *p), (e, n, p), KP1)

/* cuGraphAddNode's parameters: a kernel node's as above, any other type's
 * untouched (p itself: some are written back). */
static CUgraphNodeParams *node_params(CUgraphNodeParams *p,
				      CUgraphNodeParams *copy)
{
	CUDA_KERNEL_NODE_PARAMS kc;

	if (!p || p->type != CU_GRAPH_NODE_TYPE_KERNEL ||
	    graph_params(&p->u.kernel, &kc) == &p->u.kernel)
		return p;
	*copy = *p;
	copy->u.kernel = kc;
	return copy;
}

#define NP CUgraphNodeParams, node_params
GRAPH_NODE_WRAPPER(cuGraphAddNode,
		   (CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
		    size_t ndeps, CUgraphNodeParams *p),
		   (n, g, deps, ndeps, p), NP)
GRAPH_NODE_WRAPPER(cuGraphAddNode_v2,
		   (CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
		    const CUgraphEdgeData *edges, size_t ndeps,
		    CUgraphNodeParams *p),
		   (n, g, deps, edges, ndeps, p), NP)
GRAPH_NODE_WRAPPER(cuGraphNodeSetParams,
		   (CUgraphNode n, CUgraphNodeParams *p), (n, p), NP)
GRAPH_NODE_WRAPPER(cuGraphExecNodeSetParams,
		   (CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p),
		   (e, n, p), NP)

/* A kernel node's parameters read back name the program's kernel. */
DEVRT_EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode n,
						   CUDA_KERNEL_NODE_PARAMS *p)
{
	__typeof__(&cuGraphKernelNodeGetParams_v2) real =
		(__typeof__(&cuGraphKernelNodeGetParams_v2))
			devrt_real(DEVRT_SYM_cuGraphKernelNodeGetParams_v2);
	CUresult r;

	if (unlikely(!real))
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	if ((r = real(n, p)) == CUDA_SUCCESS && p) {
		p->func = (CUfunction)graph_unfn((void *)p->func);
		p->kern = (CUkernel)graph_unfn((void *)p->kern);
	}
	return r;
}

DEVRT_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode n,
						CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	__typeof__(&cuGraphKernelNodeGetParams) real =
		(__typeof__(&cuGraphKernelNodeGetParams))
			devrt_real(DEVRT_SYM_cuGraphKernelNodeGetParams);
	CUresult r;

	if (unlikely(!real))
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;
	if ((r = real(n, p)) == CUDA_SUCCESS && p)
		p->func = (CUfunction)graph_unfn((void *)p->func);
	return r;
}

#define ATTR_STATIC_SHARED 1	/* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
#define ATTR_MAX_DYN_SHARED 8	/* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */

typedef CUresult (*func_get_attr_fn)(int *v, int attrib, CUfunction f);
typedef CUresult (*kern_get_attr_fn)(int *v, int attrib, CUkernel k,
				     CUdevice dev);

/*
 * The twin refused the dynamic shared memory its original took: the
 * probes' .shared arrays make its static part larger, and the program
 * asked for all the device has (cuBLAS asks for 227 KiB on an H100 for a
 * kernel it loads, whatever a launch then uses).  The twin takes
 * what it can: the value less the static bytes the probes added.  A launch
 * asking for no more runs instrumented; one asking for more is refused by
 * the twin and made again with the original (devrt_inject_refused).
 * so, st: the original's and the twin's static shared memory.  The value
 * to try again with, or -1 if none can help.
 */
static int shared_left(int attrib, int value, int so, int st)
{
	if (attrib != ATTR_MAX_DYN_SHARED || st <= so || value <= st - so)
		return -1;
	return value - (st - so);
}

/* The static shared memory of h, a CUkernel on dev if kern, else a
 * CUfunction, into *v: 0, or -1. */
static int static_shared(int kern, void *h, CUdevice dev, int *v)
{
	if (kern) {
		kern_get_attr_fn get = (kern_get_attr_fn)
			devrt_driver_sym("cuKernelGetAttribute");

		return get && !get(v, ATTR_STATIC_SHARED, (CUkernel)h, dev) ? 0 : -1;
	} else {
		func_get_attr_fn get = (func_get_attr_fn)
			devrt_driver_sym("cuFuncGetAttribute");

		return get && !get(v, ATTR_STATIC_SHARED, (CUfunction)h) ? 0 : -1;
	}
}

#define ATTR_MAX_THREADS 0	/* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */

/*
 * A twin that owns its module's variables is never fallen back from, so
 * each kernel must take there every block its original takes: its twin,
 * or else its plain copy (as CUfunctions: a module's, and a library's in
 * the load's context), at least as many threads a block as the original
 * (registers decide; the twin's JIT has none of the program's options,
 * such as a register cap).  0, or -1 with the kernel's limits in why.  A
 * library loaded with no context current has no functions yet: unchecked
 * (a launch the twin refuses then runs the plain copy, or fails with the
 * twin's error: devrt_inject_fallback).
 */
static int vars_limits(const struct inj_mod *m, char *why, size_t n)
{
	func_get_attr_fn get = (func_get_attr_fn)
		devrt_driver_sym("cuFuncGetAttribute");
	int o, t, p;
	__u32 i;

	for (i = 0; get && i < m->npairs; i++) {
		const struct rd_pair *pr = &m->pairs[i];

		if (pr->kernel)
			continue;	/* a CUkernel: its function follows */
		if (get(&o, ATTR_MAX_THREADS, (CUfunction)pr->orig) ||
		    get(&t, ATTR_MAX_THREADS, (CUfunction)pr->twin))
			continue;
		/* the plain copy (what graph nodes run, and a refused
		 * launch) must take them all; without one, the twin */
		if (pr->plain && !get(&p, ATTR_MAX_THREADS,
				      (CUfunction)pr->plain)) {
			if (p >= o)
				continue;
			t = p;
		} else if (t >= o) {
			continue;
		}
		snprintf(why, n, "%s: %u of %u threads a block",
			 pr->plain ? "plain copy" : "twin",
			 (unsigned)t & 0xffff, (unsigned)o & 0xffff);
		return -1;
	}
	return 0;
}

/* The twin refused attrib = value with t: t, or the result of setting
 * what is left (shared_left) on it.  kern: CUkernels on dev. */
static CUresult attr_retry(int kern, void *orig, void *twin, int attrib,
			   int value, CUdevice dev, CUresult t)
{
	int so = 0, st = 0, v;

	if (attrib != ATTR_MAX_DYN_SHARED ||
	    static_shared(kern, orig, dev, &so) ||
	    static_shared(kern, twin, dev, &st) ||
	    (v = shared_left(attrib, value, so, st)) < 0)
		return t;
	if (kern) {
		__typeof__(&cuKernelSetAttribute) set = (__typeof__(&cuKernelSetAttribute))
			devrt_real(DEVRT_SYM_cuKernelSetAttribute);

		return set ? set(attrib, v, (CUkernel)twin, dev) : t;
	} else {
		__typeof__(&cuFuncSetAttribute) set = (__typeof__(&cuFuncSetAttribute))
			devrt_real(DEVRT_SYM_cuFuncSetAttribute);

		return set ? set((CUfunction)twin, attrib, v) : t;
	}
}

/*
 * Settings of a kernel (dynamic shared memory above 48 KiB, cache and
 * carveout preferences): the program's call first, then, if it took and
 * the kernel has a twin, the same call on the twin and on its 1-D twin if
 * it has one, each of which must launch with whatever the original may
 * (retry: what else a twin may take, see attr_retry).  A twin that
 * refuses is dropped with its module; a 1-D twin that refuses (its twin
 * took the setting) is dropped alone (drop_grid1d: launches of key then
 * run the twin whatever their grid, as they would refuse the 1-D twin),
 * and so are its other keys' 1-D twins when they refuse a launch.  The
 * record names the setting, "<call>(<attribute>, <value>)" or
 * "<call>(<config>)", and " (1-D twin)" after it for a 1-D twin.
 */
#define SETTING_WRAPPER(sym, params, key, real_args, twin_args, retry, fmt, ...) \
DEVRT_EXPORT CUresult sym params					\
{									\
	__typeof__(&sym) real_ =					\
		(__typeof__(&sym))devrt_real(DEVRT_SYM_##sym);		\
	void *twin_, *tw_[2];						\
	CUresult r_, t_ = CUDA_SUCCESS;					\
	int i_;								\
									\
	if (unlikely(!real_))						\
		return CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND;	\
	r_ = real_ real_args;						\
	if (r_ != CUDA_SUCCESS || !__atomic_load_n(&devrt_inj_live,	\
						   __ATOMIC_RELAXED) ||	\
	    (tw_[0] = inject_twin((void *)(key), &tw_[1])) ==		\
		    (void *)(key))					\
		return r_;						\
	devrt_t.busy++;							\
	for (i_ = 0; i_ < 2 && tw_[i_]; i_++) {				\
		twin_ = tw_[i_];					\
		t_ = real_ twin_args;					\
		if (t_ != CUDA_SUCCESS)					\
			t_ = retry;					\
		if (t_ != CUDA_SUCCESS)					\
			break;						\
	}								\
	if (t_ != CUDA_SUCCESS) {					\
		char what_[48];						\
									\
		snprintf(what_, sizeof(what_), #sym fmt "%s", __VA_ARGS__, \
			 i_ ? " (1-D twin)" : "");			\
		if (i_)							\
			drop_grid1d((void *)(key), tw_[1], t_, what_);	\
		else							\
			drop((void *)(key), t_, what_);			\
	}								\
	/* the plain copy (vars), what a launch the twin refuses runs */ \
	if ((twin_ = plain_of((void *)(key))) && twin_ != tw_[0] &&	\
	    (t_ = real_ twin_args) != CUDA_SUCCESS) {			\
		char what_[48];						\
									\
		snprintf(what_, sizeof(what_), #sym fmt " (plain copy)",	\
			 __VA_ARGS__);					\
		drop_plain((void *)(key), t_, what_);			\
	}								\
	devrt_t.busy--;							\
	return r_;							\
}

SETTING_WRAPPER(cuFuncSetAttribute, (CUfunction f, int attrib, int value), f,
		(f, attrib, value), ((CUfunction)twin_, attrib, value),
		attr_retry(0, f, twin_, attrib, value, 0, t_),
		"(%d, %d)", attrib, value)
SETTING_WRAPPER(cuFuncSetCacheConfig, (CUfunction f, int config), f,
		(f, config), ((CUfunction)twin_, config), t_, "(%d)", config)
SETTING_WRAPPER(cuKernelSetAttribute,
		(int attrib, int value, CUkernel k, CUdevice dev), k,
		(attrib, value, k, dev), (attrib, value, (CUkernel)twin_, dev),
		attr_retry(1, k, twin_, attrib, value, dev, t_),
		"(%d, %d)", attrib, value)
SETTING_WRAPPER(cuKernelSetCacheConfig, (CUkernel k, int config, CUdevice dev),
		k, (k, config, dev), ((CUkernel)twin_, config, dev), t_,
		"(%d)", config)
