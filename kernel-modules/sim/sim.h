/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sim.h - what the files of gpu_ext_sim share: a session per open file of
 * /dev/gpu_ext_sim, holding either a memory model (sim_mem.c) or a
 * scheduling model (sim_sched.c); sim_bench.c times single entry points.
 */
#ifndef GPU_EXT_SIM_H
#define GPU_EXT_SIM_H

#include <linux/mutex.h>
#include <linux/types.h>

#include "gpu_ext.h"

struct sim_mem;
struct sim_sched;

enum sim_mode {
	SIM_MODE_NONE,
	SIM_MODE_MEM,
	SIM_MODE_SCHED,
};

struct sim_session {
	struct mutex lock; /* one ioctl or write at a time per open file */
	enum sim_mode mode;
	struct sim_mem *mem;
	struct sim_sched *sched;
};

/* Memory model (sim_mem.c). */
int sim_mem_check_config(const struct gpuext_sim_mem_config *cfg);
struct sim_mem *sim_mem_new(const struct gpuext_sim_mem_config *cfg);
void sim_mem_free(struct sim_mem *m);
/* Replays n accesses (all already checked by sim_mem_check_access). Returns
 * how many were replayed; *err says why it stopped early (-ENOSPC). */
size_t sim_mem_replay(struct sim_mem *m, const struct gpuext_sim_access *a, size_t n, int *err);
int sim_mem_check_access(const struct gpuext_sim_access *a);
void sim_mem_result(const struct sim_mem *m, struct gpuext_sim_mem_result *res);

/* Scheduling model (sim_sched.c). */
int sim_sched_check_config(const struct gpuext_sim_sched_config *cfg);
struct sim_sched *sim_sched_new(const struct gpuext_sim_sched_config *cfg);
void sim_sched_free(struct sim_sched *s);
/* Queues n jobs, all or none (-EINVAL bad record, -ENOSPC bounds). */
int sim_sched_queue(struct sim_sched *s, const struct gpuext_sim_job *jobs, size_t n);
int sim_sched_run(struct sim_sched *s, struct gpuext_sim_sched_result *res);

/* Hook benchmark (sim_bench.c). */
int sim_bench(struct gpuext_sim_bench *b);

#endif /* GPU_EXT_SIM_H */
