// clockbench.c - what a timestamp costs on this machine: clock_gettime
// (CLOCK_MONOTONIC, through the vDSO) against the raw TSC, ns per call.
// Prints one JSON line. Build: cc -O2 -static -o clockbench clockbench.c
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
	const long n = 20000000;
	volatile unsigned long long sink = 0;
	struct timespec ts;
	double t0, t1, t2;
	unsigned int aux;
	char src[64] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

	if (f) {
		if (fscanf(f, "%63s", src) != 1)
			src[0] = 0;
		fclose(f);
	}
	t0 = now();
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	}
	t1 = now();
	for (long i = 0; i < n; i++)
		sink += __rdtsc();
	t2 = now();
	double t3;
	for (long i = 0; i < n; i++)
		sink += __rdtscp(&aux);
	t3 = now();
	printf("{\"clocksource\":\"%s\",\"clock_gettime_ns\":%.2f,\"rdtsc_ns\":%.2f,\"rdtscp_ns\":%.2f}\n",
	       src, (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n);
	return (int)(sink & 0);
}
