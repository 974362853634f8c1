// SPDX-License-Identifier: Apache-2.0
/*
 * region.c - the device probes' shared region: device memory the patched
 * kernels' maps live in, mirrored into a file the collector reads (issue 7).
 *
 * Why device memory: a probe's map update is an atomic on the region.  In
 * mapped host memory every one crosses PCIe and they serialise there (on an
 * H200, block_sched made a 6 µs kernel 441x slower, sm_load a 62 µs one
 * 1000x); in device memory they stay in the GPU's L2.  The host then needs a
 * copy: this file keeps one per region.
 *
 * A region belongs to a context and a probe set (the collector's
 * probe_version and region size): every module patched for them shares it,
 * so a process has one region to copy, not one per module.  It is made at
 * the first such module's load:
 *
 *   - the file <dir>/gpuext-devmaps-<pid>-<created_ns>.maps, page-rounded,
 *     mapped shared and holding the collector's initial contents (the maps'
 *     headers) before anything else happens (it is made as
 *     .gpuext-devmaps-<pid>-<created_ns>.new and renamed once the region is
 *     whole, so the collector never opens a partial one), then pinned with
 *     cuMemHostRegister where the driver allows it (a tmpfs directory:
 *     since Linux 6.5 other file-backed pages refuse long-term pins; a
 *     pageable copy also works, only slower);
 *     The file has one more page, after the region's: at its end, struct
 *     gpuext_devmaps_info names the context's device (ordinal and UUID),
 *     so the collector can tell the GPUs of one process apart (a process
 *     has a region per context: one per GPU it launches patched kernels
 *     on), and each copy into the file notes there when it was issued and
 *     seen complete (how far the GPU's clock has gone, for the collector,
 *     while no kernel writes).  The copies never reach that page;
 *   - cuMemAlloc of the same size, filled from the file on a stream of
 *     devrt's own (CU_STREAM_NON_BLOCKING: never ordered with the
 *     program's streams, the legacy one included).
 *
 * A thread of devrt's (started with the first region, all signals blocked)
 * copies every region device -> file on its stream every
 * GPUEXT_DEVRT_PROBE_SYNC_MS (default 100, 1..60000) while the program's
 * kernels keep running: the maps are made for such copies (a ring record
 * carries its sequence number, counters are aligned words).  The last
 * module's unload copies once more and frees the region; so does exit
 * (atexit, registered after the CUDA runtime's, so it runs before the
 * runtime tears its contexts down), after which the thread stops.
 *
 * Nothing here can stall the program for long or crash it: every wait for
 * a copy is bounded (a copy that does not finish marks the region stuck:
 * it is never copied again nor freed, since the DMA may still land), a
 * context that is gone marks it dead, a forked child leaves its parent's
 * file and memory alone, and any failure to make a region leaves the
 * module unpatched (inject.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "inject.h"

#define CU_STREAM_NON_BLOCKING 0x1
#define SYNC_MS_DEFAULT 100
#define WAIT_NS 2000000000ULL       /* a periodic or creation copy */
#define WAIT_EXIT_NS 200000000ULL   /* a copy at exit */
#define MAX_PASS 256                /* regions one pass copies */

struct devrt_region {
	struct devrt_region *next;
	__u32 refs;             /* modules and passes holding it (reg_lock) */
	int dead;               /* its context is gone: no more copies */
	int stuck;              /* a copy did not finish: never freed */
	int registered;
	pid_t pid;              /* the process that made it */
	CUcontext ctx;
	__u64 version;
	__u64 size;             /* what the collector asked for */
	size_t len;             /* page-rounded */
	void *host;             /* the file, mapped (the region, then the trailer page) */
	struct gpuext_devmaps_info *info; /* in the trailer page */
	CUdeviceptr dev;
	CUstream stream;
	pthread_mutex_t mu;     /* one copy at a time */
	__u64 copies;
	char path[640];
};

static struct {
	CUresult (*ctx_get)(CUcontext *);
	CUresult (*ctx_get_device)(CUdevice *);
	CUresult (*dev_uuid)(CUuuid *, CUdevice);
	CUresult (*ctx_push)(CUcontext);
	CUresult (*ctx_pop)(CUcontext *);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*free)(CUdeviceptr);
	CUresult (*host_register)(void *, size_t, unsigned int);
	CUresult (*host_unregister)(void *);
	CUresult (*stream_create)(CUstream *, unsigned int);
	CUresult (*stream_destroy)(CUstream);
	CUresult (*stream_query)(CUstream);
	CUresult (*htod)(CUdeviceptr, const void *, size_t, CUstream);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t, CUstream);
} rdrv;

static pthread_once_t rdrv_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pass_lock = PTHREAD_MUTEX_INITIALIZER;
static struct devrt_region *regions;
static int syncing;             /* the thread was started (reg_lock) */
static int exiting;             /* exit copied: the thread stops (pass_lock) */
static __u32 sync_ms = SYNC_MS_DEFAULT;

static void rdrv_load(void)
{
	const char *e = getenv("GPUEXT_DEVRT_PROBE_SYNC_MS");

	devrt_driver_sym_into(&rdrv.ctx_get, "cuCtxGetCurrent");
	devrt_driver_sym_into(&rdrv.ctx_get_device, "cuCtxGetDevice");
	devrt_driver_sym_into(&rdrv.dev_uuid, "cuDeviceGetUuid_v2");
	if (!rdrv.dev_uuid)
		devrt_driver_sym_into(&rdrv.dev_uuid, "cuDeviceGetUuid");
	devrt_driver_sym_into(&rdrv.ctx_push, "cuCtxPushCurrent_v2");
	devrt_driver_sym_into(&rdrv.ctx_pop, "cuCtxPopCurrent_v2");
	devrt_driver_sym_into(&rdrv.alloc, "cuMemAlloc_v2");
	devrt_driver_sym_into(&rdrv.free, "cuMemFree_v2");
	devrt_driver_sym_into(&rdrv.host_register, "cuMemHostRegister_v2");
	devrt_driver_sym_into(&rdrv.host_unregister, "cuMemHostUnregister");
	devrt_driver_sym_into(&rdrv.stream_create, "cuStreamCreate");
	devrt_driver_sym_into(&rdrv.stream_destroy, "cuStreamDestroy_v2");
	devrt_driver_sym_into(&rdrv.stream_query, "cuStreamQuery");
	devrt_driver_sym_into(&rdrv.htod, "cuMemcpyHtoDAsync_v2");
	devrt_driver_sym_into(&rdrv.dtoh, "cuMemcpyDtoHAsync_v2");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);

		if (!*end && v >= 1 && v <= 60000)
			sync_ms = (__u32)v;
		else
			devrt_debug("ignoring GPUEXT_DEVRT_PROBE_SYNC_MS=%s", e);
	}
}

static int rdrv_ok(void)
{
	return rdrv.ctx_get && rdrv.ctx_push && rdrv.ctx_pop && rdrv.alloc &&
	       rdrv.free && rdrv.stream_create && rdrv.stream_destroy &&
	       rdrv.stream_query && rdrv.htod && rdrv.dtoh;
}

/* Waits for the region's stream, at most bound ns: its result, or
 * CUDA_ERROR_NOT_READY if the copy is still running (the region is stuck). */
static CUresult stream_wait(struct devrt_region *g, __u64 bound)
{
	__u64 t0 = devrt_now(), pause = 20000;
	CUresult r;

	while ((r = rdrv.stream_query(g->stream)) == CUDA_ERROR_NOT_READY) {
		if (devrt_now() - t0 > bound) {
			g->stuck = 1;
			devrt_debug("region %s: copy still running after %llu ms; "
				    "no longer copied", g->path,
				    (unsigned long long)(bound / 1000000));
			return r;
		}
		devrt_sleep_ns(pause);
		if (pause < 1000000)
			pause *= 2;
	}
	return r;
}

/* One copy (dir 0: device -> file, 1: file -> device), in the region's
 * context, bounded.  Caller holds g->mu.  A copy into the file notes its
 * issue and completion times (devrt_now: CLOCK_MONOTONIC, the collector's
 * clock) in the trailer's record (the collector reads
 * the end, then the start: a start newer than the end it read is the next
 * copy's, which it then does not trust). */
static CUresult copy(struct devrt_region *g, int to_dev, __u64 bound)
{
	CUcontext old;
	CUresult r;
	__u64 t0;

	if (g->dead || g->stuck || g->pid != getpid())
		return CUDA_ERROR_NOT_READY;
	r = rdrv.ctx_push(g->ctx);
	if (r != CUDA_SUCCESS) {
		g->dead = 1;
		return r;
	}
	t0 = devrt_now();
	r = to_dev ? rdrv.htod(g->dev, g->host, g->len, g->stream) :
		     rdrv.dtoh(g->host, g->dev, g->len, g->stream);
	if (r == CUDA_SUCCESS)
		r = stream_wait(g, bound);
	rdrv.ctx_pop(&old);
	if (r != CUDA_SUCCESS && !g->stuck)
		g->dead = 1;	/* context destroyed, device lost: stop */
	if (r == CUDA_SUCCESS) {
		g->copies++;
		if (!to_dev && g->info) {
			__atomic_store_n(&g->info->copy_start_ns, t0, __ATOMIC_RELAXED);
			__atomic_store_n(&g->info->copy_end_ns, devrt_now(), __ATOMIC_RELEASE);
		}
	}
	return r;
}

/* Frees what was made of g (any part may be missing).  Not for a stuck
 * region, whose copy may still land in its file's pages. */
static void region_destroy(struct devrt_region *g)
{
	CUcontext old;

	if (g->pid == getpid()) {
		if ((g->dev || g->stream) &&
		    rdrv.ctx_push(g->ctx) == CUDA_SUCCESS) {
			if (g->stream)
				rdrv.stream_destroy(g->stream);
			if (g->dev)
				rdrv.free(g->dev);
			rdrv.ctx_pop(&old);
		}
		if (g->registered && rdrv.host_unregister)
			rdrv.host_unregister(g->host);
		if (g->path[0])
			unlink(g->path);
	}
	if (g->host)
		munmap(g->host, g->len + GPUEXT_DEVMAPS_TRAILER);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

static void *sync_main(void *arg);

static void atexit_copy(void);

/* Starts the copying thread (caller holds reg_lock); 0 or -1. */
static int sync_start(void)
{
	if (syncing)
		return 0;
	if (devrt_thread_start(sync_main))
		return -1;
	syncing = 1;
	atexit(atexit_copy);
	return 0;
}

/* The trailer page's record: the current context's device. */
static int write_info(int fd, const struct devrt_region *g)
{
	struct gpuext_devmaps_info in;
	CUdevice dev = -1;
	CUuuid u;

	memset(&in, 0, sizeof(in));
	in.magic = GPUEXT_DEVMAPS_INFO_MAGIC;
	in.version = GPUEXT_DEVMAPS_INFO_VERSION;
	in.size = sizeof(in);
	in.region_len = g->len;
	in.ctx = (__u64)(uintptr_t)g->ctx;
	if (rdrv.ctx_get_device && rdrv.ctx_get_device(&dev) == CUDA_SUCCESS) {
		in.device = dev;
		if (rdrv.dev_uuid && rdrv.dev_uuid(&u, dev) == CUDA_SUCCESS) {
			memcpy(in.uuid, u.bytes, sizeof(in.uuid));
			in.flags |= GPUEXT_DMI_UUID;
		}
	} else {
		in.device = -1;
	}
	return pwrite(fd, &in, sizeof(in),
		      (off_t)(g->len + GPUEXT_DEVMAPS_TRAILER - sizeof(in))) ==
			       (ssize_t)sizeof(in) ? 0 : -1;
}

struct devrt_region *devrt_region_get(__u64 size, __u64 version,
				      const __u8 *init, size_t init_len,
				      int *shared, CUresult *res,
				      const char **step)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct devrt_region *g;
	struct gpuext_inj_init e;
	CUcontext ctx = NULL;
	char name[sizeof(g->path)];
	__u64 created;
	size_t i;
	int fd, n;

	*shared = 0;
	pthread_once(&rdrv_once, rdrv_load);
	*step = "driver: no cuMemAlloc, stream or context functions";
	if (!rdrv_ok())
		return NULL;
	*step = "cuCtxGetCurrent";
	*res = rdrv.ctx_get(&ctx);
	if (*res != CUDA_SUCCESS || !ctx)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	for (g = regions; g; g = g->next) {
		if (g->ctx == ctx && g->version == version && g->size == size &&
		    !g->dead && !g->stuck && g->pid == getpid()) {
			g->refs++;
			pthread_mutex_unlock(&reg_lock);
			*shared = 1;
			return g;
		}
	}
	pthread_mutex_unlock(&reg_lock);

	*step = "no memory";
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	pthread_mutex_init(&g->mu, NULL);
	g->refs = 1;
	g->pid = getpid();
	g->ctx = ctx;
	g->version = version;
	g->size = size;
	g->len = (size_t)((size + (__u64)pg - 1) & ~((__u64)pg - 1));

	*step = "region file";
	created = devrt_now();
	n = snprintf(name, sizeof(name), "%s/gpuext-devmaps-%d-%llu.maps",
		     devrt.cfg.dir, (int)g->pid, (unsigned long long)created);
	if (n < 0 || (size_t)n >= sizeof(name))
		goto fail;
	/* Made under a name the collector does not look for, published by
	 * rename once sized and filled: it never sees a partial region. */
	n = snprintf(g->path, sizeof(g->path), "%s/.gpuext-devmaps-%d-%llu.new",
		     devrt.cfg.dir, (int)g->pid, (unsigned long long)created);
	if (n < 0 || (size_t)n >= sizeof(g->path)) {
		g->path[0] = '\0';
		goto fail;
	}
	fd = open(g->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0) {
		g->path[0] = '\0';
		goto fail;
	}
	if (ftruncate(fd, (off_t)(g->len + GPUEXT_DEVMAPS_TRAILER)) < 0 ||
	    write_info(fd, g) < 0) {
		close(fd);
		goto fail;
	}
	g->host = mmap(NULL, g->len + GPUEXT_DEVMAPS_TRAILER,
		       PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (g->host == MAP_FAILED) {
		g->host = NULL;
		goto fail;
	}
	g->info = (struct gpuext_devmaps_info *)((char *)g->host + g->len +
		GPUEXT_DEVMAPS_TRAILER - sizeof(*g->info));
	/* inject_ask.c checked every entry against size <= len. */
	for (i = 0; i < init_len; i += ((size_t)e.len + 7) / 8 * 8) {
		memcpy(&e, init + i, sizeof(e));
		i += sizeof(e);
		memcpy((char *)g->host + e.offset, init + i, e.len);
	}
	if (rdrv.host_register)
		g->registered = rdrv.host_register(g->host, g->len, 0) ==
				CUDA_SUCCESS;

	*step = "cuMemAlloc";
	*res = rdrv.alloc(&g->dev, g->len);
	if (*res != CUDA_SUCCESS) {
		g->dev = 0;
		goto fail;
	}
	*step = "cuStreamCreate";
	*res = rdrv.stream_create(&g->stream, CU_STREAM_NON_BLOCKING);
	if (*res != CUDA_SUCCESS) {
		g->stream = NULL;
		goto fail;
	}
	*step = "cuMemcpyHtoDAsync";
	pthread_mutex_lock(&g->mu);
	*res = copy(g, 1, WAIT_NS);
	pthread_mutex_unlock(&g->mu);
	if (*res != CUDA_SUCCESS)
		goto fail;

	*step = "region file rename";
	if (rename(g->path, name) < 0)
		goto fail;
	memcpy(g->path, name, sizeof(g->path));

	*step = "devrt thread";
	pthread_mutex_lock(&reg_lock);
	if (sync_start()) {
		pthread_mutex_unlock(&reg_lock);
		goto fail;
	}
	g->next = regions;
	regions = g;
	pthread_mutex_unlock(&reg_lock);
	return g;
fail:
	if (g->stuck) {
		if (g->path[0])
			unlink(g->path);
		return NULL;	/* leaked: the copy may still land */
	}
	region_destroy(g);
	return NULL;
}

CUdeviceptr devrt_region_dptr(const struct devrt_region *g) { return g->dev; }

__u64 devrt_region_size(const struct devrt_region *g) { return g->len; }

void devrt_region_put(struct devrt_region *g)
{
	struct devrt_region **pp;

	if (!g)
		return;
	if (g->pid != getpid()) {
		/* A forked child: the parent's region, whose lock may have
		 * been held at the fork.  Only the child's mapping goes. */
		if (!--g->refs && g->host)
			munmap(g->host, g->len + GPUEXT_DEVMAPS_TRAILER);
		return;
	}
	pthread_mutex_lock(&reg_lock);
	if (--g->refs) {
		pthread_mutex_unlock(&reg_lock);
		return;
	}
	for (pp = &regions; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	/* The last module is gone: what its kernels wrote, a last time. */
	pthread_mutex_lock(&g->mu);
	copy(g, 0, WAIT_NS);
	pthread_mutex_unlock(&g->mu);
	if (g->stuck) {
		if (g->pid == getpid())
			unlink(g->path);
		return;
	}
	region_destroy(g);
}

/* Copies every region once (bound: per copy); 0 regions: nothing. */
static void pass(__u64 bound, int release)
{
	struct devrt_region *held[MAX_PASS], *g;
	unsigned int n = 0, i;

	pthread_mutex_lock(&reg_lock);
	for (g = regions; g && n < MAX_PASS; g = g->next) {
		g->refs++;
		held[n++] = g;
	}
	pthread_mutex_unlock(&reg_lock);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&held[i]->mu);
		copy(held[i], 0, bound);
		pthread_mutex_unlock(&held[i]->mu);
	}
	if (release)
		for (i = 0; i < n; i++)
			devrt_region_put(held[i]);
}

static void *sync_main(void *arg)
{
	(void)arg;
	devrt_t.busy++;	/* nothing this thread does is the program's */
	for (;;) {
		devrt_sleep_ns((__u64)sync_ms * 1000000ULL);
		pthread_mutex_lock(&pass_lock);
		if (exiting) {
			pthread_mutex_unlock(&pass_lock);
			return NULL;
		}
		pass(WAIT_NS, 1);
		pthread_mutex_unlock(&pass_lock);
	}
}

/*
 * At exit: one last copy of every region, then the thread makes no more
 * CUDA calls (it holds no pass while exit goes on to the runtime's and the
 * driver's own teardown).  The regions stay: the process is ending, and the
 * collector removes the files of processes that are gone.
 */
static void atexit_copy(void)
{
	pthread_mutex_lock(&pass_lock);
	if (!exiting) {
		exiting = 1;
		pass(WAIT_EXIT_NS, 0);
	}
	pthread_mutex_unlock(&pass_lock);
}

/*
 * A forked child has no copying thread and cannot use its parent's
 * contexts: it keeps the list (its modules' unloads let go of it, leaving
 * the parent's file and memory alone) and starts over its locks.
 */
void devrt_region_atfork_child(void)
{
	pthread_mutex_init(&reg_lock, NULL);
	pthread_mutex_init(&pass_lock, NULL);
	exiting = 1;
	syncing = 1;	/* no thread in the child: none is started */
}
