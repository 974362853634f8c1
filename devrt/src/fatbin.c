// SPDX-License-Identifier: Apache-2.0
/*
 * fatbin.c - finding the PTX to patch in a module image.
 *
 * What cuModuleLoadData[Ex], cuModuleLoadFatBinary and cuLibraryLoadData
 * accept: PTX text (NUL-terminated), an ELF cubin (SASS: nothing to patch),
 * or a fat binary, directly or behind nvcc's wrapper (__fatBinC_Wrapper_t:
 * magic 0x466243b1, version, a pointer to the fat binary).  A fat binary
 * (public descriptions: n-eiling/cuda-fatbin-decompression, jiegec/fatbinary;
 * nothing copied) is a 16-byte header {u32 magic 0xBA55ED50, u16 version,
 * u16 header size, u64 bytes of entries} and entries of a 64-byte (or
 * longer) header {u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64
 * payload size, u32 compressed size, u32, u16 minor, u16 major, u32 sm arch,
 * u32 name offset, u32 name length, u64 flags, u64, u64 decompressed size}
 * followed by the payload.  Flag 0x2000 says the payload is an LZ4 block
 * (devrt_fatbin_decompress; nvcc --compress-mode=speed), 0x8000 a Zstandard
 * frame (CUDA 13's nvcc by default, and --compress-mode=size and balance:
 * seen in nvcc 13.0's output, bench/device/multigpu_check.sh).  devrt takes
 * the PTX entry of the highest arch the device can JIT (<= its compute
 * capability), decompresses it if needed, and reports images without PTX as
 * not instrumentable.  Zstandard is decoded by the system's libzstd.so.1,
 * dlopened at the first such entry (Debian's and Ubuntu's dpkg need it, so
 * it is in every image built on them); without it such a module is not
 * instrumentable (reason COMPRESSED) and runs as it is.  A payload that is
 * not PTX text once decoded, whatever its flags say, is never sent to the
 * collector.
 *
 * The image comes from the program with no length: every read is bounded
 * by the sizes the headers claim, each checked against the limits first.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"

#define FATBINC_MAGIC 0x466243b1U
#define FATBIN_MAGIC 0xBA55ED50U
#define FB_HDR 16
#define FB_ENTRY_HDR 64
#define FB_KIND_PTX 1
#define FB_KIND_ELF 2
#define FB_FLAG_LZ4 0x2000ULL
#define FB_FLAG_ZSTD 0x8000ULL
/* A fat binary that claims more than this is not one devrt reads. */
#define FB_MAX_SIZE (1ULL << 32)

static __u16 rd16(const unsigned char *p) { __u16 v; memcpy(&v, p, 2); return v; }
static __u32 rd32(const unsigned char *p) { __u32 v; memcpy(&v, p, 4); return v; }
static __u64 rd64(const unsigned char *p) { __u64 v; memcpy(&v, p, 8); return v; }

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	       c == '\v';
}

/* PTX text: what the driver takes as PTX (optional blanks, then a comment
 * or a directive). */
static int is_ptx_text(const char *s)
{
	while (is_space(*s))
		s++;
	return *s == '/' || *s == '.';
}

/* libzstd, dlopened at the first Zstandard entry. */
static struct {
	size_t (*decompress)(void *, size_t, const void *, size_t);
	unsigned (*is_error)(size_t);
} zstd;
static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;

static void zstd_load(void)
{
	void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		devrt_debug("no libzstd.so.1 (%s): Zstandard-compressed PTX "
			    "is not instrumentable", dlerror());
		return;
	}
	*(void **)&zstd.decompress = dlsym(h, "ZSTD_decompress");
	*(void **)&zstd.is_error = dlsym(h, "ZSTD_isError");
	if (!zstd.decompress || !zstd.is_error)
		zstd.decompress = NULL;
}

long devrt_fatbin_unzstd(const unsigned char *in, size_t in_len,
			 unsigned char *out, size_t out_len)
{
	size_t n;

	pthread_once(&zstd_once, zstd_load);
	if (!zstd.decompress)
		return -1;
	n = zstd.decompress(out, out_len, in, in_len);
	return zstd.is_error(n) || n != out_len ? -1 : (long)n;
}

/*
 * LZ4 block format, as nvcc's compressed fat binary entries use it: a token
 * (high nibble: literal count, low nibble: match length - 4; 15 continues
 * in the following bytes, each added until one is not 255), the literals,
 * then (unless the input ends) a 16-bit little-endian back offset and the
 * match's continuation bytes.  Matches may overlap their output.
 */
long devrt_fatbin_decompress(const unsigned char *in, size_t in_len,
			     unsigned char *out, size_t out_len)
{
	size_t ip = 0, op = 0;

	while (ip < in_len) {
		unsigned int tok = in[ip++];
		size_t lit = tok >> 4, mlen = (tok & 15) + 4, off, i;

		if (lit == 15) {
			unsigned char b;

			do {
				if (ip >= in_len)
					return -1;
				b = in[ip++];
				lit += b;
			} while (b == 255);
		}
		if (lit > in_len - ip || lit > out_len - op)
			return -1;
		memcpy(out + op, in + ip, lit);
		ip += lit;
		op += lit;
		if (ip == in_len)
			break;
		if (in_len - ip < 2)
			return -1;
		off = (size_t)in[ip] | (size_t)in[ip + 1] << 8;
		ip += 2;
		if (mlen == 19) {
			unsigned char b;

			do {
				if (ip >= in_len)
					return -1;
				b = in[ip++];
				mlen += b;
			} while (b == 255);
		}
		if (!off || off > op || mlen > out_len - op)
			return -1;
		for (i = 0; i < mlen; i++, op++)
			out[op] = out[op - off];
	}
	return op == out_len ? (long)op : -1;
}

/* A fat binary's PTX entry, decoded: PTX text, or (a compression devrt
 * does not know, flags it misreads) not instrumentable. */
static int found(struct devrt_ptx *out, const char *ptx, size_t len,
		 char *owned)
{
	size_t i = 0;

	while (i < len && is_space(ptx[i]))
		i++;
	if (i == len || (ptx[i] != '/' && ptx[i] != '.')) {
		free(owned);
		out->reason = GPUEXT_INJ_R_COMPRESSED;
		return -1;
	}
	out->ptx = ptx;
	out->len = len;
	out->owned = owned;
	out->reason = GPUEXT_INJ_R_NONE;
	return 0;
}

static int fatbin_ptx(const unsigned char *fb, __u32 sm_arch,
		      struct devrt_ptx *out)
{
	__u16 hsize = rd16(fb + 6);
	__u64 size = rd64(fb + 8), off, end;
	const unsigned char *best = NULL;
	__u32 best_arch = 0;
	int elves = 0;

	out->image = GPUEXT_INJ_IMAGE_FATBIN;
	out->reason = GPUEXT_INJ_R_BAD_IMAGE;
	if (hsize < FB_HDR || size > FB_MAX_SIZE)
		return -1;
	end = hsize + size;
	for (off = hsize; end - off >= FB_ENTRY_HDR;) {
		const unsigned char *e = fb + off;
		__u32 ehdr = rd32(e + 4), arch = rd32(e + 28);
		__u64 esize = rd64(e + 8);
		__u16 kind = rd16(e);

		if (ehdr < FB_ENTRY_HDR || ehdr > end - off ||
		    esize > end - off - ehdr)
			return -1;
		if (kind == FB_KIND_ELF)
			elves++;
		else if (kind == FB_KIND_PTX &&
			 (!sm_arch || arch <= sm_arch) &&
			 (!best || arch > best_arch)) {
			best = e;
			best_arch = arch;
		}
		off += ehdr + esize;
	}
	if (!best) {
		out->reason = elves ? GPUEXT_INJ_R_SASS_ONLY : GPUEXT_INJ_R_BAD_IMAGE;
		return -1;
	}
	{
		__u32 ehdr = rd32(best + 4), csize = rd32(best + 16);
		__u64 esize = rd64(best + 8), flags = rd64(best + 40);
		__u64 dsize = rd64(best + 56);
		const char *payload = (const char *)best + ehdr;
		char *buf;

		if (!(flags & (FB_FLAG_LZ4 | FB_FLAG_ZSTD))) {
			if (esize > GPUEXT_INJ_MAX_PTX) {
				out->reason = GPUEXT_INJ_R_TOO_LARGE;
				return -1;
			}
			return found(out, payload, strnlen(payload, esize), NULL);
		}
		if (csize > esize || !dsize ||
		    (flags & (FB_FLAG_LZ4 | FB_FLAG_ZSTD)) ==
			    (FB_FLAG_LZ4 | FB_FLAG_ZSTD)) {
			out->reason = GPUEXT_INJ_R_COMPRESSED;
			return -1;
		}
		if (dsize > GPUEXT_INJ_MAX_PTX) {
			out->reason = GPUEXT_INJ_R_TOO_LARGE;
			return -1;
		}
		buf = malloc(dsize);
		if (!buf) {
			out->reason = GPUEXT_INJ_R_NO_MEMORY;
			return -1;
		}
		if ((flags & FB_FLAG_ZSTD ?
			     devrt_fatbin_unzstd((const unsigned char *)payload,
						 csize, (unsigned char *)buf,
						 dsize) :
			     devrt_fatbin_decompress((const unsigned char *)payload,
						     csize, (unsigned char *)buf,
						     dsize)) < 0) {
			free(buf);
			out->reason = GPUEXT_INJ_R_COMPRESSED;
			return -1;
		}
		return found(out, buf, strnlen(buf, dsize), buf);
	}
}

int devrt_image_ptx(const void *image, const char *path, __u32 sm_arch,
		    struct devrt_ptx *out)
{
	const unsigned char *p = image;

	memset(out, 0, sizeof(*out));
	out->reason = GPUEXT_INJ_R_BAD_IMAGE;
	if (!p)
		return -1;
	if (rd32(p) == FATBINC_MAGIC) {
		const void *data;

		memcpy(&data, p + 8, sizeof(data));
		p = data;
		if (!p)
			return -1;
	}
	if (rd32(p) == FATBIN_MAGIC)
		return fatbin_ptx(p, sm_arch, out);
	if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
		/* SASS only, unless Triton cached the PTX it came from. */
		if (!devrt_triton_ptx(p, path, out))
			return 0;
		out->reason = GPUEXT_INJ_R_SASS_ONLY;
		return -1;
	}
	if (!is_ptx_text((const char *)p))
		return -1;
	out->image = GPUEXT_INJ_IMAGE_PTX;
	out->len = strnlen((const char *)p, (size_t)GPUEXT_INJ_MAX_PTX + 1);
	if (out->len > GPUEXT_INJ_MAX_PTX) {
		out->reason = GPUEXT_INJ_R_TOO_LARGE;
		return -1;
	}
	out->ptx = (const char *)p;
	out->reason = GPUEXT_INJ_R_NONE;
	return 0;
}

static int ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '%' ||
	       c == '.';
}

/*
 * The names after ".entry" outside comments and strings: what the
 * collector is told the module defines (a hint; the collector parses the
 * PTX itself).
 */
__u32 devrt_ptx_entries(const char *s, size_t len, char *buf, size_t cap,
			size_t *used)
{
	size_t i = 0, n = 0;
	__u32 count = 0;

	while (i < len) {
		char c = s[i];

		if (c == '/' && i + 1 < len && s[i + 1] == '/') {
			while (i < len && s[i] != '\n')
				i++;
		} else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
			i += 2;
			while (i + 1 < len && !(s[i] == '*' && s[i + 1] == '/'))
				i++;
			i += 2;
		} else if (c == '"') {
			for (i++; i < len && s[i] != '"' && s[i] != '\n'; i++)
				;
			i++;
		} else if (c == '.' && len - i > 7 && !memcmp(s + i, ".entry", 6) &&
			   is_space(s[i + 6]) && (i == 0 || !ident_char(s[i - 1]))) {
			size_t b;

			for (i += 6; i < len && is_space(s[i]); i++)
				;
			for (b = i; i < len && ident_char(s[i]); i++)
				;
			if (i > b && count < GPUEXT_INJ_MAX_KERNELS &&
			    i - b + 1 <= cap - n) {
				memcpy(buf + n, s + b, i - b);
				n += i - b;
				buf[n++] = '\0';
				count++;
			}
		} else {
			i++;
		}
	}
	*used = n;
	return count;
}
