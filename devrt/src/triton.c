// SPDX-License-Identifier: Apache-2.0
/*
 * triton.c - the PTX of a kernel Triton compiled, found beside its cubin in
 * Triton's cache (issue 7).
 *
 * Triton compiles a kernel to PTX, runs ptxas itself and loads the cubin:
 * the driver only ever sees SASS, which devrt cannot patch.  But Triton
 * keeps both in its cache, <cache>/<key>/<name>.cubin beside <name>.ptx
 * ($TRITON_CACHE_DIR, else $HOME/.triton/cache).  So when a program loads
 * an ELF cubin, devrt looks there for a .cubin with exactly the loaded
 * bytes and, if one is found, patches the .ptx beside it instead (image
 * GPUEXT_INJ_IMAGE_TRITON): the twin is the same kernel, compiled again
 * by the driver from the PTX Triton made it from.
 *
 * Cold path (a module load), bounded: the cache is listed into an index
 * once and then only where it changed (see idx), files of the loaded size
 * only are compared; GPUEXT_DEVRT_TRITON=0 turns it off.  A cubin loaded
 * from a file of a Triton cache entry (cuModuleLoad) needs no search: its
 * .ptx is beside it (see beside).  Nothing found: the cubin stays
 * SASS-only, as before.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"

#define MAX_DIRS 65536     /* cache entries read at most */
#define MAX_REFS (1U << 20) /* cubins remembered at most */
#define MAX_CUBIN (256U << 20)

static __u64 rd64(const unsigned char *p)
{
	__u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static __u16 rd16(const unsigned char *p)
{
	__u16 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The bytes of a 64-bit ELF image: its headers' tables end it (a cubin
 * keeps its section headers last).  0 if it does not look like one. */
static size_t elf_size(const unsigned char *p)
{
	__u64 sh, ph;

	if (p[4] != 2 || p[5] != 1)	/* ELFCLASS64, little-endian */
		return 0;
	sh = rd64(p + 0x28) + (__u64)rd16(p + 0x3a) * rd16(p + 0x3c);
	ph = rd64(p + 0x20) + (__u64)rd16(p + 0x36) * rd16(p + 0x38);
	if (sh < ph)
		sh = ph;
	return sh >= 64 && sh <= MAX_CUBIN ? (size_t)sh : 0;
}

/* Does the file at dfd/name hold exactly the n bytes of img? */
static int same_file(int dfd, const char *name, const unsigned char *img,
		     size_t n)
{
	unsigned char buf[65536];
	size_t off = 0;
	ssize_t got;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int same = fd >= 0;

	while (same && off < n) {
		size_t want = n - off < sizeof(buf) ? n - off : sizeof(buf);

		got = read(fd, buf, want);
		if (got <= 0 || memcmp(buf, img + off, (size_t)got)) {
			same = 0;
			break;
		}
		off += (size_t)got;
	}
	if (fd >= 0)
		close(fd);
	return same;
}

/* Reads dfd/name (PTX, at most GPUEXT_INJ_MAX_PTX bytes) into out. */
static int read_ptx(int dfd, const char *name, struct devrt_ptx *out)
{
	struct stat st;
	char *buf;
	size_t off = 0;
	ssize_t got;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    (__u64)st.st_size > GPUEXT_INJ_MAX_PTX ||
	    !(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return -1;
	}
	while (off < (size_t)st.st_size &&
	       (got = read(fd, buf + off, (size_t)st.st_size - off)) > 0)
		off += (size_t)got;
	close(fd);
	buf[off] = '\0';
	if (off != (size_t)st.st_size || strlen(buf) != off) {
		free(buf);
		return -1;
	}
	out->owned = buf;
	out->ptx = buf;
	out->len = off;
	out->image = GPUEXT_INJ_IMAGE_TRITON;
	out->reason = GPUEXT_INJ_R_NONE;
	return 0;
}

/*
 * What devrt knows of the cache: every .cubin seen, by size.  A load looks
 * the loaded size up here and compares only those files; the cache
 * directory is read again only when its mtime changed (Triton adds a
 * directory per compiled kernel) or nothing here matched, and then only
 * its entries changed since the last reading (with a second of margin for
 * the filesystem's coarse clock) are listed.
 */
struct cubin_ref {
	size_t size;
	char entry[NAME_MAX + 1];   /* the cache entry (directory) */
	char name[NAME_MAX + 1];    /* <kernel>.cubin in it */
};

static struct {
	pthread_mutex_t mu;
	char root[4096];
	struct timespec root_mtime; /* at the last reading */
	time_t read_at;             /* CLOCK_REALTIME seconds of the last reading */
	struct cubin_ref *refs;
	size_t n, cap;
} idx = { .mu = PTHREAD_MUTEX_INITIALIZER };

__u64 devrt_triton_entries_read;

/* Forgets entry's cubins (it is read again).  Caller holds idx.mu. */
static void forget(const char *entry)
{
	size_t i, j;

	for (i = j = 0; i < idx.n; i++)
		if (strcmp(idx.refs[i].entry, entry))
			idx.refs[j++] = idx.refs[i];
	idx.n = j;
}

/* Lists entry's .cubin files.  Caller holds idx.mu. */
static void read_entry(int cfd, const char *entry)
{
	int dfd = openat(cfd, entry, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *e;
	struct stat st;
	DIR *d;

	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	devrt_triton_entries_read++;
	forget(entry);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len < 7 || len > NAME_MAX ||
		    strcmp(e->d_name + len - 6, ".cubin") ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || (__u64)st.st_size > MAX_CUBIN)
			continue;
		if (idx.n == idx.cap) {
			size_t cap = idx.cap ? 2 * idx.cap : 256;
			struct cubin_ref *r = cap <= MAX_REFS ?
				realloc(idx.refs, cap * sizeof(*r)) : NULL;

			if (!r)
				break;
			idx.refs = r;
			idx.cap = cap;
		}
		idx.refs[idx.n].size = (size_t)st.st_size;
		snprintf(idx.refs[idx.n].entry, sizeof(idx.refs[idx.n].entry), "%s", entry);
		snprintf(idx.refs[idx.n].name, sizeof(idx.refs[idx.n].name), "%s", e->d_name);
		idx.n++;
	}
	closedir(d);
}

/* Reads the entries changed since the last reading (all, the first
 * time).  Caller holds idx.mu. */
static void refresh(void)
{
	struct timespec now;
	struct dirent *e;
	struct stat st;
	int seen = 0;
	DIR *d = opendir(idx.root);

	if (!d)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	if (!fstat(dirfd(d), &st))
		idx.root_mtime = st.st_mtim;
	while (seen++ < MAX_DIRS && (e = readdir(d))) {
		if (e->d_name[0] == '.' ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) ||
		    (idx.read_at && st.st_mtim.tv_sec < idx.read_at - 1))
			continue;
		read_entry(dirfd(d), e->d_name);
	}
	closedir(d);
	idx.read_at = now.tv_sec;
}

/* A known cubin of n bytes equal to img: its .ptx into out.  Caller holds
 * idx.mu. */
static int find(const unsigned char *img, size_t n, struct devrt_ptx *out)
{
	char path[sizeof(idx.root) + 2 * (NAME_MAX + 1)];
	size_t i, len;
	int dfd;

	for (i = 0; i < idx.n; i++) {
		const struct cubin_ref *r = &idx.refs[i];

		if (r->size != n)
			continue;
		snprintf(path, sizeof(path), "%s/%s", idx.root, r->entry);
		dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (same_file(dfd, r->name, img, n)) {
			char ptx[NAME_MAX + 1];

			len = strlen(r->name);
			memcpy(ptx, r->name, len - 6);
			memcpy(ptx + len - 6, ".ptx", 5);
			if (!read_ptx(dfd, ptx, out)) {
				close(dfd);
				return 0;
			}
		}
		close(dfd);
	}
	return -1;
}

/*
 * A cubin loaded from a file (cuModuleLoad: PyTorch's static launcher
 * loads the cubins of inductor's Triton kernels by path, wherever its
 * cache put them): the file is the loaded image, so its cache entry is its
 * directory, and no search is needed.  A Triton entry keeps <name>.ptx and
 * <name>.json (the kernel's metadata) beside <name>.cubin: both must be
 * there, or the file is not taken for one.
 */
static int beside(const char *path, struct devrt_ptx *out)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t len = strlen(base), dlen = slash ? (size_t)(slash - path) : 0;
	char dir[PATH_MAX], name[NAME_MAX + 1];
	struct stat st;
	int dfd, r = -1;

	if (len < 7 || len > NAME_MAX || strcmp(base + len - 6, ".cubin") ||
	    dlen >= sizeof(dir))
		return -1;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (!dlen)
		snprintf(dir, sizeof(dir), "/");
	else {
		memcpy(dir, path, dlen);
		dir[dlen] = '\0';
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	memcpy(name, base, len - 6);
	memcpy(name + len - 6, ".json", 6);
	if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode)) {
		memcpy(name + len - 6, ".ptx", 5);
		r = read_ptx(dfd, name, out);
	}
	close(dfd);
	return r;
}

int devrt_triton_ptx(const void *image, const char *path,
		     struct devrt_ptx *out)
{
	const char *off = getenv("GPUEXT_DEVRT_TRITON");
	const char *dir = getenv("TRITON_CACHE_DIR");
	const char *home = getenv("HOME");
	char root[sizeof(idx.root)];
	size_t n = elf_size(image);
	struct stat st;
	int found = -1, fresh = 0;

	if (off && !strcmp(off, "0"))
		return -1;
	if (path && !beside(path, out))
		return 0;
	if (!n)
		return -1;
	if (dir && *dir)
		snprintf(root, sizeof(root), "%s", dir);
	else if (home && *home)
		snprintf(root, sizeof(root), "%s/.triton/cache", home);
	else
		return -1;
	if (stat(root, &st) || !S_ISDIR(st.st_mode))
		return -1;
	pthread_mutex_lock(&idx.mu);
	if (strcmp(root, idx.root)) {	/* another cache: start over */
		snprintf(idx.root, sizeof(idx.root), "%s", root);
		idx.n = 0;
		idx.read_at = 0;
		memset(&idx.root_mtime, 0, sizeof(idx.root_mtime));
	}
	if (st.st_mtim.tv_sec != idx.root_mtime.tv_sec ||
	    st.st_mtim.tv_nsec != idx.root_mtime.tv_nsec) {
		refresh();
		fresh = 1;
	}
	found = find(image, n, out);
	if (found && !fresh) {	/* a cubin added to an entry read before */
		refresh();
		found = find(image, n, out);
	}
	pthread_mutex_unlock(&idx.mu);
	return found;
}

/* A forked child starts over its lock (the parent may have held it). */
void devrt_triton_atfork_child(void)
{
	pthread_mutex_init(&idx.mu, NULL);
}
