// SPDX-License-Identifier: Apache-2.0
/*
 * timing.c - when the work of sampled calls ran on the GPU.
 *
 * A sampled launch, graph launch, copy or set (1 of every sample_every per
 * thread) is bracketed by two CUDA events recorded on its stream, before and
 * after the call.  The events come from a pool made once per context (with
 * timing: no CU_EVENT_DISABLE_TIMING); a call that finds no free pair is not
 * timed and counted (drops[GPUEXT_RDROP_TIMING]).  The application thread
 * only records events: a poller thread, started at the first sampled call,
 * asks the driver whether each pair completed and writes a struct
 * gpuext_gpu_exec for it.  The question is cuEventElapsedTime(start, end),
 * which answers CUDA_ERROR_NOT_READY until the end event ran and the pair's
 * duration after: one driver call instead of cuEventQuery and then the same
 * cuEventElapsedTime.
 *
 * Event times are GPU times, readable only as float milliseconds between
 * two events.  Each context keeps an anchor event whose host time is known;
 * then
 *     gpu_start = anchor_host + elapsed(anchor, start event)
 *     gpu_end   = gpu_start + elapsed(start event, end event)
 * The poller makes the anchor on an idle stream of devrt's own: the stream
 * writes a word of a host page devrt mapped for the GPU
 * (cuStreamWriteValue32), then records the anchor event.  The poller spins
 * on the word and takes the clock when it sees it: the write reaches host
 * memory a fraction of a microsecond after the GPU's front end issued it,
 * and the event is stamped right after that, so the anchor's host time is
 * late by the difference, well under a microsecond, and never early.
 * Without stream memory operations, or when the word does not come within
 * MARK_WAIT_NS, the anchor's host time is the midpoint of the clock read
 * before a plain record and after waiting for it: off by half the
 * difference between the submission's latency and the completion's, and
 * early.  On an H100 that was more than a synchronous launch's whole
 * latency: its work mapped before its call, and was clamped to it, for
 * most launches timed (bench/device/probes_check.sh launch_latency with
 * LOG_LEVEL=debug logs each timed launch's GPU start and call).
 * The GPU's clock does not run at the host's rate (18 ppm apart on an
 * H100 host: a second after an anchor, work mapped 18 µs off, and a
 * launch's start before its call).  So the poller keeps a base anchor, an
 * earlier marked one (at least BASE_MIN_NS and at most BASE_AGE_NS old),
 * and maps through the rate between the two:
 *     gpu_start = anchor_host + elapsed(anchor, start event) * rate
 *     rate      = (anchor_host - base_host) / elapsed(base, anchor)
 * (1 until there is a base; never from midpoint anchors, whose error over
 * a second is a rate error of its own), and anchors again when the anchor
 * is ANCHOR_AGE_NS old: a float's 24 bits of an elapsed time stay exact to
 * about 15 ns (t ms to about t * 60 ns / 1000 ms), and what the rate
 * misses stays under a microsecond.  Durations come from the pair itself,
 * through the rate too (exact to well under a ns).
 *
 * The poller's own CUDA calls, and the event records made for a call, are
 * never reported: devrt_t.busy is set around them (for good in the poller).
 * No lock is held across a CUDA call: pairs and pools change state with
 * compare-and-swap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "devrt.h"

#define MAX_POOLS 16                  /* contexts timed per process */
#define ANCHOR_AGE_NS 250000000ULL    /* anchor again after 250 ms */
#define BASE_MIN_NS 1000000000ULL     /* a base this old gives the rate */
#define BASE_AGE_NS 30000000000ULL    /* the anchor becomes the base after this */
#define RATE_MAX_PPM 1000             /* a rate further from 1 is not the clocks' */
#define ANCHOR_TIGHT_NS 20000ULL      /* a record+sync slower than this: retry */
#define MARK_WAIT_NS 2000000ULL       /* the anchor's mark comes within this */
#define MARK_TIGHT_NS 50000ULL        /* a mark seen later than this: again */
#define MARK_PAGE 4096
#define FLUSH_WAIT_NS 500000000ULL    /* at exit: wait for running work */
#define FILL_POLL_NS 1000000ULL       /* the poller's period while a pool fills */

enum { PAIR_FREE, PAIR_ARMED, PAIR_PENDING };
enum { POOL_EMPTY, POOL_CREATING, POOL_READY, POOL_FAILED };
enum { OFF = -1, UNKNOWN = 0, STARTING = 1, ON = 2 };

struct pool;

struct devrt_pair {
	__u32 state;       /* PAIR_*: FREE -> ARMED (app) -> PENDING -> FREE (poller) */
	__u32 pt;          /* record on the per-thread default stream */
	struct pool *pool;
	CUstream stream;
	CUevent start, end;
	struct gpuext_gpu_exec rec;
};

struct pool {
	CUcontext ctx;     /* set once: NULL -> ctx */
	__u32 state;       /* POOL_* */
	__u32 hint;        /* where the next claim starts looking */
	__u32 nfree;       /* pairs FREE, so a full pool costs one load */
	__u32 npairs;
	struct devrt_pair *pairs;
	CUstream anchor_stream;
	CUevent anchor;
	__u64 anchor_host; /* poller only */
	__u64 anchor_at;   /* poller only; 0: none */
	int anchor_marked; /* poller only: the anchor came after its mark */
	/* The base (poller only): an earlier marked anchor, its event and
	 * host time (base_host 0: none); rate: host ns per GPU ns. */
	CUevent base;
	__u64 base_host;
	double rate;
	/* The anchor's mark (poller only): a word of a host page mapped for
	 * the GPU, which the anchor stream sets to mark_gen just before the
	 * anchor; mark_state MARK_*. */
	volatile __u32 *mark;
	CUdeviceptr mark_d;
	__u32 mark_gen;
	int mark_state;
};

enum { MARK_UNTRIED, MARK_ON, MARK_OFF };

static struct pool pools[MAX_POOLS];
static int timing;          /* OFF, UNKNOWN, STARTING, ON */
static int flush_req, flush_done;
/* Set (and the poller woken) at exit and when a pool falls to half its
 * pairs free: the poller's sleep ends at once. */
static int poll_kick;

static void drop_timing(void)
{
	devrt_ring_drop(GPUEXT_RDROP_TIMING);
}

/* ---- what a call enqueues ----------------------------------------------- */

struct work {
	CUstream stream;
	__u64 handle;
	__u64 bytes;
};

/* From the captured arguments, as internal/gpuevent interprets them. */
static struct work work_of(const struct gpuext_event *e)
{
	const __u64 *a = e->args;
	struct work w = { 0 };

	switch (e->api) {
	case GPUEXT_API_cuLaunchKernel:
	case GPUEXT_API_cuLaunchCooperativeKernel:
		w.handle = a[0];
		w.stream = (CUstream)(uintptr_t)a[8];
		break;
	case GPUEXT_API_cuLaunchKernelEx:
	case GPUEXT_API_cudaLaunchKernelExC:
		w.handle = a[1];
		if (e->flags & GPUEXT_F_AUX_VALID)
			w.stream = (CUstream)(uintptr_t)e->aux.launch.stream;
		break;
	case GPUEXT_API_cuGraphLaunch:
	case GPUEXT_API_cudaGraphLaunch:
		w.handle = a[0];
		w.stream = (CUstream)(uintptr_t)a[1];
		break;
	case GPUEXT_API_cudaLaunchKernel:
		w.handle = a[0];
		w.stream = (CUstream)(uintptr_t)a[7];
		break;
	case GPUEXT_API_cuMemcpy:
	case GPUEXT_API_cuMemcpyHtoD:
	case GPUEXT_API_cuMemcpyDtoH:
	case GPUEXT_API_cuMemcpyDtoD:
		w.bytes = a[2];
		break;
	case GPUEXT_API_cuMemcpyAsync:
	case GPUEXT_API_cuMemcpyHtoDAsync:
	case GPUEXT_API_cuMemcpyDtoHAsync:
	case GPUEXT_API_cuMemcpyDtoDAsync:
		w.bytes = a[2];
		w.stream = (CUstream)(uintptr_t)a[3];
		break;
	case GPUEXT_API_cuMemcpyPeerAsync:
		w.stream = (CUstream)(uintptr_t)a[5];
		/* fallthrough */
	case GPUEXT_API_cuMemcpyPeer:
		w.bytes = a[4];
		break;
	case GPUEXT_API_cuMemcpy2DAsync:
	case GPUEXT_API_cuMemcpy3DAsync:
		w.stream = (CUstream)(uintptr_t)a[1];
		/* fallthrough */
	case GPUEXT_API_cuMemcpy2D:
	case GPUEXT_API_cuMemcpy2DUnaligned:
	case GPUEXT_API_cuMemcpy3D:
		if (e->flags & GPUEXT_F_AUX_VALID)
			w.bytes = e->aux.copy.width_bytes * e->aux.copy.height *
				  e->aux.copy.depth;
		break;
	case GPUEXT_API_cuMemsetD8Async:
	case GPUEXT_API_cuMemsetD16Async:
	case GPUEXT_API_cuMemsetD32Async:
		w.stream = (CUstream)(uintptr_t)a[3];
		/* fallthrough */
	case GPUEXT_API_cuMemsetD8:
	case GPUEXT_API_cuMemsetD16:
	case GPUEXT_API_cuMemsetD32:
		w.bytes = a[2];
		break;
	case GPUEXT_API_cuMemsetD2D8Async:
	case GPUEXT_API_cuMemsetD2D16Async:
	case GPUEXT_API_cuMemsetD2D32Async:
		w.stream = (CUstream)(uintptr_t)a[5];
		/* fallthrough */
	case GPUEXT_API_cuMemsetD2D8:
	case GPUEXT_API_cuMemsetD2D16:
	case GPUEXT_API_cuMemsetD2D32:
		w.bytes = a[3] * a[4];
		break;
	}
	switch (e->api) {	/* elements of 2 and 4 bytes */
	case GPUEXT_API_cuMemsetD16:
	case GPUEXT_API_cuMemsetD16Async:
	case GPUEXT_API_cuMemsetD2D16:
	case GPUEXT_API_cuMemsetD2D16Async:
		w.bytes *= 2;
		break;
	case GPUEXT_API_cuMemsetD32:
	case GPUEXT_API_cuMemsetD32Async:
	case GPUEXT_API_cuMemsetD2D32:
	case GPUEXT_API_cuMemsetD2D32Async:
		w.bytes *= 4;
		break;
	}
	return w;
}

/* ---- pools of event pairs, one per context ------------------------------ */

static void pool_destroy_events(struct devrt_pair *pairs, __u32 n)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		if (pairs[i].start)
			DRV(cuEventDestroy_v2, pairs[i].start);
		if (pairs[i].end)
			DRV(cuEventDestroy_v2, pairs[i].end);
	}
}

/* In the calling thread, whose current context is p->ctx. */
static void pool_create(struct pool *p)
{
	__u32 n = devrt.cfg.event_pairs, i;
	struct devrt_pair *pairs = NULL;
	int ok = !(devrt.cfg.faults & DEVRT_FAULT_EVENTS);

	__atomic_store_n(&p->state, POOL_CREATING, __ATOMIC_RELAXED);
	if (ok)
		pairs = calloc(n, sizeof(*pairs));
	ok = ok && pairs;
	for (i = 0; ok && i < n; i++)
		pairs[i].pool = p;
	for (i = 0; ok && i < n; i++)
		ok = DRV(cuEventCreate, &pairs[i].start, CU_EVENT_DEFAULT) ==
			     CUDA_SUCCESS &&
		     DRV(cuEventCreate, &pairs[i].end, CU_EVENT_DEFAULT) ==
			     CUDA_SUCCESS;
	ok = ok && DRV(cuStreamCreate, &p->anchor_stream,
		       CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
	ok = ok && DRV(cuEventCreate, &p->anchor, CU_EVENT_DEFAULT) ==
			   CUDA_SUCCESS;
	ok = ok && DRV(cuEventCreate, &p->base, CU_EVENT_DEFAULT) ==
			   CUDA_SUCCESS;
	p->rate = 1.0;
	if (!ok) {
		devrt_debug("context %p: no events for timing", (void *)p->ctx);
		if (pairs)
			pool_destroy_events(pairs, n);
		if (p->anchor_stream)
			DRV(cuStreamDestroy_v2, p->anchor_stream);
		if (p->anchor)
			DRV(cuEventDestroy_v2, p->anchor);
		if (p->base)
			DRV(cuEventDestroy_v2, p->base);
		free(pairs);
		__atomic_store_n(&p->state, POOL_FAILED, __ATOMIC_RELEASE);
		return;
	}
	p->pairs = pairs;
	p->npairs = n;
	p->nfree = n;
	__atomic_store_n(&p->state, POOL_READY, __ATOMIC_RELEASE);
}

/*
 * Another thread is making the pool: wait for it rather than leave this
 * sample untimed.  Making it takes one cuEventCreate per event and no lock,
 * so the wait is short and happens once per context.
 */
static struct pool *pool_wait(struct pool *p)
{
	__u32 st;

	while ((st = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE)) ==
	       POOL_EMPTY || st == POOL_CREATING)
		sched_yield();
	return st == POOL_READY ? p : NULL;
}

/* The ready pool of ctx, making it if this is the context's first sample. */
static struct pool *pool_for(CUcontext ctx)
{
	int i;

	for (i = 0; i < MAX_POOLS; i++) {
		struct pool *p = &pools[i];
		CUcontext cur = __atomic_load_n(&p->ctx, __ATOMIC_ACQUIRE);

		if (!cur) {
			if (!__atomic_compare_exchange_n(&p->ctx, &cur, ctx, 0,
							 __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE)) {
				if (cur != ctx)
					continue; /* taken by another context */
			} else {
				pool_create(p);
			}
		} else if (cur != ctx) {
			continue;
		}
		return pool_wait(p);
	}
	return NULL;
}

/*
 * A free pair, or NULL.  The count of free pairs is taken first, so the
 * scan that follows always ends at a pair no other thread can take, and a
 * pool with none free costs one atomic.
 */
static struct devrt_pair *pair_claim(struct pool *p)
{
	__u32 n = __atomic_load_n(&p->nfree, __ATOMIC_RELAXED), start, i;

	do {
		if (!n)
			return NULL;
	} while (!__atomic_compare_exchange_n(&p->nfree, &n, n - 1, 1,
					      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED));
	if (n - 1 == p->npairs / 2) {
		/* Half the pool taken since the poller's last round: it may
		 * be sleeping its whole period (a burst after an idle spell). */
		__atomic_store_n(&poll_kick, 1, __ATOMIC_RELEASE);
		devrt_futex_wake(&poll_kick);
	}
	start = __atomic_fetch_add(&p->hint, 1, __ATOMIC_RELAXED);
	for (i = 0;; i++) {
		struct devrt_pair *pr = &p->pairs[(start + i) % p->npairs];
		__u32 st = PAIR_FREE;

		if (__atomic_load_n(&pr->state, __ATOMIC_RELAXED) == PAIR_FREE &&
		    __atomic_compare_exchange_n(&pr->state, &st, PAIR_ARMED, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return pr;
	}
}

static void pair_free(struct devrt_pair *pr)
{
	__atomic_store_n(&pr->state, PAIR_FREE, __ATOMIC_RELEASE);
	__atomic_fetch_add(&pr->pool->nfree, 1, __ATOMIC_RELEASE);
}

static CUresult record(CUevent e, CUstream s, int pt)
{
	return pt ? DRV(cuEventRecord_ptsz, e, s) : DRV(cuEventRecord, e, s);
}

/* ---- the poller ---------------------------------------------------------- */

static __s64 ms_to_ns(double ms)
{
	double ns = ms * 1e6;

	return (__s64)(ns < 0 ? ns - 0.5 : ns + 0.5);
}

/* A fresh anchor without a mark: an event on devrt's idle stream, its host
 * time the midpoint of the clock around record + wait.  Poller only. */
static int anchor_midpoint(struct pool *p)
{
	__u64 t0 = 0, t1 = 0;
	int tries;

	for (tries = 0; tries < 3; tries++) {
		t0 = devrt_now();
		if (DRV(cuEventRecord, p->anchor, p->anchor_stream) ||
		    DRV(cuEventSynchronize, p->anchor))
			return -1;
		t1 = devrt_now();
		if (t1 - t0 < ANCHOR_TIGHT_NS)
			break;
	}
	p->anchor_host = t0 + (t1 - t0) / 2;
	p->anchor_at = t1;
	p->anchor_marked = 0;
	return 0;
}

/*
 * The mark's page, once per pool: MARK_ON or MARK_OFF.  The page is
 * devrt's own (mmap), registered with the driver, and never unmapped: a
 * context the program destroys takes the registration with it, never
 * memory the poller may still read.
 */
static int mark_setup(struct pool *p)
{
	void *h;

	if ((devrt.cfg.faults & DEVRT_FAULT_MARK) ||
	    !devrt_drv.cuMemHostRegister_v2 || !devrt_drv.cuMemHostUnregister ||
	    !devrt_drv.cuMemHostGetDevicePointer_v2 ||
	    !devrt_drv.cuStreamWriteValue32_v2)
		return MARK_OFF;
	h = mmap(NULL, MARK_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		return MARK_OFF;
	if (DRV(cuMemHostRegister_v2, h, MARK_PAGE,
		CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP)) {
		munmap(h, MARK_PAGE);
		return MARK_OFF;
	}
	if (DRV(cuMemHostGetDevicePointer_v2, &p->mark_d, h, 0)) {
		DRV(cuMemHostUnregister, h);
		munmap(h, MARK_PAGE);
		return MARK_OFF;
	}
	p->mark = h;
	return MARK_ON;
}

/*
 * A fresh anchor after the mark (see the top of the file): 0; 1 when the
 * mark did not come within MARK_WAIT_NS (the anchor is then not used); -1
 * on a driver error.
 */
static int anchor_marked(struct pool *p)
{
	__u64 t0, t = 0, deadline;
	int tries, seen = 0;

	for (tries = 0; tries < 3; tries++) {
		__u32 gen = ++p->mark_gen;

		t0 = devrt_now();
		if (DRV(cuStreamWriteValue32_v2, p->anchor_stream, p->mark_d,
			gen, CU_STREAM_WRITE_VALUE_DEFAULT) ||
		    DRV(cuEventRecord, p->anchor, p->anchor_stream))
			return -1;
		deadline = t0 + MARK_WAIT_NS;
		for (;;) {
			t = devrt_now();
			seen = __atomic_load_n(p->mark, __ATOMIC_ACQUIRE) == gen;
			if (seen || t > deadline)
				break;
			__builtin_ia32_pause();
		}
		if (DRV(cuEventSynchronize, p->anchor))
			return -1;
		/* Seen soon after the write was asked for: the poller was not
		 * held up between the mark landing and the clock read. */
		if (!seen || t - t0 < MARK_TIGHT_NS)
			break;
	}
	if (!seen)
		return 1;
	p->anchor_host = t;
	p->anchor_at = devrt_now();
	p->anchor_marked = 1;
	return 0;
}

/* The clocks' rate from the base to the anchor just taken, when both are
 * marked and far enough apart.  Poller only. */
static void rate_update(struct pool *p)
{
	float ms;
	double rate;

	if (!p->anchor_marked || !p->base_host ||
	    p->anchor_host - p->base_host < BASE_MIN_NS ||
	    DRV(cuEventElapsedTime, &ms, p->base, p->anchor) || ms <= 0)
		return;
	rate = (double)(p->anchor_host - p->base_host) / ((double)ms * 1e6);
	if (rate > 1.0 - RATE_MAX_PPM * 1e-6 && rate < 1.0 + RATE_MAX_PPM * 1e-6)
		p->rate = rate;
	devrt_debug("context %p: the GPU's clock runs %.2f ppm from the host's%s",
		    (void *)p->ctx, (1.0 / rate - 1.0) * 1e6,
		    p->rate == rate ? "" : " (not taken)");
}

/*
 * A fresh anchor: after the mark when the driver can, else the midpoint.
 * The anchor it replaces becomes the base when that is due (none yet, or
 * older than BASE_AGE_NS) and it was marked: its event is kept, and the
 * old base's takes the new anchor.
 */
static int anchor(struct pool *p)
{
	int r;

	if (p->anchor_at && p->anchor_marked &&
	    (!p->base_host || p->anchor_host - p->base_host > BASE_AGE_NS)) {
		CUevent e = p->base;

		p->base = p->anchor;
		p->base_host = p->anchor_host;
		p->anchor = e;
		p->anchor_at = 0;
	}
	if (p->mark_state == MARK_UNTRIED)
		p->mark_state = mark_setup(p);
	if (p->mark_state == MARK_ON) {
		r = anchor_marked(p);
		if (r == 0) {
			rate_update(p);
			return 0;
		}
		if (r < 0) {
			/* No stream memory operations here: never again
			 * for this context. */
			devrt_debug("context %p: no marked anchor", (void *)p->ctx);
			p->mark_state = MARK_OFF;
		}
	}
	return anchor_midpoint(p);
}

/*
 * Writes the GPU execution record of a completed pair: its start event
 * since_anchor ms after the anchor, its end event ran ms after its start.
 */
static void emit(struct pool *p, struct devrt_pair *pr, float since_anchor,
		 float ran)
{
	struct gpuext_gpu_exec rec = pr->rec;
	__s64 start;

	start = (__s64)p->anchor_host + ms_to_ns(since_anchor * p->rate);
	if (start < (__s64)rec.call_start_ns) {
		/* The work mapped before its call, which cannot be: the
		 * anchor's error (its host time is known to the width of a
		 * record and a wait), or the TSC conversion's (tens of ns).
		 * The pair's own duration is exact: the interval moves as a
		 * whole to start with the call, rather than losing its length
		 * (a short kernel's end clamped too read as 0 ns). */
		start = (__s64)rec.call_start_ns;
		rec.flags |= GPUEXT_XF_CLAMPED;
	}
	rec.gpu_start_ns = (__u64)start;
	rec.gpu_end_ns = rec.gpu_start_ns + (__u64)(ran > 0 ? ms_to_ns(ran * p->rate) : 0);
	if (devrt_ring_write(&rec, sizeof(rec)) == 0)
		__atomic_fetch_add(&devrt.hdr->timed, 1, __ATOMIC_RELAXED);
}

/*
 * One pass over every pending pair.  Returns how many are still running;
 * *load is the largest share of a pool's pairs found pending, in 1024ths.
 */
static int poll_once(__u32 *load)
{
	int i, running = 0;
	__u32 k;

	for (i = 0; i < MAX_POOLS; i++) {
		struct pool *p = &pools[i];
		int pending = 0;
		__u32 share;

		if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) != POOL_READY)
			continue;
		for (k = 0; k < p->npairs; k++)
			pending += __atomic_load_n(&p->pairs[k].state,
						   __ATOMIC_ACQUIRE) == PAIR_PENDING;
		if (!pending)
			continue;
		share = (__u32)((__u64)pending * 1024 / p->npairs);
		if (share > *load)
			*load = share;
		if (DRV(cuCtxSetCurrent, p->ctx) ||
		    ((!p->anchor_at || devrt_now() - p->anchor_at > ANCHOR_AGE_NS) &&
		     anchor(p))) {
			/* The context is gone or broken: give its pairs up. */
			for (k = 0; k < p->npairs; k++) {
				struct devrt_pair *pr = &p->pairs[k];

				if (__atomic_load_n(&pr->state, __ATOMIC_ACQUIRE) ==
				    PAIR_PENDING) {
					drop_timing();
					pair_free(pr);
				}
			}
			continue;
		}
		for (k = 0; k < p->npairs; k++) {
			struct devrt_pair *pr = &p->pairs[k];
			float ran, since_anchor;
			CUresult q;

			if (__atomic_load_n(&pr->state, __ATOMIC_ACQUIRE) !=
			    PAIR_PENDING)
				continue;
			/* The pair's own elapsed time is the completion query
			 * too (CUDA_ERROR_NOT_READY until the end event ran):
			 * two driver calls per record instead of three. */
			q = DRV(cuEventElapsedTime, &ran, pr->start, pr->end);
			if (q == CUDA_ERROR_NOT_READY) {
				running++;
				continue;
			}
			if (q == CUDA_SUCCESS &&
			    DRV(cuEventElapsedTime, &since_anchor, p->anchor,
				pr->start) == CUDA_SUCCESS)
				emit(p, pr, since_anchor, ran);
			else
				drop_timing();
			pair_free(pr);
		}
	}
	return running;
}

static void *poll_main(void *arg)
{
	__u64 period = (__u64)devrt.cfg.poll_us * 1000, deadline = 0;
	__u64 fill = period / 10 < FILL_POLL_NS ? period / 10 : FILL_POLL_NS;
	__u64 last = devrt_now();

	(void)arg;
	devrt_t.busy = 1;	/* never report the poller's own calls */
	for (;;) {
		/* Read before the round: a round that began before exit's
		 * request may have passed a pair published just before it,
		 * so only a round that began after it may end the poller. */
		int flushing = __atomic_load_n(&flush_req, __ATOMIC_ACQUIRE);
		__u32 load = 0;
		int running;
		__u64 now, sleep = period;

		__atomic_store_n(&poll_kick, 0, __ATOMIC_RELAXED);
		running = poll_once(&load);
		now = devrt_now();

		if (flushing) {
			if (!deadline)
				deadline = now + FLUSH_WAIT_NS;
			if (!running || now > deadline)
				break;
			devrt_sleep_ns(100000);
			continue;
		}
		if (__atomic_load_n(&flush_req, __ATOMIC_ACQUIRE))
			continue;
		/* Every poll_us (100 ms), whether work is pending or not (an
		 * idle round makes no driver call).  A round with pairs to
		 * read costs the program's launching thread about 15 µs (on
		 * the H200 host; the driver's locks and lines move between
		 * the cores), more than the pairs it reads: a launch-bound
		 * loop with one launch timed every 10 ms paid 0.21 points of
		 * its time with a round every 10 ms, 0.51 every 1 ms
		 * (bench/device/devrt_ab_builds.sh, three processes each).
		 * But a pool must not fill between rounds (its samples would
		 * be dropped): sooner, then, by the rate the busiest pool
		 * filled since the last round, so that it stays under a
		 * quarter full; every FILL_POLL_NS once half full; and at
		 * once when a pool falls to half its pairs free while the
		 * poller sleeps (pair_claim kicks it). */
		if (load >= 512) {
			sleep = fill;
		} else if (load) {
			__u64 quarter = (now - last) * 256 / load;

			if (quarter < sleep)
				sleep = quarter > fill ? quarter : fill;
		}
		last = now;
		devrt_futex_sleep(&poll_kick, sleep);
	}
	__atomic_store_n(&flush_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The driver functions and the poller, the first time a call is sampled. */
static int timing_ready(void)
{
	int st = __atomic_load_n(&timing, __ATOMIC_ACQUIRE);
	int err = -1;

	if (likely(st == ON))
		return 1;
	if (st != UNKNOWN || !__atomic_compare_exchange_n(&timing, &st, STARTING,
							  0, __ATOMIC_ACQUIRE,
							  __ATOMIC_RELAXED)) {
		/* Another thread is starting it (no lock, no CUDA call):
		 * wait rather than leave this sample untimed. */
		while (st == STARTING) {
			sched_yield();
			st = __atomic_load_n(&timing, __ATOMIC_ACQUIRE);
		}
		return st == ON;
	}
	if (devrt_driver_load() == 0 && !(devrt.cfg.faults & DEVRT_FAULT_POLLER))
		err = devrt_thread_start(poll_main);
	if (err)
		devrt_debug("GPU execution timing off: %s",
			    err > 0 ? strerror(err) : "no driver functions or fault injected");
	__atomic_store_n(&timing, err ? OFF : ON, __ATOMIC_RELEASE);
	return !err;
}

/* ---- the calls ----------------------------------------------------------- */

void devrt_timing_begin(struct devrt_call *c, struct devrt_thread *t)
{
	struct devrt_pair *pr = NULL;
	struct pool *p = NULL;
	CUcontext ctx = NULL;
	struct work w;
	int pt = !!(c->sym->df & DF_PT);

	if (!timing_ready()) {
		drop_timing();
		return;
	}
	w = work_of(&c->ev);
	t->busy++;
	if (DRV(cuCtxGetCurrent, &ctx) || !ctx) {
		/* No context: the call itself will fail; nothing to time. */
		t->busy--;
		return;
	}
	p = pool_for(ctx);
	if (p)
		pr = pair_claim(p);
	if (pr && record(pr->start, w.stream, pt)) {
		pair_free(pr);
		pr = NULL;
	}
	t->busy--;
	if (!pr) {
		drop_timing();
		return;
	}
	pr->stream = w.stream;
	pr->pt = pt;
	memset(&pr->rec, 0, sizeof(pr->rec));
	pr->rec.kind = GPUEXT_KIND_GPU_EXEC;
	pr->rec.api = c->ev.api;
	pr->rec.source = GPUEXT_SOURCE_DEVRT;
	pr->rec.pid = c->ev.pid;
	pr->rec.tid = c->ev.tid;
	pr->rec.call_start_ns = c->ev.start_ns;
	/* NULL on a per-thread variant is the per-thread default stream. */
	pr->rec.stream = w.stream || !pt ? (__u64)(uintptr_t)w.stream :
					   (__u64)(uintptr_t)CU_STREAM_PER_THREAD;
	pr->rec.handle = w.handle;
	pr->rec.bytes = w.bytes;
	pr->rec.corr = c->ev.corr;
	c->pair = pr;
}

/*
 * A launch made inside a timed launch (cudaLaunchKernel or
 * cudaLaunchKernelExC calling cuLaunchKernel[Ex]): the outer call's events
 * bracket it already; the record names the kernel by its CUfunction rather
 * than the host stub. args: the inner call's arguments, nargs of them (the
 * inner call may be reported or folded into the outer one).
 */
DEVRT_HOT void devrt_timing_inner(struct devrt_call *outer,
			const struct devrt_sym_info *inner, const __u64 *args,
			unsigned int nargs)
{
	struct gpuext_event e;

	if (!outer->pair || !(inner->df & DF_KERNEL) ||
	    (outer->ev.api != GPUEXT_API_cudaLaunchKernel &&
	     outer->ev.api != GPUEXT_API_cudaLaunchKernelExC))
		return;
	memset(&e, 0, sizeof(e));
	e.api = inner->api;
	memcpy(e.args, args,
	       (nargs < GPUEXT_NARGS ? nargs : GPUEXT_NARGS) * sizeof(e.args[0]));
	outer->pair->rec.handle = work_of(&e).handle;
}

void devrt_timing_end(struct devrt_call *c, CUresult r)
{
	struct devrt_pair *pr = c->pair;
	CUresult rr;

	devrt_t.busy++;
	rr = record(pr->end, pr->stream, pr->pt);
	devrt_t.busy--;
	if (rr) {
		pair_free(pr);
		c->pair = NULL;
		drop_timing();
		return;
	}
	if (r)
		pr->rec.flags |= GPUEXT_XF_CALL_FAILED;
}

void devrt_timing_publish(struct devrt_call *c)
{
	__atomic_store_n(&c->pair->state, PAIR_PENDING, __ATOMIC_RELEASE);
}

/* At exit: the poller reports what already ran (waiting a little for the
 * rest), then stops.  Never longer than about a second. */
void devrt_timing_flush(void)
{
	int i;

	if (__atomic_load_n(&timing, __ATOMIC_ACQUIRE) != ON)
		return;
	__atomic_store_n(&flush_req, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&poll_kick, 1, __ATOMIC_RELEASE);
	devrt_futex_wake(&poll_kick);
	for (i = 0; i < 1000 && !__atomic_load_n(&flush_done, __ATOMIC_ACQUIRE);
	     i++)
		devrt_sleep_ns(1000000);
}

/* In a forked child: the parent's events and poller are not ours. */
void devrt_timing_fork_child(void)
{
	memset(pools, 0, sizeof(pools));
	flush_req = flush_done = poll_kick = 0;
	if (timing == ON || timing == STARTING)
		timing = UNKNOWN;
}
