// SPDX-License-Identifier: Apache-2.0
/*
 * inject_test.c - the parts of device probe injection that need no driver:
 * SHA-256 against FIPS 180-4's examples and Python's hashlib at the block
 * boundaries, the LZ4 block decompression of compressed fat binary entries
 * against the reference LZ4 library's compressor (liblz4.so.1, dlopened:
 * apt and systemd depend on it) and hand-made blocks, Zstandard entries
 * (libzstd.so.1's compressor, dpkg depends on it), the fat binaries nvcc
 * 13.0 writes in each compression mode (tests/testdata), finding the PTX in
 * PTX text, cubins, fat binaries and nvcc's wrapper, and the .entry scan.
 * Exits 1 at the first failure, saying which.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject.h"

static int failed;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "inject_test.c:%d: %s\n", __LINE__, #cond); \
			failed = 1;					\
		}							\
	} while (0)

/* devrt's own functions the linked files call. */
struct devrt_global devrt;
__u64 devrt_now(void) { return 0; }
void devrt_debug(const char *fmt, ...) { (void)fmt; }

static void hex(const __u8 *d, char *out)
{
	int i;

	for (i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_sha256(void)
{
	static const struct {
		size_t n;
		const char *hex;
	} as[] = {
		{ 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
		{ 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
		{ 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
		{ 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
		{ 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
		{ 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
		{ 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
		{ 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
	};
	char *a = malloc(1000000), h[65];
	__u8 d[32];
	size_t i;

	devrt_sha256("", 0, d);
	hex(d, h);
	CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	devrt_sha256("abc", 3, d);
	hex(d, h);
	CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	devrt_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
	hex(d, h);
	CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
	memset(a, 'a', 1000000);
	for (i = 0; i < sizeof(as) / sizeof(as[0]); i++) {
		devrt_sha256(a, as[i].n, d);
		hex(d, h);
		if (strcmp(h, as[i].hex)) {
			fprintf(stderr, "sha256 of %zu x 'a': %s\n", as[i].n, h);
			failed = 1;
		}
	}
	free(a);
}

static void test_lz4_blocks(void)
{
	static const unsigned char lit[] = { 0x40, 'a', 'b', 'c', 'd' };
	/* 1 literal, a match of 8 at offset 1 (overlapping), 3 literals */
	static const unsigned char overlap[] = { 0x14, 'a', 1, 0, 0x30, 'x', 'y', 'z' };
	/* a match of 4 + 15 + 5 = 24 */
	static const unsigned char longm[] = { 0x1f, 'a', 1, 0, 5 };
	unsigned char in[300], out[400];
	long n;
	int i;

	n = devrt_fatbin_decompress(lit, sizeof(lit), out, 4);
	CHECK(n == 4 && !memcmp(out, "abcd", 4));
	n = devrt_fatbin_decompress(overlap, sizeof(overlap), out, 12);
	CHECK(n == 12 && !memcmp(out, "aaaaaaaaaxyz", 12));
	n = devrt_fatbin_decompress(longm, sizeof(longm), out, 25);
	CHECK(n == 25);
	for (i = 0; i < 25; i++)
		CHECK(out[i] == 'a');
	/* 15 + 255 + 1 = 271 literals */
	in[0] = 0xf0, in[1] = 255, in[2] = 1;
	memset(in + 3, 'q', 271);
	n = devrt_fatbin_decompress(in, 274, out, 271);
	CHECK(n == 271 && out[0] == 'q' && out[270] == 'q');

	/* malformed: each is -1, never a read or write out of bounds */
	CHECK(devrt_fatbin_decompress(lit, sizeof(lit), out, 5) == -1);  /* short */
	CHECK(devrt_fatbin_decompress(lit, sizeof(lit), out, 3) == -1);  /* long */
	CHECK(devrt_fatbin_decompress(lit, 3, out, 4) == -1);            /* cut literal */
	{
		unsigned char zero[] = { 0x14, 'a', 0, 0 };   /* offset 0 */
		unsigned char far[] = { 0x14, 'a', 2, 0 };    /* before the output */
		unsigned char cut[] = { 0x14, 'a', 1 };       /* half an offset */
		unsigned char ext[] = { 0xf0 };               /* no length byte */
		unsigned char mext[] = { 0x1f, 'a', 1, 0 };   /* no match length byte */

		CHECK(devrt_fatbin_decompress(zero, 4, out, 9) == -1);
		CHECK(devrt_fatbin_decompress(far, 4, out, 9) == -1);
		CHECK(devrt_fatbin_decompress(cut, 3, out, 9) == -1);
		CHECK(devrt_fatbin_decompress(ext, 1, out, 9) == -1);
		CHECK(devrt_fatbin_decompress(mext, 4, out, 30) == -1);
		CHECK(devrt_fatbin_decompress(overlap, sizeof(overlap), out, 11) == -1);
	}
}

/* A PTX text with repeats, compressed by the reference LZ4 library. */
static const char *ptx_sample(void)
{
	static char buf[16384];
	size_t n = 0;
	int i;

	n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			      "//\n// Generated by inject_test\n//\n\n.version 8.0\n"
			      ".target sm_80\n.address_size 64\n\n"
			      ".visible .entry _Z5scalePfi(\n\t.param .u64 x,\n"
			      "\t.param .u32 n\n)\n{\n\t.reg .b32 %%r<200>;\n");
	for (i = 0; i < 150; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "\tadd.s32 %%r%d, %%r%d, %d;\n", i + 1, i, i * 7);
	snprintf(buf + n, sizeof(buf) - n, "\tret;\n}\n");
	return buf;
}

typedef int (*lz4_compress_fn)(const char *, char *, int, int);

static int lz4_compress(const char *src, int n, char *dst, int cap)
{
	void *h = dlopen("liblz4.so.1", RTLD_NOW);
	lz4_compress_fn fn;

	if (!h) {
		fprintf(stderr, "inject_test: liblz4.so.1: %s\n", dlerror());
		failed = 1;
		return -1;
	}
	fn = (lz4_compress_fn)dlsym(h, "LZ4_compress_default");
	return fn ? fn(src, dst, n, cap) : -1;
}

typedef size_t (*zstd_compress_fn)(void *, size_t, const void *, size_t, int);
typedef unsigned (*zstd_is_error_fn)(size_t);

/* The reference compressor: libzstd.so.1's, level 19 (as nvcc's size mode). */
static long zstd_compress(const char *src, size_t n, char *dst, size_t cap)
{
	void *h = dlopen("libzstd.so.1", RTLD_NOW);
	zstd_compress_fn fn;
	zstd_is_error_fn err;
	size_t c;

	if (!h) {
		fprintf(stderr, "inject_test: libzstd.so.1: %s\n", dlerror());
		exit(1);
	}
	fn = (zstd_compress_fn)dlsym(h, "ZSTD_compress");
	err = (zstd_is_error_fn)dlsym(h, "ZSTD_isError");
	if (!fn || !err)
		return -1;
	c = fn(dst, cap, src, n, 19);
	return err(c) ? -1 : (long)c;
}

static void test_lz4_reference(void)
{
	const char *ptx = ptx_sample();
	int n = (int)strlen(ptx) + 1, c;
	char comp[20000], *out = malloc((size_t)n);

	c = lz4_compress(ptx, n, comp, sizeof(comp));
	CHECK(c > 0 && c < n / 2);
	CHECK(devrt_fatbin_decompress((unsigned char *)comp, (size_t)c,
				      (unsigned char *)out, (size_t)n) == n);
	CHECK(!memcmp(out, ptx, (size_t)n));
	free(out);
}

/* Fat binary entries as nvcc lays them out (see fatbin.c). */
struct entry {
	unsigned short kind;   /* 1 PTX, 2 ELF */
	unsigned int arch;
	int compressed;        /* entry flag: 0, 0x2000 (LZ4), 0x8000 (zstd) */
	const void *payload;
	size_t len, dlen;      /* payload bytes; decompressed bytes */
};

static size_t put_fatbin(unsigned char *b, const struct entry *e, int n)
{
	size_t off = 16;
	unsigned long long v;
	int i;

	memset(b, 0, 16);
	v = 0xba55ed50U | 1ULL << 32 | 16ULL << 48;
	memcpy(b, &v, 8);
	for (i = 0; i < n; i++) {
		unsigned char *h = b + off;
		size_t padded = (e[i].len + 7) & ~(size_t)7;
		/* PTX: 8 more bytes of (no) ptxas options at 64 */
		unsigned int hs = e[i].kind == 1 ? 72 : 64, u32;
		unsigned short u16;

		memset(h, 0, hs + padded);
		memcpy(h, &e[i].kind, 2);
		u16 = 0x0101, memcpy(h + 2, &u16, 2);
		memcpy(h + 4, &hs, 4);
		v = padded, memcpy(h + 8, &v, 8);
		u32 = e[i].compressed ? (unsigned int)e[i].len : 0;
		memcpy(h + 16, &u32, 4);
		memcpy(h + 28, &e[i].arch, 4);
		v = 0x11 | (unsigned int)e[i].compressed, memcpy(h + 40, &v, 8);
		v = e[i].compressed ? e[i].dlen : 0, memcpy(h + 56, &v, 8);
		if (e[i].kind == 1) {
			u32 = 64, memcpy(h + 20, &u32, 4);
		}
		memcpy(h + hs, e[i].payload, e[i].len);
		off += hs + padded;
	}
	v = off - 16;
	memcpy(b + 8, &v, 8);
	return off;
}

static const char ptx80[] = ".version 8.0\n.target sm_80\n.visible .entry a80()\n{\n\tret;\n}\n";
static const char ptx90[] = ".version 8.0\n.target sm_90\n.visible .entry a90()\n{\n\tret;\n}\n";
static const unsigned char elf[16] = { 0x7f, 'E', 'L', 'F', 2 };

static void test_image(void)
{
	static unsigned long long fb[8192];
	unsigned char *b = (unsigned char *)fb;
	struct entry e[3] = {
		{ 1, 80, 0, ptx80, sizeof(ptx80), 0 },
		{ 1, 90, 0, ptx90, sizeof(ptx90), 0 },
		{ 2, 90, 0, elf, sizeof(elf), 0 },
	};
	struct { int magic, version; const void *data; void *x; } wrapper = {
		0x466243b1, 1, fb, NULL,
	};
	struct devrt_ptx px;
	char comp[20000];
	const char *big = ptx_sample();
	int c;

	/* PTX text, leading blanks allowed */
	CHECK(devrt_image_ptx("  \n.version 8.0\n", NULL, 90, &px) == 0);
	CHECK(px.image == GPUEXT_INJ_IMAGE_PTX && px.len == 16);
	CHECK(devrt_image_ptx("// x\n", NULL, 0, &px) == 0 && px.len == 5);
	/* cubin, garbage */
	CHECK(devrt_image_ptx(elf, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_SASS_ONLY);
	CHECK(devrt_image_ptx("MZ", NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_BAD_IMAGE);
	CHECK(devrt_image_ptx(NULL, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_BAD_IMAGE);

	/* the newest PTX the device can JIT; directly or through the wrapper */
	put_fatbin(b, e, 3);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == 0 && px.ptx == (char *)b + 16 + 72 + 64 + 72 &&
	      px.len == strlen(ptx90) && px.image == GPUEXT_INJ_IMAGE_FATBIN);
	CHECK(devrt_image_ptx(&wrapper, NULL, 86, &px) == 0 && px.len == strlen(ptx80) &&
	      !memcmp(px.ptx, ptx80, px.len));
	CHECK(devrt_image_ptx(fb, NULL, 0, &px) == 0 && !memcmp(px.ptx, ptx90, px.len));
	CHECK(devrt_image_ptx(fb, NULL, 75, &px) == -1 && px.reason == GPUEXT_INJ_R_SASS_ONLY);
	put_fatbin(b, e, 0);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_BAD_IMAGE);

	/* a compressed PTX entry */
	c = lz4_compress(big, (int)strlen(big) + 1, comp, sizeof(comp));
	e[0] = (struct entry){ 1, 80, 0x2000, comp, (size_t)c, strlen(big) + 1 };
	put_fatbin(b, e, 1);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == 0 && px.owned && px.len == strlen(big) &&
	      !memcmp(px.ptx, big, px.len));
	free(px.owned);
	e[0].dlen++;	/* the size does not match what decompresses */
	put_fatbin(b, e, 1);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_COMPRESSED &&
	      !px.owned);

	/* Zstandard: decoded; a damaged frame, a size that does not match,
	 * both compression flags, a payload that is not PTX text */
	c = zstd_compress(big, strlen(big) + 1, comp, sizeof(comp));
	CHECK(c > 0);
	e[0] = (struct entry){ 1, 80, 0x8000, comp, (size_t)c, strlen(big) + 1 };
	put_fatbin(b, e, 1);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == 0 && px.owned && px.len == strlen(big) &&
	      !memcmp(px.ptx, big, px.len));
	free(px.owned);
	e[0].dlen--;
	put_fatbin(b, e, 1);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_COMPRESSED &&
	      !px.owned);
	e[0].dlen++;
	e[0].len = (size_t)c - 8;	/* the frame cut short */
	put_fatbin(b, e, 1);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_COMPRESSED);
	e[0].len = (size_t)c;
	e[0].compressed = 0xa000;
	put_fatbin(b, e, 1);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_COMPRESSED);
	e[0] = (struct entry){ 1, 80, 0x4000, comp, (size_t)c, 0 };	/* unknown */
	put_fatbin(b, e, 1);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_COMPRESSED);
	e[0] = (struct entry){ 1, 80, 0, "\n\n ", 4, 0 };	/* blanks only */
	put_fatbin(b, e, 1);
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_COMPRESSED);

	/* sizes that run past the fat binary */
	e[0] = (struct entry){ 1, 80, 0, ptx80, sizeof(ptx80), 0 };
	put_fatbin(b, e, 1);
	b[8]--;	/* one byte less than the entries need */
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_BAD_IMAGE);
	put_fatbin(b, e, 1);
	b[16 + 4] = 63;	/* an entry header shorter than 64 bytes */
	CHECK(devrt_image_ptx(fb, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_BAD_IMAGE);
}

/* What nvcc 13.0 writes (tests/testdata/README.md): every compression
 * mode gives the same PTX, with its two kernels. */
static void test_nvcc13(void)
{
	static const char *modes[] = { "none", "default", "size", "speed" };
	static unsigned long long fb[4][1024];
	struct devrt_ptx px[4];
	char names[256];
	size_t used;
	int i;

	for (i = 0; i < 4; i++) {
		char path[512];
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "%s/nvcc13_%s.fatbin", TESTDATA, modes[i]);
		f = fopen(path, "re");
		CHECK(f != NULL);
		if (!f)
			return;
		n = fread(fb[i], 1, sizeof(fb[i]), f);
		fclose(f);
		CHECK(n > 16 && n < sizeof(fb[i]));
		CHECK(devrt_image_ptx(fb[i], NULL, 90, &px[i]) == 0);
		if (px[i].reason != GPUEXT_INJ_R_NONE) {
			fprintf(stderr, "inject_test: nvcc13_%s.fatbin: reason %u\n",
				modes[i], px[i].reason);
			return;
		}
		CHECK(px[i].image == GPUEXT_INJ_IMAGE_FATBIN);
		CHECK((px[i].owned != NULL) == (i > 0));
	}
	CHECK(px[0].len == 2136);	/* the compressed entries: 2137, its NUL too */
	for (i = 1; i < 4; i++)
		CHECK(px[i].len == px[0].len && !memcmp(px[i].ptx, px[0].ptx, px[0].len));
	CHECK(devrt_ptx_entries(px[0].ptx, px[0].len, names, sizeof(names), &used) == 2);
	CHECK(used == sizeof("mg_vec_add") + sizeof("mg_imbalanced") &&
	      !strcmp(names, "mg_vec_add") && !strcmp(names + sizeof("mg_vec_add"), "mg_imbalanced"));
	/* compute_90 PTX is too new for an sm_80 device */
	CHECK(devrt_image_ptx(fb[1], NULL, 80, &px[0]) == -1 && px[0].reason == GPUEXT_INJ_R_BAD_IMAGE);
	for (i = 1; i < 4; i++)
		free(px[i].owned);
}

static void test_entries(void)
{
	static const char ptx[] =
		"// .entry in_a_comment(\n"
		"/* .entry in_a_block\n .entry still */\n"
		".file 1 \".entry in_a_string\"\n"
		".visible .entry _Z3fooPf(\n.param .u64 p\n)\n{ ret; }\n"
		".entry\tbar_1$x (\n){ ret; }\n"
		".func notakernel()\n{ ret; }\n"
		"x.entry not_a_directive\n"
		".weak .entry last";
	char buf[256];
	size_t used;
	__u32 n = devrt_ptx_entries(ptx, strlen(ptx), buf, sizeof(buf), &used);

	CHECK(n == 3);
	CHECK(used == strlen("_Z3fooPf") + strlen("bar_1$x") + strlen("last") + 3);
	CHECK(!memcmp(buf, "_Z3fooPf\0bar_1$x\0last\0", used));
	/* no room: names that do not fit are left out */
	n = devrt_ptx_entries(ptx, strlen(ptx), buf, 12, &used);
	CHECK(n == 1 && used == 9);
}

/* Writes n bytes to dir/name. */
static void put_file(const char *dir, const char *name, const void *b, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	CHECK(f && fwrite(b, 1, n, f) == n);
	if (f)
		fclose(f);
}

/*
 * A cubin whose PTX Triton cached beside it: found by its exact bytes in
 * $TRITON_CACHE_DIR/<key>/, returned as image TRITON; a cubin of the same
 * size but other bytes, one without a .ptx beside it, and the switch off
 * stay SASS-only.
 */
static void test_triton_cache(void)
{
	static const char ptx[] = "//\n.version 8.0\n.target sm_90a\n"
				  ".address_size 64\n.visible .entry add_kernel()\n{ ret; }\n";
	unsigned char cubin[192] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 }, other[192];
	char dir[] = "/tmp/devrt-triton-XXXXXX", sub[256];
	struct devrt_ptx px;

	/* e_shoff 64, e_shentsize 64, e_shnum 2: 192 bytes */
	cubin[0x28] = 64;
	cubin[0x3a] = 64;
	cubin[0x3c] = 2;
	cubin[100] = 0xaa;
	memcpy(other, cubin, sizeof(other));
	other[150] = 0x55;
	CHECK(mkdtemp(dir) != NULL);
	setenv("TRITON_CACHE_DIR", dir, 1);
	snprintf(sub, sizeof(sub), "%s/aaaa", dir);
	CHECK(mkdir(sub, 0700) == 0);
	put_file(sub, "add_kernel.cubin", other, sizeof(other)); /* same size, other bytes */
	put_file(sub, "add_kernel.ptx", "// wrong one", 12);
	snprintf(sub, sizeof(sub), "%s/bbbb", dir);
	CHECK(mkdir(sub, 0700) == 0);
	put_file(sub, "add_kernel.cubin", cubin, sizeof(cubin));
	put_file(sub, "add_kernel.ptx", ptx, strlen(ptx));
	put_file(sub, "add_kernel.json", "{}", 2);

	CHECK(devrt_image_ptx(cubin, NULL, 90, &px) == 0);
	CHECK(px.image == GPUEXT_INJ_IMAGE_TRITON && px.reason == GPUEXT_INJ_R_NONE);
	CHECK(px.len == strlen(ptx) && px.ptx && !memcmp(px.ptx, ptx, px.len));
	CHECK(px.owned == px.ptx);
	free(px.owned);
	CHECK(devrt_triton_entries_read == 2);
	/* Again: from the index, the cache is not listed again. */
	CHECK(devrt_image_ptx(cubin, NULL, 90, &px) == 0 && px.len == strlen(ptx));
	free(px.owned);
	CHECK(devrt_triton_entries_read == 2);
	/* A kernel compiled since (a new entry): found. */
	snprintf(sub, sizeof(sub), "%s/cccc", dir);
	CHECK(mkdir(sub, 0700) == 0);
	other[150] = 0x57;
	put_file(sub, "mul_kernel.cubin", other, sizeof(other));
	put_file(sub, "mul_kernel.ptx", ptx, strlen(ptx));
	CHECK(devrt_image_ptx(other, NULL, 90, &px) == 0 && px.image == GPUEXT_INJ_IMAGE_TRITON);
	free(px.owned);
	CHECK(devrt_triton_entries_read > 2);

	other[150] = 0x56; /* in no file */
	CHECK(devrt_image_ptx(other, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_SASS_ONLY);
	setenv("GPUEXT_DEVRT_TRITON", "0", 1);
	CHECK(devrt_image_ptx(cubin, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_SASS_ONLY);
	unsetenv("GPUEXT_DEVRT_TRITON");
	snprintf(sub, sizeof(sub), "%s/bbbb/add_kernel.ptx", dir);
	CHECK(unlink(sub) == 0);
	CHECK(devrt_image_ptx(cubin, NULL, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_SASS_ONLY);
	unsetenv("TRITON_CACHE_DIR");
	snprintf(sub, sizeof(sub), "rm -rf '%s'", dir);
	CHECK(system(sub) == 0);
}

/*
 * A cubin loaded from a file (cuModuleLoad) of a Triton cache entry: its
 * .ptx is read from beside it, wherever the entry is, if the kernel's
 * .json is there too; not without the .json, not for a file that is not
 * a .cubin, and not with the switch off.
 */
static void test_triton_beside(void)
{
	static const char ptx[] = "//\n.version 8.0\n.target sm_90a\n"
				  ".address_size 64\n.visible .entry k()\n{ ret; }\n";
	unsigned char cubin[192] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 7 };
	char dir[] = "/tmp/devrt-beside-XXXXXX", sub[256], path[300];
	struct devrt_ptx px;

	CHECK(mkdtemp(dir) != NULL);
	setenv("TRITON_CACHE_DIR", dir, 1); /* a cache without these */
	snprintf(sub, sizeof(sub), "%s/e", dir);
	CHECK(mkdir(sub, 0700) == 0);
	put_file(sub, "k.cubin", cubin, sizeof(cubin));
	put_file(sub, "k.ptx", ptx, strlen(ptx));
	put_file(sub, "k.json", "{}", 2);
	put_file(sub, "k.bin", cubin, sizeof(cubin));
	snprintf(path, sizeof(path), "%s/k.cubin", sub);
	CHECK(devrt_image_ptx(cubin, path, 90, &px) == 0);
	CHECK(px.image == GPUEXT_INJ_IMAGE_TRITON && px.len == strlen(ptx) &&
	      !memcmp(px.ptx, ptx, px.len) && px.owned == px.ptx);
	free(px.owned);
	snprintf(path, sizeof(path), "%s/k.bin", sub);
	CHECK(devrt_image_ptx(cubin, path, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_SASS_ONLY);
	snprintf(path, sizeof(path), "%s/k.cubin", sub);
	setenv("GPUEXT_DEVRT_TRITON", "0", 1);
	CHECK(devrt_image_ptx(cubin, path, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_SASS_ONLY);
	unsetenv("GPUEXT_DEVRT_TRITON");
	snprintf(path, sizeof(path), "%s/k.json", sub);
	CHECK(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/k.cubin", sub);
	CHECK(devrt_image_ptx(cubin, path, 90, &px) == -1 && px.reason == GPUEXT_INJ_R_SASS_ONLY);
	unsetenv("TRITON_CACHE_DIR");
	snprintf(sub, sizeof(sub), "rm -rf '%s'", dir);
	CHECK(system(sub) == 0);
}

int main(void)
{
	test_sha256();
	test_lz4_blocks();
	test_lz4_reference();
	test_image();
	test_nvcc13();
	test_entries();
	test_triton_cache();
	test_triton_beside();
	if (failed)
		return 1;
	printf("inject-test: ok\n");
	return 0;
}
