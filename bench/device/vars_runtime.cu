// SPDX-License-Identifier: Apache-2.0
// A CUDA runtime program with variables of its own, for devrt's injection
// (GPUEXT_INJ_RF_VARS: the patched twin owns the module's variables): a
// __constant__ array written with cudaMemcpyToSymbol, a __device__ counter
// every thread adds to, an initialized __device__ float a second kernel
// changes, all read back with cudaMemcpyFromSymbol, a kernel launched with
// all the dynamic shared memory a block may have, and a graph built node by
// node (cudaGraphAddKernelNode). Its one line of output
// must be the same with and without devrt and the collector's probes
// (bench/device/probes_check.sh compares them).
//
//   nvcc -arch=sm_90 -o vars_runtime bench/device/vars_runtime.cu
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>

__constant__ float coeffs[4];
__device__ unsigned int tickets;
__device__ float bias = 0.25f;

extern "C" __global__ void take(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	atomicAdd(&tickets, 1u);
	out[i] = coeffs[i & 3] * (float)((i % 1000) + 1) + bias;
}

// All the shared memory a block may have: a patched twin with the probes'
// own static shared arrays cannot take that launch, so devrt runs the
// kernel's plain copy in the twin (GPUEXT_INJ_PLAIN_SUFFIX), which must
// see the same coeffs and bias.
extern "C" __global__ void big(float *out, int n)
{
	extern __shared__ float tile[];
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	tile[threadIdx.x] = coeffs[threadIdx.x & 3] * (float)(blockIdx.x % 7);
	__syncthreads();
	if (i < n)
		out[i] = tile[(threadIdx.x + 1) % blockDim.x] + bias;
}

extern "C" __global__ void bump(float by)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		bias += by;
}

#define CK(x)                                                                  \
	do {                                                                   \
		cudaError_t e_ = (x);                                          \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
			exit(1);                                               \
		}                                                              \
	} while (0)

// The device's n floats at out, folded into the FNV-1a hash h.
static uint64_t fold(uint64_t h, const float *out, float *host, int n)
{
	CK(cudaMemcpy(host, out, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++) {
		uint32_t v;

		memcpy(&v, &host[i], 4);
		h = (h ^ v) * 1099511628211ULL;
	}
	return h;
}

int main(void)
{
	const int n = 1 << 20, rounds = 3;
	const float c1[4] = {1.5f, -2.0f, 3.25f, 8.0f}, c2[4] = {0.5f, 4.0f, -1.0f, 2.0f};
	static float host[1 << 20];
	unsigned int t = 0;
	uint64_t h = 1469598103934665603ULL; // FNV-1a over every output
	float b = 0;
	float *out;

	CK(cudaMalloc(&out, n * sizeof(float)));
	CK(cudaMemcpyToSymbol(coeffs, c1, sizeof(c1)));
	for (int r = 0; r < 2 * rounds; r++) {
		if (r == rounds) { // a second write, after launches read the first
			CK(cudaMemcpyToSymbol(coeffs, c2, sizeof(c2)));
			bump<<<1, 32>>>(1.0f);
			CK(cudaGetLastError());
		}
		take<<<n / 256, 256>>>(out, n);
		CK(cudaGetLastError());
		h = fold(h, out, host, n);
	}
	int most = 0;
	CK(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
	CK(cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, most));
	big<<<n / 256, 256, most>>>(out, n);
	CK(cudaGetLastError());
	h = fold(h, out, host, n);
	// a graph built node by node: its kernel must see the variables too
	{
		cudaKernelNodeParams kp = {};
		cudaGraphNode_t node;
		cudaGraphExec_t ge;
		cudaGraph_t g;
		int nn = n;
		void *args[] = {&out, &nn};

		kp.func = (void *)take;
		kp.gridDim = dim3(n / 256);
		kp.blockDim = dim3(256);
		kp.kernelParams = args;
		CK(cudaGraphCreate(&g, 0));
		CK(cudaGraphAddKernelNode(&node, g, NULL, 0, &kp));
		CK(cudaGraphInstantiate(&ge, g, 0));
		CK(cudaGraphLaunch(ge, 0));
		CK(cudaStreamSynchronize(0));
		h = fold(h, out, host, n);
		CK(cudaGraphExecDestroy(ge));
		CK(cudaGraphDestroy(g));
	}
	CK(cudaMemcpyFromSymbol(&t, tickets, sizeof(t)));
	CK(cudaMemcpyFromSymbol(&b, bias, sizeof(b)));
	printf("{\"tickets\":%u,\"bias\":%g,\"fnv\":\"%016llx\"}\n", t, b, (unsigned long long)h);
	return t == (unsigned)((2 * rounds + 1) * n) && b == 1.25f ? 0 : 2;
}
