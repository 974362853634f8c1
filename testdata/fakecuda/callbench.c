// SPDX-License-Identifier: Apache-2.0
/*
 * callbench.c - times CUDA driver calls against whatever libcuda.so.1 it is
 * linked to, for the probe-overhead and ring-throughput benchmarks.
 *
 * Usage:
 *   callbench launch N        N back-to-back cuLaunchKernel calls
 *   callbench paced N RATE    N cuLaunchKernel calls at RATE calls/s, paced
 *                             in batches of 64 against CLOCK_MONOTONIC
 *   callbench rtlaunch N      N cudaLaunchKernel calls through the fake
 *                             runtime, which makes the cuLaunchKernel
 *                             through a pointer from cuGetProcAddress: the
 *                             path of every PyTorch launch
 *
 * Prints one JSON line: {"mode":...,"calls":N,"ns_per_call":X,"rate":R,
 * "loop_ns":T} where rate is the achieved calls per second and T the
 * CLOCK_MONOTONIC time from before the first call to after the last.
 * Run with FAKECUDA_COUNT=0 so the fake driver's own bookkeeping stays
 * out of the measurement.
 *
 * The module has two kernels, _Z6vecAddPfS_S_i (launched) and _Z5otherv;
 * CALLBENCH_KERNEL names the one to launch, CALLBENCH_PTX a PTX file to
 * load instead (device probe injection's benchmarks: a patched kernel, an
 * unpatched one beside it, the patch time of real modules).
 *
 * CALLBENCH_THRASH=KiB: before each call, write one byte in every cache
 * line of a buffer that large (launch and rtlaunch), as a real program's work
 * between two launches evicts what the last call left in the caches; each
 * call is then timed on its own (clock_gettime around it: add the same
 * ~20 ns to every configuration) and ns_per_call is their mean.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_api.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* rtlaunch: a fat binary of no parts (the fake runtime loads it, the fake
 * driver names kernels on demand) and a host stub registered for the one
 * kernel, as nvcc's registration code does. */
static const unsigned long long rt_fatbin[2] = FATBIN_EMPTY;
static struct fatbin_wrapper rt_wrapper = {
	.magic = FATBINC_MAGIC, .version = 1, .data = rt_fatbin,
};
static char rt_kernel[] = "_Z6vecAddPfS_S_i";
static void rt_stub(void) {}

/* One launch of the mode: the driver's or the runtime's. */
static inline void launch(int rt, CUfunction fn)
{
	if (rt) {
		const dim3 grid = { 128, 1, 1 }, block = { 256, 1, 1 };

		cudaLaunchKernel((const void *)rt_stub, grid, block, NULL, 0, NULL);
	} else {
		cuLaunchKernel(fn, 128, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
	}
}

static int check(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "callbench: %s failed: %d\n", what, r);
		exit(1);
	}
	return 0;
}

int main(int argc, char **argv)
{
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	/* PTX text, which the fake driver accepts as a module image. */
	static const char builtin[] =
		".version 8.0\n.target sm_90\n.address_size 64\n"
		".visible .entry _Z6vecAddPfS_S_i()\n{\n\tret;\n}\n"
		".visible .entry _Z5otherv()\n{\n\tret;\n}\n";
	const char *image = builtin, *kernel = getenv("CALLBENCH_KERNEL");
	const char *file = getenv("CALLBENCH_PTX");
	const char *thrash_env = getenv("CALLBENCH_THRASH");
	size_t thrash = thrash_env ? (size_t)atol(thrash_env) << 10 : 0;
	volatile char *junk = NULL;
	long n, rate = 0;
	double t0, t1;
	int rt;

	if (argc < 3 || (strcmp(argv[1], "launch") && strcmp(argv[1], "paced") &&
			 strcmp(argv[1], "rtlaunch")) ||
	    (!strcmp(argv[1], "paced") && argc < 4)) {
		fprintf(stderr, "usage: callbench launch N | callbench rtlaunch N | "
			"callbench paced N RATE\n");
		return 2;
	}
	rt = !strcmp(argv[1], "rtlaunch");
	n = atol(argv[2]);
	if (argc > 3)
		rate = atol(argv[3]);

	check(cuInit(0), "cuInit");
	check(cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	if (file && *file) {
		FILE *f = fopen(file, "re");
		static char buf[1 << 22];
		size_t got;

		if (!f) {
			perror(file);
			return 1;
		}
		got = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[got] = '\0';
		image = buf;
	}
	check(cuModuleLoadData(&mod, image), "cuModuleLoadData");
	check(cuModuleGetFunction(&fn, mod, kernel && *kernel ? kernel :
						"_Z6vecAddPfS_S_i"),
	      "cuModuleGetFunction");

	if (rt) {
		void **h = __cudaRegisterFatBinary(&rt_wrapper);

		__cudaRegisterFunction(h, (const char *)rt_stub, rt_kernel, rt_kernel,
				       -1, NULL, NULL, NULL, NULL, NULL);
		__cudaRegisterFatBinaryEnd(h);
		/* The stub's first launch looks its function up: not timed. */
		launch(rt, fn);
	}
	if (thrash && !(junk = calloc(1, thrash))) {
		perror("callbench: thrash buffer");
		return 1;
	}
	t0 = now_ns();
	if (thrash) {
		double in_calls = 0, c0;

		for (long i = 0; i < n; i++) {
			for (size_t o = 0; o < thrash; o += 64)
				junk[o]++;
			c0 = now_ns();
			launch(rt, fn);
			in_calls += now_ns() - c0;
		}
		t1 = now_ns();
		check(cuCtxSynchronize(), "cuCtxSynchronize");
		printf("{\"mode\":\"%s\",\"calls\":%ld,\"ns_per_call\":%.1f,\"thrash_kib\":%zu,\"loop_ns\":%.0f}\n",
		       argv[1], n, in_calls / (double)n, thrash >> 10, t1 - t0);
		return 0;
	}
	if (rate <= 0) {
		for (long i = 0; i < n; i++)
			launch(rt, fn);
	} else {
		double period = 1e9 / (double)rate;

		for (long i = 0; i < n; i++) {
			if ((i & 63) == 0)
				while (now_ns() - t0 < i * period)
					;
			cuLaunchKernel(fn, 128, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL);
		}
	}
	t1 = now_ns();
	check(cuCtxSynchronize(), "cuCtxSynchronize");
	printf("{\"mode\":\"%s\",\"calls\":%ld,\"ns_per_call\":%.1f,\"rate\":%.0f,\"loop_ns\":%.0f}\n",
	       argv[1], n, (t1 - t0) / (double)n, (double)n * 1e9 / (t1 - t0), t1 - t0);
	return 0;
}
