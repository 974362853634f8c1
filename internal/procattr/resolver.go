package procattr

import (
	"container/list"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// DefaultCacheSize is the number of processes a Resolver remembers unless
// WithCacheSize says otherwise. It is well above the number of processes
// that use a GPU on one node, and an entry is a few hundred bytes.
const DefaultCacheSize = 16384

// Process is what the collector needs to know about a process to describe it
// with resource attributes.
type Process struct {
	PID int
	// StartTime is field 22 of /proc/<pid>/stat: when the process started,
	// in clock ticks since boot. Together with PID it names one process for
	// its whole life, since PIDs are reused.
	StartTime uint64
	// ExeName is the base name of the executable, or the task's comm when
	// the executable link cannot be read (kernel threads, missing
	// permission).
	ExeName string
	// ExePath is the target of /proc/<pid>/exe, as seen inside the
	// process's mount namespace, or "" when it cannot be read.
	ExePath string
	Cgroup  Cgroup
}

// Option configures a Resolver.
type Option func(*Resolver)

// WithCacheSize bounds the number of processes the Resolver remembers.
// NewResolver rejects sizes below 1.
func WithCacheSize(n int) Option {
	return func(r *Resolver) { r.maxEntries = n }
}

// Resolver turns pids into Processes, reading a procfs tree and remembering
// what it read.
//
// Telemetry arrives per event, many per second from the same few
// processes, so the cache turns each lookup after the first into one read
// of /proc/<pid>/stat. That read is kept because it is how a reused pid is
// detected: a different start time means a different process.
//
// A process that calls execve keeps its pid and start time but changes its
// executable; callers that observe exec events should call Forget. Where
// they do not (no exec events, or a process resolved between its fork and
// its exec, whose exec came before any state of it), the comm the stat
// read shows usually tells: execve sets it to the new program's name, and
// a remembered process whose comm has changed is read again (also after a
// program renames itself, PR_SET_NAME; an exec of a program of the same
// name is missed).
//
// A Resolver is safe for concurrent use.
type Resolver struct {
	procRoot   string
	maxEntries int

	mu sync.Mutex
	// entries indexes lru by pid; lru holds cached values, most recently
	// used first, so the back is the entry to evict.
	entries map[int]*list.Element
	lru     *list.List
}

// NewResolver returns a Resolver that reads the procfs tree at procRoot:
// "/proc" for the collector's own view, "/host/proc" for the host's /proc
// mounted into the collector's container.
func NewResolver(procRoot string, opts ...Option) (*Resolver, error) {
	if procRoot == "" {
		return nil, errors.New("procattr: procRoot must not be empty")
	}
	r := &Resolver{
		procRoot:   procRoot,
		maxEntries: DefaultCacheSize,
		entries:    make(map[int]*list.Element),
		lru:        list.New(),
	}
	for _, opt := range opts {
		opt(r)
	}
	if r.maxEntries < 1 {
		return nil, fmt.Errorf("procattr: cache size %d must be at least 1", r.maxEntries)
	}
	return r, nil
}

// Resolve describes the process pid.
//
// When the process has exited (or never existed) the error satisfies
// errors.Is(err, fs.ErrNotExist); callers typically drop the pid then.
func (r *Resolver) Resolve(pid int) (Process, error) {
	if pid <= 0 {
		return Process{}, fmt.Errorf("procattr: invalid pid %d", pid)
	}
	dir := filepath.Join(r.procRoot, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Process{}, procError(pid, err)
	}
	comm, start, err := parseStat(stat)
	if err != nil {
		return Process{}, procError(pid, err)
	}
	if p, ok := r.lookup(pid, start, comm); ok {
		return p, nil
	}
	p, comm, err := readProcess(dir, pid)
	if err != nil {
		return Process{}, err
	}
	r.store(cached{p, comm})
	return p, nil
}

// Alive reports whether process pid still runs. start, when not zero, is
// the start time the caller knew it by: a different one means the pid now
// belongs to another process. A zombie or dead group leader counts as alive
// while other threads of the group remain (a main thread may pthread_exit
// and leave its workers running); the group is gone when its last task is.
func (r *Resolver) Alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	dir := filepath.Join(r.procRoot, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return false
	}
	_, st, err := parseStat(stat)
	if err != nil || (start != 0 && st != start) {
		return false
	}
	state, err := statState(stat)
	if err != nil {
		return false
	}
	if state != 'Z' && state != 'X' && state != 'x' {
		return true
	}
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	return err == nil && len(tasks) > 1
}

// Forget drops what the Resolver remembers about pid, for example when the
// process exits or calls execve.
func (r *Resolver) Forget(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[pid]; ok {
		r.lru.Remove(e)
		delete(r.entries, pid)
	}
}

// Len returns the number of processes the Resolver remembers.
func (r *Resolver) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// cached is a remembered process and the comm its stat showed then.
type cached struct {
	p    Process
	comm string
}

// lookup returns the remembered process pid if it is the one that started
// at start and its comm is still comm (no exec since).
func (r *Resolver) lookup(pid int, start uint64, comm string) (Process, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[pid]
	if !ok {
		return Process{}, false
	}
	c := e.Value.(cached)
	if c.p.StartTime != start || c.comm != comm {
		return Process{}, false
	}
	r.lru.MoveToFront(e)
	return c.p, true
}

// store remembers c, replacing an earlier process with the same pid and
// evicting the least recently used entry when the cache is full.
func (r *Resolver) store(c cached) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[c.p.PID]; ok {
		e.Value = c
		r.lru.MoveToFront(e)
		return
	}
	for r.lru.Len() >= r.maxEntries {
		oldest := r.lru.Back()
		r.lru.Remove(oldest)
		delete(r.entries, oldest.Value.(cached).p.PID)
	}
	r.entries[c.p.PID] = r.lru.PushFront(c)
}

// readProcess reads everything about one process through a handle on its
// /proc/<pid> directory. Such a handle stays bound to the process it was
// opened for: once that process is gone, reads through it fail instead of
// returning the files of a new process that got the same pid. So stat, exe,
// comm and cgroup always describe the same process. It also returns the
// comm of the stat it read.
func readProcess(dir string, pid int) (Process, string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Process{}, "", procError(pid, err)
	}
	defer root.Close()

	stat, err := root.ReadFile("stat")
	if err != nil {
		return Process{}, "", procError(pid, err)
	}
	comm, start, err := parseStat(stat)
	if err != nil {
		return Process{}, "", procError(pid, err)
	}
	p := Process{PID: pid, StartTime: start}

	// exe cannot be read for kernel threads, or without ptrace access to
	// the process; the name is still worth having then.
	if exe, err := root.Readlink("exe"); err == nil && exe != "" {
		p.ExePath = strings.TrimSuffix(exe, " (deleted)")
		p.ExeName = filepath.Base(p.ExePath)
	} else if c, err := root.ReadFile("comm"); err == nil {
		p.ExeName = strings.TrimSuffix(string(c), "\n")
	} else {
		p.ExeName = comm
	}

	cg, err := root.ReadFile("cgroup")
	if err != nil {
		return Process{}, "", procError(pid, err)
	}
	if p.Cgroup, err = ParseCgroup(cg); err != nil {
		return Process{}, "", procError(pid, err)
	}
	return p, comm, nil
}

// procError names the process in err. A process that exits while its files
// are being read makes the read fail with ESRCH rather than ENOENT; both
// mean the same thing to a caller, so both satisfy fs.ErrNotExist.
func procError(pid int, err error) error {
	if errors.Is(err, syscall.ESRCH) && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("procattr: process %d: %w: %w", pid, fs.ErrNotExist, err)
	}
	return fmt.Errorf("procattr: process %d: %w", pid, err)
}
