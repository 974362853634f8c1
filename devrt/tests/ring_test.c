// SPDX-License-Identifier: Apache-2.0
/*
 * ring_test - devrt's ring producer (src/ring.c) against a consumer that
 * follows gpuext_abi.h, without CUDA:
 *
 *   - many threads write records of one and of four slots (a call and a
 *     named call) while a consumer drains: every record arrives once,
 *     intact, each thread's in the order written;
 *   - with no consumer the ring takes exactly what fits and counts the rest
 *     as drops[GPUEXT_RDROP_FULL];
 *   - a consumer that never frees slots properly (sequence numbers that do
 *     not settle) turns devrt off instead of spinning forever.
 *
 * Exit status 0 if all hold; each failure is printed.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ring.c"

/* What ring.c needs of the rest of devrt. */
struct devrt_global devrt;

__u64 devrt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

void devrt_debug(const char *fmt, ...)
{
	(void)fmt;
}

void devrt_disable(enum devrt_reason reason)
{
	devrt.state = DEVRT_OFF;
	devrt.hdr->disabled_reason = reason;
	devrt.hdr->state = GPUEXT_RING_DISABLED;
}

static int failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "ring_test:%d: ", __LINE__);	\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			failures++;					\
		}							\
	} while (0)

#define THREADS 4
#define PER_THREAD 100000

/* A record: thread, sequence number, then a pattern derived from both. */
struct rec {
	__u32 thread;
	__u32 n;
	__u8 fill[672];
};

static __u32 rec_len(__u32 n)
{
	return n % 7 == 0 ? 680 : 168;	/* a named call now and then */
}

static void rec_fill(struct rec *r, __u32 thread, __u32 n)
{
	r->thread = thread;
	r->n = n;
	memset(r->fill, (int)(thread * 31 + n), sizeof(r->fill));
}

static int ring_setup(__u32 slots, const char *dir)
{
	memset(&devrt, 0, sizeof(devrt));
	snprintf(devrt.cfg.dir, sizeof(devrt.cfg.dir), "%s", dir);
	devrt.cfg.ring_slots = slots;
	devrt.cfg.classes = GPUEXT_CLASS_ALL;
	devrt.pid = getpid();
	if (devrt_ring_create())
		return -1;
	devrt.state = DEVRT_ACTIVE;
	unlink(devrt.path);	/* the mapping stays */
	return 0;
}

/* The consumer side of the protocol. Returns records taken. */
static int consume(__u32 *next_n, __u64 *lost)
{
	struct gpuext_ring_hdr *h = devrt.hdr;
	__u64 pos = h->tail, cap = devrt.mask + 1, i;
	static struct rec r;
	int got = 0;

	for (;;) {
		struct gpuext_slot *first = &devrt.slots[pos & devrt.mask];
		__u32 len, ns;

		if (__atomic_load_n(&first->seq, __ATOMIC_ACQUIRE) != pos + 1)
			break;
		len = first->len;
		ns = first->nslots;
		for (i = 0; i < ns; i++) {
			struct gpuext_slot *s = &devrt.slots[(pos + i) & devrt.mask];
			__u32 off = (__u32)i * GPUEXT_SLOT_PAYLOAD;
			__u32 k = len - off < GPUEXT_SLOT_PAYLOAD ? len - off :
								   GPUEXT_SLOT_PAYLOAD;

			CHECK(__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == pos + i + 1,
			      "continuation slot not committed before the first");
			memcpy((char *)&r + off, s->data, k);
		}
		CHECK(r.thread < THREADS, "thread %u", r.thread);
		if (r.thread < THREADS) {
			/* Per thread in order; drops only skip numbers. */
			CHECK(r.n >= next_n[r.thread], "thread %u: %u after %u",
			      r.thread, r.n, next_n[r.thread]);
			lost[r.thread] += r.n - next_n[r.thread];
			next_n[r.thread] = r.n + 1;
			CHECK(len == rec_len(r.n), "length %u for n %u", len, r.n);
			CHECK(r.fill[len - 9] == (__u8)(r.thread * 31 + r.n),
			      "payload of thread %u record %u", r.thread, r.n);
		}
		for (i = 0; i < ns; i++)
			__atomic_store_n(&devrt.slots[(pos + i) & devrt.mask].seq,
					 pos + i + cap, __ATOMIC_RELEASE);
		pos += ns;
		__atomic_store_n(&h->tail, pos, __ATOMIC_RELEASE);
		got++;
	}
	return got;
}

static void *producer(void *arg)
{
	__u32 thread = (__u32)(uintptr_t)arg, n;
	struct rec r;

	for (n = 0; n < PER_THREAD; n++) {
		rec_fill(&r, thread, n);
		devrt_ring_write(&r, rec_len(n));
		/* Leave the consumer some CPU on a small machine. */
		if (n % 16 == 0)
			sched_yield();
	}
	return NULL;
}

static void test_concurrent(const char *dir)
{
	__u32 next_n[THREADS] = { 0 };
	__u64 lost[THREADS] = { 0 }, got = 0, drops;
	pthread_t th[THREADS];
	int i, joined[THREADS] = { 0 }, running = 1;

	if (ring_setup(1024, dir)) {
		CHECK(0, "ring_setup");
		return;
	}
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, producer, (void *)(uintptr_t)i);
	while (running) {
		got += consume(next_n, lost);
		running = 0;
		for (i = 0; i < THREADS; i++) {
			if (!joined[i])
				joined[i] = pthread_tryjoin_np(th[i], NULL) == 0;
			running |= !joined[i];
		}
	}
	got += consume(next_n, lost);
	drops = devrt.hdr->drops[GPUEXT_RDROP_FULL];
	for (i = 0; i < THREADS; i++)
		drops -= lost[i] + (PER_THREAD - next_n[i]);
	CHECK(drops == 0, "drops counted %llu, records lost %llu",
	      (unsigned long long)devrt.hdr->drops[GPUEXT_RDROP_FULL],
	      (unsigned long long)(devrt.hdr->drops[GPUEXT_RDROP_FULL] - drops));
	CHECK(got == devrt.hdr->records, "consumed %llu, committed %llu",
	      (unsigned long long)got, (unsigned long long)devrt.hdr->records);
	CHECK(got + devrt.hdr->drops[GPUEXT_RDROP_FULL] ==
		      (__u64)THREADS * PER_THREAD,
	      "consumed + dropped != written");
	printf("ok: %d threads x %d records through 1024 slots: %llu taken, "
	       "%llu dropped (full)\n", THREADS, PER_THREAD,
	       (unsigned long long)got,
	       (unsigned long long)devrt.hdr->drops[GPUEXT_RDROP_FULL]);
}

static void test_full(const char *dir)
{
	struct rec r;
	__u32 n;

	if (ring_setup(64, dir)) {
		CHECK(0, "ring_setup");
		return;
	}
	/* 4 named (16 slots), then calls: 48 more fit. */
	for (n = 0; n < 100; n++) {
		rec_fill(&r, 0, n);
		devrt_ring_write(&r, n < 4 ? 680 : 168);
	}
	CHECK(devrt.hdr->records == 52, "records %llu, want 52",
	      (unsigned long long)devrt.hdr->records);
	CHECK(devrt.hdr->drops[GPUEXT_RDROP_FULL] == 48, "drops %llu, want 48",
	      (unsigned long long)devrt.hdr->drops[GPUEXT_RDROP_FULL]);
	CHECK(devrt.hdr->head == 64, "head %llu",
	      (unsigned long long)devrt.hdr->head);
	printf("ok: 64 slots, no consumer: 52 records, 48 dropped\n");
}

static void test_stuck(const char *dir)
{
	struct rec r;

	if (ring_setup(64, dir)) {
		CHECK(0, "ring_setup");
		return;
	}
	/* A consumer that wrote a sequence number from the future. */
	devrt.slots[0].seq = 12345;
	rec_fill(&r, 0, 1);
	CHECK(devrt_ring_write(&r, 168) == -1, "write into a broken ring");
	CHECK(devrt.state == DEVRT_OFF &&
	      devrt.hdr->state == GPUEXT_RING_DISABLED &&
	      devrt.hdr->disabled_reason == DEVRT_REASON_RING_STUCK,
	      "broken ring: state %u reason %u", devrt.hdr->state,
	      devrt.hdr->disabled_reason);
	printf("ok: a broken consumer turns devrt off\n");
}

int main(void)
{
	char dir[] = "/tmp/devrt-ring-test-XXXXXX";

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_full(dir);
	test_stuck(dir);
	test_concurrent(dir);
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "ring_test: %d failures\n", failures);
		return 1;
	}
	return 0;
}
