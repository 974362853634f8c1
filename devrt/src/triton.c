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
 * Cold path (a module load), bounded: at most MAX_DIRS directories and
 * files of the loaded size only are read; GPUEXT_DEVRT_TRITON=0 turns it
 * off.  Nothing found: the cubin stays SASS-only, as before.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject.h"

#define MAX_DIRS 65536
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

/* In one cache entry: a .cubin of n bytes equal to img, and its .ptx. */
static int look_in(int cfd, const char *entry, const unsigned char *img,
		   size_t n, struct devrt_ptx *out)
{
	int dfd = openat(cfd, entry, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	struct stat st;
	int found = -1;

	if (dfd < 0)
		return -1;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -1;
	}
	while (found && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char ptx[NAME_MAX + 1];

		if (len < 7 || len > NAME_MAX || strcmp(e->d_name + len - 6, ".cubin") ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || (size_t)st.st_size != n ||
		    !same_file(dfd, e->d_name, img, n))
			continue;
		memcpy(ptx, e->d_name, len - 6);
		memcpy(ptx + len - 6, ".ptx", 5);
		found = read_ptx(dfd, ptx, out);
	}
	closedir(d);
	return found;
}

int devrt_triton_ptx(const void *image, struct devrt_ptx *out)
{
	const char *off = getenv("GPUEXT_DEVRT_TRITON");
	const char *dir = getenv("TRITON_CACHE_DIR");
	const char *home = getenv("HOME");
	char path[4096];
	size_t n = elf_size(image);
	struct dirent *e;
	DIR *d;
	int found = -1, seen = 0;

	if (!n || (off && !strcmp(off, "0")))
		return -1;
	if (dir && *dir)
		snprintf(path, sizeof(path), "%s", dir);
	else if (home && *home)
		snprintf(path, sizeof(path), "%s/.triton/cache", home);
	else
		return -1;
	d = opendir(path);
	if (!d)
		return -1;
	while (found && seen++ < MAX_DIRS && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		found = look_in(dirfd(d), e->d_name, image, n, out);
	}
	closedir(d);
	return found;
}
