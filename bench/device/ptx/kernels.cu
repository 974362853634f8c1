// Kernels whose nvcc PTX forms the parser/rewriter corpus (devrt/ptx/testdata/corpus)
// and, later, the instrumented-run checks of issue 7. Each exercises PTX that a
// rewriter must keep intact: predicated and early exits, calls with parameters
// and return values, shared/local memory, atomics, vectors, launch bounds.
#include <cstdio>
#include <cuda_fp16.h>

extern "C" __global__ void vec_add(const float *a, const float *b, float *c, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void block_reduce(const float *in, float *out, int n) {
	__shared__ float buf[32];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = i < n ? in[i] : 0.f;
	for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
	if ((threadIdx.x & 31) == 0) buf[threadIdx.x >> 5] = v;
	__syncthreads();
	if (threadIdx.x < 32) {
		v = threadIdx.x < (blockDim.x >> 5) ? buf[threadIdx.x] : 0.f;
		for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
		if (threadIdx.x == 0) atomicAdd(out, v);
	}
}

__device__ __noinline__ float poly(float x, int k) {
	float r = 0.f;
	for (int j = 0; j < k; j++) r = r * x + (float)j;
	return r;
}

// Work grows with the block index: the imbalance probe must see it.
extern "C" __global__ void imbalanced(float *out, int base_iters) {
	int iters = base_iters * (blockIdx.x + 1);
	float acc = threadIdx.x;
	for (int j = 0; j < iters; j++) acc = acc * 0.999f + 1.0f;
	out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

extern "C" __global__ void early_exits(const int *flags, int *out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	int f = flags[i];
	if (f < 0) { out[i] = -1; return; }
	if (f == 0) return;
	out[i] = (int)poly((float)f, f & 7);
}

template <typename T>
__global__ void __launch_bounds__(256, 2) axpy(T alpha, const T *x, T *y, int n) {
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
		y[i] = alpha * x[i] + y[i];
}
template __global__ void axpy<float>(float, const float *, float *, int);
template __global__ void axpy<double>(double, const double *, double *, int);

extern "C" __global__ void half_vec4(const __half2 *a, float4 *out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float2 f = __half22float2(a[i]);
		out[i] = make_float4(f.x, f.y, f.x * f.y, f.x - f.y);
	}
}

extern "C" __global__ void histogram(const unsigned char *data, unsigned int *bins, int n) {
	__shared__ unsigned int local[256];
	for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
	__syncthreads();
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
		atomicAdd(&local[data[i]], 1u);
	__syncthreads();
	for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

extern "C" __global__ void local_array(const int *idx, float *out, int n) {
	float scratch[16];
	for (int k = 0; k < 16; k++) scratch[k] = k * 0.5f;
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = scratch[idx[i] & 15];
}

extern "C" __global__ void say_hello(int v) {
	if (threadIdx.x == 0 && blockIdx.x == 0) printf("hello %d\n", v);
}

__device__ int dev_counter;
__constant__ float coeffs[4];
extern "C" __global__ void globals_use(float *out) {
	int t = atomicAdd(&dev_counter, 1);
	out[threadIdx.x] = coeffs[t & 3];
}
