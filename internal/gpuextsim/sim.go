package gpuextsim

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DevicePath is where gpu_ext_sim's misc device appears.
const DevicePath = "/dev/gpu_ext_sim"

// ErrNoDevice wraps the error of opening DevicePath when the module is not
// loaded (every machine but a test VM).
var ErrNoDevice = errors.New("gpu_ext_sim is not loaded")

// Access is one GPU access of a memory trace.
type Access struct {
	VA      uint64 // byte address: block VA>>21, page VA>>12
	PID     uint32 // the tenant; never 0
	Write   bool
	Release bool // the block's data is dropped: its chunk goes to the unused list
}

// MemConfig configures a memory session.
type MemConfig struct {
	CapacityChunks uint32 // 2 MiB root chunks: 1..MaxChunks
	NoPrefetch     bool   // never prefetch (page_prefetch is not called)
}

// TenantResult is one pid's share of a memory session: faults, hits and
// prefetched bytes of its accesses; evictions of the blocks it owns (first
// touched).
type TenantResult struct {
	PID                               uint32
	Accesses, Faults, Hits, Evictions uint64
	PrefetchedBytes, MigratedBytes    uint64
}

// MemResult is a memory session's counters.
type MemResult struct {
	Accesses, Faults, Hits, Evictions uint64
	PrefetchedBytes, MigratedBytes    uint64
	EvictSkips                        uint64 // candidates evict_prepare spared
	UsedChunks, UnusedChunks, Blocks  uint32
	Tenants                           []TenantResult // in order of first access
}

// Task is a channel group of a scheduling session.
type Task struct {
	PID  uint32 // never 0
	Comm string // at most 15 bytes; a policy may classify by it
}

// Job is GPU work of Tasks[Task], submitted at SubmitNS (simulated time).
type Job struct {
	Task                 int
	SubmitNS, DurationNS uint64
}

// SchedConfig configures a scheduling session.
type SchedConfig struct {
	SwitchNS           uint64 // context switch cost
	DefaultTimesliceUS uint64 // the driver's timeslice before any policy
}

// TaskResult is one task after a scheduling run. Latency is submit to
// finish, wait is submit to first run; p99 is nearest-rank.
type TaskResult struct {
	PID                         uint32
	Jobs, Dropped               uint64
	MeanLatencyNS, P99LatencyNS uint64
	MeanWaitNS, P99WaitNS       uint64
	BusyNS                      uint64
	TimesliceUS                 uint64
	Interleave                  uint32
	Rejected                    bool
}

// SchedResult is a whole scheduling run.
type SchedResult struct {
	MakespanNS, Switches uint64
	Tasks                []TaskResult
}

// Sim is an open session with gpu_ext_sim.
type Sim struct{ f *os.File }

// Open opens a session; ErrNoDevice when the module is not loaded.
func Open() (*Sim, error) {
	f, err := os.OpenFile(DevicePath, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	if err != nil {
		return nil, fmt.Errorf("gpu_ext_sim: %w", err)
	}
	return &Sim{f: f}, nil
}

// Close ends the session.
func (s *Sim) Close() error { return s.f.Close() }

func (s *Sim) ioctl(name string, req uintptr, buf []byte) error {
	rc, err := s.f.SyscallConn()
	if err != nil {
		return err
	}
	var errno unix.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(&buf[0])))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return fmt.Errorf("gpu_ext_sim: %s: %w", name, errno)
	}
	return nil
}

// writeRecords writes whole records, at most MaxWrite per write; a short
// write (a bound reached) is followed by the write that returns its errno.
func (s *Sim) writeRecords(what string, b []byte, size int) error {
	for off := 0; off < len(b); {
		end := min(len(b), off+MaxWrite*size)
		n, err := unix.Write(int(s.f.Fd()), b[off:end])
		if err != nil {
			return fmt.Errorf("gpu_ext_sim: write %s %d..%d: %w", what, off/size, end/size, err)
		}
		if n <= 0 || n%size != 0 {
			return fmt.Errorf("gpu_ext_sim: write %s at %d: wrote %d bytes", what, off/size, n)
		}
		off += n
	}
	return nil
}

// ResetMem starts a memory session with empty GPU memory.
func (s *Sim) ResetMem(cfg MemConfig) error {
	return s.ioctl("MEM_RESET", iocMemReset, cfg.encode())
}

// Replay replays accesses on the current memory session.
func (s *Sim) Replay(trace []Access) error {
	if len(trace) == 0 {
		return nil
	}
	return s.writeRecords("accesses", encodeAccesses(trace), accessSize)
}

// MemResult returns the memory session's counters.
func (s *Sim) MemResult() (MemResult, error) {
	b := make([]byte, memResultSize)
	if err := s.ioctl("MEM_RESULT", iocMemResult, b); err != nil {
		return MemResult{}, err
	}
	return decodeMemResult(b)
}

// ResetSched starts a scheduling session with these tasks.
func (s *Sim) ResetSched(cfg SchedConfig, tasks []Task) error {
	b, err := cfg.encode(tasks)
	if err != nil {
		return err
	}
	return s.ioctl("SCHED_RESET", iocSchedReset, b)
}

// Queue queues jobs on the current scheduling session.
func (s *Sim) Queue(jobs []Job) error {
	if len(jobs) == 0 {
		return nil
	}
	return s.writeRecords("jobs", encodeJobs(jobs), jobSize)
}

// RunSched runs the queued jobs to completion (and drops them).
func (s *Sim) RunSched() (SchedResult, error) {
	b := make([]byte, schedResultSize)
	if err := s.ioctl("SCHED_RUN", iocSchedRun, b); err != nil {
		return SchedResult{}, err
	}
	return decodeSchedResult(b)
}

// Bench calls the entry point of hook n times in the kernel and returns
// the elapsed ktime in ns.
func (s *Sim) Bench(hook uint32, n uint64) (uint64, error) {
	b := make([]byte, benchSize)
	le.PutUint32(b[0:], hook)
	le.PutUint64(b[8:], n)
	if err := s.ioctl("BENCH", iocBench, b); err != nil {
		return 0, err
	}
	return le.Uint64(b[16:]), nil
}

// ReplayMem replays a trace in a fresh session and returns its counters.
func ReplayMem(cfg MemConfig, trace []Access) (MemResult, error) {
	s, err := Open()
	if err != nil {
		return MemResult{}, err
	}
	defer s.Close()
	if err := s.ResetMem(cfg); err != nil {
		return MemResult{}, err
	}
	if err := s.Replay(trace); err != nil {
		return MemResult{}, err
	}
	return s.MemResult()
}

// ReplaySchedRun runs a job mix in a fresh session.
func ReplaySchedRun(cfg SchedConfig, tasks []Task, jobs []Job) (SchedResult, error) {
	s, err := Open()
	if err != nil {
		return SchedResult{}, err
	}
	defer s.Close()
	if err := s.ResetSched(cfg, tasks); err != nil {
		return SchedResult{}, err
	}
	if err := s.Queue(jobs); err != nil {
		return SchedResult{}, err
	}
	return s.RunSched()
}

// ReplaySched runs a job mix in a fresh session and returns its tasks.
func ReplaySched(cfg SchedConfig, tasks []Task, jobs []Job) ([]TaskResult, error) {
	r, err := ReplaySchedRun(cfg, tasks, jobs)
	return r.Tasks, err
}

// BenchHook returns the mean cost in ns of one call of a gpu_ext entry
// point, n calls timed in the kernel.
func BenchHook(hook uint32, n uint64) (nsPerCall float64, err error) {
	s, err := Open()
	if err != nil {
		return 0, err
	}
	defer s.Close()
	ns, err := s.Bench(hook, n)
	if err != nil {
		return 0, err
	}
	return float64(ns) / float64(n), nil
}
