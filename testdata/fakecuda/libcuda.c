// SPDX-License-Identifier: Apache-2.0
/*
 * libcuda.c - a stand-in for the CUDA driver (libcuda.so.1) without a GPU.
 *
 * Why this exists: the gpuebpf receiver attaches uprobes to libcuda.so.1 and
 * reads the arguments of cuLaunchKernel, cuMemAlloc_v2, cuMemcpyHtoD_v2 ...
 * On a machine without a GPU there is no libcuda to probe, so this library
 * exports the same ELF symbols with the same signatures and behaves the way a
 * test needs:
 *
 *   - every probed entry point is its own out-of-line function with its own
 *     address (no inlining, no identical-code folding), so one uprobe fires
 *     exactly once per call;
 *   - handles are non-NULL and look like driver heap pointers; "device memory"
 *     is a table of fake addresses that remembers sizes, so frees and copies
 *     of unknown or out-of-range pointers fail the way the real driver does;
 *   - errors use the real CUresult numbers, and the rules a real program
 *     must follow hold: before cuInit calls fail with
 *     CUDA_ERROR_NOT_INITIALIZED, and work that needs a context fails with
 *     CUDA_ERROR_INVALID_CONTEXT on a thread that has none current (retaining
 *     the primary context does not make it current: cuCtxSetCurrent does);
 *   - cuGetProcAddress resolves base names to the versioned symbol a CUDA 12+
 *     caller would get (cuMemAlloc -> cuMemAlloc_v2, _ptsz with the
 *     per-thread flag), which is how libcudart reaches the driver.
 *
 * Nothing is computed and no device memory exists: copies and memsets only
 * validate their arguments.
 *
 * Environment, read once when the library is loaded:
 *   FAKECUDA_DELAY_US   microseconds every API call sleeps (default 0);
 *                       nanosleep() also waits out the thread's timer slack
 *                       (50 us by default), so a caller that wants short
 *                       delays to be accurate lowers it with
 *                       prctl(PR_SET_TIMERSLACK), as workload.c does
 *   FAKECUDA_DELAY_SPIN=1  busy-wait the delay instead of sleeping, which
 *                       is accurate without touching the timer slack and,
 *                       like a real driver's launch path, keeps a CPU busy
 *   FAKECUDA_MEM_BYTES  size of the fake device memory (default 80 GiB)
 *   FAKECUDA_COUNT=0    turn off the per-API call counters
 *   FAKECUDA_COUNTS_FILE  when the library unloads (at exit, after every
 *                       atexit handler, so after an interposer's last
 *                       call), write the call counters there as JSON; a
 *                       "%p" in the path becomes the pid
 *   FAKECUDA_KERNEL_NS  simulated GPU time of every kernel and graph launch
 *   FAKECUDA_COPY_NS    simulated GPU time of every copy and memset
 *                       (both default 0: work completes when it is queued)
 *   FAKECUDA_CLOCK_PPB  how much faster the "GPU's" clock runs than the
 *                       host's, in parts per billion (may be negative):
 *                       cuEventElapsedTime reports host time so scaled
 *
 * The asynchronous execution model (only when one of the durations is not
 * 0): every stream has a busy-until clock on the host's CLOCK_MONOTONIC.  Work
 * queued on a stream starts at max(now, busy-until) and ends `duration`
 * later, which becomes the new busy-until.  cuEventRecord stamps the event
 * with the stream's busy-until (now if the stream is idle); cuEventQuery and
 * cuEventElapsedTime return CUDA_ERROR_NOT_READY until host time reaches the
 * stamp; the synchronize calls and the synchronous copies and memsets wait
 * for it.  So a test knows exactly when each piece of "GPU" work ran.  The
 * legacy default stream, the per-thread default stream (one per thread) and
 * each created stream are independent timelines; cuCtxSynchronize waits for
 * all of them.
 *
 * Build: see Makefile (-O2 -g -fPIC -shared -fno-ipa-icf, SONAME libcuda.so.1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <time.h>
#include <unistd.h>

#include "api_list.h"
#include "cuda_api.h"

/* Exported, never inlined or folded into another symbol. */
#define FC_API __attribute__((noinline, used, visibility("default")))

#define FAKE_DRIVER_VERSION	13000		/* cuDriverGetVersion */
#define MAX_DYN_SHARED_MEM	(48u * 1024)	/* more: cuFuncSetAttribute */
#define MAX_DYN_SHARED_OPTIN	(227u * 1024)	/* what an sm_90 opts in to */
#define MAX_COOP_BLOCKS		(132u * 16)	/* 132 SMs x 16 blocks */

/* ------------------------------------------------------------------------ */
/* Configuration and call counters                                          */
/* ------------------------------------------------------------------------ */

enum fc_api_id {
#define FC_ID(name) FC_ID_##name,
	FAKECUDA_DRIVER_APIS(FC_ID)
#undef FC_ID
	FC_NUM_APIS
};

static const char *const fc_api_names[FC_NUM_APIS] = {
#define FC_NAME(name) #name,
	FAKECUDA_DRIVER_APIS(FC_NAME)
#undef FC_NAME
};

static unsigned long long fc_calls[FC_NUM_APIS];
static int fc_count_on = 1;
static int fc_delay_on;
static int fc_delay_spin;
static struct timespec fc_delay;
static unsigned long long fc_delay_ns;
static unsigned long long fc_mem_limit = 80ULL << 30;
static unsigned long long fc_kernel_ns;
static unsigned long long fc_copy_ns;
static long long fc_clock_ppb;	/* FAKECUDA_CLOCK_PPB */
static int fc_async;
static char *fc_counts_file;
static char *fc_launch_file;	/* FAKECUDA_LAUNCH_FILE */
static unsigned int func_dyn_shared(const void *f);
static unsigned int fc_any_maxntid;	/* a module declares .maxntid */
static unsigned int kernel_maxntid(const void *f);
static unsigned int kernel_static_shared(const void *f);
/* Module contents (below): what launches and copies tell them. */
static void mod_launched(const void *f);
static void mod_global_write(CUdeviceptr dst, const void *src, size_t n);

static unsigned long long env_ull(const char *name, unsigned long long def)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return def;
	return v;
}

__attribute__((constructor)) static void fc_load(void)
{
	unsigned long long us = env_ull("FAKECUDA_DELAY_US", 0);

	fc_delay.tv_sec = us / 1000000;
	fc_delay.tv_nsec = (us % 1000000) * 1000;
	fc_delay_on = us != 0;
	fc_delay_ns = us * 1000;
	fc_delay_spin = env_ull("FAKECUDA_DELAY_SPIN", 0) != 0;
	fc_mem_limit = env_ull("FAKECUDA_MEM_BYTES", fc_mem_limit);
	fc_count_on = env_ull("FAKECUDA_COUNT", 1) != 0;
	fc_kernel_ns = env_ull("FAKECUDA_KERNEL_NS", 0);
	fc_copy_ns = env_ull("FAKECUDA_COPY_NS", 0);
	fc_clock_ppb = (long long)env_ull("FAKECUDA_CLOCK_PPB", 0);
	fc_async = fc_kernel_ns || fc_copy_ns;
	if (getenv("FAKECUDA_COUNTS_FILE") && *getenv("FAKECUDA_COUNTS_FILE"))
		fc_counts_file = strdup(getenv("FAKECUDA_COUNTS_FILE"));
	if (getenv("FAKECUDA_LAUNCH_FILE") && *getenv("FAKECUDA_LAUNCH_FILE"))
		fc_launch_file = strdup(getenv("FAKECUDA_LAUNCH_FILE"));
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void fc_sleep(void)
{
	struct timespec left = fc_delay;
	unsigned long long end;

	/*
	 * No pause instruction in the loop: in a VM, pause-loop exiting turns
	 * each one into a trap that costs microseconds.
	 */
	if (fc_delay_spin) {
		end = now_ns() + fc_delay_ns;
		while (now_ns() < end)
			;
		return;
	}
	while (nanosleep(&left, &left) == -1 && errno == EINTR)
		;
}

/* First statement of every exported function: count, then pretend to work. */
#define ENTER(name)							\
	do {								\
		if (fc_count_on)					\
			__atomic_fetch_add(&fc_calls[FC_ID_##name], 1,	\
					   __ATOMIC_RELAXED);		\
		if (fc_delay_on)					\
			fc_sleep();					\
	} while (0)

/* Not a CUDA API: the call counters, for tests (see cuda_api.h). */
__attribute__((visibility("default")))
int fakecuda_call_counts(const char *const **names,
			 const unsigned long long **counts)
{
	if (names)
		*names = fc_api_names;
	if (counts)
		*counts = fc_calls;
	return FC_NUM_APIS;
}

/* ------------------------------------------------------------------------ */
/* Handles                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * A handle is an address-like value: base + kind << 28 + seq << 6.  It looks
 * like a pointer into the driver's heap, is never dereferenced, and lets us
 * tell a stream from a module without any table.
 */
enum hkind {
	HK_NONE,
	HK_CONTEXT,
	HK_MODULE,
	HK_FUNCTION,
	HK_LIBRARY,
	HK_KERNEL,
	HK_STREAM,
	HK_EVENT,
	HK_GRAPH,
	HK_GRAPH_EXEC,
	HK_GRAPH_NODE,
	HK_MAX,
};

#define HANDLE_BASE		0x0000555a00000000ULL
#define HANDLE_KIND_SHIFT	28
#define HANDLE_SEQ_SHIFT	6
#define HANDLE_SEQ_MASK	((1ULL << (HANDLE_KIND_SHIFT - HANDLE_SEQ_SHIFT)) - 1)
#define HANDLE_CTX_MASK	((1ULL << HANDLE_SEQ_SHIFT) - 1)

static unsigned long long fc_handle_seq;

static void *handle_make(enum hkind kind, unsigned long long seq)
{
	unsigned long long v = HANDLE_BASE;

	v += (unsigned long long)kind << HANDLE_KIND_SHIFT;
	v += (seq & HANDLE_SEQ_MASK) << HANDLE_SEQ_SHIFT;
	return (void *)(uintptr_t)v;
}

static void *handle_new(enum hkind kind)
{
	unsigned long long seq;

	do	/* seq 0 is reserved for the primary context */
		seq = __atomic_add_fetch(&fc_handle_seq, 1, __ATOMIC_RELAXED) &
		      HANDLE_SEQ_MASK;
	while (seq == 0);
	return handle_make(kind, seq);
}

static enum hkind handle_kind(const void *h)
{
	uintptr_t v = (uintptr_t)h;
	unsigned long long off, kind;

	if (v < HANDLE_BASE)
		return HK_NONE;
	off = v - HANDLE_BASE;
	kind = off >> HANDLE_KIND_SHIFT;
	if (kind == HK_NONE || kind >= HK_MAX ||
	    ((off & HANDLE_CTX_MASK) && kind != HK_FUNCTION))
		return HK_NONE;
	return (enum hkind)kind;
}

/* A library kernel's CUfunction is per context, as in the driver: the
 * function cuKernelGetFunction returns carries its context's tag in the low
 * bits (0 in the primary context), and a launch of it in another context
 * fails. */
static unsigned long long handle_ctx_tag(const void *h)
{
	return ((uintptr_t)h - HANDLE_BASE) & HANDLE_CTX_MASK;
}

static unsigned long long handle_seq(const void *h)
{
	return (((uintptr_t)h - HANDLE_BASE) &
		((1ULL << HANDLE_KIND_SHIFT) - 1)) >> HANDLE_SEQ_SHIFT;
}

/* ------------------------------------------------------------------------ */
/* Initialization and contexts                                              */
/* ------------------------------------------------------------------------ */

#define CTX_STACK_DEPTH 16

static int fc_initialized;
static pthread_mutex_t fc_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static int fc_primary_refs;

/* Each thread has its own context stack, as in the real driver. */
static __thread CUcontext t_ctx_stack[CTX_STACK_DEPTH];
static __thread int t_ctx_depth;

#define PRIMARY_CTX ((CUcontext)handle_make(HK_CONTEXT, 0))

static CUresult need_init(void)
{
	return __atomic_load_n(&fc_initialized, __ATOMIC_ACQUIRE) ?
	       CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult need_ctx(void)
{
	if (!__atomic_load_n(&fc_initialized, __ATOMIC_ACQUIRE))
		return CUDA_ERROR_NOT_INITIALIZED;
	return t_ctx_depth ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* The tag of the current context's functions (need_ctx first). */
static unsigned long long ctx_tag(void)
{
	CUcontext c = t_ctx_stack[t_ctx_depth - 1];

	return c == PRIMARY_CTX ? 0 : 1 + handle_seq(c) % HANDLE_CTX_MASK;
}

static CUresult ctx_push(CUcontext ctx)
{
	if (t_ctx_depth == CTX_STACK_DEPTH)
		return CUDA_ERROR_OUT_OF_MEMORY;
	t_ctx_stack[t_ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, CUdevice dev)
{
	CUresult r = need_init();
	CUcontext ctx;

	if (r)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	ctx = handle_new(HK_CONTEXT);
	r = ctx_push(ctx);	/* a new context becomes current */
	if (r == CUDA_SUCCESS)
		*pctx = ctx;
	return r;
}

/* ------------------------------------------------------------------------ */
/* Device memory: fake addresses that remember their sizes                  */
/* ------------------------------------------------------------------------ */

/*
 * Addresses only grow and are never reused, so the table stays sorted by
 * address and a lookup is a binary search.  Freed entries stay as tombstones
 * until they outnumber the live ones.
 */
#define DEVICE_VA_BASE	0x00007e1000000000ULL
#define DEVICE_ALIGN	512ULL

enum mkind { MK_DEVICE = 1, MK_MANAGED, MK_ASYNC };

struct dev_alloc {
	CUdeviceptr addr;
	size_t size;
	unsigned char kind;
	unsigned char live;
	char *mem;		/* FAKECUDA_DEVICE_BACKING: its contents */
};

/*
 * FAKECUDA_DEVICE_BACKING=1: device allocations of at most 256 MiB get
 * host memory behind them, which copies to and from the device really
 * read and write (devrt's probe region tests need contents that travel).
 */
#define FC_BACKING_MAX	(256ULL << 20)
static int fc_backing = -1;

static int backing(void)
{
	if (fc_backing < 0) {
		const char *e = getenv("FAKECUDA_DEVICE_BACKING");

		fc_backing = e && !strcmp(e, "1");
	}
	return fc_backing;
}

static pthread_mutex_t fc_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dev_alloc *fc_allocs;
static size_t fc_nallocs, fc_allocs_cap, fc_ndead;
static CUdeviceptr fc_next_va = DEVICE_VA_BASE;
static unsigned long long fc_mem_used;

/* Index of the last entry with addr <= p, or -1.  Caller holds the lock. */
static long dev_find(CUdeviceptr p)
{
	size_t lo = 0, hi = fc_nallocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fc_allocs[mid].addr <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

static void dev_compact(void)
{
	size_t i, n = 0;

	for (i = 0; i < fc_nallocs; i++)
		if (fc_allocs[i].live)
			fc_allocs[n++] = fc_allocs[i];
	fc_nallocs = n;
	fc_ndead = 0;
}

static CUresult dev_alloc(CUdeviceptr *dptr, size_t size, enum mkind kind)
{
	CUresult r = CUDA_SUCCESS;
	CUdeviceptr addr;

	if (!dptr || !size)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_mem_lock);
	if (size > fc_mem_limit - fc_mem_used) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (fc_nallocs == fc_allocs_cap) {
		size_t cap = fc_allocs_cap ? fc_allocs_cap * 2 : 256;
		struct dev_alloc *a = realloc(fc_allocs, cap * sizeof(*a));

		if (!a) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		fc_allocs = a;
		fc_allocs_cap = cap;
	}
	addr = fc_next_va;
	fc_next_va += (size + DEVICE_ALIGN - 1) & ~(DEVICE_ALIGN - 1);
	fc_allocs[fc_nallocs++] = (struct dev_alloc){
		.addr = addr, .size = size, .kind = kind, .live = 1,
		.mem = backing() && size <= FC_BACKING_MAX ?
			       calloc(1, size) : NULL,
	};
	fc_mem_used += size;
	*dptr = addr;
out:
	pthread_mutex_unlock(&fc_mem_lock);
	return r;
}

static CUresult dev_free(CUdeviceptr p)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	long i;

	pthread_mutex_lock(&fc_mem_lock);
	i = dev_find(p);
	if (i >= 0 && fc_allocs[i].addr == p && fc_allocs[i].live) {
		fc_allocs[i].live = 0;
		free(fc_allocs[i].mem);
		fc_allocs[i].mem = NULL;
		fc_mem_used -= fc_allocs[i].size;
		fc_ndead++;
		if (fc_ndead > 64 && fc_ndead * 2 > fc_nallocs)
			dev_compact();
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&fc_mem_lock);
	return r;
}

/*
 * Is [p, p+n) inside one live allocation?  Returns its kind, or 0.
 * A zero-length range only needs p itself to be inside.
 */
static int dev_range_kind(CUdeviceptr p, size_t n)
{
	int kind = 0;
	long i;

	pthread_mutex_lock(&fc_mem_lock);
	i = dev_find(p);
	if (i >= 0 && fc_allocs[i].live) {
		const struct dev_alloc *a = &fc_allocs[i];
		size_t off = p - a->addr;

		if (off < a->size && n <= a->size - off)
			kind = a->kind;
	}
	pthread_mutex_unlock(&fc_mem_lock);
	return kind;
}

/* The backing of [p, p+n) inside one live allocation, or NULL.  Callers
 * copy under fc_mem_lock (an allocation's memory lives until dev_free). */
static char *dev_mem(CUdeviceptr p, size_t n)
{
	char *m = NULL;
	long i = dev_find(p);

	if (i >= 0 && fc_allocs[i].live && fc_allocs[i].mem) {
		size_t off = p - fc_allocs[i].addr;

		if (off < fc_allocs[i].size && n <= fc_allocs[i].size - off)
			m = fc_allocs[i].mem + off;
	}
	return m;
}

/* A copy between host and device memory, when the device has backing. */
static void dev_copy(CUdeviceptr d, void *h, size_t n, int to_dev)
{
	char *m;

	pthread_mutex_lock(&fc_mem_lock);
	if ((m = dev_mem(d, n)))
		memcpy(to_dev ? m : h, to_dev ? h : m, n);
	pthread_mutex_unlock(&fc_mem_lock);
}

/* The size of the live device allocation holding p, or 0. */
static size_t dev_alloc_size(CUdeviceptr p)
{
	size_t n = 0;
	long i;

	pthread_mutex_lock(&fc_mem_lock);
	i = dev_find(p);
	if (i >= 0 && fc_allocs[i].live && p - fc_allocs[i].addr < fc_allocs[i].size)
		n = fc_allocs[i].size;
	pthread_mutex_unlock(&fc_mem_lock);
	return n;
}

static CUresult check_dev(CUdeviceptr p, size_t n)
{
	return dev_range_kind(p, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult check_managed(CUdeviceptr p, size_t n)
{
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	return dev_range_kind(p, n) == MK_MANAGED ? CUDA_SUCCESS :
						    CUDA_ERROR_INVALID_VALUE;
}

/*
 * A unified-address-space pointer: device memory if it falls in the table,
 * host memory otherwise (anything non-NULL).
 */
static CUresult check_unified(CUdeviceptr p, size_t n)
{
	if (dev_range_kind(p, 0))
		return check_dev(p, n);
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Page-locked host memory: real malloc'd memory, remembered for frees      */
/* ------------------------------------------------------------------------ */

struct host_alloc {
	void *p;
	size_t size;
};

static struct host_alloc *fc_hosts;
static size_t fc_nhosts, fc_hosts_cap;

static CUresult host_alloc(void **pp, size_t size)
{
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
	void *p;

	if (!pp || !size)
		return CUDA_ERROR_INVALID_VALUE;
	if (posix_memalign(&p, 4096, size))
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&fc_mem_lock);
	if (fc_nhosts == fc_hosts_cap) {
		size_t cap = fc_hosts_cap ? fc_hosts_cap * 2 : 16;
		struct host_alloc *h = realloc(fc_hosts, cap * sizeof(*h));

		if (!h)
			goto out;
		fc_hosts = h;
		fc_hosts_cap = cap;
	}
	fc_hosts[fc_nhosts++] = (struct host_alloc){ .p = p, .size = size };
	*pp = p;
	p = NULL;
	r = CUDA_SUCCESS;
out:
	pthread_mutex_unlock(&fc_mem_lock);
	free(p);
	return r;
}

static CUresult host_free(void *p)
{
	size_t i;

	pthread_mutex_lock(&fc_mem_lock);
	for (i = 0; i < fc_nhosts; i++)
		if (fc_hosts[i].p == p)
			break;
	if (i == fc_nhosts || !p) {
		pthread_mutex_unlock(&fc_mem_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	fc_hosts[i] = fc_hosts[--fc_nhosts];
	pthread_mutex_unlock(&fc_mem_lock);
	free(p);
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Events: the host time of the last record, for cuEventElapsedTime         */
/* ------------------------------------------------------------------------ */

#define EVENT_SLOTS 65536

struct event_slot {
	unsigned long long seq;
	unsigned long long ns;	/* 0: not recorded */
};

static pthread_mutex_t fc_event_lock = PTHREAD_MUTEX_INITIALIZER;
static struct event_slot fc_events[EVENT_SLOTS];

static void event_set(CUevent e, unsigned long long ns)
{
	unsigned long long seq = handle_seq(e);

	pthread_mutex_lock(&fc_event_lock);
	fc_events[seq % EVENT_SLOTS] = (struct event_slot){ .seq = seq, .ns = ns };
	pthread_mutex_unlock(&fc_event_lock);
}

static unsigned long long event_get(CUevent e)
{
	unsigned long long seq = handle_seq(e), ns = 0;

	pthread_mutex_lock(&fc_event_lock);
	if (fc_events[seq % EVENT_SLOTS].seq == seq)
		ns = fc_events[seq % EVENT_SLOTS].ns;
	pthread_mutex_unlock(&fc_event_lock);
	return ns;
}

/* ------------------------------------------------------------------------ */
/* Streams: when the queued "GPU" work ends (see the top of the file)       */
/* ------------------------------------------------------------------------ */

#define STREAM_SLOTS 4096

struct stream_slot {
	unsigned long long seq;
	unsigned long long busy;	/* CLOCK_MONOTONIC ns the work ends */
};

/* All under fc_event_lock: an event stamp reads a stream's clock. */
static struct stream_slot fc_streams[STREAM_SLOTS];
static unsigned long long fc_legacy_busy;	/* NULL and CU_STREAM_LEGACY */
static __thread unsigned long long t_ptds_busy;	/* per-thread default */
static unsigned long long fc_all_busy;		/* latest end of any work */

static void stream_reset(CUstream s)
{
	unsigned long long seq = handle_seq(s);

	pthread_mutex_lock(&fc_event_lock);
	fc_streams[seq % STREAM_SLOTS] = (struct stream_slot){ .seq = seq };
	pthread_mutex_unlock(&fc_event_lock);
}

/*
 * The busy-until clock of stream s.  NULL is the per-thread default stream
 * for the _ptsz/_ptds variants (pt) and the legacy one otherwise.  A stream
 * the table forgot (more than STREAM_SLOTS alive) shares a slot: its work
 * only queues behind more.  Caller holds fc_event_lock.
 */
static unsigned long long *stream_clock(CUstream s, int pt)
{
	unsigned long long seq;

	if (s == CU_STREAM_PER_THREAD || (!s && pt))
		return &t_ptds_busy;
	if (!s || s == CU_STREAM_LEGACY)
		return &fc_legacy_busy;
	seq = handle_seq(s);
	return &fc_streams[seq % STREAM_SLOTS].busy;
}

static unsigned long long max_ull(unsigned long long a, unsigned long long b)
{
	return a > b ? a : b;
}

/* Host time when the work queued so far on s ends (now if it is idle). */
static unsigned long long stream_ready(CUstream s, int pt)
{
	unsigned long long t = now_ns();

	if (!fc_async)
		return t;
	pthread_mutex_lock(&fc_event_lock);
	t = max_ull(t, *stream_clock(s, pt));
	pthread_mutex_unlock(&fc_event_lock);
	return t;
}

/* Sleeps until CLOCK_MONOTONIC reaches ns. */
static void wait_until(unsigned long long ns)
{
	struct timespec ts = {
		.tv_sec = ns / 1000000000ULL,
		.tv_nsec = ns % 1000000000ULL,
	};

	while (now_ns() < ns &&
	       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/*
 * The last statement of every launch, copy and memset: a call that
 * succeeded queues `dur` ns of work on its stream; a synchronous one waits
 * for it to end.  Returns r.
 */
static CUresult fc_work(CUresult r, CUstream s, int pt, int sync,
			unsigned long long dur)
{
	unsigned long long *clock, end;

	if (r != CUDA_SUCCESS || !fc_async)
		return r;
	pthread_mutex_lock(&fc_event_lock);
	clock = stream_clock(s, pt);
	end = max_ull(now_ns(), *clock) + dur;
	*clock = end;
	fc_all_busy = max_ull(fc_all_busy, end);
	pthread_mutex_unlock(&fc_event_lock);
	if (sync)
		wait_until(end);
	return r;
}

/* Host time when all queued work ends, for cuCtxSynchronize. */
static unsigned long long all_ready(void)
{
	unsigned long long t;

	pthread_mutex_lock(&fc_event_lock);
	t = fc_all_busy;
	pthread_mutex_unlock(&fc_event_lock);
	return t;
}

/* cuStreamWaitEvent: later work on s starts after the event's stamp. */
static void stream_wait(CUstream s, int pt, unsigned long long stamp)
{
	unsigned long long *clock;

	if (!fc_async)
		return;
	pthread_mutex_lock(&fc_event_lock);
	clock = stream_clock(s, pt);
	*clock = max_ull(*clock, stamp);
	pthread_mutex_unlock(&fc_event_lock);
}

/* ------------------------------------------------------------------------ */
/* Argument checks shared by several entry points                           */
/* ------------------------------------------------------------------------ */

/*
 * NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are always valid.  The
 * _ptsz/_ptds variants read NULL as the per-thread stream, which changes
 * nothing here since no work is queued anywhere.
 */
static CUresult check_stream(CUstream s)
{
	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return CUDA_SUCCESS;
	return handle_kind(s) == HK_STREAM ? CUDA_SUCCESS :
					     CUDA_ERROR_INVALID_HANDLE;
}

static CUresult check_location(CUmemLocation loc)
{
	switch (loc.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return loc.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
		return loc.id >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* A module image: cubin (ELF), fat binary, or PTX text. */
static CUresult check_image(const void *image)
{
	const unsigned char *p = image;
	uint32_t magic;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&magic, p, sizeof(magic));
	if (magic == FATBIN_DATA_MAGIC)
		return CUDA_SUCCESS;
	if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F')
		return CUDA_SUCCESS;
	if (p[0] == '/' || p[0] == '.' || p[0] == '\n' || p[0] == ' ' ||
	    p[0] == '\t')
		return CUDA_SUCCESS;
	return CUDA_ERROR_INVALID_IMAGE;
}

static CUresult check_options(unsigned int n, const void *keys,
			      void *const *values)
{
	return n && (!keys || !values) ? CUDA_ERROR_INVALID_VALUE :
					 CUDA_SUCCESS;
}

static CUresult launch_check(CUfunction f, unsigned int gx, unsigned int gy,
			     unsigned int gz, unsigned int bx, unsigned int by,
			     unsigned int bz, unsigned int shmem, CUstream s,
			     void **params, void **extra)
{
	CUresult r = need_ctx();

	if (r)
		return r;
	/* A CUkernel is launched as its function in the current context
	 * (same sequence number), as the driver does since CUDA 12. */
	if (handle_kind(f) == HK_KERNEL)
		f = handle_make(HK_FUNCTION, handle_seq(f));
	if (handle_kind(f) != HK_FUNCTION ||
	    (handle_ctx_tag(f) && handle_ctx_tag(f) != ctx_tag()))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	if (gx > 0x7fffffffu || gy > 65535 || gz > 65535 || bz > 64 ||
	    (unsigned long long)bx * by * bz > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	if (shmem > MAX_DYN_SHARED_MEM && shmem > func_dyn_shared(f))
		return CUDA_ERROR_INVALID_VALUE;
	if (shmem + kernel_static_shared(f) > MAX_DYN_SHARED_OPTIN)
		return CUDA_ERROR_INVALID_VALUE;
	if (__atomic_load_n(&fc_any_maxntid, __ATOMIC_RELAXED) &&
	    (unsigned long long)bx * by * bz > kernel_maxntid(f))
		return CUDA_ERROR_INVALID_VALUE;
	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	r = check_stream(s);
	if (!r)
		mod_launched(f);
	return r;
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f,
			  void **params, void **extra)
{
	if (!c || (c->numAttrs && !c->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	return launch_check(f, c->gridDimX, c->gridDimY, c->gridDimZ,
			    c->blockDimX, c->blockDimY, c->blockDimZ,
			    c->sharedMemBytes, c->hStream, params, extra);
}

static CUresult launch_coop(CUfunction f, unsigned int gx, unsigned int gy,
			    unsigned int gz, unsigned int bx, unsigned int by,
			    unsigned int bz, unsigned int shmem, CUstream s,
			    void **params)
{
	CUresult r = launch_check(f, gx, gy, gz, bx, by, bz, shmem, s, params,
				  NULL);

	if (r)
		return r;
	if ((unsigned long long)gx * gy * gz > MAX_COOP_BLOCKS)
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	return CUDA_SUCCESS;
}

/*
 * Kernel nodes (cuGraphAddKernelNode_v2): the function (or CUkernel) each
 * node of a graph, and of each graph exec instantiated from it, launches.
 * A graph launch counts a launch of each of its exec's (mod_launched).
 */
#define FC_MAX_NODES 256

static struct fc_node {
	void *owner;		/* the graph, or a graph exec */
	void *node;
	const void *func;	/* what it launches: func, else kern */
	CUfunction pfunc;	/* its parameters as given */
	CUkernel pkern;
} fc_nodes[FC_MAX_NODES];
static unsigned int fc_nnodes;
static pthread_mutex_t fc_node_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult graph_launch(CUgraphExec g, CUstream s)
{
	const void *run[FC_MAX_NODES];
	CUresult r = need_ctx();
	unsigned int i, n = 0;

	if (r)
		return r;
	if (handle_kind(g) != HK_GRAPH_EXEC)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = check_stream(s)))
		return r;
	pthread_mutex_lock(&fc_node_lock);
	for (i = 0; i < fc_nnodes; i++)
		if (fc_nodes[i].owner == g)
			run[n++] = fc_nodes[i].func;
	pthread_mutex_unlock(&fc_node_lock);
	for (i = 0; i < n; i++)
		mod_launched(run[i]);
	return CUDA_SUCCESS;
}

/* ---- copies ---- */

static CUresult copy_htod(CUdeviceptr dst, const void *src, size_t n,
			  CUstream s)
{
	CUresult r = need_ctx();

	if (!r)
		r = check_stream(s);
	if (r || !n)
		return r;
	if (!src)
		return CUDA_ERROR_INVALID_VALUE;
	r = check_dev(dst, n);
	if (!r) {
		mod_global_write(dst, src, n);
		dev_copy(dst, (void *)src, n, 1);
	}
	return r;
}

static CUresult copy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	CUresult r = need_ctx();

	if (!r)
		r = check_stream(s);
	if (r || !n)
		return r;
	if (!dst)
		return CUDA_ERROR_INVALID_VALUE;
	r = check_dev(src, n);
	if (!r)
		dev_copy(src, dst, n, 0);
	return r;
}

static CUresult copy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n,
			  CUstream s)
{
	CUresult r = need_ctx();

	if (!r)
		r = check_stream(s);
	if (r || !n)
		return r;
	r = check_dev(dst, n);
	return r ? r : check_dev(src, n);
}

static CUresult copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n,
			     CUstream s)
{
	CUresult r = need_ctx();

	if (!r)
		r = check_stream(s);
	if (r || !n)
		return r;
	r = check_unified(dst, n);
	return r ? r : check_unified(src, n);
}

static CUresult copy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
			  CUcontext sctx, size_t n, CUstream s)
{
	CUresult r = need_ctx();

	if (r)
		return r;
	if (handle_kind(dctx) != HK_CONTEXT || handle_kind(sctx) != HK_CONTEXT)
		return CUDA_ERROR_INVALID_CONTEXT;
	return copy_dtod(dst, src, n, s);
}

/* One side of a 2D/3D copy.  2D copies pass z = 0, height = 0, depth = 1. */
struct copy_side {
	CUmemorytype type;
	const void *host;
	CUdeviceptr dev;
	CUarray array;
	size_t x, y, z, pitch, height;
};

static CUresult check_side(const struct copy_side *s, size_t width,
			   size_t rows, size_t depth)
{
	size_t off, extent;

	if (s->type == CU_MEMORYTYPE_ARRAY)	/* opaque: nothing to check */
		return s->array ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (s->type < CU_MEMORYTYPE_HOST || s->type > CU_MEMORYTYPE_UNIFIED)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rows > 1 || depth > 1) && s->pitch < s->x + width)
		return CUDA_ERROR_INVALID_VALUE;
	if (depth > 1 && s->height < s->y + rows)
		return CUDA_ERROR_INVALID_VALUE;
	off = (s->z * s->height + s->y) * s->pitch + s->x;
	extent = ((depth - 1) * s->height + (rows - 1)) * s->pitch + width;
	switch (s->type) {
	case CU_MEMORYTYPE_HOST:
		return s->host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case CU_MEMORYTYPE_DEVICE:
		return check_dev(s->dev + off, extent);
	default:
		return check_unified(s->dev + off, extent);
	}
}

static CUresult copy_2d(const CUDA_MEMCPY2D *c, CUstream s)
{
	struct copy_side src, dst;
	CUresult r = need_ctx();

	if (!r)
		r = check_stream(s);
	if (r)
		return r;
	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c->WidthInBytes || !c->Height)
		return CUDA_SUCCESS;
	src = (struct copy_side){ c->srcMemoryType, c->srcHost, c->srcDevice,
				  c->srcArray, c->srcXInBytes, c->srcY, 0,
				  c->srcPitch, 0 };
	dst = (struct copy_side){ c->dstMemoryType, c->dstHost, c->dstDevice,
				  c->dstArray, c->dstXInBytes, c->dstY, 0,
				  c->dstPitch, 0 };
	r = check_side(&src, c->WidthInBytes, c->Height, 1);
	return r ? r : check_side(&dst, c->WidthInBytes, c->Height, 1);
}

static CUresult copy_3d(const CUDA_MEMCPY3D *c, CUstream s)
{
	struct copy_side src, dst;
	CUresult r = need_ctx();

	if (!r)
		r = check_stream(s);
	if (r)
		return r;
	if (!c || c->reserved0 || c->reserved1 || c->srcLOD || c->dstLOD)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c->WidthInBytes || !c->Height || !c->Depth)
		return CUDA_SUCCESS;
	src = (struct copy_side){ c->srcMemoryType, c->srcHost, c->srcDevice,
				  c->srcArray, c->srcXInBytes, c->srcY,
				  c->srcZ, c->srcPitch, c->srcHeight };
	dst = (struct copy_side){ c->dstMemoryType, c->dstHost, c->dstDevice,
				  c->dstArray, c->dstXInBytes, c->dstY,
				  c->dstZ, c->dstPitch, c->dstHeight };
	r = check_side(&src, c->WidthInBytes, c->Height, c->Depth);
	return r ? r : check_side(&dst, c->WidthInBytes, c->Height, c->Depth);
}

/* ---- memsets: elem is 1, 2 or 4 bytes ---- */

static CUresult memset_1d(CUdeviceptr dst, size_t n, size_t elem, CUstream s)
{
	CUresult r = need_ctx();

	if (!r)
		r = check_stream(s);
	if (r || !n)
		return r;
	if (dst % elem || n > SIZE_MAX / elem)
		return CUDA_ERROR_INVALID_VALUE;
	return check_dev(dst, n * elem);
}

static CUresult memset_2d(CUdeviceptr dst, size_t pitch, size_t elem,
			  size_t width, size_t height, CUstream s)
{
	CUresult r = need_ctx();

	if (!r)
		r = check_stream(s);
	if (r || !width || !height)
		return r;
	if (dst % elem || pitch % elem || width > SIZE_MAX / elem / height)
		return CUDA_ERROR_INVALID_VALUE;
	if (height > 1 && pitch < width * elem)
		return CUDA_ERROR_INVALID_VALUE;
	return check_dev(dst, (height - 1) * pitch + width * elem);
}

/* ------------------------------------------------------------------------ */
/* Initialization, version, devices, errors                                 */
/* ------------------------------------------------------------------------ */

FC_API CUresult cuInit(unsigned int Flags)
{
	ENTER(cuInit);
	if (Flags)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_store_n(&fc_initialized, 1, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

FC_API CUresult cuDriverGetVersion(int *driverVersion)
{
	ENTER(cuDriverGetVersion);
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = FAKE_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult r;

	ENTER(cuDeviceGet);
	if ((r = need_init()))
		return r;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = 0;
	return CUDA_SUCCESS;
}

FC_API CUresult cuDeviceGetCount(int *count)
{
	CUresult r;

	ENTER(cuDeviceGetCount);
	if ((r = need_init()))
		return r;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 1;
	return CUDA_SUCCESS;
}

static const struct {
	CUresult code;
	const char *name;
	const char *text;
} fc_errors[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE",
	  "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY",
	  "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
	  "initialization error" },
	{ CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED",
	  "driver shutting down" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
	  "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
	  "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
	  "device kernel image is invalid" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
	  "invalid device context" },
	{ CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND",
	  "file not found" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
	  "invalid resource handle" },
	{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND",
	  "named symbol not found" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED",
	  "unspecified launch failure" },
	{ CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
	  "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
	  "too many blocks in cooperative launch" },
	{ CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static CUresult error_lookup(CUresult error, const char **pStr, int text)
{
	size_t i;

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < sizeof(fc_errors) / sizeof(fc_errors[0]); i++) {
		if (fc_errors[i].code == error) {
			*pStr = text ? fc_errors[i].text : fc_errors[i].name;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

FC_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	ENTER(cuGetErrorName);
	return error_lookup(error, pStr, 0);
}

FC_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	ENTER(cuGetErrorString);
	return error_lookup(error, pStr, 1);
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                 */
/* ------------------------------------------------------------------------ */

FC_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult r;

	ENTER(cuDevicePrimaryCtxRetain);
	if ((r = need_init()))
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&fc_ctx_lock);
	fc_primary_refs++;
	pthread_mutex_unlock(&fc_ctx_lock);
	*pctx = PRIMARY_CTX;
	return CUDA_SUCCESS;
}

FC_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CUresult r;

	ENTER(cuDevicePrimaryCtxRelease_v2);
	if ((r = need_init()))
		return r;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&fc_ctx_lock);
	if (fc_primary_refs > 0)
		fc_primary_refs--;
	else
		r = CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_unlock(&fc_ctx_lock);
	return r;
}

FC_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags,
			       CUdevice dev)
{
	ENTER(cuCtxCreate_v2);
	(void)flags;
	return ctx_create(pctx, dev);
}

FC_API CUresult cuCtxCreate_v3(CUcontext *pctx,
			       CUexecAffinityParam *paramsArray, int numParams,
			       unsigned int flags, CUdevice dev)
{
	ENTER(cuCtxCreate_v3);
	(void)flags;
	if (numParams < 0 || (numParams && !paramsArray))
		return CUDA_ERROR_INVALID_VALUE;
	return ctx_create(pctx, dev);
}

FC_API CUresult cuCtxCreate_v4(CUcontext *pctx,
			       CUctxCreateParams *ctxCreateParams,
			       unsigned int flags, CUdevice dev)
{
	ENTER(cuCtxCreate_v4);
	(void)ctxCreateParams;	/* optional */
	(void)flags;
	return ctx_create(pctx, dev);
}

FC_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult r;

	ENTER(cuCtxDestroy_v2);
	if ((r = need_init()))
		return r;
	if (handle_kind(ctx) != HK_CONTEXT || ctx == PRIMARY_CTX)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (t_ctx_depth && t_ctx_stack[t_ctx_depth - 1] == ctx)
		t_ctx_depth--;	/* destroying the current context pops it */
	return CUDA_SUCCESS;
}

FC_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult r;

	ENTER(cuCtxSetCurrent);
	if ((r = need_init()))
		return r;
	if (!ctx) {		/* unbind */
		if (t_ctx_depth)
			t_ctx_depth--;
		return CUDA_SUCCESS;
	}
	if (handle_kind(ctx) != HK_CONTEXT)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!t_ctx_depth)
		return ctx_push(ctx);
	t_ctx_stack[t_ctx_depth - 1] = ctx;	/* replaces the top */
	return CUDA_SUCCESS;
}

FC_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult r;

	ENTER(cuCtxGetCurrent);
	if ((r = need_init()))
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = t_ctx_depth ? t_ctx_stack[t_ctx_depth - 1] : NULL;
	return CUDA_SUCCESS;
}

FC_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult r;

	ENTER(cuCtxPushCurrent_v2);
	if ((r = need_init()))
		return r;
	if (handle_kind(ctx) != HK_CONTEXT)
		return CUDA_ERROR_INVALID_CONTEXT;
	return ctx_push(ctx);
}

FC_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult r;

	ENTER(cuCtxPopCurrent_v2);
	if ((r = need_init()))
		return r;
	if (!t_ctx_depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	t_ctx_depth--;
	if (pctx)
		*pctx = t_ctx_stack[t_ctx_depth];
	return CUDA_SUCCESS;
}

FC_API CUresult cuCtxSynchronize(void)
{
	CUresult r;

	ENTER(cuCtxSynchronize);
	if ((r = need_ctx()))
		return r;
	if (fc_async)
		wait_until(all_ready());
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Module contents, for devrt's device probe injection tests                */
/* ------------------------------------------------------------------------ */

/*
 * A module or library loaded from an image with PTX (text, or the first
 * uncompressed PTX entry of a fat binary) keeps that PTX: its .entry names
 * are the only kernels cuModuleGetFunction / cuLibraryGetKernel find, each
 * with one handle for the module's life (as the real driver); a module whose
 * PTX declares the .u64 __gpuext_shared (.const) has that global (8 bytes of
 * device memory whose writes through cuMemcpyHtoD are kept).  Images
 * without PTX (cubins, empty fat binaries) keep the old behaviour: any name
 * resolves, to a new handle each time.  A kernel's .maxntid bounds the
 * threads of a launch of it (the real driver refuses larger blocks), and
 * its .shared arrays are its static shared memory.  What lies between a
 * .entry and the next is that kernel's; a module-scope .shared array
 * (before the first .entry, as patched modules declare theirs) is the
 * static shared memory of the kernels that use it, as ptxas allocates it:
 * those whose text names it, or every kernel if something before the
 * first .entry (a function) does.  Scanning is plain text search: this
 * is a test double, not a PTX parser.
 *
 * FAKECUDA_LAUNCH_FILE (%p: the pid): at unload, one JSON line per kernel
 * handed out: module, kernel name, handle, launches of it (any launch
 * call), whether its module's PTX declares __gpuext_shared ("patched"),
 * the value written to that global and the size of the registered,
 * device-mapped host range it pointed into when written (0: none).
 */
#define FC_MAX_MODS	1024
#define FC_MAX_KERNELS	64
#define FC_SHARED_NAME	"__gpuext_shared"

struct fc_kernel {
	char *name;
	void *handle;			/* CUfunction, or CUkernel for a library */
	unsigned long long launches;
	unsigned int static_shared;	/* bytes of the .shared arrays it uses */
	unsigned int maxntid;		/* its smallest .maxntid (0: none) */
};

#define FC_MAX_CTX_GLOBALS 8
#define FC_MAX_VARS 8

struct fc_mod {
	void *handle;			/* CUmodule or CUlibrary */
	int lib, unloaded;
	unsigned int nkernels;
	struct fc_kernel kernels[FC_MAX_KERNELS];
	int has_shared;
	int cubin;			/* an ELF image: kernels named on demand */
	unsigned int maxntid;		/* the smallest module-scope .maxntid (0: none) */
	/* __gpuext_shared, once asked for: a module's in its context, a
	 * library's in each context it was asked for in (as the driver
	 * loads a library into every context it is used in) */
	struct fc_global {
		CUcontext ctx;
		CUdeviceptr shared;
		unsigned long long val;	/* what was copied into it */
		size_t dev;		/* device allocation it pointed into then */
		unsigned long long launches;	/* of the module's kernels there */
	} g[FC_MAX_CTX_GLOBALS];
	unsigned int ng;
	/* the program's variables: module-scope .global / .const, not
	 * .extern (one allocation each, at the first lookup) */
	struct fc_var {
		char *name;
		size_t size;
		CUdeviceptr dptr;
	} vars[FC_MAX_VARS];
	unsigned int nvars;
	void *libmod;			/* a library's cuLibraryGetModule handle */
};

struct fc_hostreg {
	char *p;
	size_t size;
	unsigned int flags;
};

static pthread_mutex_t fc_mod_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fc_mod *fc_mods[FC_MAX_MODS];
static unsigned int fc_nmods;
static struct fc_hostreg fc_regs[64];
static unsigned int fc_nregs;

/* The PTX of an image, or NULL. */
static const char *image_ptx(const void *image)
{
	const unsigned char *p = image, *e, *end;
	unsigned long long size;
	uint32_t magic;
	uint16_t hsize;

	memcpy(&magic, p, sizeof(magic));
	if (magic != FATBIN_DATA_MAGIC)
		return p[0] == 0x7f ? NULL : (const char *)p;
	memcpy(&hsize, p + 6, 2);
	memcpy(&size, p + 8, 8);
	end = p + hsize + size;
	for (e = p + hsize; e + 64 <= end;) {
		uint16_t kind;
		uint32_t ehdr;
		unsigned long long esize, flags;

		memcpy(&kind, e, 2);
		memcpy(&ehdr, e + 4, 4);
		memcpy(&esize, e + 8, 8);
		memcpy(&flags, e + 48, 8);
		if (kind == 1 && !(flags & 0x2000))
			return (const char *)e + ehdr;
		e += ehdr + esize;
	}
	return NULL;
}

/* The kernel whose text p is in (starts: where each of m's kernels'
 * .entry is), or NULL before the first: module scope. */
static struct fc_kernel *kernel_at(struct fc_mod *m, const char *const *starts,
				   const char *p)
{
	unsigned int k = m->nkernels;

	while (k && starts[k - 1] > p)
		k--;
	return k ? &m->kernels[k - 1] : NULL;
}

/* The bytes of a PTX type, ".u32" (1 for .b8 and anything unknown). */
static size_t type_size(const char *t)
{
	size_t n = strcspn(t, " \t;[");

	if (n >= 3 && n <= 4 && strchr("busf", t[1]))
		return (size_t)atoi(t + 2) / 8 ? (size_t)atoi(t + 2) / 8 : 1;
	return 1;
}

/*
 * Module-scope variables before end (the first .entry): each line
 * "[.visible|.weak] .global|.const [.align N] .<type> name[N]..." that is
 * not .extern, and not the patched module's own __gpuext_* globals (its
 * size: the type's times the dimensions).  Plain text, one declaration a
 * line, as nvcc writes them.
 */
static void scan_vars(struct fc_mod *m, const char *ptx, const char *end)
{
	const char *l, *nl;

	for (l = ptx; l < end && m->nvars < FC_MAX_VARS; l = nl + 1) {
		const char *p = l, *t, *name;
		struct fc_var *v = &m->vars[m->nvars];
		size_t n;

		if (!(nl = memchr(l, '\n', (size_t)(end - l))))
			nl = end;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(p, ".visible ", 9))
			p += 9;
		else if (!strncmp(p, ".weak ", 6))
			p += 6;
		if (strncmp(p, ".global ", 8) && strncmp(p, ".const ", 7))
			continue;
		p = strchr(p, ' ') + 1;
		if (!strncmp(p, ".align ", 7) && (p = strchr(p + 7, ' ')))
			p++;
		if (!p || p >= nl || *p != '.' || !(t = strchr(p, ' ')) || t >= nl)
			continue;
		name = t + 1;
		n = strcspn(name, "[;= \n");
		if (!n || !strncmp(name, "__gpuext", 8))
			continue;
		v->size = type_size(p);
		for (t = name + n; *t == '['; t = strchr(t, ']') + 1)
			v->size *= strtoul(t + 1, NULL, 10);
		if ((v->name = strndup(name, n)))
			m->nvars++;
	}
}

static void mod_register(void *handle, int lib, const void *image)
{
	const char *ptx = image_ptx(image), *s, *starts[FC_MAX_KERNELS];
	const unsigned char *p = image;
	int cubin = p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F';
	struct fc_kernel *k;
	struct fc_mod *m;
	size_t n;

	if (!cubin && (!ptx || !strstr(ptx, ".entry")))
		return;
	if (cubin)
		ptx = "";
	m = calloc(1, sizeof(*m));
	if (!m)
		return;
	m->handle = handle;
	m->lib = lib;
	m->cubin = cubin;
	for (s = strstr(ptx, ".entry"); s && m->nkernels < FC_MAX_KERNELS;
	     s = strstr(s, ".entry")) {
		const char *at = s;

		s += 6;
		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		n = strcspn(s, " \t\n(");
		if (n) {
			starts[m->nkernels] = at;
			m->kernels[m->nkernels++].name = strndup(s, n);
		}
	}
	m->has_shared = strstr(ptx, ".u64 " FC_SHARED_NAME ";") != NULL;
	scan_vars(m, ptx, m->nkernels ? starts[0] : ptx + strlen(ptx));
	/* ".shared ... <name>[N];": static shared memory, the kernel's, or
	 * at module scope of the kernels that use it (as ptxas allocates
	 * it): those whose text names it, or every kernel if a function
	 * before the first .entry does */
	for (s = strstr(ptx, ".shared "); s; s = strstr(s + 8, ".shared ")) {
		const char *b = strchr(s, '['), *e = strchr(s, ';'), *nm, *u;
		unsigned int v, i, used[FC_MAX_KERNELS] = { 0 }, all = 0;
		char name[128];
		size_t len;

		if (!b || !e || b > e)
			continue;
		v = (unsigned int)strtoul(b + 1, NULL, 10);
		if ((k = kernel_at(m, starts, s))) {
			k->static_shared += v;
			continue;
		}
		for (nm = b; nm > s && nm[-1] != ' ' && nm[-1] != '\t'; nm--)
			;
		if (!(len = (size_t)(b - nm)) || len >= sizeof(name))
			continue;
		memcpy(name, nm, len);
		name[len] = '\0';
		for (u = strstr(ptx, name); u; u = strstr(u + 1, name)) {
			if (u == nm || isalnum((unsigned char)u[len]) ||
			    u[len] == '_' || u[len] == '$' ||
			    (u > ptx && (isalnum((unsigned char)u[-1]) ||
					 u[-1] == '_' || u[-1] == '$')))
				continue;
			if (!(k = kernel_at(m, starts, u)))
				all = 1;
			else
				used[k - m->kernels] = 1;
		}
		for (i = 0; i < m->nkernels; i++)
			if (all || used[i])
				m->kernels[i].static_shared += v;
	}
	for (s = strstr(ptx, ".maxntid "); s; s = strstr(s + 9, ".maxntid ")) {
		unsigned int v = (unsigned int)strtoul(s + 9, NULL, 10);
		unsigned int *to = (k = kernel_at(m, starts, s)) ?
					   &k->maxntid : &m->maxntid;

		if (v && (!*to || v < *to))
			*to = v;
		__atomic_store_n(&fc_any_maxntid, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&fc_mod_lock);
	if (fc_nmods < FC_MAX_MODS)
		fc_mods[fc_nmods++] = m;
	else
		m->nkernels = 0;	/* table full: the old behaviour */
	pthread_mutex_unlock(&fc_mod_lock);
}

/* Caller holds fc_mod_lock. */
static struct fc_mod *mod_find(const void *handle)
{
	unsigned int i;

	for (i = 0; i < fc_nmods; i++)
		if (fc_mods[i]->handle == handle && !fc_mods[i]->unloaded)
			return fc_mods[i];
	return NULL;
}

static void mod_unloaded(const void *handle)
{
	struct fc_mod *m;

	pthread_mutex_lock(&fc_mod_lock);
	m = mod_find(handle);
	if (m)
		m->unloaded = 1;
	pthread_mutex_unlock(&fc_mod_lock);
}

/*
 * A kernel of a module with PTX: 1 with *out its handle (made at the first
 * lookup), 0 if the module keeps no PTX (the caller decides), -1 if the
 * name is not one of its kernels.  A cubin's kernels the fake cannot list:
 * any name is one, with the same handle at every lookup, as the driver's.
 */
static int mod_kernel(const void *handle, const char *name, enum hkind kind,
		      void **out)
{
	struct fc_mod *m;
	unsigned int i;
	int r = 0;

	pthread_mutex_lock(&fc_mod_lock);
	m = mod_find(handle);
	if (m) {
		r = -1;
		for (i = 0; i < m->nkernels; i++) {
			if (strcmp(m->kernels[i].name, name))
				continue;
			if (!m->kernels[i].handle)
				m->kernels[i].handle = handle_new(kind);
			*out = m->kernels[i].handle;
			r = 1;
			break;
		}
		if (r < 0 && m->cubin && m->nkernels < FC_MAX_KERNELS &&
		    (m->kernels[m->nkernels].name = strdup(name))) {
			*out = m->kernels[m->nkernels++].handle = handle_new(kind);
			r = 1;
		}
	}
	pthread_mutex_unlock(&fc_mod_lock);
	return r;
}

/* m's global in the current context (made if make), or NULL.  Caller
 * holds fc_mod_lock. */
static struct fc_global *mod_ctx_global(struct fc_mod *m, int make)
{
	CUcontext ctx = t_ctx_depth ? t_ctx_stack[t_ctx_depth - 1] : NULL;
	unsigned int i;

	for (i = 0; i < m->ng; i++)
		if (m->g[i].ctx == ctx)
			return &m->g[i];
	if (!make || m->ng == FC_MAX_CTX_GLOBALS)
		return NULL;
	m->g[m->ng].ctx = ctx;
	return &m->g[m->ng++];
}

static CUresult mod_global(CUdeviceptr *dptr, size_t *bytes,
			   const void *handle, const char *name)
{
	CUresult r = CUDA_ERROR_NOT_FOUND;
	struct fc_mod *m;
	CUdeviceptr g;
	unsigned int i;

	if (!dptr || !name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_mod_lock);
	m = mod_find(handle);
	for (i = 0; !m && i < fc_nmods; i++)
		if (fc_mods[i]->libmod == handle && !fc_mods[i]->unloaded)
			m = fc_mods[i];
	for (i = 0; m && i < m->nvars; i++) {
		struct fc_var *v = &m->vars[i];

		if (strcmp(v->name, name))
			continue;
		if (!v->dptr && dev_alloc(&g, v->size, MK_DEVICE) == CUDA_SUCCESS)
			v->dptr = g;
		if (v->dptr) {
			*dptr = v->dptr;
			if (bytes)
				*bytes = v->size;
			r = CUDA_SUCCESS;
		}
	}
	if (m && m->has_shared && !strcmp(name, FC_SHARED_NAME)) {
		struct fc_global *x = mod_ctx_global(m, 1);

		if (x && !x->shared && dev_alloc(&g, 8, MK_DEVICE) == CUDA_SUCCESS)
			x->shared = g;
		if (x && x->shared) {
			*dptr = x->shared;
			if (bytes)
				*bytes = 8;
			r = CUDA_SUCCESS;
		}
	}
	pthread_mutex_unlock(&fc_mod_lock);
	return r;
}

/* Kernel f (a library kernel's CUfunction: same sequence number) and
 * into *mod its module, or NULL.  Caller holds fc_mod_lock. */
static const struct fc_kernel *kernel_find(const void *f,
					   const struct fc_mod **mod)
{
	const struct fc_kernel *found = NULL;
	unsigned int i, k;

	for (i = 0; i < fc_nmods; i++) {
		const struct fc_mod *m = fc_mods[i];

		for (k = 0; k < m->nkernels; k++) {
			void *h = m->kernels[k].handle;

			if (h && (h == f || (m->lib &&
					handle_seq(h) == handle_seq(f)))) {
				found = &m->kernels[k];
				*mod = m;
			}
		}
	}
	return found;
}

/* The .maxntid bound of kernel f, its own or its module's (~0U: none). */
static unsigned int kernel_maxntid(const void *f)
{
	const struct fc_kernel *k;
	const struct fc_mod *m;
	unsigned int v = ~0U;

	pthread_mutex_lock(&fc_mod_lock);
	if ((k = kernel_find(f, &m))) {
		if (k->maxntid)
			v = k->maxntid;
		if (m->maxntid && m->maxntid < v)
			v = m->maxntid;
	}
	pthread_mutex_unlock(&fc_mod_lock);
	return v;
}

/* The static shared memory of kernel f: its own .shared arrays and its
 * module's. */
static unsigned int kernel_static_shared(const void *f)
{
	const struct fc_kernel *k;
	const struct fc_mod *m;
	unsigned int v = 0;

	pthread_mutex_lock(&fc_mod_lock);
	if ((k = kernel_find(f, &m)))
		v = k->static_shared;
	pthread_mutex_unlock(&fc_mod_lock);
	return v;
}

/* The size of the registered, device-mapped range holding p, or 0.
 * Caller holds fc_mod_lock. */
static size_t hostreg_size(unsigned long long p)
{
	unsigned int i;

	for (i = 0; i < fc_nregs; i++)
		if (p >= (uintptr_t)fc_regs[i].p &&
		    p < (uintptr_t)fc_regs[i].p + fc_regs[i].size &&
		    (fc_regs[i].flags & 0x02))
			return fc_regs[i].size;
	return 0;
}

/* A copy to the device that lands on a module's global is kept. */
static void mod_global_write(CUdeviceptr dst, const void *src, size_t n)
{
	unsigned int i;

	pthread_mutex_lock(&fc_mod_lock);
	for (i = 0; i < fc_nmods; i++) {
		struct fc_mod *m = fc_mods[i];

		unsigned int k;

		for (k = 0; k < m->ng; k++) {
			struct fc_global *x = &m->g[k];

			if (x->shared && dst == x->shared && n == 8) {
				memcpy(&x->val, src, 8);
				x->dev = dev_alloc_size(x->val);
			}
		}
	}
	pthread_mutex_unlock(&fc_mod_lock);
}

/* A launch of f: counted against the kernel it is (a library kernel's
 * CUfunction has the CUkernel's sequence number). */
static long long fc_probe_off = -2;

/*
 * FAKECUDA_PROBE_COUNTER=<offset>: what a device probe would do, for a
 * launch of a kernel whose module's __gpuext_shared holds a pointer to
 * backed device memory: add 1 to the 64-bit word at that offset from it.
 */
static void probe_effect(struct fc_mod *m)
{
	struct fc_global *x = mod_ctx_global(m, 0);
	unsigned long long *w;

	if (x)
		x->launches++;

	if (fc_probe_off == -2) {
		const char *e = getenv("FAKECUDA_PROBE_COUNTER");

		fc_probe_off = e && *e ? strtoll(e, NULL, 0) : -1;
	}
	if (fc_probe_off < 0 || !x || !x->val)
		return;
	pthread_mutex_lock(&fc_mem_lock);
	w = (unsigned long long *)dev_mem(x->val + (CUdeviceptr)fc_probe_off, 8);
	if (w)
		__atomic_add_fetch(w, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fc_mem_lock);
}

static void mod_launched(const void *f)
{
	unsigned int i, k;

	pthread_mutex_lock(&fc_mod_lock);
	for (i = 0; i < fc_nmods; i++) {
		struct fc_mod *m = fc_mods[i];

		for (k = 0; k < m->nkernels; k++) {
			void *h = m->kernels[k].handle;

			if (h && (h == f || (m->lib && handle_seq(h) ==
						       handle_seq(f)))) {
				m->kernels[k].launches++;
				probe_effect(m);
				goto out;
			}
		}
	}
out:
	pthread_mutex_unlock(&fc_mod_lock);
}

static void write_launches(void)
{
	const char *p = strstr(fc_launch_file, "%p");
	char path[4096];
	unsigned int i, k;
	FILE *f;

	if (p)
		snprintf(path, sizeof(path), "%.*s%d%s",
			 (int)(p - fc_launch_file), fc_launch_file,
			 (int)getpid(), p + 2);
	else
		snprintf(path, sizeof(path), "%s", fc_launch_file);
	f = fopen(path, "we");
	if (!f)
		return;
	for (i = 0; i < fc_nmods; i++) {
		struct fc_mod *m = fc_mods[i];

		for (k = 0; k < m->nkernels; k++) {
			unsigned int c;

			if (!m->kernels[k].handle)
				continue;
			/* shared: the global in the first context asked for it;
			 * contexts: each context's, with the launches of the
			 * module's kernels made there */
			fprintf(f, "{\"module\":\"%p\",\"lib\":%s,\"unloaded\":%s,"
				"\"name\":\"%s\",\"handle\":\"%p\",\"launches\":%llu,"
				"\"patched\":%s,\"shared\":\"0x%llx\","
				"\"shared_device\":%zu,\"contexts\":[",
				m->handle, m->lib ? "true" : "false",
				m->unloaded ? "true" : "false",
				m->kernels[k].name, m->kernels[k].handle,
				m->kernels[k].launches,
				m->has_shared ? "true" : "false", m->g[0].val,
				m->g[0].dev);
			for (c = 0; c < m->ng; c++)
				fprintf(f, "%s{\"ctx\":\"%p\",\"shared\":\"0x%llx\","
					"\"launches\":%llu}", c ? "," : "",
					(void *)m->g[c].ctx, m->g[c].val,
					m->g[c].launches);
			fprintf(f, "],\"vars\":{");
			for (c = 0; c < m->nvars; c++)
				fprintf(f, "%s\"%s\":\"0x%llx\"", c ? "," : "",
					m->vars[c].name,
					(unsigned long long)m->vars[c].dptr);
			fprintf(f, "}}\n");
		}
	}
	fclose(f);
}

static void mods_free(void)
{
	unsigned int i, k;

	if (fc_launch_file) {
		write_launches();
		free(fc_launch_file);
		fc_launch_file = NULL;
	}
	for (i = 0; i < fc_nmods; i++) {
		for (k = 0; k < fc_mods[i]->nkernels; k++)
			free(fc_mods[i]->kernels[k].name);
		for (k = 0; k < fc_mods[i]->nvars; k++)
			free(fc_mods[i]->vars[k].name);
		free(fc_mods[i]);
	}
	fc_nmods = 0;
}

FC_API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes,
				     CUmodule hmod, const char *name)
{
	CUresult r;

	ENTER(cuModuleGetGlobal_v2);
	if ((r = need_ctx()))
		return r;
	if (handle_kind(hmod) != HK_MODULE)
		return CUDA_ERROR_INVALID_HANDLE;
	return mod_global(dptr, bytes, hmod, name);
}

FC_API CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes,
				   CUlibrary library, const char *name)
{
	CUresult r;

	ENTER(cuLibraryGetGlobal);
	if ((r = need_ctx()))
		return r;
	if (handle_kind(library) != HK_LIBRARY)
		return CUDA_ERROR_INVALID_HANDLE;
	return mod_global(dptr, bytes, library, name);
}

/* Library m's module: one handle for the library's life, on which
 * cuModuleGetGlobal finds the library's variables.  Caller holds
 * fc_mod_lock. */
static void *lib_module(struct fc_mod *m)
{
	if (!m->libmod)
		m->libmod = handle_new(HK_MODULE);
	return m->libmod;
}

FC_API CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct fc_mod *m;
	CUresult r;

	ENTER(cuLibraryGetModule);
	if ((r = need_ctx()))
		return r;
	if (!pMod || handle_kind(library) != HK_LIBRARY)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_mod_lock);
	if ((m = mod_find(library))) {
		*pMod = lib_module(m);
	} else {
		*pMod = handle_new(HK_MODULE);
	}
	pthread_mutex_unlock(&fc_mod_lock);
	return CUDA_SUCCESS;
}

/* A kernel's module: a module's handle, or its library's module (as
 * cuLibraryGetModule gives it). */
FC_API CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	const struct fc_kernel *k;
	const struct fc_mod *cm;
	struct fc_mod *m;
	CUresult r;

	ENTER(cuFuncGetModule);
	if ((r = need_ctx()))
		return r;
	if (!hmod)
		return CUDA_ERROR_INVALID_VALUE;
	if (handle_kind(hfunc) != HK_FUNCTION)
		return CUDA_ERROR_INVALID_HANDLE;
	r = CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&fc_mod_lock);
	if ((k = kernel_find(hfunc, &cm))) {
		m = (struct fc_mod *)cm;
		*hmod = m->lib ? lib_module(m) : m->handle;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&fc_mod_lock);
	return r;
}

/* Host ranges registered for the device; with DEVICEMAP (0x02) their
 * device pointer is their host address (unified addressing). */
FC_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize,
				     unsigned int Flags)
{
	CUresult r = CUDA_SUCCESS;
	unsigned int i;

	ENTER(cuMemHostRegister_v2);
	if ((r = need_ctx()))
		return r;
	if (!p || !bytesize || (Flags & ~0x0fU))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_mod_lock);
	for (i = 0; i < fc_nregs; i++)
		if ((char *)p < fc_regs[i].p + fc_regs[i].size &&
		    fc_regs[i].p < (char *)p + bytesize)
			r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (!r && fc_nregs == sizeof(fc_regs) / sizeof(fc_regs[0]))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (!r)
		fc_regs[fc_nregs++] = (struct fc_hostreg){ p, bytesize, Flags };
	pthread_mutex_unlock(&fc_mod_lock);
	return r;
}

FC_API CUresult cuMemHostUnregister(void *p)
{
	CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	unsigned int i;

	ENTER(cuMemHostUnregister);
	if ((r = need_ctx()))
		return r;
	r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	pthread_mutex_lock(&fc_mod_lock);
	for (i = 0; i < fc_nregs; i++) {
		if (fc_regs[i].p != p)
			continue;
		fc_regs[i] = fc_regs[--fc_nregs];
		r = CUDA_SUCCESS;
		break;
	}
	pthread_mutex_unlock(&fc_mod_lock);
	return r;
}

FC_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
					     unsigned int Flags)
{
	CUresult r;

	ENTER(cuMemHostGetDevicePointer_v2);
	if ((r = need_ctx()))
		return r;
	if (!pdptr || !p || Flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_mod_lock);
	r = hostreg_size((uintptr_t)p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&fc_mod_lock);
	if (!r)
		*pdptr = (CUdeviceptr)(uintptr_t)p;
	return r;
}

FC_API CUresult cuCtxGetDevice(CUdevice *device)
{
	CUresult r;

	ENTER(cuCtxGetDevice);
	if ((r = need_ctx()))
		return r;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = 0;
	return CUDA_SUCCESS;
}

/* The device's UUID: "fakecuda-gpu" and the ordinal, big-endian. */
FC_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	CUresult r;

	ENTER(cuDeviceGetUuid_v2);
	if ((r = need_init()))
		return r;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	memcpy(uuid->bytes, "fakecuda-gpu\0\0\0\0", 16);
	return CUDA_SUCCESS;
}

/* An sm_90 device with 132 SMs; other attributes are not modelled. */
FC_API CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev)
{
	CUresult r;

	ENTER(cuDeviceGetAttribute);
	if ((r = need_init()))
		return r;
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	switch (attrib) {
	case 16:	/* MULTIPROCESSOR_COUNT */
		*pi = 132;
		return CUDA_SUCCESS;
	case 75:	/* COMPUTE_CAPABILITY_MAJOR */
		*pi = 9;
		return CUDA_SUCCESS;
	case 76:	/* COMPUTE_CAPABILITY_MINOR */
		*pi = 0;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* ------------------------------------------------------------------------ */
/* Modules, libraries, kernels                                              */
/* ------------------------------------------------------------------------ */

static CUresult module_load(CUmodule *module, const void *image)
{
	CUresult r = need_ctx();

	if (r)
		return r;
	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = check_image(image)))
		return r;
	*module = handle_new(HK_MODULE);
	mod_register(*module, 0, image);
	return CUDA_SUCCESS;
}

/* Any name resolves except those starting with "missing". */
static int name_missing(const char *name)
{
	return strncmp(name, "missing", 7) == 0;
}

FC_API CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	ENTER(cuModuleLoadData);
	return module_load(module, image);
}

FC_API CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
				   unsigned int numOptions,
				   CUjit_option *options, void **optionValues)
{
	ENTER(cuModuleLoadDataEx);
	if (check_options(numOptions, options, optionValues))
		return CUDA_ERROR_INVALID_VALUE;
	return module_load(module, image);
}

FC_API CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	ENTER(cuModuleLoadFatBinary);
	return module_load(module, fatCubin);
}

/*
 * The whole of file path, NUL-terminated (the driver reads a module file
 * as it would the image in memory), into *out (malloc'd).  0, or
 * CUDA_ERROR_FILE_NOT_FOUND if it cannot be read.
 */
static CUresult read_image(const char *path, char **out)
{
	FILE *f = path ? fopen(path, "rbe") : NULL;
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0, got;

	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 65536;
			if (!(nb = realloc(buf, cap))) {
				free(buf);
				fclose(f);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
	} while (got > 0);
	fclose(f);
	if (!len) {
		free(buf);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	buf[len] = '\0';
	*out = buf;
	return CUDA_SUCCESS;
}

FC_API CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	CUresult r;
	char *image;

	ENTER(cuModuleLoad);
	if ((r = need_ctx()))
		return r;
	if (!module || !fname)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = read_image(fname, &image)))
		return r;
	r = module_load(module, image);
	free(image);
	return r;
}

FC_API CUresult cuModuleUnload(CUmodule hmod)
{
	CUresult r;

	ENTER(cuModuleUnload);
	if ((r = need_ctx()))
		return r;
	if (handle_kind(hmod) != HK_MODULE)
		return CUDA_ERROR_INVALID_HANDLE;
	mod_unloaded(hmod);
	return CUDA_SUCCESS;
}

FC_API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
				    const char *name)
{
	CUresult r;
	void *h;

	ENTER(cuModuleGetFunction);
	if ((r = need_ctx()))
		return r;
	if (!hfunc || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (handle_kind(hmod) != HK_MODULE)
		return CUDA_ERROR_INVALID_HANDLE;
	if (name_missing(name))
		return CUDA_ERROR_NOT_FOUND;
	switch (mod_kernel(hmod, name, HK_FUNCTION, &h)) {
	case 1:
		*hfunc = h;
		return CUDA_SUCCESS;
	case -1:
		return CUDA_ERROR_NOT_FOUND;
	}
	*hfunc = handle_new(HK_FUNCTION);
	return CUDA_SUCCESS;
}

/*
 * A library of the image code, or of the file path if code is NULL.
 * Libraries are context-independent: they need cuInit, not a context.
 */
static CUresult library_load(CUlibrary *library, const void *code,
			     const char *path, unsigned int njit,
			     const void *jit, void *const *jitv,
			     unsigned int nlib, const void *lib,
			     void *const *libv)
{
	char *buf = NULL;
	CUresult r;

	if ((r = need_init()))
		return r;
	if (!library || (!code && !path) || check_options(njit, jit, jitv) ||
	    check_options(nlib, lib, libv))
		return CUDA_ERROR_INVALID_VALUE;
	if (!code && (r = read_image(path, &buf)))
		return r;
	if (!(r = check_image(code ? code : buf))) {
		*library = handle_new(HK_LIBRARY);
		mod_register(*library, 1, code ? code : buf);
	}
	free(buf);
	return r;
}

FC_API CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
				  CUjit_option *jitOptions,
				  void **jitOptionsValues,
				  unsigned int numJitOptions,
				  CUlibraryOption *libraryOptions,
				  void **libraryOptionValues,
				  unsigned int numLibraryOptions)
{
	ENTER(cuLibraryLoadData);
	return library_load(library, code, NULL, numJitOptions, jitOptions,
			    jitOptionsValues, numLibraryOptions,
			    libraryOptions, libraryOptionValues);
}

FC_API CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
				      CUjit_option *jitOptions,
				      void **jitOptionsValues,
				      unsigned int numJitOptions,
				      CUlibraryOption *libraryOptions,
				      void **libraryOptionValues,
				      unsigned int numLibraryOptions)
{
	ENTER(cuLibraryLoadFromFile);
	return library_load(library, NULL, fileName, numJitOptions, jitOptions,
			    jitOptionsValues, numLibraryOptions,
			    libraryOptions, libraryOptionValues);
}

FC_API CUresult cuLibraryUnload(CUlibrary library)
{
	CUresult r;

	ENTER(cuLibraryUnload);
	if ((r = need_init()))
		return r;
	if (handle_kind(library) != HK_LIBRARY)
		return CUDA_ERROR_INVALID_HANDLE;
	mod_unloaded(library);
	return CUDA_SUCCESS;
}

FC_API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
				   const char *name)
{
	CUresult r;
	void *h;

	ENTER(cuLibraryGetKernel);
	if ((r = need_init()))
		return r;
	if (!pKernel || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (handle_kind(library) != HK_LIBRARY)
		return CUDA_ERROR_INVALID_HANDLE;
	if (name_missing(name))
		return CUDA_ERROR_NOT_FOUND;
	switch (mod_kernel(library, name, HK_KERNEL, &h)) {
	case 1:
		*pKernel = h;
		return CUDA_SUCCESS;
	case -1:
		return CUDA_ERROR_NOT_FOUND;
	}
	*pKernel = handle_new(HK_KERNEL);
	return CUDA_SUCCESS;
}

/* The function of a kernel in the current context: same seq, other kind,
 * the context's tag. */
FC_API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	CUresult r;

	ENTER(cuKernelGetFunction);
	if ((r = need_ctx()))
		return r;
	if (!pFunc)
		return CUDA_ERROR_INVALID_VALUE;
	if (handle_kind(kernel) != HK_KERNEL)
		return CUDA_ERROR_INVALID_HANDLE;
	*pFunc = (CUfunction)((char *)handle_make(HK_FUNCTION,
						   handle_seq(kernel)) + ctx_tag());
	return CUDA_SUCCESS;
}

/*
 * Function attributes: the one that changes what a launch may ask,
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (8), kept per function
 * (a library kernel's for its CUfunction: same sequence number); the
 * shared memory carveout (9) is accepted and not modelled.
 */
#define FC_MAX_FATTRS	1024

static struct {
	const void *fn;
	unsigned int dyn_shared;
} fc_fattrs[FC_MAX_FATTRS];
static unsigned int fc_nfattrs;

/* The dynamic shared memory launches of f may ask for beyond 48 KiB. */
static unsigned int func_dyn_shared(const void *f)
{
	unsigned int i, v = 0;

	pthread_mutex_lock(&fc_mod_lock);
	for (i = 0; i < fc_nfattrs; i++)
		if (fc_fattrs[i].fn == f)
			v = fc_fattrs[i].dyn_shared;
	pthread_mutex_unlock(&fc_mod_lock);
	return v;
}

static CUresult func_set(const void *f, CUfunction_attribute attrib, int value)
{
	unsigned int i;

	if (attrib == 9)
		return value >= -1 && value <= 100 ? CUDA_SUCCESS :
						     CUDA_ERROR_INVALID_VALUE;
	if (attrib != 8 || value < 0 ||
	    (unsigned int)value + kernel_static_shared(f) > MAX_DYN_SHARED_OPTIN)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_mod_lock);
	for (i = 0; i < fc_nfattrs && fc_fattrs[i].fn != f; i++)
		;
	if (i < FC_MAX_FATTRS) {
		fc_fattrs[i].fn = f;
		fc_fattrs[i].dyn_shared = (unsigned int)value;
		if (i == fc_nfattrs)
			fc_nfattrs++;
	}
	pthread_mutex_unlock(&fc_mod_lock);
	return i < FC_MAX_FATTRS ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* A function's attributes: its checks (a context, a function handle). */
static CUresult func_attr_check(CUfunction hfunc)
{
	CUresult r;

	if ((r = need_ctx()))
		return r;
	return handle_kind(hfunc) != HK_FUNCTION ? CUDA_ERROR_INVALID_HANDLE :
						   CUDA_SUCCESS;
}

FC_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
				   int value)
{
	CUresult r;

	ENTER(cuFuncSetAttribute);
	return (r = func_attr_check(hfunc)) ? r : func_set(hfunc, attrib, value);
}

/* A library kernel's attributes are its function's (same sequence
 * number) on the one device there is: *f, after the driver's checks. */
static CUresult kernel_attr_fn(CUkernel kernel, CUdevice dev, const void **f)
{
	CUresult r;

	if ((r = need_init()))
		return r;
	if (handle_kind(kernel) != HK_KERNEL)
		return CUDA_ERROR_INVALID_HANDLE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*f = handle_make(HK_FUNCTION, handle_seq(kernel));
	return CUDA_SUCCESS;
}

FC_API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val,
				     CUkernel kernel, CUdevice dev)
{
	const void *f;
	CUresult r;

	ENTER(cuKernelSetAttribute);
	return (r = kernel_attr_fn(kernel, dev, &f)) ? r : func_set(f, attrib, val);
}

/* The most threads a block (0: its .maxntid, else 1024), static shared
 * memory (1) and the dynamic shared memory set (8). */
static CUresult func_get(int *pi, const void *f, CUfunction_attribute attrib)
{
	unsigned int v;

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attrib) {
	case 0:
		v = kernel_maxntid(f);
		*pi = (int)(v < 1024 ? v : 1024);
		return CUDA_SUCCESS;
	case 1:
		*pi = (int)kernel_static_shared(f);
		return CUDA_SUCCESS;
	case 8:
		*pi = (int)func_dyn_shared(f);
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

FC_API CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
				   CUfunction hfunc)
{
	CUresult r;

	ENTER(cuFuncGetAttribute);
	return (r = func_attr_check(hfunc)) ? r : func_get(pi, hfunc, attrib);
}

FC_API CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
				     CUkernel kernel, CUdevice dev)
{
	const void *f;
	CUresult r;

	ENTER(cuKernelGetAttribute);
	return (r = kernel_attr_fn(kernel, dev, &f)) ? r : func_get(pi, f, attrib);
}

/* ------------------------------------------------------------------------ */
/* Streams and events                                                       */
/* ------------------------------------------------------------------------ */

FC_API CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	CUresult r;

	ENTER(cuStreamCreate);
	if ((r = need_ctx()))
		return r;
	if (!phStream || (Flags & ~CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	*phStream = handle_new(HK_STREAM);
	stream_reset(*phStream);
	return CUDA_SUCCESS;
}

FC_API CUresult cuStreamDestroy_v2(CUstream hStream)
{
	CUresult r;

	ENTER(cuStreamDestroy_v2);
	if ((r = need_ctx()))
		return r;
	return handle_kind(hStream) == HK_STREAM ? CUDA_SUCCESS :
						   CUDA_ERROR_INVALID_HANDLE;
}

/* A context is current and s names a stream. */
static CUresult need_stream(CUstream s)
{
	CUresult r = need_ctx();

	return r ? r : check_stream(s);
}

static CUresult stream_sync(CUstream s, int pt)
{
	CUresult r = need_stream(s);

	if (r == CUDA_SUCCESS && fc_async)
		wait_until(stream_ready(s, pt));
	return r;
}

FC_API CUresult cuStreamQuery(CUstream hStream)
{
	CUresult r;

	ENTER(cuStreamQuery);
	r = need_stream(hStream);
	if (r == CUDA_SUCCESS && fc_async && stream_ready(hStream, 0) > now_ns())
		r = CUDA_ERROR_NOT_READY;
	return r;
}

/*
 * cuStreamWriteValue32, as far as devrt's anchor uses it: a plain write of
 * host memory registered for the device (the fake's device pointer of it
 * is its host address) on a created stream.  The fake has nothing to do
 * the write later: the call returns once it has landed, after the
 * stream's work before it.
 */
FC_API CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr,
					unsigned int value, unsigned int flags)
{
	CUresult r;

	ENTER(cuStreamWriteValue32_v2);
	if ((r = need_stream(stream)))
		return r;
	if (flags || !addr || (addr & 3) || stream == CU_STREAM_LEGACY ||
	    stream == CU_STREAM_PER_THREAD || !stream)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_mod_lock);
	r = hostreg_size((uintptr_t)addr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&fc_mod_lock);
	if (r)
		return r;
	if (fc_async)
		wait_until(stream_ready(stream, 0));
	__atomic_store_n((unsigned int *)(uintptr_t)addr, value, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

FC_API CUresult cuStreamSynchronize(CUstream hStream)
{
	ENTER(cuStreamSynchronize);
	return stream_sync(hStream, 0);
}

FC_API CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	ENTER(cuStreamSynchronize_ptsz);
	return stream_sync(hStream, 1);
}

static CUresult stream_wait_event(CUstream s, int pt, CUevent e,
				  unsigned int flags)
{
	CUresult r = need_stream(s);

	if (r)
		return r;
	if (handle_kind(e) != HK_EVENT)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags & ~CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	stream_wait(s, pt, event_get(e));
	return CUDA_SUCCESS;
}

FC_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
				  unsigned int Flags)
{
	ENTER(cuStreamWaitEvent);
	return stream_wait_event(hStream, 0, hEvent, Flags);
}

FC_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
				       unsigned int Flags)
{
	ENTER(cuStreamWaitEvent_ptsz);
	return stream_wait_event(hStream, 1, hEvent, Flags);
}

FC_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	CUresult r;

	ENTER(cuEventCreate);
	if ((r = need_ctx()))
		return r;
	if (!phEvent || (Flags & ~(CU_EVENT_BLOCKING_SYNC |
				   CU_EVENT_DISABLE_TIMING |
				   CU_EVENT_INTERPROCESS)))
		return CUDA_ERROR_INVALID_VALUE;
	*phEvent = handle_new(HK_EVENT);
	event_set(*phEvent, 0);
	return CUDA_SUCCESS;
}

/* The event completes when the work queued on s before it has ended. */
static CUresult event_record(CUevent e, CUstream s, int pt)
{
	CUresult r = need_stream(s);

	if (r)
		return r;
	if (handle_kind(e) != HK_EVENT)
		return CUDA_ERROR_INVALID_HANDLE;
	event_set(e, stream_ready(s, pt));
	return CUDA_SUCCESS;
}

FC_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	ENTER(cuEventRecord);
	return event_record(hEvent, hStream, 0);
}

FC_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	ENTER(cuEventRecord_ptsz);
	return event_record(hEvent, hStream, 1);
}

/*
 * CUDA_SUCCESS once host time reaches the event's stamp, and for an event
 * never recorded (as the real driver does).
 */
FC_API CUresult cuEventQuery(CUevent hEvent)
{
	CUresult r;

	ENTER(cuEventQuery);
	if ((r = need_ctx()))
		return r;
	if (handle_kind(hEvent) != HK_EVENT)
		return CUDA_ERROR_INVALID_HANDLE;
	return now_ns() >= event_get(hEvent) ? CUDA_SUCCESS :
					       CUDA_ERROR_NOT_READY;
}

FC_API CUresult cuEventSynchronize(CUevent hEvent)
{
	CUresult r;

	ENTER(cuEventSynchronize);
	if ((r = need_ctx()))
		return r;
	if (handle_kind(hEvent) != HK_EVENT)
		return CUDA_ERROR_INVALID_HANDLE;
	if (fc_async)
		wait_until(event_get(hEvent));
	return CUDA_SUCCESS;
}

FC_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
				   CUevent hEnd)
{
	unsigned long long t0, t1;
	CUresult r;

	ENTER(cuEventElapsedTime);
	if ((r = need_ctx()))
		return r;
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	if (handle_kind(hStart) != HK_EVENT || handle_kind(hEnd) != HK_EVENT)
		return CUDA_ERROR_INVALID_HANDLE;
	t0 = event_get(hStart);
	t1 = event_get(hEnd);
	if (!t0 || !t1)		/* never recorded */
		return CUDA_ERROR_INVALID_HANDLE;
	if (now_ns() < max_ull(t0, t1))
		return CUDA_ERROR_NOT_READY;
	*pMilliseconds = (float)((double)(long long)(t1 - t0) *
				 (1.0 + (double)fc_clock_ppb * 1e-9) / 1e6);
	return CUDA_SUCCESS;
}

FC_API CUresult cuEventDestroy_v2(CUevent hEvent)
{
	CUresult r;

	ENTER(cuEventDestroy_v2);
	if ((r = need_ctx()))
		return r;
	if (handle_kind(hEvent) != HK_EVENT)
		return CUDA_ERROR_INVALID_HANDLE;
	event_set(hEvent, 0);
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Launches and graphs                                                      */
/* ------------------------------------------------------------------------ */

FC_API CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX,
			       unsigned int gridDimY, unsigned int gridDimZ,
			       unsigned int blockDimX, unsigned int blockDimY,
			       unsigned int blockDimZ,
			       unsigned int sharedMemBytes, CUstream hStream,
			       void **kernelParams, void **extra)
{
	CUresult r;

	ENTER(cuLaunchKernel);
	r = launch_check(f, gridDimX, gridDimY, gridDimZ, blockDimX,
			 blockDimY, blockDimZ, sharedMemBytes, hStream,
			 kernelParams, extra);
	return fc_work(r, hStream, 0, 0, fc_kernel_ns);
}

FC_API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX,
				    unsigned int gridDimY,
				    unsigned int gridDimZ,
				    unsigned int blockDimX,
				    unsigned int blockDimY,
				    unsigned int blockDimZ,
				    unsigned int sharedMemBytes,
				    CUstream hStream, void **kernelParams,
				    void **extra)
{
	CUresult r;

	ENTER(cuLaunchKernel_ptsz);
	r = launch_check(f, gridDimX, gridDimY, gridDimZ, blockDimX,
			 blockDimY, blockDimZ, sharedMemBytes, hStream,
			 kernelParams, extra);
	return fc_work(r, hStream, 1, 0, fc_kernel_ns);
}

FC_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
				 void **kernelParams, void **extra)
{
	CUresult r;

	ENTER(cuLaunchKernelEx);
	r = launch_ex(config, f, kernelParams, extra);
	return fc_work(r, config ? config->hStream : NULL, 0, 0, fc_kernel_ns);
}

FC_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config,
				      CUfunction f, void **kernelParams,
				      void **extra)
{
	CUresult r;

	ENTER(cuLaunchKernelEx_ptsz);
	r = launch_ex(config, f, kernelParams, extra);
	return fc_work(r, config ? config->hStream : NULL, 1, 0, fc_kernel_ns);
}

FC_API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
					  unsigned int gridDimY,
					  unsigned int gridDimZ,
					  unsigned int blockDimX,
					  unsigned int blockDimY,
					  unsigned int blockDimZ,
					  unsigned int sharedMemBytes,
					  CUstream hStream,
					  void **kernelParams)
{
	CUresult r;

	ENTER(cuLaunchCooperativeKernel);
	r = launch_coop(f, gridDimX, gridDimY, gridDimZ, blockDimX,
			blockDimY, blockDimZ, sharedMemBytes, hStream,
			kernelParams);
	return fc_work(r, hStream, 0, 0, fc_kernel_ns);
}

FC_API CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f,
					       unsigned int gridDimX,
					       unsigned int gridDimY,
					       unsigned int gridDimZ,
					       unsigned int blockDimX,
					       unsigned int blockDimY,
					       unsigned int blockDimZ,
					       unsigned int sharedMemBytes,
					       CUstream hStream,
					       void **kernelParams)
{
	CUresult r;

	ENTER(cuLaunchCooperativeKernel_ptsz);
	r = launch_coop(f, gridDimX, gridDimY, gridDimZ, blockDimX,
			blockDimY, blockDimZ, sharedMemBytes, hStream,
			kernelParams);
	return fc_work(r, hStream, 1, 0, fc_kernel_ns);
}

/* A kernel node's function: its func, else its kern (whose launches count
 * as its function's), or NULL if neither is one. */
static const void *node_func(const CUDA_KERNEL_NODE_PARAMS *p)
{
	if (!p)
		return NULL;
	if (p->func && handle_kind(p->func) == HK_FUNCTION)
		return p->func;
	if (!p->func && p->kern && handle_kind(p->kern) == HK_KERNEL)
		return p->kern;
	return NULL;
}

FC_API CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode,
					CUgraph hGraph,
					const CUgraphNode *dependencies,
					size_t numDependencies,
					const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	const void *f = node_func(nodeParams);
	CUresult r;

	ENTER(cuGraphAddKernelNode_v2);
	if ((r = need_ctx()))
		return r;
	if (!phGraphNode || handle_kind(hGraph) != HK_GRAPH || !f ||
	    (numDependencies && !dependencies))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_node_lock);
	if (fc_nnodes == FC_MAX_NODES) {
		pthread_mutex_unlock(&fc_node_lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*phGraphNode = handle_new(HK_GRAPH_NODE);
	fc_nodes[fc_nnodes++] = (struct fc_node){ hGraph, *phGraphNode, f,
						  nodeParams->func,
						  nodeParams->kern };
	pthread_mutex_unlock(&fc_node_lock);
	return CUDA_SUCCESS;
}

/* owner's node (a graph's, or an exec's) now launches p's function. */
static CUresult node_set(void *owner, CUgraphNode node,
			 const CUDA_KERNEL_NODE_PARAMS *p)
{
	const void *f = node_func(p);
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	unsigned int i;

	if (!f)
		return r;
	pthread_mutex_lock(&fc_node_lock);
	for (i = 0; i < fc_nnodes; i++) {
		if (fc_nodes[i].owner == owner && fc_nodes[i].node == node) {
			fc_nodes[i].func = f;
			fc_nodes[i].pfunc = p->func;
			fc_nodes[i].pkern = p->kern;
			r = CUDA_SUCCESS;
		}
	}
	pthread_mutex_unlock(&fc_node_lock);
	return r;
}

FC_API CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode,
					      const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	CUresult r;
	unsigned int i;
	void *g = NULL;

	ENTER(cuGraphKernelNodeSetParams_v2);
	if ((r = need_ctx()))
		return r;
	pthread_mutex_lock(&fc_node_lock);
	for (i = 0; i < fc_nnodes; i++)
		if (fc_nodes[i].node == hNode &&
		    handle_kind(fc_nodes[i].owner) == HK_GRAPH)
			g = fc_nodes[i].owner;
	pthread_mutex_unlock(&fc_node_lock);
	return g ? node_set(g, hNode, nodeParams) : CUDA_ERROR_INVALID_VALUE;
}

FC_API CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec,
						  CUgraphNode hNode,
						  const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	CUresult r;

	ENTER(cuGraphExecKernelNodeSetParams_v2);
	if ((r = need_ctx()))
		return r;
	if (handle_kind(hGraphExec) != HK_GRAPH_EXEC)
		return CUDA_ERROR_INVALID_VALUE;
	return node_set(hGraphExec, hNode, nodeParams);
}

/* The graph's node hNode (its graph's, not an exec's), or NULL. */
static struct fc_node *graph_node(CUgraphNode hNode)
{
	unsigned int i;

	for (i = 0; i < fc_nnodes; i++)
		if (fc_nodes[i].node == hNode &&
		    handle_kind(fc_nodes[i].owner) == HK_GRAPH)
			return &fc_nodes[i];
	return NULL;
}

FC_API CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
					      CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct fc_node *n;
	CUresult r;

	ENTER(cuGraphKernelNodeGetParams_v2);
	if ((r = need_ctx()))
		return r;
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	r = CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fc_node_lock);
	if ((n = graph_node(hNode))) {
		memset(nodeParams, 0, sizeof(*nodeParams));
		nodeParams->func = n->pfunc;
		nodeParams->kern = n->pkern;
		r = CUDA_SUCCESS;
	}
	pthread_mutex_unlock(&fc_node_lock);
	return r;
}

/* The v1 entry points: v2's parameters without kern and ctx. */
static CUDA_KERNEL_NODE_PARAMS v1_params(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	CUDA_KERNEL_NODE_PARAMS v;

	memset(&v, 0, sizeof(v));
	memcpy(&v, p, sizeof(*p));
	return v;
}

FC_API CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				     const CUgraphNode *dependencies,
				     size_t numDependencies,
				     const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS v;

	ENTER(cuGraphAddKernelNode);
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	v = v1_params(nodeParams);
	return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies,
				       numDependencies, &v);
}

FC_API CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode,
					   const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS v;

	ENTER(cuGraphKernelNodeSetParams);
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	v = v1_params(nodeParams);
	return cuGraphKernelNodeSetParams_v2(hNode, &v);
}

FC_API CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec,
					       CUgraphNode hNode,
					       const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS v;

	ENTER(cuGraphExecKernelNodeSetParams);
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	v = v1_params(nodeParams);
	return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &v);
}

FC_API CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode,
					   CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	CUDA_KERNEL_NODE_PARAMS v;
	CUresult r;

	ENTER(cuGraphKernelNodeGetParams);
	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(r = cuGraphKernelNodeGetParams_v2(hNode, &v)))
		memcpy(nodeParams, &v, sizeof(*nodeParams));
	return r;
}

/* The generic entry points (CUDA 12.2): kernel nodes only. */
FC_API CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
			       const CUgraphNode *dependencies,
			       size_t numDependencies,
			       CUgraphNodeParams *nodeParams)
{
	ENTER(cuGraphAddNode);
	if (!nodeParams || nodeParams->type != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies,
				       numDependencies, &nodeParams->u.kernel);
}

FC_API CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
				  const CUgraphNode *dependencies,
				  const CUgraphEdgeData *dependencyData,
				  size_t numDependencies,
				  CUgraphNodeParams *nodeParams)
{
	ENTER(cuGraphAddNode_v2);
	(void)dependencyData;
	if (!nodeParams || nodeParams->type != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies,
				       numDependencies, &nodeParams->u.kernel);
}

FC_API CUresult cuGraphNodeSetParams(CUgraphNode hNode,
				     CUgraphNodeParams *nodeParams)
{
	ENTER(cuGraphNodeSetParams);
	if (!nodeParams || nodeParams->type != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return cuGraphKernelNodeSetParams_v2(hNode, &nodeParams->u.kernel);
}

FC_API CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec,
					 CUgraphNode hNode,
					 CUgraphNodeParams *nodeParams)
{
	ENTER(cuGraphExecNodeSetParams);
	if (!nodeParams || nodeParams->type != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode,
						 &nodeParams->u.kernel);
}

/* Graphs hold kernel nodes (above) and nothing else. */
FC_API CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	CUresult r;

	ENTER(cuGraphCreate);
	if ((r = need_init()))
		return r;
	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	*phGraph = handle_new(HK_GRAPH);
	return CUDA_SUCCESS;
}

FC_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec,
					    CUgraph hGraph,
					    unsigned long long flags)
{
	CUresult r;

	ENTER(cuGraphInstantiateWithFlags);
	if ((r = need_ctx()))
		return r;
	if (!phGraphExec || handle_kind(hGraph) != HK_GRAPH ||
	    (flags & ~0xfULL))
		return CUDA_ERROR_INVALID_VALUE;
	*phGraphExec = handle_new(HK_GRAPH_EXEC);
	{	/* the exec's own copy of the graph's kernel nodes */
		unsigned int i, n;

		pthread_mutex_lock(&fc_node_lock);
		for (i = 0, n = fc_nnodes; i < n && fc_nnodes < FC_MAX_NODES; i++)
			if (fc_nodes[i].owner == hGraph) {
				fc_nodes[fc_nnodes] = fc_nodes[i];
				fc_nodes[fc_nnodes++].owner = *phGraphExec;
			}
		pthread_mutex_unlock(&fc_node_lock);
	}
	return CUDA_SUCCESS;
}

FC_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	CUresult r;

	ENTER(cuGraphLaunch);
	r = graph_launch(hGraphExec, hStream);
	return fc_work(r, hStream, 0, 0, fc_kernel_ns);
}

FC_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	CUresult r;

	ENTER(cuGraphLaunch_ptsz);
	r = graph_launch(hGraphExec, hStream);
	return fc_work(r, hStream, 1, 0, fc_kernel_ns);
}

FC_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	CUresult r;

	ENTER(cuGraphExecDestroy);
	if ((r = need_init()))
		return r;
	return handle_kind(hGraphExec) == HK_GRAPH_EXEC ?
	       CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_API CUresult cuGraphDestroy(CUgraph hGraph)
{
	CUresult r;

	ENTER(cuGraphDestroy);
	if ((r = need_init()))
		return r;
	return handle_kind(hGraph) == HK_GRAPH ? CUDA_SUCCESS :
						 CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Memory management                                                        */
/* ------------------------------------------------------------------------ */

FC_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	CUresult r;

	ENTER(cuMemAlloc_v2);
	if ((r = need_ctx()))
		return r;
	return dev_alloc(dptr, bytesize, MK_DEVICE);
}

FC_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
				  unsigned int flags)
{
	CUresult r;

	ENTER(cuMemAllocManaged);
	if ((r = need_ctx()))
		return r;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	return dev_alloc(dptr, bytesize, MK_MANAGED);
}

static CUresult mem_alloc_async(CUdeviceptr *dptr, size_t bytesize,
				CUstream s)
{
	CUresult r = need_stream(s);

	return r ? r : dev_alloc(dptr, bytesize, MK_ASYNC);
}

FC_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
				CUstream hStream)
{
	ENTER(cuMemAllocAsync);
	return mem_alloc_async(dptr, bytesize, hStream);
}

FC_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				     CUstream hStream)
{
	ENTER(cuMemAllocAsync_ptsz);
	return mem_alloc_async(dptr, bytesize, hStream);
}

FC_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	CUresult r;

	ENTER(cuMemAllocHost_v2);
	if ((r = need_ctx()))
		return r;
	return host_alloc(pp, bytesize);
}

FC_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	CUresult r;

	ENTER(cuMemHostAlloc);
	if ((r = need_ctx()))
		return r;
	if (Flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
		      CU_MEMHOSTALLOC_WRITECOMBINED))
		return CUDA_ERROR_INVALID_VALUE;
	return host_alloc(pp, bytesize);
}

FC_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult r;

	ENTER(cuMemFree_v2);
	if ((r = need_ctx()))
		return r;
	return dev_free(dptr);
}

static CUresult mem_free_async(CUdeviceptr dptr, CUstream s)
{
	CUresult r = need_stream(s);

	return r ? r : dev_free(dptr);
}

FC_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	ENTER(cuMemFreeAsync);
	return mem_free_async(dptr, hStream);
}

FC_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	ENTER(cuMemFreeAsync_ptsz);
	return mem_free_async(dptr, hStream);
}

FC_API CUresult cuMemFreeHost(void *p)
{
	CUresult r;

	ENTER(cuMemFreeHost);
	if ((r = need_ctx()))
		return r;
	return host_free(p);
}

static CUresult prefetch(CUdeviceptr p, size_t n, CUdevice dev, CUstream s)
{
	CUresult r = need_stream(s);

	if (!r)
		r = check_managed(p, n);
	if (r)
		return r;
	return dev == 0 || dev == CU_DEVICE_CPU ? CUDA_SUCCESS :
						  CUDA_ERROR_INVALID_DEVICE;
}

static CUresult prefetch_v2(CUdeviceptr p, size_t n, CUmemLocation loc,
			    unsigned int flags, CUstream s)
{
	CUresult r = need_stream(s);

	if (!r)
		r = check_managed(p, n);
	if (!r && flags)
		r = CUDA_ERROR_INVALID_VALUE;
	return r ? r : check_location(loc);
}

FC_API CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count,
				   CUdevice dstDevice, CUstream hStream)
{
	ENTER(cuMemPrefetchAsync);
	return prefetch(devPtr, count, dstDevice, hStream);
}

FC_API CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count,
					CUdevice dstDevice, CUstream hStream)
{
	ENTER(cuMemPrefetchAsync_ptsz);
	return prefetch(devPtr, count, dstDevice, hStream);
}

FC_API CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count,
				      CUmemLocation location,
				      unsigned int flags, CUstream hStream)
{
	ENTER(cuMemPrefetchAsync_v2);
	return prefetch_v2(devPtr, count, location, flags, hStream);
}

FC_API CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
					   CUmemLocation location,
					   unsigned int flags,
					   CUstream hStream)
{
	ENTER(cuMemPrefetchAsync_v2_ptsz);
	return prefetch_v2(devPtr, count, location, flags, hStream);
}

static CUresult advise_check(CUdeviceptr p, size_t n, CUmem_advise advice)
{
	CUresult r = need_ctx();

	if (!r)
		r = check_managed(p, n);
	if (r)
		return r;
	return advice >= CU_MEM_ADVISE_SET_READ_MOSTLY &&
	       advice <= CU_MEM_ADVISE_UNSET_ACCESSED_BY ?
	       CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_API CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count,
			    CUmem_advise advice, CUdevice device)
{
	CUresult r;

	ENTER(cuMemAdvise);
	if ((r = advise_check(devPtr, count, advice)))
		return r;
	return device == 0 || device == CU_DEVICE_CPU ?
	       CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FC_API CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count,
			       CUmem_advise advice, CUmemLocation location)
{
	CUresult r;

	ENTER(cuMemAdvise_v2);
	if ((r = advise_check(devPtr, count, advice)))
		return r;
	return check_location(location);
}

/* ------------------------------------------------------------------------ */
/* Copies                                                                   */
/* ------------------------------------------------------------------------ */

FC_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpy);
	r = copy_unified(dst, src, ByteCount, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src,
			      size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpy_ptds);
	r = copy_unified(dst, src, ByteCount, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
			      size_t ByteCount, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyAsync);
	r = copy_unified(dst, src, ByteCount, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src,
				   size_t ByteCount, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyAsync_ptsz);
	r = copy_unified(dst, src, ByteCount, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost,
				size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpyHtoD_v2);
	r = copy_htod(dstDevice, srcHost, ByteCount, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice,
				     const void *srcHost, size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpyHtoD_v2_ptds);
	r = copy_htod(dstDevice, srcHost, ByteCount, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice,
				size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpyDtoH_v2);
	r = copy_dtoh(dstHost, srcDevice, ByteCount, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice,
				     size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpyDtoH_v2_ptds);
	r = copy_dtoh(dstHost, srcDevice, ByteCount, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
				size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpyDtoD_v2);
	r = copy_dtod(dstDevice, srcDevice, ByteCount, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice,
				     CUdeviceptr srcDevice, size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpyDtoD_v2_ptds);
	r = copy_dtod(dstDevice, srcDevice, ByteCount, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice,
				     const void *srcHost, size_t ByteCount,
				     CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyHtoDAsync_v2);
	r = copy_htod(dstDevice, srcHost, ByteCount, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
					  const void *srcHost,
					  size_t ByteCount, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyHtoDAsync_v2_ptsz);
	r = copy_htod(dstDevice, srcHost, ByteCount, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice,
				     size_t ByteCount, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyDtoHAsync_v2);
	r = copy_dtoh(dstHost, srcDevice, ByteCount, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost,
					  CUdeviceptr srcDevice,
					  size_t ByteCount, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyDtoHAsync_v2_ptsz);
	r = copy_dtoh(dstHost, srcDevice, ByteCount, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice,
				     CUdeviceptr srcDevice, size_t ByteCount,
				     CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyDtoDAsync_v2);
	r = copy_dtod(dstDevice, srcDevice, ByteCount, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
					  CUdeviceptr srcDevice,
					  size_t ByteCount, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyDtoDAsync_v2_ptsz);
	r = copy_dtod(dstDevice, srcDevice, ByteCount, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
			     CUdeviceptr srcDevice, CUcontext srcContext,
			     size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpyPeer);
	r = copy_peer(dstDevice, dstContext, srcDevice, srcContext,
		      ByteCount, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
				  CUdeviceptr srcDevice, CUcontext srcContext,
				  size_t ByteCount)
{
	CUresult r;

	ENTER(cuMemcpyPeer_ptds);
	r = copy_peer(dstDevice, dstContext, srcDevice, srcContext,
		      ByteCount, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
				  CUdeviceptr srcDevice, CUcontext srcContext,
				  size_t ByteCount, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyPeerAsync);
	r = copy_peer(dstDevice, dstContext, srcDevice, srcContext,
		      ByteCount, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice,
				       CUcontext dstContext,
				       CUdeviceptr srcDevice,
				       CUcontext srcContext, size_t ByteCount,
				       CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpyPeerAsync_ptsz);
	r = copy_peer(dstDevice, dstContext, srcDevice, srcContext,
		      ByteCount, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
	CUresult r;

	ENTER(cuMemcpy2D_v2);
	r = copy_2d(pCopy, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
	CUresult r;

	ENTER(cuMemcpy2D_v2_ptds);
	r = copy_2d(pCopy, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
	CUresult r;

	ENTER(cuMemcpy2DUnaligned_v2);
	r = copy_2d(pCopy, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
	CUresult r;

	ENTER(cuMemcpy2DUnaligned_v2_ptds);
	r = copy_2d(pCopy, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy,
				   CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpy2DAsync_v2);
	r = copy_2d(pCopy, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy,
					CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpy2DAsync_v2_ptsz);
	r = copy_2d(pCopy, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
	CUresult r;

	ENTER(cuMemcpy3D_v2);
	r = copy_3d(pCopy, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
	CUresult r;

	ENTER(cuMemcpy3D_v2_ptds);
	r = copy_3d(pCopy, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy,
				   CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpy3DAsync_v2);
	r = copy_3d(pCopy, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy,
					CUstream hStream)
{
	CUresult r;

	ENTER(cuMemcpy3DAsync_v2_ptsz);
	r = copy_3d(pCopy, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

/* ------------------------------------------------------------------------ */
/* Memsets                                                                  */
/* ------------------------------------------------------------------------ */

FC_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc,
			      size_t N)
{
	CUresult r;

	ENTER(cuMemsetD8_v2);
	(void)uc;
	r = memset_1d(dstDevice, N, 1, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc,
				   size_t N)
{
	CUresult r;

	ENTER(cuMemsetD8_v2_ptds);
	(void)uc;
	r = memset_1d(dstDevice, N, 1, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us,
			       size_t N)
{
	CUresult r;

	ENTER(cuMemsetD16_v2);
	(void)us;
	r = memset_1d(dstDevice, N, 2, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us,
				    size_t N)
{
	CUresult r;

	ENTER(cuMemsetD16_v2_ptds);
	(void)us;
	r = memset_1d(dstDevice, N, 2, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui,
			       size_t N)
{
	CUresult r;

	ENTER(cuMemsetD32_v2);
	(void)ui;
	r = memset_1d(dstDevice, N, 4, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui,
				    size_t N)
{
	CUresult r;

	ENTER(cuMemsetD32_v2_ptds);
	(void)ui;
	r = memset_1d(dstDevice, N, 4, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc,
				size_t N, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD8Async);
	(void)uc;
	r = memset_1d(dstDevice, N, 1, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc,
				     size_t N, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD8Async_ptsz);
	(void)uc;
	r = memset_1d(dstDevice, N, 1, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us,
				 size_t N, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD16Async);
	(void)us;
	r = memset_1d(dstDevice, N, 2, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice,
				      unsigned short us, size_t N,
				      CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD16Async_ptsz);
	(void)us;
	r = memset_1d(dstDevice, N, 2, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui,
				 size_t N, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD32Async);
	(void)ui;
	r = memset_1d(dstDevice, N, 4, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui,
				      size_t N, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD32Async_ptsz);
	(void)ui;
	r = memset_1d(dstDevice, N, 4, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch,
				unsigned char uc, size_t Width, size_t Height)
{
	CUresult r;

	ENTER(cuMemsetD2D8_v2);
	(void)uc;
	r = memset_2d(dstDevice, dstPitch, 1, Width, Height, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch,
				     unsigned char uc, size_t Width,
				     size_t Height)
{
	CUresult r;

	ENTER(cuMemsetD2D8_v2_ptds);
	(void)uc;
	r = memset_2d(dstDevice, dstPitch, 1, Width, Height, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch,
				 unsigned short us, size_t Width,
				 size_t Height)
{
	CUresult r;

	ENTER(cuMemsetD2D16_v2);
	(void)us;
	r = memset_2d(dstDevice, dstPitch, 2, Width, Height, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch,
				      unsigned short us, size_t Width,
				      size_t Height)
{
	CUresult r;

	ENTER(cuMemsetD2D16_v2_ptds);
	(void)us;
	r = memset_2d(dstDevice, dstPitch, 2, Width, Height, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch,
				 unsigned int ui, size_t Width, size_t Height)
{
	CUresult r;

	ENTER(cuMemsetD2D32_v2);
	(void)ui;
	r = memset_2d(dstDevice, dstPitch, 4, Width, Height, NULL);
	return fc_work(r, NULL, 0, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch,
				      unsigned int ui, size_t Width,
				      size_t Height)
{
	CUresult r;

	ENTER(cuMemsetD2D32_v2_ptds);
	(void)ui;
	r = memset_2d(dstDevice, dstPitch, 4, Width, Height, NULL);
	return fc_work(r, NULL, 1, 1, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch,
				unsigned char uc, size_t Width,
				size_t Height, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD2D8Async);
	(void)uc;
	r = memset_2d(dstDevice, dstPitch, 1, Width, Height, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch,
				unsigned char uc, size_t Width,
				size_t Height, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD2D8Async_ptsz);
	(void)uc;
	r = memset_2d(dstDevice, dstPitch, 1, Width, Height, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch,
				unsigned short us, size_t Width,
				size_t Height, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD2D16Async);
	(void)us;
	r = memset_2d(dstDevice, dstPitch, 2, Width, Height, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch,
				unsigned short us, size_t Width,
				size_t Height, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD2D16Async_ptsz);
	(void)us;
	r = memset_2d(dstDevice, dstPitch, 2, Width, Height, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch,
				unsigned int ui, size_t Width,
				size_t Height, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD2D32Async);
	(void)ui;
	r = memset_2d(dstDevice, dstPitch, 4, Width, Height, hStream);
	return fc_work(r, hStream, 0, 0, fc_copy_ns);
}

FC_API CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch,
				unsigned int ui, size_t Width,
				size_t Height, CUstream hStream)
{
	CUresult r;

	ENTER(cuMemsetD2D32Async_ptsz);
	(void)ui;
	r = memset_2d(dstDevice, dstPitch, 4, Width, Height, hStream);
	return fc_work(r, hStream, 1, 0, fc_copy_ns);
}

/* ------------------------------------------------------------------------ */
/* Driver entry point access                                                */
/* ------------------------------------------------------------------------ */

/*
 * Base name -> versioned symbol, as the real driver resolves them.  A name may
 * have several rows; the row with the highest `version` not above the
 * caller's cudaVersion wins.  `ptds` is what a caller asking for the
 * per-thread default stream gets (the legacy symbol when it is NULL).
 */
struct proc_entry {
	const char *name;
	int version;
	void *legacy;
	void *ptds;
};

#define PROC(name, ver, fn)		{ name, ver, (void *)fn, NULL }
#define PROC_PT(name, ver, fn, pt)	{ name, ver, (void *)fn, (void *)pt }

static const struct proc_entry fc_procs[] = {
	PROC("cuInit", 2000, cuInit),
	PROC("cuDriverGetVersion", 2020, cuDriverGetVersion),
	PROC("cuDeviceGet", 2000, cuDeviceGet),
	PROC("cuDeviceGetCount", 2000, cuDeviceGetCount),
	PROC("cuGetErrorName", 6000, cuGetErrorName),
	PROC("cuGetErrorString", 6000, cuGetErrorString),
	PROC("cuGetProcAddress", 11030, cuGetProcAddress),
	PROC("cuGetProcAddress", 12000, cuGetProcAddress_v2),

	PROC("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
	PROC("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
	PROC("cuCtxCreate", 3020, cuCtxCreate_v2),
	PROC("cuCtxCreate", 11040, cuCtxCreate_v3),
	PROC("cuCtxCreate", 12050, cuCtxCreate_v4),
	PROC("cuCtxDestroy", 4000, cuCtxDestroy_v2),
	PROC("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
	PROC("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
	PROC("cuCtxSynchronize", 2000, cuCtxSynchronize),

	PROC("cuModuleLoadData", 2000, cuModuleLoadData),
	PROC("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
	PROC("cuModuleLoad", 2000, cuModuleLoad),
	PROC("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary),
	PROC("cuModuleUnload", 2000, cuModuleUnload),
	PROC("cuModuleGetFunction", 2000, cuModuleGetFunction),
	PROC("cuLibraryLoadData", 12000, cuLibraryLoadData),
	PROC("cuLibraryLoadFromFile", 12000, cuLibraryLoadFromFile),
	PROC("cuLibraryUnload", 12000, cuLibraryUnload),
	PROC("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
	PROC("cuKernelGetFunction", 12000, cuKernelGetFunction),
	PROC("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
	PROC("cuLibraryGetGlobal", 12000, cuLibraryGetGlobal),
	PROC("cuLibraryGetModule", 12000, cuLibraryGetModule),
	PROC("cuFuncGetModule", 11000, cuFuncGetModule),
	PROC("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2),
	PROC("cuGraphKernelNodeSetParams", 12000, cuGraphKernelNodeSetParams_v2),
	PROC("cuGraphExecKernelNodeSetParams", 12000, cuGraphExecKernelNodeSetParams_v2),
	PROC("cuGraphKernelNodeGetParams", 12000, cuGraphKernelNodeGetParams_v2),
	PROC("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode),
	PROC("cuGraphKernelNodeSetParams", 10000, cuGraphKernelNodeSetParams),
	PROC("cuGraphExecKernelNodeSetParams", 10010, cuGraphExecKernelNodeSetParams),
	PROC("cuGraphKernelNodeGetParams", 10000, cuGraphKernelNodeGetParams),
	PROC("cuGraphAddNode", 12030, cuGraphAddNode_v2),
	PROC("cuGraphAddNode", 12020, cuGraphAddNode),
	PROC("cuGraphNodeSetParams", 12020, cuGraphNodeSetParams),
	PROC("cuGraphExecNodeSetParams", 12020, cuGraphExecNodeSetParams),
	PROC("cuMemHostRegister", 6050, cuMemHostRegister_v2),
	PROC("cuMemHostUnregister", 4000, cuMemHostUnregister),
	PROC("cuMemHostGetDevicePointer", 3020, cuMemHostGetDevicePointer_v2),
	PROC("cuCtxGetDevice", 2000, cuCtxGetDevice),
	PROC("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
	PROC("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
	PROC("cuKernelSetAttribute", 12000, cuKernelSetAttribute),
	PROC("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
	PROC("cuKernelGetAttribute", 12000, cuKernelGetAttribute),
	PROC("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),

	PROC("cuStreamCreate", 2000, cuStreamCreate),
	PROC("cuStreamDestroy", 4000, cuStreamDestroy_v2),
	PROC_PT("cuStreamSynchronize", 2000, cuStreamSynchronize,
		cuStreamSynchronize_ptsz),
	PROC_PT("cuStreamWaitEvent", 3020, cuStreamWaitEvent,
		cuStreamWaitEvent_ptsz),
	PROC("cuEventCreate", 2000, cuEventCreate),
	PROC_PT("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz),
	PROC("cuEventQuery", 2000, cuEventQuery),
	PROC("cuEventSynchronize", 2000, cuEventSynchronize),
	PROC("cuEventElapsedTime", 2000, cuEventElapsedTime),
	PROC("cuEventDestroy", 4000, cuEventDestroy_v2),

	PROC_PT("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
	PROC_PT("cuLaunchKernelEx", 11060, cuLaunchKernelEx,
		cuLaunchKernelEx_ptsz),
	PROC_PT("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel,
		cuLaunchCooperativeKernel_ptsz),
	PROC("cuGraphCreate", 10000, cuGraphCreate),
	PROC("cuGraphInstantiateWithFlags", 11040,
	     cuGraphInstantiateWithFlags),
	PROC_PT("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
	PROC("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
	PROC("cuGraphDestroy", 10000, cuGraphDestroy),

	PROC("cuMemAlloc", 3020, cuMemAlloc_v2),
	PROC("cuMemAllocManaged", 6000, cuMemAllocManaged),
	PROC_PT("cuMemAllocAsync", 11020, cuMemAllocAsync,
		cuMemAllocAsync_ptsz),
	PROC("cuMemAllocHost", 3020, cuMemAllocHost_v2),
	PROC("cuMemHostAlloc", 2020, cuMemHostAlloc),
	PROC("cuMemFree", 3020, cuMemFree_v2),
	PROC_PT("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
	PROC("cuMemFreeHost", 2000, cuMemFreeHost),
	PROC_PT("cuMemPrefetchAsync", 8000, cuMemPrefetchAsync,
		cuMemPrefetchAsync_ptsz),
	PROC_PT("cuMemPrefetchAsync", 12020, cuMemPrefetchAsync_v2,
		cuMemPrefetchAsync_v2_ptsz),
	PROC("cuMemAdvise", 8000, cuMemAdvise),
	PROC("cuMemAdvise", 12020, cuMemAdvise_v2),

	PROC_PT("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds),
	PROC_PT("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz),
	PROC_PT("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
	PROC_PT("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
	PROC_PT("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
	PROC_PT("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2,
		cuMemcpyHtoDAsync_v2_ptsz),
	PROC_PT("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2,
		cuMemcpyDtoHAsync_v2_ptsz),
	PROC_PT("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2,
		cuMemcpyDtoDAsync_v2_ptsz),
	PROC_PT("cuMemcpyPeer", 4000, cuMemcpyPeer, cuMemcpyPeer_ptds),
	PROC_PT("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync,
		cuMemcpyPeerAsync_ptsz),
	PROC_PT("cuMemcpy2D", 3020, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds),
	PROC_PT("cuMemcpy2DUnaligned", 3020, cuMemcpy2DUnaligned_v2,
		cuMemcpy2DUnaligned_v2_ptds),
	PROC_PT("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2,
		cuMemcpy2DAsync_v2_ptsz),
	PROC_PT("cuMemcpy3D", 3020, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds),
	PROC_PT("cuMemcpy3DAsync", 3020, cuMemcpy3DAsync_v2,
		cuMemcpy3DAsync_v2_ptsz),

	PROC_PT("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
	PROC_PT("cuMemsetD16", 3020, cuMemsetD16_v2, cuMemsetD16_v2_ptds),
	PROC_PT("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
	PROC_PT("cuMemsetD8Async", 3020, cuMemsetD8Async,
		cuMemsetD8Async_ptsz),
	PROC_PT("cuMemsetD16Async", 3020, cuMemsetD16Async,
		cuMemsetD16Async_ptsz),
	PROC_PT("cuMemsetD32Async", 3020, cuMemsetD32Async,
		cuMemsetD32Async_ptsz),
	PROC_PT("cuMemsetD2D8", 3020, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds),
	PROC_PT("cuMemsetD2D16", 3020, cuMemsetD2D16_v2,
		cuMemsetD2D16_v2_ptds),
	PROC_PT("cuMemsetD2D32", 3020, cuMemsetD2D32_v2,
		cuMemsetD2D32_v2_ptds),
	PROC_PT("cuMemsetD2D8Async", 3020, cuMemsetD2D8Async,
		cuMemsetD2D8Async_ptsz),
	PROC_PT("cuMemsetD2D16Async", 3020, cuMemsetD2D16Async,
		cuMemsetD2D16Async_ptsz),
	PROC_PT("cuMemsetD2D32Async", 3020, cuMemsetD2D32Async,
		cuMemsetD2D32Async_ptsz),
};

/*
 * Returns CUDA_ERROR_INVALID_VALUE for bad arguments, CUDA_ERROR_NOT_FOUND
 * (with *status saying why) when nothing matches, CUDA_SUCCESS otherwise.
 */
static CUresult proc_lookup(const char *symbol, void **pfn, int cudaVersion,
			    cuuint64_t flags, int *status)
{
	const struct proc_entry *best = NULL;
	int named = 0;
	size_t i;

	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	if (flags & ~(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
		      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ||
	    flags == (CU_GET_PROC_ADDRESS_LEGACY_STREAM |
		      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
		return CUDA_ERROR_INVALID_VALUE;
	if (cudaVersion > FAKE_DRIVER_VERSION)
		return CUDA_ERROR_INVALID_VALUE;

	for (i = 0; i < sizeof(fc_procs) / sizeof(fc_procs[0]); i++) {
		const struct proc_entry *e = &fc_procs[i];

		if (strcmp(e->name, symbol))
			continue;
		named = 1;
		if (e->version <= cudaVersion &&
		    (!best || e->version > best->version))
			best = e;
	}
	if (!best) {
		*status = named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
				  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		return CUDA_ERROR_NOT_FOUND;
	}
	if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
	    best->ptds)
		*pfn = best->ptds;
	else
		*pfn = best->legacy;
	*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

/* CUDA 11.3 - 11.8 signature: a miss is CUDA_ERROR_NOT_FOUND. */
FC_API CUresult cuGetProcAddress(const char *symbol, void **pfn,
				 int cudaVersion, cuuint64_t flags)
{
	int status;

	ENTER(cuGetProcAddress);
	return proc_lookup(symbol, pfn, cudaVersion, flags, &status);
}

/*
 * CUDA 12+ signature: as documented, a miss is CUDA_SUCCESS with *pfn = NULL
 * and the reason in the optional *symbolStatus.
 */
FC_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
				    int cudaVersion, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *status_out)
{
	int status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	CUresult r;

	ENTER(cuGetProcAddress_v2);
	r = proc_lookup(symbol, pfn, cudaVersion, flags, &status);
	if (r == CUDA_ERROR_NOT_FOUND)
		r = CUDA_SUCCESS;
	if (status_out && r == CUDA_SUCCESS)
		*status_out = status;
	return r;
}

/* ------------------------------------------------------------------------ */

/* FAKECUDA_COUNTS_FILE: the counters at unload, {"name":count,...}. */
static void write_counts(void)
{
	const char *sep = "", *p = strstr(fc_counts_file, "%p");
	char path[4096];
	FILE *f;
	int i;

	if (p)
		snprintf(path, sizeof(path), "%.*s%d%s", (int)(p - fc_counts_file),
			 fc_counts_file, (int)getpid(), p + 2);
	else
		snprintf(path, sizeof(path), "%s", fc_counts_file);
	f = fopen(path, "we");
	if (!f)
		return;
	fputc('{', f);
	for (i = 0; i < FC_NUM_APIS; i++) {
		if (!fc_calls[i])
			continue;
		fprintf(f, "%s\"%s\":%llu", sep, fc_api_names[i], fc_calls[i]);
		sep = ",";
	}
	fputs("}\n", f);
	fclose(f);
}

/* Give back what the tables hold so leak checkers see a clean exit. */
__attribute__((destructor)) static void fc_unload(void)
{
	size_t i;

	if (fc_counts_file) {
		write_counts();
		free(fc_counts_file);
		fc_counts_file = NULL;
	}
	mods_free();

	pthread_mutex_lock(&fc_mem_lock);
	for (i = 0; i < fc_nhosts; i++)
		free(fc_hosts[i].p);
	free(fc_hosts);
	fc_hosts = NULL;
	fc_nhosts = fc_hosts_cap = 0;
	free(fc_allocs);
	fc_allocs = NULL;
	fc_nallocs = fc_allocs_cap = fc_ndead = 0;
	pthread_mutex_unlock(&fc_mem_lock);
}
