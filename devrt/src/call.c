// SPDX-License-Identifier: Apache-2.0
/*
 * call.c - what every wrapper does around the real call.
 *
 * devrt_begin decides whether the call is reported and captures what the
 * uprobe's entry program captures (bpf/cuda.bpf.c): the integer arguments
 * in ABI order, stack arguments 7-9 for GPUEXT_CK_STACK, the launch
 * configuration or copy shape behind the first argument.  devrt_end adds
 * what the return program adds: the end time, the result, the value behind
 * the out argument, the name, and writes one record.  Both sources write
 * the same bytes, so the collector decodes them with one decoder; the
 * differences are the source (GPUEXT_SOURCE_DEVRT), corr (devrt's call
 * number), cgroup_id (0: the collector knows the pid's cgroup), the out
 * value, which devrt reads only after a successful call (a failed call may
 * leave a pointer the driver never checked, which devrt must not touch),
 * and, while device probes are in, a launch's device (aux.launch.device).
 */
#include <stddef.h>
#include <string.h>

#include "devrt.h"
#include "inject.h"

/* devrt_begin writes the record's parts in order: devrt_syms' head word
 * (kind, api, source, flags), pid and tid, the times to corr, args, out
 * and aux; together they are the whole record. */
_Static_assert(offsetof(struct gpuext_event, api) == 2 &&
	       offsetof(struct gpuext_event, source) == 4 &&
	       offsetof(struct gpuext_event, flags) == 6 &&
	       offsetof(struct gpuext_event, pid) == 8 &&
	       offsetof(struct gpuext_event, tid) == 12 &&
	       offsetof(struct gpuext_event, start_ns) == 16 &&
	       offsetof(struct gpuext_event, out) ==
		       offsetof(struct gpuext_event, args) + 8 * GPUEXT_NARGS,
	       "the record's layout devrt_begin writes");

/* Off, or not started: start, or count a call devrt let pass. */
static __attribute__((noinline)) int begin_slow(void)
{
	int st = __atomic_load_n(&devrt.state, __ATOMIC_ACQUIRE);

	if (st == DEVRT_UNINIT || st == DEVRT_STARTING)
		return devrt_start();
	if (st == DEVRT_OFF)
		devrt_ring_drop(GPUEXT_RDROP_DISABLED);
	return 0;
}

/* Reads the struct behind the first argument, as the entry probe does. */
static void read_aux(struct gpuext_event *e, __u64 ck)
{
	const char *p = (const char *)(uintptr_t)e->args[0];

	if (!(ck & (GPUEXT_CK_LAUNCHCFG | GPUEXT_CK_MEMCPY2D | GPUEXT_CK_MEMCPY3D)))
		return;
	if (!p) {
		e->flags |= GPUEXT_F_READ_FAULT;
		return;
	}
	if (ck & GPUEXT_CK_LAUNCHCFG) {
		/* CUlaunchConfig starts with the 40 bytes of gpuext_launch_aux. */
		memcpy(&e->aux.launch, p, sizeof(e->aux.launch));
	} else if (ck & GPUEXT_CK_MEMCPY2D) {
		const CUDA_MEMCPY2D *c = (const void *)p;

		e->aux.copy.width_bytes = c->WidthInBytes;
		e->aux.copy.height = c->Height;
		e->aux.copy.depth = 1;
		e->aux.copy.src_type = (__u32)c->srcMemoryType;
		e->aux.copy.dst_type = (__u32)c->dstMemoryType;
	} else {
		const CUDA_MEMCPY3D *c = (const void *)p;

		e->aux.copy.width_bytes = c->WidthInBytes;
		e->aux.copy.height = c->Height;
		e->aux.copy.depth = c->Depth;
		e->aux.copy.src_type = (__u32)c->srcMemoryType;
		e->aux.copy.dst_type = (__u32)c->dstMemoryType;
	}
	e->flags |= GPUEXT_F_AUX_VALID;
}

/*
 * The call number: unique in the ring, increasing in each thread.  Threads
 * take blocks of DEVRT_CORR_BLOCK numbers, so a call makes no atomic
 * operation on a line all threads share (PyTorch launches from its main
 * thread and autograd's): numbers are not in call order across threads, and
 * a block a thread does not finish leaves a gap.
 */
static __u32 next_corr(struct devrt_thread *t)
{
	if (unlikely(t->corr_next == t->corr_end)) {
		__u32 end = __atomic_add_fetch(&devrt.corr, DEVRT_CORR_BLOCK,
					       __ATOMIC_RELAXED);

		t->corr_next = end - DEVRT_CORR_BLOCK;
		t->corr_end = end;
		/* 0 means "no call number" (the uprobes). */
		if (!t->corr_next)
			t->corr_next = 1;
	}
	return t->corr_next++;
}

/*
 * A timestamp for one of the thread's records, never before its previous
 * one: a new TSC conversion, or a read that falls back to clock_gettime
 * while another thread measures (clock.c), may differ from the conversion
 * before by tens of ns, and one thread's records must keep their order.
 */
static inline __u64 thread_now(struct devrt_thread *t)
{
	__u64 v = devrt_now();

	if (unlikely(v < t->last_ns))
		v = t->last_ns;
	t->last_ns = v;
	return v;
}

/*
 * Returns 1 if the call is reported (the wrapper then calls the real
 * function and devrt_end), 0 if the wrapper must just pass it through.
 * args are the call's arguments as the registers and stack hold them.
 */
DEVRT_HOT int devrt_begin(struct devrt_call *c, enum devrt_sym id,
			  const __u64 *args, unsigned int nargs)
{
	struct devrt_thread *t = &devrt_t;
	const struct devrt_sym_info *s = &devrt_syms[id];
	struct gpuext_event *e = &c->ev;
	struct gpuext_ctl *ctl;
	unsigned int i, n;

	if (unlikely(t->busy))
		return 0;
	if (unlikely(__atomic_load_n(&devrt.state, __ATOMIC_ACQUIRE) !=
		     DEVRT_ACTIVE) && !begin_slow())
		return 0;
	ctl = devrt.ctl;
	if (unlikely(t->epoch != __atomic_load_n(&devrt.epoch, __ATOMIC_RELAXED) ||
		     t->gen != __atomic_load_n(&ctl->generation, __ATOMIC_RELAXED)))
		devrt_ctl_refresh(t);
	if (!(t->classes & s->cls))
		return 0;
	/* The driver launch or copy that a reported runtime launch or copy
	 * makes: the runtime call's record stands for it (it still brackets
	 * the driver call when timed), unless the nested class asks for both.
	 * One record per PyTorch launch instead of two. */
	if (t->outer && (s->df & (DF_KERNEL | DF_COPY)) &&
	    !(t->classes & GPUEXT_CLASS_NESTED)) {
		devrt_timing_inner(t->outer, s, args, nargs);
		return 0;
	}

	/* The record, every byte written once: kind, api, source and flags
	 * in one word (devrt_syms' head), the times and result zeroed until
	 * they are known, the argument words (registers: 6; with
	 * GPUEXT_CK_STACK the next 3 too), out and aux zeroed.  A memset of
	 * the whole record and a copy loop were 70 of this function's 190
	 * instructions on a launch. */
	memcpy(e, &s->head, sizeof(s->head));
	e->pid = (__u32)devrt.pid;
	e->tid = likely(t->tid) ? t->tid : devrt_tid();
	memset(&e->start_ns, 0, offsetof(struct gpuext_event, args) -
				 offsetof(struct gpuext_event, start_ns));
	n = s->ck & GPUEXT_CK_STACK ? GPUEXT_NARGS : 6;
	if (likely(n == GPUEXT_NARGS && nargs >= GPUEXT_NARGS)) {
		memcpy(e->args, args, sizeof(e->args));
	} else {
		if (n > nargs)
			n = nargs;
		memset(e->args, 0, sizeof(e->args));
		for (i = 0; i < n; i++)
			e->args[i] = args[i];
	}
	memset(&e->out, 0, sizeof(*e) - offsetof(struct gpuext_event, out));
	read_aux(e, s->ck);
	if ((s->df & DF_KERNEL) &&
	    unlikely(__atomic_load_n(&devrt_inj_live, __ATOMIC_RELAXED)))
		devrt_inject_launch_device(e);
	e->corr = next_corr(t);
	c->sym = s;
	c->pair = NULL;
	c->outer = t->outer;
	e->start_ns = thread_now(t);
	if (s->df & (DF_KERNEL | DF_COPY)) {
		/* A runtime launch times the driver launch it makes: with
		 * the nested class the inner call is reported, but not timed
		 * on its own. */
		if (c->outer)
			devrt_timing_inner(c->outer, s, e->args, GPUEXT_NARGS);
		else if (unlikely(devrt_timing_due(t, e->start_ns)))
			devrt_timing_begin(c, t);
		t->outer = c;
	}
	return 1;
}

/* The name argument, as bpf_probe_read_user_str would copy it. */
static void copy_name(struct gpuext_named_event *ne, const char *name)
{
	size_t n;

	memset(ne->name, 0, sizeof(ne->name));
	if (!name) {
		ne->ev.flags |= GPUEXT_F_READ_FAULT;
		return;
	}
	n = strnlen(name, GPUEXT_NAME_MAX - 1);
	memcpy(ne->name, name, n);
	if (n == GPUEXT_NAME_MAX - 1)
		ne->ev.flags |= GPUEXT_F_NAME_TRUNC;
}

/* What devrt_end adds to the record, short of writing it. */
static DEVRT_HOT void finish(struct devrt_call *c, CUresult r)
{
	const struct devrt_sym_info *s = c->sym;
	struct gpuext_event *e = &c->ev;
	unsigned int out = (s->ck >> GPUEXT_CK_OUT_SHIFT) & 0xf;

	e->end_ns = thread_now(&devrt_t);
	e->result = r;
	if (c->pair)
		devrt_timing_end(c, r);
	if (s->df & (DF_KERNEL | DF_COPY))
		devrt_t.outer = c->outer;
	if (out && r == CUDA_SUCCESS && e->args[out - 1]) {
		memcpy(&e->out, (const void *)(uintptr_t)e->args[out - 1],
		       sizeof(e->out));
		e->flags |= GPUEXT_F_OUT_VALID;
	}
}

DEVRT_HOT void devrt_end(struct devrt_call *c, CUresult r)
{
	struct gpuext_event *e = &c->ev;
	unsigned int name = (c->sym->ck >> GPUEXT_CK_NAME_SHIFT) & 0xf;

	finish(c, r);
	if (name) {
		struct gpuext_named_event ne;

		ne.ev = *e;
		copy_name(&ne, (const char *)(uintptr_t)e->args[name - 1]);
		devrt_ring_write(&ne, sizeof(ne));
	} else {
		devrt_ring_write(e, sizeof(*e));
	}
	/* After the call's record: the collector links the GPU execution
	 * record to a call it has already seen. */
	if (c->pair)
		devrt_timing_publish(c);
}

/*
 * devrt_end of __cudaRegisterFunction (a named call, never timed): the
 * finished record is kept until the first launch of stub (reg.c), or
 * written now if it cannot be kept.
 */
void devrt_end_register(struct devrt_call *c, const void *stub)
{
	struct gpuext_event *e = &c->ev;
	unsigned int name = (c->sym->ck >> GPUEXT_CK_NAME_SHIFT) & 0xf;
	struct gpuext_named_event ne;

	finish(c, CUDA_SUCCESS);
	ne.ev = *e;
	copy_name(&ne, (const char *)(uintptr_t)e->args[name - 1]);
	if (devrt_reg_keep(stub, &ne))
		devrt_ring_write(&ne, sizeof(ne));
}
