// SPDX-License-Identifier: Apache-2.0
/*
 * reg.c - kernel registration records, written when a launch needs them.
 *
 * __cudaRegisterFunction runs once per kernel when a program or library
 * loads (21,504 times at `import torch` on the H200): one named record
 * each (4 slots) would overflow the ring at once and drop the records that
 * follow.  Its wrapper keeps the finished record instead, by host stub, and
 * the runtime launch of a stub (cudaLaunchKernel[_ptsz],
 * __cudaLaunchKernel[_ptsz] and cudaLaunchKernelExC[_ptsz], the calls that
 * carry one) writes it just before its own record, once.  The record is
 * the one devrt_end would have written at registration (call number, tid,
 * times, name); only pid is the writer's, which differs only in a forked
 * child (see devrt_reg_fork_child).  A stub never launched writes nothing.
 *
 * The table: open addressing, one pointer per slot, filled under a mutex
 * (registration is not a hot path) and never emptied, at most 3/4 full, so
 * a lookup always ends at an empty slot.  Launches look up without a lock
 * (acquire loads); the entry's emitted flag is claimed with a
 * compare-and-swap, so one launch writes the record.  A full table, or no
 * memory, writes the record at registration, as before.
 */
#include <stdlib.h>
#include <string.h>

#include "devrt.h"

#define REG_SLOTS (1U << 16)            /* a power of two */
#define REG_MAX (REG_SLOTS / 4 * 3)     /* entries kept at most */

struct devrt_reg {
	const void *stub;       /* the host stub: the key */
	__u32 emitted;          /* 1: written to this process's ring */
	struct gpuext_event ev; /* the record, as devrt_end finished it */
	char name[];            /* its name, NUL-terminated */
};

static struct devrt_reg *reg_tab[REG_SLOTS];
static __u32 reg_count;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Per thread, the launch handles it found written or not in the table at
 * all (direct-mapped by hash): the launches of a hot kernel skip the table,
 * whose 512 KiB of slots and scattered entries cost cache misses on every
 * launch.  CUDA 13's stubs launch with a cudaKernel_t, never a registered
 * stub, so for PyTorch every lookup misses: the misses are remembered too.
 * Valid while reg_epoch is the one it was filled under: any registration
 * (a new entry, or a new record for a stub) and a fork move it on.
 */
#define SEEN_SLOTS 64
static __u32 reg_epoch = 1;
static DEVRT_TLS const void *seen[SEEN_SLOTS];
static DEVRT_TLS __u32 seen_epoch;

static inline void seen_add(__u32 h, const void *stub, __u32 epoch)
{
	if (seen_epoch != epoch) {
		memset(seen, 0, sizeof(seen));
		seen_epoch = epoch;
	}
	seen[h & (SEEN_SLOTS - 1)] = stub;
}

static inline __u32 reg_hash(const void *stub)
{
	return (__u32)devrt_ptr_mix(stub) & (REG_SLOTS - 1);
}

/*
 * Keeps the registration record ne of stub.  Returns 0, or -1 if it cannot
 * be kept (no stub, no memory, table full): the caller writes it now.  A
 * stub registered again replaces its entry: the newer name is the one
 * launches use.  The entry it replaces stays allocated (a launch may be
 * reading it).
 */
int devrt_reg_keep(const void *stub, const struct gpuext_named_event *ne)
{
	size_t n = strnlen(ne->name, sizeof(ne->name) - 1);
	struct devrt_reg *r, *old;
	__u32 i;

	if (!stub)
		return -1;
	r = malloc(sizeof(*r) + n + 1);
	if (!r)
		return -1;
	r->stub = stub;
	r->emitted = 0;
	r->ev = ne->ev;
	memcpy(r->name, ne->name, n);
	r->name[n] = '\0';
	pthread_mutex_lock(&reg_lock);
	for (i = reg_hash(stub);; i = (i + 1) & (REG_SLOTS - 1)) {
		old = reg_tab[i];
		if (!old) {
			if (reg_count >= REG_MAX) {
				pthread_mutex_unlock(&reg_lock);
				free(r);
				return -1;
			}
			__atomic_store_n(&reg_count, reg_count + 1,
					 __ATOMIC_RELEASE);
			break;
		}
		if (old->stub == stub)
			break;
	}
	__atomic_store_n(&reg_tab[i], r, __ATOMIC_RELEASE);
	/* After the entry: a thread that remembered the stub as written,
	 * or as absent, looks again. */
	__atomic_add_fetch(&reg_epoch, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

/*
 * devrt_reg_launch's stub not in the thread's seen stubs: looks it up, and
 * writes its record if none has been.  Apart, so that the launch that finds
 * the stub seen sets up no frame for the record.
 */
static __attribute__((noinline)) void reg_look(const void *stub, __u32 h,
					       __u32 epoch)
{
	struct gpuext_named_event ne;
	struct devrt_reg *r;
	__u32 i, zero = 0;

	for (i = h;; i = (i + 1) & (REG_SLOTS - 1)) {
		r = __atomic_load_n(&reg_tab[i], __ATOMIC_ACQUIRE);
		if (!r) {
			seen_add(h, stub, epoch);	/* not registered */
			return;
		}
		if (r->stub == stub)
			break;
	}
	if (likely(__atomic_load_n(&r->emitted, __ATOMIC_RELAXED))) {
		seen_add(h, stub, epoch);
		return;
	}
	if (!__atomic_compare_exchange_n(&r->emitted, &zero, 1, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	ne.ev = r->ev;
	ne.ev.pid = (__u32)devrt.pid;
	memset(ne.name, 0, sizeof(ne.name));
	memcpy(ne.name, r->name, strlen(r->name));
	if (devrt_ring_write(&ne, sizeof(ne)))
		__atomic_store_n(&r->emitted, 0, __ATOMIC_RELAXED);
	else
		seen_add(h, stub, epoch);
}

/*
 * A reported runtime launch of stub: writes the stub's registration record
 * if no launch has yet.  No lock; after the first launch of a stub, a hash
 * and a look at the thread's seen stubs, or a probe or two of the table.
 * A record the full ring dropped is tried again at the stub's next launch.
 */
DEVRT_HOT void devrt_reg_launch(const void *stub)
{
	__u32 h, epoch;

	if (!__atomic_load_n(&reg_count, __ATOMIC_RELAXED))
		return;
	h = reg_hash(stub);
	epoch = __atomic_load_n(&reg_epoch, __ATOMIC_ACQUIRE);
	if (likely(seen_epoch == epoch && seen[h & (SEEN_SLOTS - 1)] == stub))
		return;
	reg_look(stub, h, epoch);
}

/*
 * After fork, in the child (one thread): the table is inherited, but the
 * child writes a ring of its own, which has none of the records: each is
 * written again at the stub's first launch in the child, with its pid.  A
 * lock a parent's thread held at fork is not held in the child.
 */
void devrt_reg_fork_child(void)
{
	__u32 i;

	pthread_mutex_init(&reg_lock, NULL);
	reg_epoch++;	/* the child's ring has none of the records */
	if (!reg_count)
		return;
	for (i = 0; i < REG_SLOTS; i++)
		if (reg_tab[i])
			reg_tab[i]->emitted = 0;
}
