/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devrt.h - what the parts of libgpuext-devrt.so share.
 *
 *   table.c     the table of interposed symbols (api_table.h)
 *   wrappers.c  the exported functions: one per interposed symbol
 *   call.c      what every wrapper does around the real call
 *   reg.c       kernel registration records, kept until a launch needs them
 *   ring.c      the shared-memory ring and its control page
 *   timing.c    GPU execution timing with CUDA events, and its poller
 *   resolve.c   finding the real functions; dlsym and entry-point hooks
 *   core.c      configuration, start, fork, exit, fail-open
 *
 * Record layouts and the ring protocol: bpf/include/gpuext_abi.h.
 */
#ifndef DEVRT_H
#define DEVRT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpuext_abi.h"
#include "cuda_min.h"
#include "api_table.h"

#ifndef DEVRT_VERSION
#define DEVRT_VERSION "devrt-dev"
#endif

/* Exported, never inlined or folded: each wrapper has its own address. */
#define DEVRT_EXPORT __attribute__((visibility("default"), noinline, used))
/* Thread-local state in the static TLS block: no __tls_get_addr call on
 * the hot path (devrt is LD_PRELOADed, so it is loaded at startup). */
#define DEVRT_TLS __thread __attribute__((tls_model("initial-exec")))

/*
 * What every reported launch runs, in .text.hot: the linker puts these
 * functions next to each other, so a launch's path through devrt spans two
 * pages of code instead of ten, and a program whose own code fills the
 * instruction caches and TLB between two launches (PyTorch) finds fewer
 * of devrt's lines and pages gone.
 */
#define DEVRT_HOT __attribute__((hot))

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- the symbol table (api_table.h) ------------------------------------ */

enum devrt_sym {
#define DEVRT_ID(sym, ...) DEVRT_SYM_##sym,
	DEVRT_SYMBOLS(DEVRT_ID, DEVRT_ID)
#undef DEVRT_ID
	DEVRT_NSYMS
};

struct devrt_sym_info {
	const char *name;    /* exported symbol */
	__u64 ck;            /* GPUEXT_CK_* flags above the API id */
	__u16 api;           /* enum gpuext_api; GPUEXT_API_NONE: not reported */
	__u16 df;            /* DF_* */
	__u32 cls;           /* GPUEXT_CLASS_* bit of the API (0: none) */
	/* The record's first word as devrt_begin writes it: kind, api,
	 * source, flags (GPUEXT_F_STACK_VALID with GPUEXT_CK_STACK), in the
	 * order of struct gpuext_event (little-endian). */
	__u64 head;
};

/* The GPUEXT_CLASS_* bit of an API, by the ranges of enum gpuext_api. */
#define DEVRT_CLASS_OF(api)						\
	((api) == GPUEXT_API_NONE ? 0U :				\
	 (api) < GPUEXT_API_cuMemAlloc ? GPUEXT_CLASS_LAUNCH :		\
	 (api) < GPUEXT_API_cuMemcpy ? GPUEXT_CLASS_MEMORY :		\
	 (api) < GPUEXT_API_cuCtxSynchronize ? GPUEXT_CLASS_COPY :	\
	 (api) < GPUEXT_API_cuCtxCreate ? GPUEXT_CLASS_SYNC :		\
	 GPUEXT_CLASS_MODULE)

extern const struct devrt_sym_info devrt_syms[DEVRT_NSYMS];
/* devrt's own function for each symbol (wrappers.c). */
extern void *const devrt_wrappers[DEVRT_NSYMS];

/* ---- global state (core.c) --------------------------------------------- */

/* devrt.state */
enum {
	DEVRT_UNINIT = 0,   /* no CUDA call seen in this process yet */
	DEVRT_STARTING = 1, /* one thread is creating the ring */
	DEVRT_ACTIVE = 2,   /* reporting */
	DEVRT_OFF = 3,      /* passing every call through (fail open) */
};

/* gpuext_ring_hdr.disabled_reason: why devrt turned itself off. */
enum devrt_reason {
	DEVRT_REASON_NONE = 0,
	DEVRT_REASON_INJECTED = 1,   /* GPUEXT_DEVRT_FAULT_INJECT=disable-after=N */
	DEVRT_REASON_RING_STUCK = 2, /* the ring's sequence numbers never
	                              * settled: the consumer broke the protocol */
};

/* GPUEXT_DEVRT_FAULT_INJECT: internal failures a test can force. */
enum {
	DEVRT_FAULT_RING = 1 << 0,     /* the ring file cannot be created */
	DEVRT_FAULT_POLLER = 1 << 1,   /* the poller thread cannot start */
	DEVRT_FAULT_EVENTS = 1 << 2,   /* event pools cannot be created */
	DEVRT_FAULT_PROCADDR = 1 << 3, /* entry points are handed out unwrapped */
	DEVRT_FAULT_DRIVER = 1 << 4,   /* the driver functions timing needs are missing */
	DEVRT_FAULT_DISABLE = 1 << 5,  /* turn off after disable_after records */
	DEVRT_FAULT_MARK = 1 << 6,     /* no marked anchor: the midpoint one */
};

struct devrt_config {
	char dir[512];           /* GPUEXT_DEVRT_DIR */
	__u32 ring_slots;        /* GPUEXT_DEVRT_RING_SLOTS, a power of two */
	__u32 classes;           /* GPUEXT_DEVRT_CLASSES */
	__u32 sample_every;      /* GPUEXT_DEVRT_SAMPLE */
	__u32 sample_gap_us;     /* GPUEXT_DEVRT_SAMPLE_GAP_US */
	__u32 event_pairs;       /* GPUEXT_DEVRT_EVENT_PAIRS, per context */
	__u32 poll_us;           /* GPUEXT_DEVRT_POLL_US */
	__u32 faults;            /* DEVRT_FAULT_* */
	__u64 disable_after;     /* records, with DEVRT_FAULT_DISABLE */
	int stats;               /* GPUEXT_DEVRT_STATS=1 */
	int debug;               /* GPUEXT_DEVRT_DEBUG=1: say why on stderr */
	int off;                 /* GPUEXT_DEVRT_DISABLE=1 */
};

#define DEVRT_CORR_BLOCK 64

struct devrt_global {
	/* What every reported call reads, on the first line. */
	int state;                     /* DEVRT_* */
	__u32 epoch;                   /* counts rings made by this process image */
	pid_t pid;
	struct gpuext_ring_hdr *hdr;   /* NULL: no ring */
	struct gpuext_ctl *ctl;
	struct gpuext_slot *slots;
	__u64 mask;                    /* capacity - 1 */
	__u64 ctl_snapshot;            /* devrt_ctl_pack: the last consistent
	                                * copy of the control page */
	__u64 disable_after;           /* cfg.disable_after with
	                                * DEVRT_FAULT_DISABLE, else 0 */
	size_t map_size;
	char path[640];                /* the ring file */
	struct devrt_config cfg;
	/* The call numbers, on a line of their own: each thread takes
	 * blocks of DEVRT_CORR_BLOCK from it (call.c). */
	__u32 corr __attribute__((aligned(64)));
};

extern struct devrt_global devrt;
_Static_assert(offsetof(struct devrt_global, disable_after) < 64,
	       "devrt's hot fields share one cache line");

/* Per-thread state. */
struct devrt_call;
struct devrt_thread {
	__u32 busy;         /* inside devrt's own code: pass calls through */
	__u32 tid;          /* 0: not read yet */
	__u32 epoch;        /* ring the cached control values belong to */
	__u32 gen;          /* their generation */
	__u32 classes;
	__u32 sample_every;
	__u32 countdown;    /* timed calls to skip before the next sample */
	__u32 corr_next;    /* call numbers: the thread's block [next, end) */
	__u32 corr_end;
	__u32 gap_us;       /* sample_gap_us */
	struct devrt_call *outer; /* the timed call this thread is inside */
	__u64 last_ns;      /* the thread's latest record timestamp */
	__u64 timed_ns;     /* when its latest timed call started; 0: none */
} __attribute__((aligned(64)));	/* one cache line: a call reads it all */
_Static_assert(sizeof(struct devrt_thread) == 64, "a thread's state is one line");

extern DEVRT_TLS struct devrt_thread devrt_t;

__u64 devrt_now(void);          /* clock.c */
void devrt_clock_init(void);
__u32 devrt_tid(void);
int devrt_start(void);
void devrt_disable(enum devrt_reason reason);
void devrt_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the ring (ring.c) -------------------------------------------------- */

int devrt_ring_create(void);
void devrt_ring_forget(void);
int devrt_ring_write(const void *rec, __u32 len);
void devrt_ring_drop(enum gpuext_ring_drop why);
void devrt_ctl_refresh(struct devrt_thread *t);

/* The control values in one word, so that threads share a consistent copy
 * with one atomic store: classes (7 bits) << 56 | sample_gap_us (24 bits,
 * clamped to GPUEXT_CTL_MAX_GAP_US) << 32 | sample_every. */
#define DEVRT_GAP_MASK 0xffffffU
_Static_assert(GPUEXT_CTL_MAX_GAP_US <= DEVRT_GAP_MASK, "the gap fits its bits");
_Static_assert(GPUEXT_CLASS_MASK <= 0xff, "the classes fit their bits");
static inline __u64 devrt_ctl_pack(__u32 classes, __u32 sample, __u32 gap_us)
{
	if (gap_us > GPUEXT_CTL_MAX_GAP_US)
		gap_us = GPUEXT_CTL_MAX_GAP_US;
	return (__u64)(classes & GPUEXT_CLASS_MASK) << 56 | (__u64)gap_us << 32 | sample;
}

/* A prefetch for writing (PREFETCHW; a no-op on x86 processors without
 * it): the line comes in exclusive, so the store or locked operation that
 * follows need not ask the other cores again. */
static inline void devrt_prefetchw(const void *p)
{
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
}

/* ---- one call (call.c) -------------------------------------------------- */

struct devrt_pair;

struct devrt_call {
	struct gpuext_event ev;
	const struct devrt_sym_info *sym;
	struct devrt_pair *pair;   /* events bracketing the work, or NULL */
	struct devrt_call *outer;  /* devrt_t.outer before this call */
};

/*
 * Whether this thread is inside a reported runtime launch or copy that is
 * not timed, with the nested class off: the driver launch or copy it makes
 * is then folded into its record with nothing taken from it (a timed one
 * takes the inner launch's stream: devrt_timing_inner), and the driver's
 * wrapper passes it through before it gathers a single argument. Every
 * PyTorch launch makes one; devrt_begin would decide the same, later.
 */
static inline int devrt_folded(void)
{
	const struct devrt_thread *t = &devrt_t;

	return t->outer && !t->outer->pair && !(t->classes & GPUEXT_CLASS_NESTED);
}

int devrt_begin(struct devrt_call *c, enum devrt_sym id, const __u64 *args,
		unsigned int nargs);
void devrt_end(struct devrt_call *c, CUresult r);
void devrt_end_register(struct devrt_call *c, const void *stub);

/* ---- registration records (reg.c) --------------------------------------- */

int devrt_reg_keep(const void *stub, const struct gpuext_named_event *ne);
void devrt_reg_launch(const void *stub);
void devrt_reg_fork_child(void);

/* ---- timing (timing.c) -------------------------------------------------- */

/*
 * Whether the thread's launch or copy, which started at now, is the one in
 * sample_every that is timed (in the caller: the other sample_every - 1
 * cost a decrement). One that comes sooner than gap_us after the thread's
 * previous timed call is not: a timed call costs its thread two event
 * records (microseconds), and the gap bounds that share of its time
 * whatever its launch rate. The next sample is then sample_every calls on,
 * as if this one had been taken, so the calls timed stay every N-th, not
 * the first after an idle spell.
 */
static inline int devrt_timing_due(struct devrt_thread *t, __u64 now)
{
	if (!(t->classes & GPUEXT_CLASS_EXEC) || !t->sample_every)
		return 0;
	if (t->countdown) {
		t->countdown--;
		return 0;
	}
	t->countdown = t->sample_every - 1;
	if (t->gap_us && t->timed_ns && now - t->timed_ns < (__u64)t->gap_us * 1000)
		return 0;
	t->timed_ns = now;
	return 1;
}

/* Brackets the due call c with a pair of events (c->pair), if it can. */
void devrt_timing_begin(struct devrt_call *c, struct devrt_thread *t);
void devrt_timing_end(struct devrt_call *c, CUresult r);
void devrt_timing_publish(struct devrt_call *c);
void devrt_timing_inner(struct devrt_call *outer,
			const struct devrt_sym_info *inner, const __u64 *args,
			unsigned int nargs);
void devrt_timing_fork_child(void);
void devrt_timing_flush(void);

/* ---- real functions (resolve.c) ----------------------------------------- */

extern void *devrt_real_fn[DEVRT_NSYMS];

void *devrt_real_slow(enum devrt_sym id);

/* A pointer's bits mixed (murmur3's finaliser, half of it): the slot of a
 * handle in devrt's open-addressing tables is its low bits. */
static inline __u64 devrt_ptr_mix(const void *p)
{
	__u64 x = (__u64)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* The real function behind a symbol, found on first use. */
static inline void *devrt_real(enum devrt_sym id)
{
	void *p = __atomic_load_n(&devrt_real_fn[id], __ATOMIC_ACQUIRE);

	return likely(p) ? p : devrt_real_slow(id);
}

void *devrt_driver_sym(const char *name);

/* Stores the driver's function name (or NULL) into the function pointer at
 * field: the typed tables of devrt's own driver calls are filled this way. */
static inline void devrt_driver_sym_into(void *field, const char *name)
{
	void *p = devrt_driver_sym(name);

	__builtin_memcpy(field, &p, sizeof(p));
}

/* A thread of devrt's own (detached; no signal of the program lands in
 * it): 0, or an errno.  And sleeping in one, restarted after signals. */
int devrt_thread_start(void *(*fn)(void *));
void devrt_sleep_ns(__u64 ns);
void devrt_futex_sleep(int *word, __u64 ns);
void devrt_futex_wake(int *word);
void devrt_note_driver(void *fn);
void devrt_map_entry(const char *base, void **pfn);
int devrt_is_wrapper(const void *p);
void devrt_resolve_init(void);

/* ---- devrt's own driver calls, counted for GPUEXT_DEVRT_STATS ----------- */

#define DEVRT_DRIVER_FNS(F) \
	F(cuCtxGetCurrent, CUresult (*)(CUcontext *)) \
	F(cuCtxSetCurrent, CUresult (*)(CUcontext)) \
	F(cuStreamCreate, CUresult (*)(CUstream *, unsigned int)) \
	F(cuStreamDestroy_v2, CUresult (*)(CUstream)) \
	F(cuEventCreate, CUresult (*)(CUevent *, unsigned int)) \
	F(cuEventDestroy_v2, CUresult (*)(CUevent)) \
	F(cuEventRecord, CUresult (*)(CUevent, CUstream)) \
	F(cuEventRecord_ptsz, CUresult (*)(CUevent, CUstream)) \
	F(cuEventSynchronize, CUresult (*)(CUevent)) \
	F(cuEventElapsedTime, CUresult (*)(float *, CUevent, CUevent))

/* Used when the driver has them (NULL otherwise): the anchor's mark. */
#define DEVRT_DRIVER_OPT_FNS(F) \
	F(cuMemHostRegister_v2, CUresult (*)(void *, size_t, unsigned int)) \
	F(cuMemHostUnregister, CUresult (*)(void *)) \
	F(cuMemHostGetDevicePointer_v2, CUresult (*)(CUdeviceptr *, void *, unsigned int)) \
	F(cuStreamWriteValue32_v2, CUresult (*)(CUstream, CUdeviceptr, __u32, unsigned int))

enum devrt_drv_id {
#define DEVRT_DRV_ID(name, type) DEVRT_DRV_##name,
	DEVRT_DRIVER_FNS(DEVRT_DRV_ID)
	DEVRT_NDRV_REQUIRED,
	DEVRT_DRV_OPT_BEFORE_ = DEVRT_NDRV_REQUIRED - 1,
	DEVRT_DRIVER_OPT_FNS(DEVRT_DRV_ID)
#undef DEVRT_DRV_ID
	DEVRT_NDRV
};

struct devrt_driver {
#define DEVRT_DRV_PTR(name, type) __typeof__(type) name;
	DEVRT_DRIVER_FNS(DEVRT_DRV_PTR)
	DEVRT_DRIVER_OPT_FNS(DEVRT_DRV_PTR)
#undef DEVRT_DRV_PTR
};

extern struct devrt_driver devrt_drv;
extern __u64 devrt_drv_calls[DEVRT_NDRV];
extern const char *const devrt_drv_names[DEVRT_NDRV];

/* Calls the driver function name for devrt itself, counting the call. */
#define DRV(name, ...)							\
	(__atomic_fetch_add(&devrt_drv_calls[DEVRT_DRV_##name], 1,	\
			    __ATOMIC_RELAXED),				\
	 devrt_drv.name(__VA_ARGS__))

int devrt_driver_load(void);

#endif /* DEVRT_H */
