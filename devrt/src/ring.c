// SPDX-License-Identifier: Apache-2.0
/*
 * ring.c - the per-process shared-memory ring and its control page.
 *
 * The file <dir>/gpuext-devrt-<pid>-<created_ns>.ring holds a header page,
 * the control page the collector writes, and `capacity` slots of 192
 * bytes.  Producers are any threads of this process; the consumer is the
 * collector.  The protocol (gpuext_abi.h) is a bounded MPSC queue with a
 * sequence number per slot, after Vyukov: a producer claims positions with
 * one compare-and-swap of head, copies the record in, and commits it by
 * storing each slot's sequence number, the first slot last.  No lock,
 * allocation or system call: a full ring drops the record and counts it.
 *
 * created_ns in the name makes it unique across exec (same pid, new
 * image) and across pid reuse.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devrt.h"

/* A producer gives up claiming after this many failed rounds: only a
 * consumer that broke the protocol keeps sequence numbers from settling. */
#define CLAIM_ROUNDS 100000

/* pidns_ino - N of /proc/self/ns/pid's "pid:[N]": the collector tells by
 * it which process of the file name's pid the ring is, where containers
 * share the directory (each has a pid 1). 0 when unreadable. */
static __u64 pidns_ino(void)
{
	char buf[64];
	ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
	unsigned long long v;
	char *end;

	if (n <= 6 || strncmp(buf, "pid:[", 5) != 0 || buf[5] < '0' || buf[5] > '9')
		return 0;
	buf[n] = '\0';
	v = strtoull(buf + 5, &end, 10);
	return end[0] == ']' && end[1] == '\0' ? v : 0;
}

/* Field 22 of /proc/self/stat: the start time in clock ticks after boot. */
static __u64 start_time(void)
{
	char buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd, field;

	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* comm (field 2) may hold spaces and parentheses: skip past the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

int devrt_ring_create(void)
{
	const struct devrt_config *c = &devrt.cfg;
	struct gpuext_ring_hdr *h;
	struct gpuext_ctl *ctl;
	struct gpuext_slot *slots;
	__u64 created = devrt_now(), i;
	size_t size;
	void *mem;
	int fd;

	snprintf(devrt.path, sizeof(devrt.path), "%s/gpuext-devrt-%d-%llu.ring",
		 c->dir, (int)devrt.pid, (unsigned long long)created);
	if (c->faults & DEVRT_FAULT_RING) {
		devrt_debug("%s: not created (fault injected)", devrt.path);
		return -1;
	}
	size = 2 * GPUEXT_RING_PAGE + (size_t)c->ring_slots * GPUEXT_SLOT_SIZE;
	/* Only this user and root (the collector) may read the calls. */
	fd = open(devrt.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0) {
		devrt_debug("%s: %s", devrt.path, strerror(errno));
		return -1;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		devrt_debug("%s: ftruncate: %s", devrt.path, strerror(errno));
		goto fail;
	}
	/* Populated now: a record never waits for a page fault (a kernel
	 * entry and a zeroed page) on the first lap. */
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		   fd, 0);
	if (mem == MAP_FAILED) {
		devrt_debug("%s: mmap: %s", devrt.path, strerror(errno));
		goto fail;
	}
	close(fd);

	h = mem;
	ctl = (struct gpuext_ctl *)((char *)mem + GPUEXT_RING_PAGE);
	slots = (struct gpuext_slot *)((char *)mem + 2 * GPUEXT_RING_PAGE);
	/* A tmpfs file starts zeroed: only non-zero fields are written. */
	for (i = 0; i < c->ring_slots; i++)
		slots[i].seq = i;
	ctl->classes = c->classes;
	ctl->sample_every = c->sample_every;
	ctl->sample_gap_us = c->sample_gap_us;
	__atomic_store_n(&ctl->magic, GPUEXT_CTL_MAGIC, __ATOMIC_RELAXED);
	h->abi_version = GPUEXT_ABI_VERSION;
	h->slot_size = GPUEXT_SLOT_SIZE;
	h->capacity = c->ring_slots;
	h->pid = (__u32)devrt.pid;
	h->start_time = start_time();
	h->pidns_ino = pidns_ino();
	h->created_ns = created;
	h->ctl_offset = GPUEXT_RING_PAGE;
	h->data_offset = 2 * GPUEXT_RING_PAGE;
	h->state = GPUEXT_RING_ACTIVE;
	snprintf(h->version, sizeof(h->version), "%s", DEVRT_VERSION);
	/* The magic last: a collector that sees it sees everything above. */
	__atomic_store_n(&h->magic, GPUEXT_RING_MAGIC, __ATOMIC_RELEASE);

	devrt.slots = slots;
	devrt.ctl = ctl;
	devrt.mask = c->ring_slots - 1;
	devrt.map_size = size;
	devrt.ctl_snapshot = devrt_ctl_pack(c->classes, c->sample_every,
					    c->sample_gap_us);
	/* A record's count is at least 1: disable-after=0 is 1. */
	devrt.disable_after = !(c->faults & DEVRT_FAULT_DISABLE) ? 0 :
			      c->disable_after ? c->disable_after : 1;
	__atomic_add_fetch(&devrt.epoch, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&devrt.hdr, h, __ATOMIC_RELEASE);
	devrt_debug("reporting into %s (%u slots)", devrt.path, c->ring_slots);
	return 0;
fail:
	close(fd);
	unlink(devrt.path);
	return -1;
}

/* After fork, in the child: the parent's ring is not ours to write. */
void devrt_ring_forget(void)
{
	void *mem = devrt.hdr;

	devrt.hdr = NULL;
	devrt.ctl = NULL;
	devrt.slots = NULL;
	if (mem)
		munmap(mem, devrt.map_size);
	devrt.path[0] = '\0';
}

void devrt_ring_drop(enum gpuext_ring_drop why)
{
	struct gpuext_ring_hdr *h = devrt.hdr;

	if (h)
		__atomic_fetch_add(&h->drops[why], 1, __ATOMIC_RELAXED);
}

/*
 * Copies k bytes 16 at a time.  A plain memcpy of a length known only here
 * compiled, under the Makefile's string strategy, to 64-byte vector steps
 * and a byte loop for the rest: a 168-byte event was 40 byte loads and
 * stores, 280 instructions of a reported call's ~830, each store an entry
 * the store buffer holds while the slot's cold lines come in.  Records are
 * multiples of 8 bytes (gpuext_abi.h): ten 16-byte moves and one 8-byte.
 */
static inline void copy_record(void *dst, const void *src, __u32 k)
{
	char *d = dst;
	const char *s = src;

#pragma GCC unroll 11
	for (; k >= 16; k -= 16, d += 16, s += 16)
		memcpy(d, s, 16);
	if (k >= 8) {
		memcpy(d, s, 8);
		k -= 8, d += 8, s += 8;
	}
	while (k--)
		*d++ = *s++;
}

_Static_assert(sizeof(struct gpuext_event) <= GPUEXT_SLOT_PAYLOAD,
	       "a call's record fits one slot");

/* The record of n slots at pos: copied, then committed.  Inlined where n
 * and len are constants (a call's record: one slot, a known size). */
static inline __attribute__((always_inline)) void
write_slots(struct gpuext_slot *slots, __u64 mask, __u64 pos, __u32 n,
	    const char *src, __u32 len)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		struct gpuext_slot *s = &slots[(pos + i) & mask];
		__u32 off = i * GPUEXT_SLOT_PAYLOAD;
		__u32 k = len - off < GPUEXT_SLOT_PAYLOAD ? len - off :
							   GPUEXT_SLOT_PAYLOAD;

		copy_record(s->data, src + off, k);
	}
	slots[pos & mask].len = len;
	slots[pos & mask].nslots = (__u16)n;
	/* Commit: the continuation slots first, the first slot last, so a
	 * consumer that sees the first complete sees the whole record. */
	for (i = n; i-- > 0;)
		__atomic_store_n(&slots[(pos + i) & mask].seq, pos + i + 1,
				 __ATOMIC_RELEASE);
}

/* Any other record (registrations, GPU execution, injections), apart. */
static __attribute__((noinline)) void
write_slots_any(struct gpuext_slot *slots, __u64 mask, __u64 pos, __u32 n,
		const char *src, __u32 len)
{
	write_slots(slots, mask, pos, n, src, len);
}

/*
 * Writes one record of len bytes (at most 8 slots).  Returns 0, or -1 if
 * it was dropped (the ring is full: counted; or devrt is off).
 */
DEVRT_HOT int devrt_ring_write(const void *rec, __u32 len)
{
	struct gpuext_ring_hdr *h = devrt.hdr;
	struct gpuext_slot *slots = devrt.slots;
	__u64 mask = devrt.mask, pos, last, seq, i;
	__u32 n = (len + GPUEXT_SLOT_PAYLOAD - 1) / GPUEXT_SLOT_PAYLOAD;
	const char *src = rec;
	int rounds = 0;

	if (unlikely(!h || __atomic_load_n(&devrt.state, __ATOMIC_RELAXED) !=
			   DEVRT_ACTIVE))
		return -1;
	pos = __atomic_load_n(&h->head, __ATOMIC_RELAXED);
	for (;;) {
		__s64 diff;

		last = pos + n - 1;
		seq = __atomic_load_n(&slots[last & mask].seq, __ATOMIC_ACQUIRE);
		diff = (__s64)(seq - last);
		if (diff == 0) {
			/* Free (the consumer released it last lap): claim
			 * pos..last.  On failure pos is the new head. */
			if (__atomic_compare_exchange_n(&h->head, &pos, pos + n,
							1, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED))
				break;
		} else if (diff < 0) {
			/* Not yet consumed: full. */
			__atomic_fetch_add(&h->drops[GPUEXT_RDROP_FULL], 1,
					   __ATOMIC_RELAXED);
			return -1;
		} else {
			/* Another producer took it: look at head again. */
			pos = __atomic_load_n(&h->head, __ATOMIC_RELAXED);
		}
		if (unlikely(++rounds > CLAIM_ROUNDS)) {
			devrt_disable(DEVRT_REASON_RING_STUCK);
			return -1;
		}
	}

	/* Counted here, between the claim and the copy: a locked add right
	 * after the slot stores would wait for the cache lines the consumer
	 * holds (it read them last lap); here the store buffer is empty and
	 * the copy that follows drains while the program goes on. */
	i = __atomic_add_fetch(&h->records, 1, __ATOMIC_RELAXED);
	if (unlikely(devrt.disable_after) && i >= devrt.disable_after)
		devrt_disable(DEVRT_REASON_INJECTED); /* after this record */
	if (likely(len == sizeof(struct gpuext_event)))
		/* A call's record, nearly every record. */
		write_slots(slots, mask, pos, 1, src, sizeof(struct gpuext_event));
	else
		write_slots_any(slots, mask, pos, n, src, len);
	/* The next record's slot was last written by the consumer (it frees
	 * slots by writing their sequence numbers): ask for its lines now,
	 * for writing, so that they have moved to this core by the next call
	 * instead of stalling its claim. */
	{
		const char *next = (const char *)&slots[(pos + n) & mask];

		devrt_prefetchw(next);
		devrt_prefetchw(next + 64);
		devrt_prefetchw(next + 128);
	}
	return 0;
}

/*
 * The control page is written by the collector as a seqlock (generation
 * odd while it writes).  Each thread keeps the values with the generation
 * they came from and comes here only when the generation moved: it takes a
 * consistent copy if no write is in progress, else keeps using the last
 * consistent copy any thread took.
 */
void devrt_ctl_refresh(struct devrt_thread *t)
{
	struct gpuext_ctl *ctl = devrt.ctl;
	__u32 g1, g2, classes, sample, gap;
	__u64 snap;

	g1 = __atomic_load_n(&ctl->generation, __ATOMIC_ACQUIRE);
	if (!(g1 & 1)) {
		classes = __atomic_load_n(&ctl->classes, __ATOMIC_RELAXED);
		sample = __atomic_load_n(&ctl->sample_every, __ATOMIC_RELAXED);
		gap = __atomic_load_n(&ctl->sample_gap_us, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		g2 = __atomic_load_n(&ctl->generation, __ATOMIC_RELAXED);
		if (g1 == g2) {
			snap = devrt_ctl_pack(classes, sample, gap);
			__atomic_store_n(&devrt.ctl_snapshot, snap,
					 __ATOMIC_RELAXED);
			t->epoch = __atomic_load_n(&devrt.epoch, __ATOMIC_RELAXED);
			goto set;
		}
	}
	/* A write is in progress: the last consistent values, and look
	 * again at the next call. */
	snap = __atomic_load_n(&devrt.ctl_snapshot, __ATOMIC_RELAXED);
	t->epoch = 0;
set:
	t->gen = g1;
	t->classes = (__u32)(snap >> 56);
	t->gap_us = (__u32)(snap >> 32) & DEVRT_GAP_MASK;
	t->sample_every = (__u32)snap;
	if (t->sample_every && t->countdown >= t->sample_every)
		t->countdown = t->sample_every - 1;
}
