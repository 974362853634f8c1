// Kernels launched through the CUDA runtime (<<< >>>) on every visible GPU
// of one process, the launches interleaved across the GPUs as a
// data-parallel loop makes them (bench/device/multigpu_check.sh), and one
// launched through the driver with the CUfunction of each GPU's context
// (cudaGetKernel, then cuKernelGetFunction with that GPU current: a
// handle of its own per context).
// Built PTX-only (compute_90), so the runtime loads PTX that devrt can
// patch. Prints one JSON object: the pid and, per GPU, its index, UUID,
// SM count and, per kernel, the launches made and an FNV-1a 64 of its
// output, so that instrumented and plain runs can be compared.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <cuda.h>
#include <cuda_runtime.h>

extern "C" __global__ void mg_vec_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

extern "C" __global__ void mg_axpy(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = 2.0f * a[i] + b[i];
}

// Block b spins (b + 1) * base iterations: the SM-load probe must see it.
extern "C" __global__ void mg_imbalanced(float *out, int base)
{
	int iters = base * (blockIdx.x + 1);
	float acc = threadIdx.x;
	for (int j = 0; j < iters; j++)
		acc = acc * 0.999f + 1.0f;
	out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

#define CU(x)                                                                 \
	do {                                                                  \
		CUresult e_ = (x);                                            \
		if (e_ != CUDA_SUCCESS) {                                     \
			fprintf(stderr, "%s:%d: %s: CUresult %d\n", __FILE__,  \
				__LINE__, #x, (int)e_);                       \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define CK(x)                                                                 \
	do {                                                                  \
		cudaError_t e_ = (x);                                         \
		if (e_ != cudaSuccess) {                                      \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#x, cudaGetErrorString(e_));                  \
			exit(1);                                              \
		}                                                             \
	} while (0)

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

enum { N = 1 << 20, MAXDEV = 16, IMB_THREADS = 128 };

struct dev {
	float *a, *b, *c, *c2, *imb;
	int sms;
	cudaUUID_t uuid;
	CUfunction axpy; // mg_axpy's function in this GPU's context
};

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 20;
	int base = argc > 2 ? atoi(argv[2]) : 2000;
	int ndev = 0;
	static struct dev d[MAXDEV];
	float *h = (float *)malloc(N * sizeof(float));
	cudaKernel_t axpy;
	int n = N;

	CK(cudaGetDeviceCount(&ndev));
	if (ndev > MAXDEV)
		ndev = MAXDEV;
	for (int i = 0; i < N; i++)
		h[i] = (float)(i % 1000) * 0.5f;
	for (int g = 0; g < ndev; g++) {
		cudaDeviceProp p;

		CK(cudaSetDevice(g));
		CK(cudaGetDeviceProperties(&p, g));
		d[g].sms = p.multiProcessorCount;
		d[g].uuid = p.uuid;
		CK(cudaMalloc(&d[g].a, N * sizeof(float)));
		CK(cudaMalloc(&d[g].b, N * sizeof(float)));
		CK(cudaMalloc(&d[g].c, N * sizeof(float)));
		CK(cudaMalloc(&d[g].c2, N * sizeof(float)));
		CK(cudaMalloc(&d[g].imb, (size_t)d[g].sms * IMB_THREADS * sizeof(float)));
		CK(cudaMemcpy(d[g].a, h, N * sizeof(float), cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d[g].b, h, N * sizeof(float), cudaMemcpyHostToDevice));
		CK(cudaGetKernel(&axpy, mg_axpy));
		CU(cuKernelGetFunction(&d[g].axpy, (CUkernel)axpy));
	}
	for (int r = 0; r < reps; r++)
		for (int g = 0; g < ndev; g++) {
			CK(cudaSetDevice(g));
			mg_vec_add<<<N / 256, 256>>>(d[g].a, d[g].b, d[g].c, N);
			CK(cudaGetLastError());
			mg_imbalanced<<<d[g].sms, IMB_THREADS>>>(d[g].imb, base);
			CK(cudaGetLastError());
			void *args[] = {&d[g].a, &d[g].b, &d[g].c2, &n};
			CU(cuLaunchKernel(d[g].axpy, N / 256, 1, 1, 256, 1, 1, 0, 0, args, 0));
		}
	printf("{\"pid\":%d,\"reps\":%d,\"devices\":[", (int)getpid(), reps);
	for (int g = 0; g < ndev; g++) {
		size_t ni = (size_t)d[g].sms * IMB_THREADS;
		float *hi = (float *)malloc(ni * sizeof(float));
		const unsigned char *u = (const unsigned char *)d[g].uuid.bytes;

		CK(cudaSetDevice(g));
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(h, d[g].c, N * sizeof(float), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(hi, d[g].imb, ni * sizeof(float), cudaMemcpyDeviceToHost));
		uint64_t fc = fnv(h, N * sizeof(float));
		CK(cudaMemcpy(h, d[g].c2, N * sizeof(float), cudaMemcpyDeviceToHost));
		uint64_t fa = fnv(h, N * sizeof(float));
		printf("%s{\"index\":%d,\"uuid\":\"GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-"
		       "%02x%02x-%02x%02x%02x%02x%02x%02x\",\"sms\":%d,"
		       "\"mg_vec_add\":{\"launches\":%d,\"blocks\":%d,\"fnv\":\"%016llx\"},"
		       "\"mg_imbalanced\":{\"launches\":%d,\"blocks\":%d,\"fnv\":\"%016llx\"},"
		       "\"mg_axpy\":{\"launches\":%d,\"blocks\":%d,\"fnv\":\"%016llx\"},"
		       "\"axpy_function\":\"%p\"}",
		       g ? "," : "", g, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
		       u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15], d[g].sms,
		       reps, N / 256, (unsigned long long)fc,
		       reps, d[g].sms, (unsigned long long)fnv(hi, ni * sizeof(float)),
		       reps, N / 256, (unsigned long long)fa, (void *)d[g].axpy);
		free(hi);
	}
	printf("]}\n");
	return 0;
}
