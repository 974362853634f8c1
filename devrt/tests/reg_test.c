// SPDX-License-Identifier: Apache-2.0
/*
 * reg_test - registration records (src/reg.c) without CUDA: a stub's
 * record is written at its first launch only, also when a thread's cache of
 * written stubs answers; a handle launched before it was registered (the
 * cache remembers it absent) writes its record once registered; a stub
 * registered again writes its new record at its next launch; a record the ring refused is written at the next launch;
 * after fork every record is written again; a thread of its own sees the
 * same.
 *
 * Exit status 0 if all hold; each failure is printed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reg.c"

/* What reg.c needs of the rest of devrt: a ring that keeps the names. */
struct devrt_global devrt;
static char written[64][GPUEXT_NAME_MAX];
static int nwritten, refuse;

int devrt_ring_write(const void *rec, __u32 len)
{
	const struct gpuext_named_event *ne = rec;

	if (len != sizeof(*ne) || refuse) {
		refuse = 0;
		return -1;
	}
	snprintf(written[nwritten % 64], sizeof(written[0]), "%s", ne->name);
	nwritten++;
	return 0;
}

static int failures;

static void expect(int ok, const char *what, int got, int want)
{
	if (!ok) {
		fprintf(stderr, "reg_test: %s: got %d, want %d\n", what, got, want);
		failures++;
	}
}

static void keep(const void *stub, const char *name)
{
	struct gpuext_named_event ne;

	memset(&ne, 0, sizeof(ne));
	snprintf(ne.name, sizeof(ne.name), "%s", name);
	expect(devrt_reg_keep(stub, &ne) == 0, "keep", 0, 0);
}

static void launches(const void *stub, int n, int want_written, const char *want_name, const char *what)
{
	int before = nwritten, i;

	for (i = 0; i < n; i++)
		devrt_reg_launch(stub);
	expect(nwritten - before == want_written, what, nwritten - before, want_written);
	if (want_name && nwritten > before && strcmp(written[(nwritten - 1) % 64], want_name)) {
		fprintf(stderr, "reg_test: %s: wrote %s, want %s\n", what, written[(nwritten - 1) % 64], want_name);
		failures++;
	}
}

static char stubs[SEEN_SLOTS * 2]; /* addresses to use as host stubs */

static void *other_thread(void *arg)
{
	(void)arg;
	/* Written already by the main thread: this thread's cache is empty,
	 * the table answers. */
	launches(&stubs[1], 3, 0, NULL, "another thread, stub already written");
	return NULL;
}

int main(void)
{
	pthread_t th;
	int i;

	keep(&stubs[0], "a");
	keep(&stubs[1], "b");
	launches(&stubs[0], 5, 1, "a", "first launches of a");
	launches(&stubs[1], 1, 1, "b", "first launch of b");
	launches(&stubs[0], 5, 0, NULL, "later launches of a");
	/* Stubs that share a cache slot with a: a is looked up in the table
	 * again, and still not written twice. */
	for (i = 0; i < (int)sizeof(stubs); i++) {
		char name[8];

		snprintf(name, sizeof(name), "s%d", i);
		if (i > 1)
			keep(&stubs[i], name);
	}
	for (i = 2; i < (int)sizeof(stubs); i++)
		launches(&stubs[i], 2, 1, NULL, "first launches of each other stub");
	launches(&stubs[0], 2, 0, NULL, "a after its cache slot was taken");
	/* Launched unregistered (CUDA 13's cudaKernel_t handles never are),
	 * then registered: written at the next launch. */
	{
		static char late;

		launches(&late, 3, 0, NULL, "launches of an unregistered handle");
		keep(&late, "late");
		launches(&late, 3, 1, "late", "launches once registered");
	}
	/* Registered again: the new record, at the next launch only. */
	keep(&stubs[0], "a2");
	launches(&stubs[0], 3, 1, "a2", "launches of a registered again");
	/* The ring refuses: written at the next launch. */
	keep(&stubs[1], "b2");
	refuse = 1;
	launches(&stubs[1], 1, 0, NULL, "b2 refused by the ring");
	launches(&stubs[1], 2, 1, "b2", "b2 at the next launch");
	pthread_create(&th, NULL, other_thread, NULL);
	pthread_join(th, NULL);
	/* Fork: every record again, once. */
	devrt_reg_fork_child();
	launches(&stubs[0], 2, 1, "a2", "a in the forked child");
	launches(&stubs[1], 2, 1, "b2", "b in the forked child");
	if (failures) {
		fprintf(stderr, "reg_test: %d failures\n", failures);
		return 1;
	}
	return 0;
}
