// xid_trigger.cu - a CUDA program that writes through a bad device pointer.
// The GPU's MMU faults, the driver reports an Xid (31, "MMU fault") and ends
// this process's context with cudaErrorIllegalAddress. It harms nothing else:
// the fault is the application's, and the driver recovers the GPU from it.
// Used by bench/device/nvml.sh to check that Xids reach the collector.
#include <cstdio>
#include <unistd.h>

__global__ void write_through(int *p) { p[threadIdx.x] = 42; }

int main()
{
	printf("%d\n", getpid());
	fflush(stdout);
	write_through<<<1, 32>>>(reinterpret_cast<int *>(0x1000));
	cudaError_t err = cudaDeviceSynchronize();
	printf("%s\n", cudaGetErrorName(err));
	return err == cudaErrorIllegalAddress ? 0 : 1;
}
