// SPDX-License-Identifier: Apache-2.0
/*
 * core.c - configuration, start, fork and exit, and turning devrt off.
 *
 * devrt does nothing until the process makes its first interposed CUDA
 * call: a shell or a Python interpreter that never touches CUDA, started
 * with the same LD_PRELOAD, gets no ring file and no thread.  The first
 * call reads the environment, creates the ring and only then reports.
 *
 * Fail open: whatever goes wrong inside devrt (no ring, a broken consumer,
 * a missing driver function) turns devrt, or only its timing, off; calls go
 * straight to the real functions with their results untouched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "devrt.h"

struct devrt_global devrt;
DEVRT_TLS struct devrt_thread devrt_t;

/* The process image registered its exit handler (atexit survives fork). */
static int exit_registered;

DEVRT_HOT __u32 devrt_tid(void)
{
	struct devrt_thread *t = &devrt_t;

	if (unlikely(!t->tid))
		t->tid = (__u32)syscall(SYS_gettid);
	return t->tid;
}

void devrt_debug(const char *fmt, ...)
{
	va_list ap;

	if (!devrt.cfg.debug)
		return;
	fprintf(stderr, "devrt[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- configuration ------------------------------------------------------ */

static int env_u64(const char *name, __u64 *out)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end) {
		devrt_debug("ignoring %s=%s: not a number", name, s);
		return 0;
	}
	*out = v;
	return 1;
}

static __u32 env_u32(const char *name, __u32 def, __u32 max)
{
	__u64 v;

	if (!env_u64(name, &v))
		return def;
	return v > max ? max : (__u32)v;
}

static const struct {
	const char *name;
	__u32 bit;
} class_names[] = {
	{ "launch", GPUEXT_CLASS_LAUNCH }, { "memory", GPUEXT_CLASS_MEMORY },
	{ "copy", GPUEXT_CLASS_COPY },     { "sync", GPUEXT_CLASS_SYNC },
	{ "module", GPUEXT_CLASS_MODULE }, { "context", GPUEXT_CLASS_MODULE },
	{ "exec", GPUEXT_CLASS_EXEC },     { "all", GPUEXT_CLASS_ALL },
	{ "nested", GPUEXT_CLASS_NESTED },
};

/* "ALL", "none", a number, or names: "launch,copy,exec". */
static __u32 parse_classes(const char *s)
{
	char buf[128], *tok, *save, *end;
	unsigned long v;
	__u32 out = 0;
	size_t i;

	if (!s || !*s)
		return GPUEXT_CLASS_ALL;
	v = strtoul(s, &end, 0);
	if (!*end)
		return (__u32)v & GPUEXT_CLASS_MASK;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < sizeof(class_names) / sizeof(class_names[0]); i++)
			if (!strcasecmp(tok, class_names[i].name))
				break;
		if (i < sizeof(class_names) / sizeof(class_names[0]))
			out |= class_names[i].bit;
		else if (strcasecmp(tok, "none"))
			devrt_debug("unknown class '%s' in GPUEXT_DEVRT_CLASSES", tok);
	}
	return out;
}

/* "ring,poller,events,procaddr,driver,mark,disable-after=N" */
static void parse_faults(struct devrt_config *c, const char *s)
{
	char buf[256], *tok, *save;

	if (!s || !*s)
		return;
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "ring"))
			c->faults |= DEVRT_FAULT_RING;
		else if (!strcmp(tok, "poller"))
			c->faults |= DEVRT_FAULT_POLLER;
		else if (!strcmp(tok, "events"))
			c->faults |= DEVRT_FAULT_EVENTS;
		else if (!strcmp(tok, "procaddr"))
			c->faults |= DEVRT_FAULT_PROCADDR;
		else if (!strcmp(tok, "driver"))
			c->faults |= DEVRT_FAULT_DRIVER;
		else if (!strcmp(tok, "mark"))
			c->faults |= DEVRT_FAULT_MARK;
		else if (!strncmp(tok, "disable-after=", 14)) {
			c->faults |= DEVRT_FAULT_DISABLE;
			c->disable_after = strtoull(tok + 14, NULL, 10);
		} else
			devrt_debug("unknown fault '%s'", tok);
	}
}

static __u32 pow2_at_least(__u32 v)
{
	__u32 p = GPUEXT_RING_MIN_SLOTS;

	while (p < v && p < GPUEXT_RING_MAX_SLOTS)
		p <<= 1;
	return p;
}

static void read_config(struct devrt_config *c)
{
	const char *dir = getenv("GPUEXT_DEVRT_DIR");
	__u64 v = 0;

	memset(c, 0, sizeof(*c));
	c->debug = env_u64("GPUEXT_DEVRT_DEBUG", &v) && v;
	c->off = env_u64("GPUEXT_DEVRT_DISABLE", &v) && v;
	c->stats = env_u64("GPUEXT_DEVRT_STATS", &v) && v;
	snprintf(c->dir, sizeof(c->dir), "%s", dir && *dir ? dir : "/dev/shm");
	c->ring_slots = pow2_at_least(env_u32("GPUEXT_DEVRT_RING_SLOTS", 16384,
					      GPUEXT_RING_MAX_SLOTS));
	c->classes = parse_classes(getenv("GPUEXT_DEVRT_CLASSES"));
	/* 1 in 32 launches and copies per thread, none within 50 ms of the
	 * thread's previous timed one: a timed call costs its thread 5-20 us
	 * (its event records, the poller's queries): 1.5% of a launch-bound
	 * loop at 1 in 32 alone, 0.5-1.6% with 1 ms between them, 0.2-0.4%
	 * with 10 ms, about 0.1% with 50 ms; see README.md, Cost. */
	c->sample_every = env_u32("GPUEXT_DEVRT_SAMPLE", 32, UINT32_MAX);
	c->sample_gap_us = env_u32("GPUEXT_DEVRT_SAMPLE_GAP_US", 50000,
				   GPUEXT_CTL_MAX_GAP_US);
	c->event_pairs = env_u32("GPUEXT_DEVRT_EVENT_PAIRS", 256, 65536);
	if (!c->event_pairs)
		c->event_pairs = 1;
	c->poll_us = env_u32("GPUEXT_DEVRT_POLL_US", 100000, 1000000);
	if (!c->poll_us)
		c->poll_us = 1;
	parse_faults(c, getenv("GPUEXT_DEVRT_FAULT_INJECT"));
}

/* ---- start and stop ----------------------------------------------------- */

static void devrt_exit(void);

/*
 * The first reported call of the process, or of a forked child: create the
 * ring.  One thread does it; the others wait for it (it makes no CUDA call
 * and takes no lock, so the wait is short).  Returns whether devrt is now
 * ACTIVE.
 */
int devrt_start(void)
{
	int st = DEVRT_UNINIT;
	struct devrt_thread *t = &devrt_t;

	if (__atomic_compare_exchange_n(&devrt.state, &st, DEVRT_STARTING, 0,
					__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		t->busy++;
		devrt.pid = getpid();
		devrt_clock_init();
		st = DEVRT_OFF;
		if (devrt.cfg.off)
			devrt_debug("GPUEXT_DEVRT_DISABLE set: passing calls through");
		else if (devrt_ring_create() == 0)
			st = DEVRT_ACTIVE;
		if (st == DEVRT_ACTIVE &&
		    !__atomic_exchange_n(&exit_registered, 1, __ATOMIC_RELAXED))
			atexit(devrt_exit);
		__atomic_store_n(&devrt.state, st, __ATOMIC_RELEASE);
		t->busy--;
		return st == DEVRT_ACTIVE;
	}
	while (st == DEVRT_STARTING) {
		sched_yield();
		st = __atomic_load_n(&devrt.state, __ATOMIC_ACQUIRE);
	}
	return st == DEVRT_ACTIVE;
}

/* Fail open: stop reporting for good, and say why in the ring. */
void devrt_disable(enum devrt_reason reason)
{
	struct gpuext_ring_hdr *h = devrt.hdr;

	__atomic_store_n(&devrt.state, DEVRT_OFF, __ATOMIC_RELEASE);
	if (!h)
		return;
	__atomic_store_n(&h->disabled_reason, reason, __ATOMIC_RELAXED);
	__atomic_store_n(&h->state, GPUEXT_RING_DISABLED, __ATOMIC_RELEASE);
	devrt_debug("turned off (reason %d): passing calls through", reason);
}

/*
 * GPUEXT_DEVRT_STATS=1: devrt's own driver calls, as JSON beside the ring
 * (<ring>.stats.json), so a test can tell them from the program's.
 */
static void write_stats(void)
{
	char path[sizeof(devrt.path) + 16];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%.*s.stats.json",
		 (int)(strlen(devrt.path) - strlen(".ring")), devrt.path);
	f = fopen(path, "we");
	if (!f)
		return;
	fputc('{', f);
	for (i = 0; i < DEVRT_NDRV; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", devrt_drv_names[i],
			(unsigned long long)__atomic_load_n(&devrt_drv_calls[i],
							    __ATOMIC_RELAXED));
	fputs("}\n", f);
	fclose(f);
}

/*
 * At exit: let the poller report the work that already ran, then mark the
 * ring closed so the collector drains and removes it.  A forked child runs
 * its parent's handler too; it acts only on a ring of its own.
 */
static void devrt_exit(void)
{
	struct gpuext_ring_hdr *h = devrt.hdr;
	__u32 active = GPUEXT_RING_ACTIVE;

	if (!h || h->pid != (__u32)getpid())
		return;
	devrt_t.busy++;
	devrt_timing_flush();
	__atomic_compare_exchange_n(&h->state, &active, GPUEXT_RING_CLOSED, 0,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	if (devrt.cfg.stats)
		write_stats();
}

/*
 * The child of a fork must not write into its parent's ring: it forgets
 * it (and the parent's CUDA events, which are not its own) and starts over
 * at its first CUDA call, with a ring, call numbers and a poller of its own.
 */
static void devrt_fork_child(void)
{
	int i;

	devrt_ring_forget();
	devrt_timing_fork_child();
	devrt_reg_fork_child();
	devrt.pid = getpid();
	devrt.corr = 0;
	for (i = 0; i < DEVRT_NDRV; i++)
		devrt_drv_calls[i] = 0;
	devrt_t.tid = 0;
	devrt_t.outer = NULL;
	devrt_t.corr_next = devrt_t.corr_end = 0;
	__atomic_store_n(&devrt.state, devrt.cfg.off ? DEVRT_OFF : DEVRT_UNINIT,
			 __ATOMIC_RELEASE);
}

/* At load: only configuration, nothing that touches CUDA or the disk. */
__attribute__((constructor)) static void devrt_load(void)
{
	read_config(&devrt.cfg);
	devrt_resolve_init();
	pthread_atfork(NULL, NULL, devrt_fork_child);
}

int devrt_thread_start(void *(*fn)(void *))
{
	pthread_attr_t attr;
	pthread_t th;
	sigset_t all, old;
	int err;

	if ((err = pthread_attr_init(&attr)))
		return err;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&th, &attr, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return err;
}

void devrt_sleep_ns(__u64 ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL),
			       (long)(ns % 1000000000ULL) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Sleeps up to ns while *word is 0: devrt_futex_wake(word) after setting it
 * ends the sleep at once (a waiting thread's exit never waits a period). */
void devrt_futex_sleep(int *word, __u64 ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL),
			       (long)(ns % 1000000000ULL) };

	if (syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0) &&
	    errno == ENOSYS)
		devrt_sleep_ns(ns);
}

void devrt_futex_wake(int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
