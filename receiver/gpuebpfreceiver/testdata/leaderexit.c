/*
 * leaderexit.c - a CUDA program whose main thread exits first: it makes a
 * call, starts a worker and calls pthread_exit; the worker makes 30 more
 * calls after the main thread is gone. The process ends with the worker.
 * Prints its pid first.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "cuda_api.h"

static CUcontext ctx;

static void *worker(void *arg)
{
	(void)arg;
	usleep(300 * 1000); /* the main thread has exited by now */
	cuCtxSetCurrent(ctx);
	for (int i = 0; i < 30; i++) {
		cuCtxSynchronize();
		usleep(10 * 1000);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;

	printf("%d\n", getpid());
	fflush(stdout);
	cuInit(0);
	cuDevicePrimaryCtxRetain(&ctx, 0);
	cuCtxSetCurrent(ctx);
	cuCtxSynchronize();
	pthread_create(&t, NULL, worker, NULL);
	pthread_exit(NULL);
}
