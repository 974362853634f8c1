// managed.cu - a managed-memory workload whose UVM events are predictable,
// for bench/device/uvm.sh and the uvmtools fixtures.
//
// It allocates one managed buffer, sized from the free GPU memory: at most
// --max-mib (default 256 MiB) and never more than a quarter of what is free
// (oversubscribing managed memory can hang the GPU), a multiple of 2 MiB.
// It then waits for --start-file (the tracer creates it once attached) and
// runs, with cudaDeviceSynchronize after each GPU pass:
//   cpu_init    CPU writes every byte (pages populated on the CPU)
//   gpu_seq     GPU: one thread per 4 KiB page, every page once
//   cpu_touch1  CPU: one write per 4 KiB page
//   gpu_stride  GPU: one page per 64 KiB (pages 0, 16, 32, ...)
//   cpu_touch2  CPU: one write per 4 KiB page
//   gpu_random  GPU: --random-pages distinct pages chosen with --seed
//   cpu_verify  CPU: reads every page and checks its counter
// Each touch adds 1 to the first int of the page, so cpu_verify knows what
// every page must hold. The last line of stdout is one JSON object saying
// exactly what was done, with phase times on CLOCK_MONOTONIC_RAW (the clock
// of the UVM driver's CPU timestamps). Exit status 0 only if verified.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <unistd.h>
#include <cuda_runtime.h>

static const size_t kPage = 4096;
static const size_t kStride = 64 * 1024;
static const size_t kAlign = 2u << 20;

#define CHECK(call)                                                             \
	do {                                                                        \
		cudaError_t err_ = (call);                                              \
		if (err_ != cudaSuccess) {                                              \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,     \
			        cudaGetErrorString(err_));                                  \
			exit(2);                                                            \
		}                                                                       \
	} while (0)

static uint64_t now_raw()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// Touch page idx[i] (or page i*step when idx is null): +1 on its first int.
__global__ void touch(char *buf, size_t n, size_t step, const uint32_t *idx)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t page = idx ? idx[i] : i * step;
		int *p = reinterpret_cast<int *>(buf + page * kPage);
		*p += 1;
	}
}

struct Phase {
	std::string name, proc;
	size_t pages, stride;
	uint64_t start, end;
};

static std::vector<Phase> phases;

static void gpu_pass(const char *name, char *buf, size_t n, size_t step, const uint32_t *idx, size_t stride)
{
	Phase p{name, "gpu", n, stride, now_raw(), 0};
	unsigned blocks = (unsigned)((n + 255) / 256);
	if (blocks > 65535)
		blocks = 65535;
	touch<<<blocks, 256>>>(buf, n, step, idx);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());
	p.end = now_raw();
	phases.push_back(p);
}

static void cpu_touch(const char *name, char *buf, size_t pages)
{
	Phase p{name, "cpu", pages, kPage, now_raw(), 0};
	for (size_t i = 0; i < pages; i++)
		*reinterpret_cast<volatile int *>(buf + i * kPage) += 1;
	p.end = now_raw();
	phases.push_back(p);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static bool wait_for(const char *path, int seconds)
{
	struct stat st;
	for (int i = 0; i < seconds * 1000; i++) {
		if (stat(path, &st) == 0)
			return true;
		usleep(1000);
	}
	return false;
}

int main(int argc, char **argv)
{
	const char *start_file = nullptr;
	size_t max_mib = 256, random_pages = 4096;
	uint64_t seed = 12345;
	int wait_s = 120, pause_ms = 0;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
		if (a == "--start-file" && v) start_file = argv[++i];
		else if (a == "--max-mib" && v) max_mib = strtoull(argv[++i], nullptr, 10);
		else if (a == "--random-pages" && v) random_pages = strtoull(argv[++i], nullptr, 10);
		else if (a == "--seed" && v) seed = strtoull(argv[++i], nullptr, 10);
		else if (a == "--wait-seconds" && v) wait_s = atoi(argv[++i]);
		else if (a == "--pause-ms" && v) pause_ms = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--start-file PATH] [--max-mib N] [--random-pages N] [--seed S] [--wait-seconds N] [--pause-ms N]\n", argv[0]);
			return 64;
		}
	}

	CHECK(cudaSetDevice(0));
	size_t free_b = 0, total_b = 0;
	CHECK(cudaMemGetInfo(&free_b, &total_b));
	size_t bytes = max_mib << 20;
	if (bytes > free_b / 4)
		bytes = free_b / 4; // never more than a quarter of free memory
	bytes = bytes / kAlign * kAlign;
	if (bytes < kAlign) {
		fprintf(stderr, "only %zu bytes free: not enough for a %zu-byte buffer at a quarter of free memory\n", free_b, kAlign);
		return 3;
	}
	const size_t pages = bytes / kPage;
	if (random_pages > pages)
		random_pages = pages;

	cudaDeviceProp prop;
	CHECK(cudaGetDeviceProperties(&prop, 0));
	char uuid[64];
	const unsigned char *u = reinterpret_cast<const unsigned char *>(prop.uuid.bytes);
	snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);

	// The random pass: random_pages distinct pages (partial Fisher-Yates),
	// their indices in plain device memory so they cause no UVM events.
	std::vector<uint32_t> perm(pages);
	for (size_t i = 0; i < pages; i++)
		perm[i] = (uint32_t)i;
	uint64_t s = seed;
	for (size_t i = 0; i < random_pages; i++) {
		size_t j = i + (size_t)(splitmix64(&s) % (pages - i));
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	std::vector<uint8_t> in_random(pages, 0);
	for (size_t i = 0; i < random_pages; i++)
		in_random[perm[i]] = 1;
	uint32_t *d_idx = nullptr;
	CHECK(cudaMalloc(&d_idx, random_pages * sizeof(uint32_t)));
	CHECK(cudaMemcpy(d_idx, perm.data(), random_pages * sizeof(uint32_t), cudaMemcpyHostToDevice));

	char *buf = nullptr;
	CHECK(cudaMallocManaged(&buf, bytes, cudaMemAttachGlobal));

	fprintf(stderr, "managed: %zu bytes at %p, pid %d; waiting for %s\n", bytes, (void *)buf, (int)getpid(),
	        start_file ? start_file : "(no start file)");
	if (start_file && !wait_for(start_file, wait_s)) {
		fprintf(stderr, "managed: %s did not appear within %d s\n", start_file, wait_s);
		return 4;
	}

	{
		Phase p{"cpu_init", "cpu", pages, kPage, now_raw(), 0};
		memset(buf, 0, bytes);
		p.end = now_raw();
		phases.push_back(p);
	}
	// --pause-ms: idle after each GPU pass, so that a collector sampling
	// every second sees each pass's faults on their own.
	gpu_pass("gpu_seq", buf, pages, 1, nullptr, kPage);
	usleep(pause_ms * 1000);
	cpu_touch("cpu_touch1", buf, pages);
	const size_t step = kStride / kPage;
	const size_t stride_pages = (pages + step - 1) / step;
	gpu_pass("gpu_stride", buf, stride_pages, step, nullptr, kStride);
	usleep(pause_ms * 1000);
	cpu_touch("cpu_touch2", buf, pages);
	gpu_pass("gpu_random", buf, random_pages, 0, d_idx, 0);
	usleep(pause_ms * 1000);

	Phase v{"cpu_verify", "cpu", pages, kPage, now_raw(), 0};
	size_t bad = 0;
	for (size_t i = 0; i < pages; i++) {
		int want = 1 + 1 + (i % step == 0) + 1 + in_random[i];
		if (*reinterpret_cast<volatile int *>(buf + i * kPage) != want)
			bad++;
	}
	v.end = now_raw();
	phases.push_back(v);

	printf("{\"program\":\"managed\",\"pid\":%d,\"device\":0,\"gpu_name\":\"%s\",\"gpu_uuid\":\"%s\","
	       "\"free_bytes\":%zu,\"total_bytes\":%zu,\"bytes\":%zu,\"page_size\":%zu,\"pages\":%zu,"
	       "\"base\":%llu,\"seed\":%llu,\"random_pages\":%zu,\"stride_pages\":%zu,\"clock\":\"CLOCK_MONOTONIC_RAW\","
	       "\"verified\":%s,\"bad_pages\":%zu,\"phases\":[",
	       (int)getpid(), prop.name, uuid, free_b, total_b, bytes, kPage, pages,
	       (unsigned long long)(uintptr_t)buf, (unsigned long long)seed, random_pages, stride_pages,
	       bad == 0 ? "true" : "false", bad);
	for (size_t i = 0; i < phases.size(); i++) {
		const Phase &p = phases[i];
		printf("%s{\"name\":\"%s\",\"proc\":\"%s\",\"pages\":%zu,\"stride\":%zu,\"start_ns\":%llu,\"end_ns\":%llu}",
		       i ? "," : "", p.name.c_str(), p.proc.c_str(), p.pages, p.stride,
		       (unsigned long long)p.start, (unsigned long long)p.end);
	}
	printf("]}\n");
	fflush(stdout);

	CHECK(cudaFree(buf));
	CHECK(cudaFree(d_idx));
	return bad == 0 ? 0 : 1;
}
