// SPDX-License-Identifier: Apache-2.0
/*
 * clock.c - devrt's timestamps: CLOCK_MONOTONIC nanoseconds, from the TSC
 * where that is safe.
 *
 * Every record takes two timestamps.  clock_gettime through the vDSO costs
 * about twice a TSC read (30 ns against 17 ns on the H200 host, 20 against
 * 9 on the development machine: bench/device/devrt/clockbench.c), because
 * it orders the read and re-checks the kernel's sequence lock; that is a
 * quarter of devrt's cost per call.  So devrt reads the TSC and converts:
 *
 *     ns = base_ns + ((tsc - base_tsc) * mult) >> 32
 *
 * Only when the kernel keeps CLOCK_MONOTONIC on the TSC itself (clocksource
 * "tsc": the kernel found it invariant and synchronised across CPUs), and
 * GPUEXT_DEVRT_CLOCK is not "vdso".  The conversion is measured against
 * clock_gettime: first 5 ms after start (until then calls use
 * clock_gettime), then again whenever a reader finds it twice as old as the
 * baseline it was measured over (10, 20, 40 ms..., at most 100 ms), each
 * time over the whole period since the last, so it follows the kernel's own
 * slewing; one thread, elected by a compare-and-swap, measures, the others
 * keep the current conversion.  A new base can differ from the old
 * conversion's reading by the drift of one period (nanoseconds), and a
 * read during a measure falls back to clock_gettime: call.c keeps each
 * thread's record timestamps in order (thread_now).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "devrt.h"

#define FIRST_PERIOD_NS 5000000ULL  /* first conversion after 5 ms */
#define PERIOD_NS 100000000ULL      /* then measured again every 100 ms */

struct conv {
	__u64 seq;       /* odd while written */
	__u64 base_tsc;
	__u64 base_ns;
	__u64 mult;      /* ns per tick, 32.32 fixed point; 0: not yet */
	__u64 limit;     /* ticks after base_tsc that need a new conversion */
};

static struct conv conv __attribute__((aligned(64)));
static int use_tsc;          /* decided once, before any thread reads */
static int measuring;        /* the elected thread is measuring */
static __u64 start_tsc, start_ns; /* before the first conversion */

static __u64 mono_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC through the vDSO: no system call. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* A TSC reading and CLOCK_MONOTONIC at (about) the same instant. */
static void pair(__u64 *tsc, __u64 *ns)
{
	__u64 a = __rdtsc(), n = mono_ns(), b = __rdtsc();

	*tsc = a + (b - a) / 2;
	*ns = n;
}

static int clocksource_is_tsc(void)
{
	char src[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	if (!f)
		return 0;
	if (!fgets(src, sizeof(src), f))
		src[0] = '\0';
	fclose(f);
	return !strcmp(src, "tsc\n");
}

void devrt_clock_init(void)
{
	const char *e = getenv("GPUEXT_DEVRT_CLOCK");

	if ((e && !strcmp(e, "vdso")) || !clocksource_is_tsc())
		return;
	pair(&start_tsc, &start_ns);
	use_tsc = 1;
}

/* Measure a new conversion from base (tsc0, ns0) to now; the caller won
 * the election. */
static void remeasure(__u64 tsc0, __u64 ns0)
{
	__u64 tsc, ns, mult, period;

	pair(&tsc, &ns);
	if (tsc <= tsc0 || ns <= ns0)
		return;	/* a TSC that went backwards: keep what we have */
	mult = (__u64)(((unsigned __int128)(ns - ns0) << 32) / (tsc - tsc0));
	if (!mult)
		return;
	__atomic_store_n(&conv.seq, conv.seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	conv.base_tsc = tsc;
	conv.base_ns = ns;
	conv.mult = mult;
	/* The next measure after twice this one's baseline (5, 10, 20 ms...,
	 * then every 100 ms): a conversion measured over a short baseline is
	 * used only for as long, so its error (the two clock reads', about
	 * 20 ns, over the baseline) never grows past a few tens of ns. */
	period = 2 * (ns - ns0);
	if (period > PERIOD_NS)
		period = PERIOD_NS;
	conv.limit = (__u64)(((unsigned __int128)period << 32) / mult);
	__atomic_store_n(&conv.seq, conv.seq + 1, __ATOMIC_RELEASE);
	if (tsc0 == start_tsc)
		devrt_debug("timestamps from the TSC: %.6f ns a tick",
			    (double)mult / 4294967296.0);
}

static __attribute__((noinline)) __u64 slow(__u64 tsc0, __u64 ns0)
{
	int no = 0;

	if (__atomic_compare_exchange_n(&measuring, &no, 1, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED)) {
		remeasure(tsc0, ns0);
		__atomic_store_n(&measuring, 0, __ATOMIC_RELEASE);
	}
	return mono_ns();
}

DEVRT_HOT __u64 devrt_now(void)
{
	__u64 seq, tsc0, ns0, mult, limit, t;

	if (!use_tsc)
		return mono_ns();
	seq = __atomic_load_n(&conv.seq, __ATOMIC_ACQUIRE);
	tsc0 = conv.base_tsc;
	ns0 = conv.base_ns;
	mult = conv.mult;
	limit = conv.limit;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (unlikely((seq & 1) || seq != __atomic_load_n(&conv.seq, __ATOMIC_RELAXED)))
		return mono_ns();	/* being measured: this once, the kernel's */
	if (unlikely(!mult)) {
		/* No conversion yet: the kernel's clock, and the first one
		 * once 5 ms have passed since start. */
		t = mono_ns();
		if (t - start_ns >= FIRST_PERIOD_NS)
			slow(start_tsc, start_ns);
		return t;
	}
	t = __rdtsc();
	if (unlikely(t - tsc0 > limit))
		return slow(tsc0, ns0);
	return ns0 + (__u64)(((unsigned __int128)(t - tsc0) * mult) >> 32);
}
