package uvmtools

// Counter indices of UvmCounterName (uvm_types.h); the counters buffer is
// NvU64[UVM_TOTAL_COUNTERS] indexed by them, and enable-mask bit i
// (UVM_COUNTER_NAME_FLAG_*) is counter i. Indices 3-6 exist on Windows only.
const (
	counterBytesXferHtD         = 0 // bytes migrated CPU to GPU (any cause)
	counterBytesXferDtH         = 1 // bytes migrated GPU to CPU
	counterCPUPageFaultCount    = 2 // CPU faults on managed memory
	counterPrefetchBytesXferHtD = 7 // defined, never incremented on Linux (565–595)
	counterPrefetchBytesXferDtH = 8 // defined, never incremented on Linux (565–595)
	counterGPUPageFaultCount    = 9 // GPU fault buffer entries serviced

	allCountersMask = 1<<counterBytesXferHtD | 1<<counterBytesXferDtH | 1<<counterCPUPageFaultCount |
		1<<counterPrefetchBytesXferHtD | 1<<counterPrefetchBytesXferDtH | 1<<counterGPUPageFaultCount
)

// Counters are the driver's cumulative per-process counters
// (UVM_TOOLS_ENABLE_COUNTERS on a tracker created with no queue), summed
// over all processors, counted from when the tracker enabled them. The
// driver adds to them synchronously (migration bytes when a migration is
// pushed, faults when serviced), while queue events for migrations arrive
// when the copy completes, so the two agree only after a Flush.
type Counters struct {
	BytesHtD         uint64 `json:"bytes_htd"`          // UvmCounterNameBytesXferHtD
	BytesDtH         uint64 `json:"bytes_dth"`          // UvmCounterNameBytesXferDtH
	CPUPageFaults    uint64 `json:"cpu_page_faults"`    // UvmCounterNameCpuPageFaultCount
	GPUPageFaults    uint64 `json:"gpu_page_faults"`    // UvmCounterNameGpuPageFaultCount
	PrefetchBytesHtD uint64 `json:"prefetch_bytes_htd"` // always 0 on Linux drivers 565–595
	PrefetchBytesDtH uint64 `json:"prefetch_bytes_dth"` // always 0 on Linux drivers 565–595
}

func countersFrom(load func(i int) uint64) Counters {
	return Counters{
		BytesHtD:         load(counterBytesXferHtD),
		BytesDtH:         load(counterBytesXferDtH),
		CPUPageFaults:    load(counterCPUPageFaultCount),
		GPUPageFaults:    load(counterGPUPageFaultCount),
		PrefetchBytesHtD: load(counterPrefetchBytesXferHtD),
		PrefetchBytesDtH: load(counterPrefetchBytesXferDtH),
	}
}
