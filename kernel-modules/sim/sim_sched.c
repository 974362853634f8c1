// SPDX-License-Identifier: GPL-2.0-only
/*
 * sim_sched.c - a GPU runlist scheduler with the gpu_ext scheduling hooks.
 *
 * Each task is a channel group (TSG). SCHED_RUN first calls task_init for
 * every task (timeslice = the config's default, interleave DEFAULT), then
 * task_bind with what init decided; a rejected bind keeps the task off the
 * runlist (its jobs are dropped). It then runs all queued jobs in simulated
 * nanoseconds and finally calls task_destroy for every task.
 *
 * The model, deterministic and exact:
 *  - one runlist; a task appears in it once per round for interleave
 *    DEFAULT or LOW, twice for MEDIUM, three times for HIGH. The runlist is
 *    built in passes: pass r lists, in task order, every task whose level
 *    is above r (tasks A=HIGH, B, C: A B C A A);
 *  - the scheduler walks the runlist round-robin. An entry whose task has no
 *    submitted job is skipped at no cost; when no task has one, time jumps
 *    to the next submit;
 *  - switching to a different task than the one that ran last costs
 *    switch_ns (counted in switches);
 *  - a task runs its jobs FIFO for up to its timeslice, job after job while
 *    they are submitted; it yields early when it has none left;
 *  - per task: latency = finish - submit, wait = first run - submit (mean
 *    and nearest-rank p99), busy = time it ran.
 */
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "sim.h"

struct sim_sched {
	struct gpuext_sim_sched_config cfg;
	struct gpuext_sim_job *jobs;
	u32 njobs;
	u64 total_ns;
};

/* Per-task state of one run. */
struct sim_task_run {
	u32 *queue;    /* job indexes in submit order */
	u32 qlen, qhead;
	u64 left_ns;   /* of the job at qhead */
	bool started;  /* the job at qhead has run */
	u64 *latency;  /* per completed job */
	u64 *wait;
	u64 timeslice_ns;
	struct gpuext_sim_task_result *res;
};

int sim_sched_check_config(const struct gpuext_sim_sched_config *cfg)
{
	u32 i;

	if (cfg->ntasks == 0 || cfg->ntasks > GPUEXT_SIM_MAX_TASKS || cfg->_pad)
		return -EINVAL;
	if (cfg->switch_ns > GPUEXT_SIM_MAX_SWITCH_NS)
		return -EINVAL;
	if (cfg->default_timeslice_us < GPUEXT_TIMESLICE_MIN_US ||
	    cfg->default_timeslice_us > GPUEXT_TIMESLICE_MAX_US)
		return -EINVAL;
	for (i = 0; i < cfg->ntasks; i++) {
		const struct gpuext_sim_task *t = &cfg->tasks[i];

		if (t->pid == 0 || t->_pad || strnlen(t->comm, sizeof(t->comm)) == sizeof(t->comm))
			return -EINVAL;
	}
	return 0;
}

struct sim_sched *sim_sched_new(const struct gpuext_sim_sched_config *cfg)
{
	struct sim_sched *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (s)
		s->cfg = *cfg;
	return s;
}

void sim_sched_free(struct sim_sched *s)
{
	if (!s)
		return;
	kvfree(s->jobs);
	kfree(s);
}

int sim_sched_queue(struct sim_sched *s, const struct gpuext_sim_job *jobs, size_t n)
{
	struct gpuext_sim_job *grown;
	u64 total = s->total_ns;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct gpuext_sim_job *j = &jobs[i];

		if (j->task >= s->cfg.ntasks || j->_pad || j->submit_ns > GPUEXT_SIM_MAX_SUBMIT_NS ||
		    j->duration_ns == 0 || j->duration_ns > GPUEXT_SIM_MAX_JOB_NS)
			return -EINVAL;
		total += j->duration_ns;
	}
	if (s->njobs + n > GPUEXT_SIM_MAX_JOBS || total > GPUEXT_SIM_MAX_TOTAL_NS)
		return -ENOSPC;
	grown = kvmalloc_array(s->njobs + n, sizeof(*grown), GFP_KERNEL);
	if (!grown)
		return -ENOMEM;
	if (s->njobs)
		memcpy(grown, s->jobs, s->njobs * sizeof(*grown));
	memcpy(grown + s->njobs, jobs, n * sizeof(*grown));
	kvfree(s->jobs);
	s->jobs = grown;
	s->njobs += n;
	s->total_ns = total;
	return 0;
}

static void sim_sched_ctx(const struct sim_sched *s, u32 i, u32 hook, u64 timeslice_us,
			  u32 interleave, struct gpuext_sched_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->tsg_id = i + 1;
	ctx->timeslice_us = timeslice_us;
	ctx->pid = s->cfg.tasks[i].pid;
	ctx->hook = hook;
	ctx->channel_count = 1;
	ctx->interleave = interleave;
	memcpy(ctx->comm, s->cfg.tasks[i].comm, sizeof(ctx->comm));
}

static int sim_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Mean and nearest-rank p99 of v[0..n); sorts v. */
static void sim_stats(u64 *v, u32 n, u64 *mean, u64 *p99)
{
	u64 sum = 0;
	u32 i;

	*mean = *p99 = 0;
	if (!n)
		return;
	for (i = 0; i < n; i++)
		sum += v[i];
	*mean = div_u64(sum, n);
	sort(v, n, sizeof(*v), sim_cmp_u64, NULL);
	/* rank = ceil(0.99 n) */
	*p99 = v[DIV_ROUND_UP(n * 99, 100) - 1];
}

static const struct gpuext_sim_job *sim_head(const struct sim_sched *s,
					     const struct sim_task_run *t)
{
	return t->qhead < t->qlen ? &s->jobs[t->queue[t->qhead]] : NULL;
}

/* Runs task x from now for up to its timeslice; returns the new now. */
static u64 sim_run_slice(const struct sim_sched *s, struct sim_task_run *t, u64 now)
{
	u64 end = now + t->timeslice_ns;
	const struct gpuext_sim_job *j;

	while (now < end && (j = sim_head(s, t)) && j->submit_ns <= now) {
		u64 run;

		if (!t->started) {
			t->wait[t->res->jobs] = now - j->submit_ns;
			t->started = true;
		}
		run = min(t->left_ns, end - now);
		now += run;
		t->left_ns -= run;
		t->res->busy_ns += run;
		if (t->left_ns == 0) {
			t->latency[t->res->jobs] = now - j->submit_ns;
			t->res->jobs++;
			t->qhead++;
			t->started = false;
			j = sim_head(s, t);
			t->left_ns = j ? j->duration_ns : 0;
		}
	}
	return now;
}

static int sim_cmp_job(const void *a, const void *b, const void *priv)
{
	const struct gpuext_sim_job *jobs = priv;
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	if (jobs[x].submit_ns != jobs[y].submit_ns)
		return jobs[x].submit_ns < jobs[y].submit_ns ? -1 : 1;
	return x < y ? -1 : x > y;
}

int sim_sched_run(struct sim_sched *s, struct gpuext_sim_sched_result *res)
{
	u32 ntasks = s->cfg.ntasks, i, k, len = 0, pos = 0, left = 0;
	struct sim_task_run *tr;
	u32 runlist[GPUEXT_SIM_MAX_TASKS * 3];
	u32 *order = NULL;
	u64 now = 0, iter = 0;
	int last = -1, err = -ENOMEM;

	tr = kcalloc(ntasks, sizeof(*tr), GFP_KERNEL);
	order = kvmalloc_array(max(s->njobs, 1U), sizeof(*order), GFP_KERNEL);
	if (!tr || !order)
		goto out;
	res->ntasks = ntasks;

	/* Jobs in submit order (index order among equals), split per task. */
	for (i = 0; i < s->njobs; i++) {
		order[i] = i;
		tr[s->jobs[i].task].qlen++;
	}
	sort_r(order, s->njobs, sizeof(*order), sim_cmp_job, NULL, s->jobs);
	for (k = 0; k < ntasks; k++) {
		u32 n = max(tr[k].qlen, 1U);

		tr[k].queue = kvmalloc_array(n, sizeof(u32), GFP_KERNEL);
		tr[k].latency = kvmalloc_array(n, sizeof(u64), GFP_KERNEL);
		tr[k].wait = kvmalloc_array(n, sizeof(u64), GFP_KERNEL);
		if (!tr[k].queue || !tr[k].latency || !tr[k].wait)
			goto out;
		tr[k].qlen = 0;
		tr[k].res = &res->tasks[k];
	}
	for (i = 0; i < s->njobs; i++) {
		struct sim_task_run *t = &tr[s->jobs[order[i]].task];

		t->queue[t->qlen++] = order[i];
	}

	/* Channel groups are created and bound through gpu_ext. */
	for (k = 0; k < ntasks; k++) {
		struct gpu_ext_sched_decision d;
		struct gpuext_sched_ctx ctx;
		struct gpuext_sim_task_result *r = &res->tasks[k];

		sim_sched_ctx(s, k, GPUEXT_HOOK_TASK_INIT, s->cfg.default_timeslice_us,
			      GPUEXT_INTERLEAVE_DEFAULT, &ctx);
		gpu_ext_sched_task_init(&ctx, &d);
		sim_sched_ctx(s, k, GPUEXT_HOOK_TASK_BIND, d.timeslice_us, d.interleave, &ctx);
		gpu_ext_sched_task_bind(&ctx, &d);
		r->pid = s->cfg.tasks[k].pid;
		/* gpu_ext validated these; the simulator bounds them anyway. */
		r->timeslice_us = clamp_t(u64, d.timeslice_us, GPUEXT_TIMESLICE_MIN_US,
					  GPUEXT_TIMESLICE_MAX_US);
		r->interleave = min_t(u32, d.interleave, GPUEXT_INTERLEAVE_HIGH);
		r->rejected = d.reject;
		tr[k].timeslice_ns = r->timeslice_us * NSEC_PER_USEC;
		if (d.reject) {
			r->dropped = tr[k].qlen;
			continue;
		}
		left += tr[k].qlen;
		if (tr[k].qlen)
			tr[k].left_ns = s->jobs[tr[k].queue[0]].duration_ns;
	}
	for (i = 0; i < 3; i++)
		for (k = 0; k < ntasks; k++) {
			u32 level = max_t(u32, res->tasks[k].interleave, GPUEXT_INTERLEAVE_LOW);

			if (!res->tasks[k].rejected && level > i)
				runlist[len++] = k;
		}

	while (left > 0) {
		const struct gpuext_sim_job *j;
		u64 next = U64_MAX;
		u32 n, done;

		/* The next runlist entry with a submitted job. */
		for (n = 0; n < len; n++) {
			j = sim_head(s, &tr[runlist[(pos + n) % len]]);
			if (j && j->submit_ns <= now)
				break;
			if (j)
				next = min(next, j->submit_ns);
		}
		if (n == len) {
			now = next; /* idle until the next submit */
			continue;
		}
		k = runlist[(pos + n) % len];
		pos = (pos + n + 1) % len;
		if (last >= 0 && last != k) {
			now += s->cfg.switch_ns;
			res->switches++;
		}
		last = k;
		done = tr[k].res->jobs;
		now = sim_run_slice(s, &tr[k], now);
		left -= tr[k].res->jobs - done;
		if ((++iter & 1023) == 0)
			cond_resched();
	}
	res->makespan_ns = now;

	for (k = 0; k < ntasks; k++) {
		struct gpuext_sim_task_result *r = &res->tasks[k];
		struct gpuext_sched_ctx ctx;

		sim_stats(tr[k].latency, r->jobs, &r->mean_latency_ns, &r->p99_latency_ns);
		sim_stats(tr[k].wait, r->jobs, &r->mean_wait_ns, &r->p99_wait_ns);
		sim_sched_ctx(s, k, GPUEXT_HOOK_TASK_DESTROY, r->timeslice_us, r->interleave, &ctx);
		gpu_ext_sched_task_destroy(&ctx);
	}
	/* A run consumes the queued jobs. */
	kvfree(s->jobs);
	s->jobs = NULL;
	s->njobs = 0;
	s->total_ns = 0;
	err = 0;
out:
	if (tr)
		for (k = 0; k < ntasks; k++) {
			kvfree(tr[k].queue);
			kvfree(tr[k].latency);
			kvfree(tr[k].wait);
		}
	kfree(tr);
	kvfree(order);
	return err;
}
