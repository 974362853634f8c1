// SPDX-License-Identifier: Apache-2.0
/*
 * ringdump - prints devrt ring files as JSON lines.
 *
 *   ringdump FILE...            the records now in each ring (read-only;
 *                               the ring is left as it is)
 *   ringdump --follow DIR [MS]  act as the ring's consumer for every
 *                               gpuext-devrt-*.ring in DIR, old and new,
 *                               draining each every MS milliseconds (10),
 *                               until SIGINT/SIGTERM, then drain once more
 *                               and print each ring's header
 *
 * --follow drains at intervals, as the collector does (every poll_interval,
 * 50 ms by default), never in a loop: a consumer that polls a ring without
 * pause reads the slot the next record goes to again and again, and every
 * record then waits for that line to come back from the consumer's core,
 * a cost no collector imposes (bench/device/devrt_ab.sh measures with this
 * consumer; on the H200 the difference stayed under that benchmark's
 * noise).
 *
 * One line per record:
 *   {"ring":N,"kind":"call"|"named","api":..,"flags":..,"pid":..,"tid":..,
 *    "start":..,"end":..,"result":..,"corr":..,"args":[9],"out":..,
 *    "aux":[5][,"name":".."]}
 *   {"ring":N,"kind":"gpu_exec","api":..,"flags":..,"pid":..,"tid":..,
 *    "call_start":..,"gpu_start":..,"gpu_end":..,"stream":..,"handle":..,
 *    "bytes":..,"corr":..}
 *   {"ring":N,"kind":"inject","api":..,"flags":..,"pid":..,"tid":..,"ts":..,
 *    "module":..,"patched":..,"shared_dptr":..,"outcome":..,"reason":..,
 *    "cuda_result":..,"kernels":..,"sm_arch":..,"text":".."}
 * and per ring (after its records, or at the end with --follow):
 *   {"ring":N,"kind":"header","path":..,"pid":..,"start_time":..,
 *    "created_ns":..,"state":..,"disabled_reason":..,"capacity":..,
 *    "head":..,"tail":..,"records":..,"timed":..,"drops":[8],"version":..}
 *
 * Why C, statically linked: the GPU machine that runs bench/device/devrt.sh
 * has no Go toolchain.  This is a consumer as gpuext_abi.h describes it; the
 * collector's own is internal/devring.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuext_abi.h"

#define MAX_RINGS 1024
#define MAX_RECORD (8 * GPUEXT_SLOT_PAYLOAD)

struct ring {
	char path[512];
	int id;
	int consume;
	struct gpuext_ring_hdr *hdr;
	struct gpuext_ctl *ctl;
	struct gpuext_slot *slots;
	__u64 mask;
	size_t size;
};

static struct ring rings[MAX_RINGS];
static int nrings;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int ring_open(struct ring *r, const char *path, int consume)
{
	struct gpuext_ring_hdr h;
	struct stat st;
	int fd;

	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->consume = consume;
	fd = open(path, (consume ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_size < 2 * GPUEXT_RING_PAGE ||
	    pread(fd, &h, sizeof(h), 0) != sizeof(h) ||
	    h.magic != GPUEXT_RING_MAGIC || h.slot_size != GPUEXT_SLOT_SIZE ||
	    h.capacity < GPUEXT_RING_MIN_SLOTS ||
	    h.capacity > GPUEXT_RING_MAX_SLOTS ||
	    (h.capacity & (h.capacity - 1)) ||
	    (off_t)(2 * GPUEXT_RING_PAGE + (size_t)h.capacity * GPUEXT_SLOT_SIZE) >
		    st.st_size) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	r->size = 2 * GPUEXT_RING_PAGE + (size_t)h.capacity * GPUEXT_SLOT_SIZE;
	r->hdr = mmap(NULL, r->size, PROT_READ | (consume ? PROT_WRITE : 0),
		      MAP_SHARED, fd, 0);
	close(fd);
	if (r->hdr == MAP_FAILED)
		return -1;
	r->ctl = (struct gpuext_ctl *)((char *)r->hdr + GPUEXT_RING_PAGE);
	r->slots = (struct gpuext_slot *)((char *)r->hdr + 2 * GPUEXT_RING_PAGE);
	r->mask = h.capacity - 1;
	if (consume)
		__atomic_store_n(&r->ctl->consumer_pid, (__u32)getpid(),
				 __ATOMIC_RELAXED);
	return 0;
}

static void json_string(const char *s, size_t max)
{
	size_t i;

	putchar('"');
	for (i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_event(const struct ring *r, const void *buf, __u32 len)
{
	const struct gpuext_event *e = buf;
	int i;

	if (len < 4)
		return;
	if (e->kind == GPUEXT_KIND_GPU_EXEC && len == sizeof(struct gpuext_gpu_exec)) {
		const struct gpuext_gpu_exec *x = buf;

		printf("{\"ring\":%d,\"kind\":\"gpu_exec\",\"api\":%u,\"flags\":%u,"
		       "\"pid\":%u,\"tid\":%u,\"call_start\":%llu,\"gpu_start\":%llu,"
		       "\"gpu_end\":%llu,\"stream\":%llu,\"handle\":%llu,"
		       "\"bytes\":%llu,\"corr\":%u}\n",
		       r->id, x->api, x->flags, x->pid, x->tid,
		       (unsigned long long)x->call_start_ns,
		       (unsigned long long)x->gpu_start_ns,
		       (unsigned long long)x->gpu_end_ns,
		       (unsigned long long)x->stream,
		       (unsigned long long)x->handle,
		       (unsigned long long)x->bytes, x->corr);
		return;
	}
	if (e->kind == GPUEXT_KIND_INJECT &&
	    len == sizeof(struct gpuext_inject_event)) {
		const struct gpuext_inject_event *x = buf;

		printf("{\"ring\":%d,\"kind\":\"inject\",\"api\":%u,\"flags\":%u,"
		       "\"pid\":%u,\"tid\":%u,\"ts\":%llu,\"module\":%llu,"
		       "\"patched\":%llu,\"shared_dptr\":%llu,\"outcome\":%u,"
		       "\"reason\":%u,\"cuda_result\":%d,\"kernels\":%u,"
		       "\"sm_arch\":%u,\"text\":",
		       r->id, x->api, x->flags, x->pid, x->tid,
		       (unsigned long long)x->ts_ns,
		       (unsigned long long)x->module,
		       (unsigned long long)x->patched,
		       (unsigned long long)x->shared_dptr, x->outcome,
		       x->reason, x->cuda_result, x->kernels, x->sm_arch);
		json_string(x->text, sizeof(x->text));
		printf("}\n");
		return;
	}
	if (len != sizeof(struct gpuext_event) &&
	    len != sizeof(struct gpuext_named_event)) {
		printf("{\"ring\":%d,\"kind\":\"unknown\",\"len\":%u}\n", r->id, len);
		return;
	}
	printf("{\"ring\":%d,\"kind\":\"%s\",\"api\":%u,\"flags\":%u,\"pid\":%u,"
	       "\"tid\":%u,\"start\":%llu,\"end\":%llu,\"result\":%d,\"corr\":%u,"
	       "\"args\":[", r->id,
	       e->kind == GPUEXT_KIND_CALL_NAMED ? "named" : "call", e->api,
	       e->flags, e->pid, e->tid, (unsigned long long)e->start_ns,
	       (unsigned long long)e->end_ns, e->result, e->corr);
	for (i = 0; i < GPUEXT_NARGS; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)e->args[i]);
	printf("],\"out\":%llu,\"aux\":[", (unsigned long long)e->out);
	for (i = 0; i < 5; i++)
		printf("%s%llu", i ? "," : "", (unsigned long long)e->aux.raw[i]);
	putchar(']');
	if (len == sizeof(struct gpuext_named_event)) {
		printf(",\"name\":");
		json_string(((const struct gpuext_named_event *)buf)->name,
			    GPUEXT_NAME_MAX);
	}
	printf("}\n");
}

/*
 * Prints the committed records from the consumer's position on; frees
 * their slots when consuming.  Returns the number of records.
 */
static int drain(struct ring *r)
{
	static char buf[MAX_RECORD];
	__u64 pos = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
	__u64 cap = r->mask + 1, i;
	int n = 0;

	for (__u64 budget = cap; budget > 0;) {
		struct gpuext_slot *first = &r->slots[pos & r->mask];
		__u32 len, ns;

		if (__atomic_load_n(&first->seq, __ATOMIC_ACQUIRE) != pos + 1)
			break;
		len = first->len;
		ns = first->nslots;
		if (!len || len > MAX_RECORD || ns != (len + GPUEXT_SLOT_PAYLOAD - 1) /
							 GPUEXT_SLOT_PAYLOAD ||
		    ns > budget) {
			fprintf(stderr, "ringdump: %s: bad record at %llu\n",
				r->path, (unsigned long long)pos);
			break;
		}
		for (i = 0; i < ns; i++) {
			struct gpuext_slot *s = &r->slots[(pos + i) & r->mask];
			__u32 off = (__u32)i * GPUEXT_SLOT_PAYLOAD;
			__u32 k = len - off < GPUEXT_SLOT_PAYLOAD ?
					  len - off : GPUEXT_SLOT_PAYLOAD;

			if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != pos + i + 1)
				return n; /* continuation not committed yet */
			memcpy(buf + off, s->data, k);
		}
		print_event(r, buf, len);
		n++;
		if (r->consume) {
			/* In order, so a producer that sees a slot free sees
			 * every slot before it free. */
			for (i = 0; i < ns; i++)
				__atomic_store_n(&r->slots[(pos + i) & r->mask].seq,
						 pos + i + cap, __ATOMIC_RELEASE);
		}
		pos += ns;
		budget -= ns;
		if (r->consume)
			__atomic_store_n(&r->hdr->tail, pos, __ATOMIC_RELEASE);
	}
	return n;
}

static void print_header(const struct ring *r)
{
	const struct gpuext_ring_hdr *h = r->hdr;
	int i;

	printf("{\"ring\":%d,\"kind\":\"header\",\"path\":", r->id);
	json_string(r->path, sizeof(r->path));
	printf(",\"pid\":%u,\"start_time\":%llu,\"created_ns\":%llu,\"state\":%u,"
	       "\"disabled_reason\":%u,\"capacity\":%u,\"head\":%llu,\"tail\":%llu,"
	       "\"records\":%llu,\"timed\":%llu,\"drops\":[",
	       h->pid, (unsigned long long)h->start_time,
	       (unsigned long long)h->created_ns,
	       __atomic_load_n(&h->state, __ATOMIC_ACQUIRE), h->disabled_reason,
	       h->capacity,
	       (unsigned long long)__atomic_load_n(&h->head, __ATOMIC_RELAXED),
	       (unsigned long long)__atomic_load_n(&h->tail, __ATOMIC_RELAXED),
	       (unsigned long long)__atomic_load_n(&h->records, __ATOMIC_RELAXED),
	       (unsigned long long)__atomic_load_n(&h->timed, __ATOMIC_RELAXED));
	for (i = 0; i < GPUEXT_RDROP_MAX; i++)
		printf("%s%llu", i ? "," : "",
		       (unsigned long long)__atomic_load_n(&h->drops[i],
							   __ATOMIC_RELAXED));
	printf("],\"version\":");
	json_string(h->version, sizeof(h->version));
	printf("}\n");
}

static int known(const char *path)
{
	int i;

	for (i = 0; i < nrings; i++)
		if (!strcmp(rings[i].path, path))
			return 1;
	return 0;
}

/* Opens the rings of dir not seen yet.  A ring still being created (no
 * magic yet) is tried again at the next scan. */
static void scan(const char *dir)
{
	char path[512];
	struct dirent *d;
	DIR *dp = opendir(dir);
	size_t n;

	if (!dp)
		return;
	while ((d = readdir(dp)) && nrings < MAX_RINGS) {
		n = strlen(d->d_name);
		if (strncmp(d->d_name, "gpuext-devrt-", 13) || n < 5 ||
		    strcmp(d->d_name + n - 5, ".ring"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		if (known(path) || ring_open(&rings[nrings], path, 1))
			continue;
		rings[nrings].id = nrings;
		nrings++;
	}
	closedir(dp);
}

static void follow(const char *dir, long ms)
{
	struct timespec tick = { ms / 1000, ms % 1000 * 1000 * 1000 };
	int i;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	while (!stop) {
		scan(dir);
		for (i = 0; i < nrings; i++)
			drain(&rings[i]);
		fflush(stdout);
		nanosleep(&tick, NULL);
	}
	scan(dir);
	for (i = 0; i < nrings; i++) {
		while (drain(&rings[i]) > 0)
			;
		print_header(&rings[i]);
	}
}

int main(int argc, char **argv)
{
	int i;

	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "--follow")) {
		char *end = NULL;
		long ms = argc == 4 ? strtol(argv[3], &end, 10) : 10;

		if (argc == 4 && (*end || ms < 1 || ms > 10000)) {
			fprintf(stderr, "ringdump: --follow: interval %s: want 1 to 10000 ms\n", argv[3]);
			return 2;
		}
		follow(argv[2], ms);
		return 0;
	}
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: ringdump FILE... | ringdump --follow DIR [MS]\n");
		return 2;
	}
	for (i = 1; i < argc && nrings < MAX_RINGS; i++) {
		struct ring *r = &rings[nrings];

		if (ring_open(r, argv[i], 0)) {
			fprintf(stderr, "ringdump: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		r->id = nrings++;
		drain(r);
		print_header(r);
	}
	return 0;
}
