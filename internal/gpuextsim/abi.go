package gpuextsim

import (
	"encoding/binary"
	"fmt"
)

// Sizes and offsets of the sim records of gpuext_abi.h, checked against the
// BTF of bpf/abi.bpf.c by abi_test.go.
const (
	accessSize      = 16
	memConfigSize   = 32
	tenantSize      = 56
	memResultSize   = 968
	taskSize        = 24
	schedConfigSize = 408
	jobSize         = 24
	taskResultSize  = 80
	schedResultSize = 1304
	benchSize       = 24

	memResultTenantsOff   = 72
	schedConfigTasksOff   = 24
	schedResultTasksOff   = 24
	accessFlagWrite       = 1 << 0
	accessFlagRelease     = 1 << 1
	memFlagNoPrefetch     = 1 << 0
	commLen               = 16
	ioctlMagic            = 'G'
	iocWrite, iocRead     = 1, 2
	iocSizeShift          = 16
	iocDirShift           = 30
	iocTypeShift          = 8
	pageShift, chunkShift = 12, 21
)

// Bounds of the simulator (GPUEXT_SIM_* in gpuext_abi.h).
const (
	MaxChunks      = 65536
	MaxBlocks      = 262144
	MaxTenants     = 16
	MaxWrite       = 65536
	MaxTasks       = 16
	MaxJobs        = 65536
	MaxJobNS       = 10_000_000_000
	MaxTotalNS     = 100_000_000_000
	MaxSubmitNS    = 1 << 50
	MaxSwitchNS    = 1_000_000_000
	MaxBenchCalls  = 1 << 24
	PageSize       = 1 << pageShift
	BlockSize      = 1 << chunkShift
	BlockPages     = BlockSize / PageSize
	TimesliceMinUS = 100
	TimesliceMaxUS = 10_000_000
	EvictMaxSkips  = 8 // GPUEXT_EVICT_MAX_SKIPS
)

// Hooks: enum gpuext_hook, the index of a gpu_ext entry point.
const (
	HookBlockActivate uint32 = iota
	HookBlockAccess
	HookEvictPrepare
	HookPagePrefetch
	HookPagePrefetchIter
	HookTaskInit
	HookTaskBind
	HookTaskDestroy
	HookMax
)

// HookNames are the hooks' names in /sys/kernel/gpu_ext/stats, by hook.
var HookNames = [HookMax]string{
	"block_activate", "block_access", "evict_prepare", "page_prefetch",
	"page_prefetch_iter", "task_init", "task_bind", "task_destroy",
}

// Interleave levels (enum gpuext_interleave).
const (
	InterleaveDefault uint32 = iota
	InterleaveLow
	InterleaveMedium
	InterleaveHigh
)

func ioc(dir, nr, size uintptr) uintptr {
	return dir<<iocDirShift | size<<iocSizeShift | ioctlMagic<<iocTypeShift | nr
}

// The ioctl numbers, as _IOW/_IOR/_IOWR compute them.
var (
	iocMemReset   = ioc(iocWrite, 1, memConfigSize)
	iocMemResult  = ioc(iocRead, 2, memResultSize)
	iocSchedReset = ioc(iocWrite, 3, schedConfigSize)
	iocSchedRun   = ioc(iocRead, 4, schedResultSize)
	iocBench      = ioc(iocRead|iocWrite, 5, benchSize)
)

var le = binary.LittleEndian

func (c MemConfig) encode() []byte {
	b := make([]byte, memConfigSize)
	le.PutUint32(b[0:], c.CapacityChunks)
	var flags uint32
	if c.NoPrefetch {
		flags |= memFlagNoPrefetch
	}
	le.PutUint32(b[4:], flags)
	return b
}

func encodeAccesses(trace []Access) []byte {
	b := make([]byte, len(trace)*accessSize)
	for i, a := range trace {
		r := b[i*accessSize:]
		le.PutUint64(r[0:], a.VA)
		le.PutUint32(r[8:], a.PID)
		var flags uint32
		if a.Write {
			flags |= accessFlagWrite
		}
		if a.Release {
			flags |= accessFlagRelease
		}
		le.PutUint32(r[12:], flags)
	}
	return b
}

func decodeTenant(b []byte) TenantResult {
	return TenantResult{
		PID:             le.Uint32(b[0:]),
		Accesses:        le.Uint64(b[8:]),
		Faults:          le.Uint64(b[16:]),
		Hits:            le.Uint64(b[24:]),
		Evictions:       le.Uint64(b[32:]),
		PrefetchedBytes: le.Uint64(b[40:]),
		MigratedBytes:   le.Uint64(b[48:]),
	}
}

func decodeMemResult(b []byte) (MemResult, error) {
	if len(b) != memResultSize {
		return MemResult{}, fmt.Errorf("gpu_ext_sim: memory result of %d bytes, want %d", len(b), memResultSize)
	}
	r := MemResult{
		Accesses:        le.Uint64(b[0:]),
		Faults:          le.Uint64(b[8:]),
		Hits:            le.Uint64(b[16:]),
		Evictions:       le.Uint64(b[24:]),
		PrefetchedBytes: le.Uint64(b[32:]),
		MigratedBytes:   le.Uint64(b[40:]),
		EvictSkips:      le.Uint64(b[48:]),
		UsedChunks:      le.Uint32(b[56:]),
		UnusedChunks:    le.Uint32(b[60:]),
		Blocks:          le.Uint32(b[64:]),
	}
	n := le.Uint32(b[68:])
	if n > MaxTenants {
		return MemResult{}, fmt.Errorf("gpu_ext_sim: memory result names %d tenants, at most %d", n, MaxTenants)
	}
	for i := uint32(0); i < n; i++ {
		r.Tenants = append(r.Tenants, decodeTenant(b[memResultTenantsOff+i*tenantSize:]))
	}
	return r, nil
}

func (c SchedConfig) encode(tasks []Task) ([]byte, error) {
	if len(tasks) == 0 || len(tasks) > MaxTasks {
		return nil, fmt.Errorf("gpu_ext_sim: %d tasks, want 1..%d", len(tasks), MaxTasks)
	}
	b := make([]byte, schedConfigSize)
	le.PutUint64(b[0:], c.SwitchNS)
	le.PutUint64(b[8:], c.DefaultTimesliceUS)
	le.PutUint32(b[16:], uint32(len(tasks)))
	for i, t := range tasks {
		if len(t.Comm) >= commLen {
			return nil, fmt.Errorf("gpu_ext_sim: task %d comm %q longer than %d bytes", i, t.Comm, commLen-1)
		}
		r := b[schedConfigTasksOff+i*taskSize:]
		le.PutUint32(r[0:], t.PID)
		copy(r[8:8+commLen], t.Comm)
	}
	return b, nil
}

func encodeJobs(jobs []Job) []byte {
	b := make([]byte, len(jobs)*jobSize)
	for i, j := range jobs {
		r := b[i*jobSize:]
		task := uint32(0xffffffff) // out of range: the module rejects it
		if j.Task >= 0 && j.Task < 0xffffffff {
			task = uint32(j.Task)
		}
		le.PutUint32(r[0:], task)
		le.PutUint64(r[8:], j.SubmitNS)
		le.PutUint64(r[16:], j.DurationNS)
	}
	return b
}

func decodeTaskResult(b []byte) TaskResult {
	return TaskResult{
		PID:           le.Uint32(b[0:]),
		Interleave:    le.Uint32(b[4:]),
		TimesliceUS:   le.Uint64(b[8:]),
		Jobs:          le.Uint64(b[16:]),
		Dropped:       le.Uint64(b[24:]),
		MeanLatencyNS: le.Uint64(b[32:]),
		P99LatencyNS:  le.Uint64(b[40:]),
		MeanWaitNS:    le.Uint64(b[48:]),
		P99WaitNS:     le.Uint64(b[56:]),
		BusyNS:        le.Uint64(b[64:]),
		Rejected:      le.Uint32(b[72:]) != 0,
	}
}

func decodeSchedResult(b []byte) (SchedResult, error) {
	if len(b) != schedResultSize {
		return SchedResult{}, fmt.Errorf("gpu_ext_sim: sched result of %d bytes, want %d", len(b), schedResultSize)
	}
	r := SchedResult{MakespanNS: le.Uint64(b[0:]), Switches: le.Uint64(b[8:])}
	n := le.Uint32(b[16:])
	if n > MaxTasks {
		return SchedResult{}, fmt.Errorf("gpu_ext_sim: sched result names %d tasks, at most %d", n, MaxTasks)
	}
	for i := uint32(0); i < n; i++ {
		r.Tasks = append(r.Tasks, decodeTaskResult(b[schedResultTasksOff+i*taskResultSize:]))
	}
	return r, nil
}
