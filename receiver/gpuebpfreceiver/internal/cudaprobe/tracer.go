package cudaprobe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// Options size the kernel side.
type Options struct {
	RingBufferSize int // bytes, power of two
	MaxInflight    int // calls in progress at once
	// LaunchEntryOnly probes kernel and graph launches at entry only: one
	// trap per launch instead of two, at the price of the launch's result
	// and duration.
	LaunchEntryOnly bool
	Logger          *zap.Logger
}

// FileKey identifies a library file: probes are per inode, so one
// attachment covers every process (and container) that maps the file.
type FileKey struct {
	Dev   uint64
	Inode uint64
}

// Library is a file the tracer has probed.
type Library struct {
	Path    string
	Key     FileKey
	Probes  int // functions probed (each with an entry and a return probe)
	Aliases int // symbols skipped because another name has the same address
}

// Tracer owns the loaded programs, maps, links and the ring reader.
type Tracer struct {
	log  *zap.Logger
	objs bpf.CudaObjects
	rd   *ringbuf.Reader

	mu    sync.Mutex
	libs  map[FileKey]*Library
	links []link.Link

	probes    atomic.Int64
	entryOnly bool
	// multi: the programs are attached with uprobe_multi links (Linux 6.6+):
	// one link per library and direction, attached and detached in one
	// step. Single perf-event uprobes cost a synchronisation each on detach
	// (about 0.1 s apiece here), so a library of ~100 functions would take
	// tens of seconds to let go of.
	multi bool
}

// ErrPermission wraps load failures caused by missing privileges.
var ErrPermission = errors.New("not permitted to load BPF programs (needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN or root)")

// New loads the programs and attaches the process exec/exit tracepoints.
func New(opts Options) (*Tracer, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	_ = rlimit.RemoveMemlock() // only needed before memcg accounting (< 5.11)

	spec, err := bpf.LoadCuda()
	if err != nil {
		return nil, fmt.Errorf("load BPF spec: %w", err)
	}
	if opts.RingBufferSize > 0 {
		spec.Maps["events"].MaxEntries = uint32(opts.RingBufferSize)
	}
	if opts.MaxInflight > 0 {
		spec.Maps["inflight"].MaxEntries = uint32(opts.MaxInflight)
	}

	t := &Tracer{log: opts.Logger, libs: map[FileKey]*Library{}, multi: true, entryOnly: opts.LaunchEntryOnly}
	for _, name := range []string{"cuda_enter", "cuda_exit"} {
		spec.Programs[name].AttachType = ebpf.AttachTraceUprobeMulti
	}
	err = spec.LoadAndAssign(&t.objs, nil)
	if err != nil && !errors.Is(err, os.ErrPermission) && !errors.Is(err, syscall.EPERM) {
		// A kernel without uprobe_multi: fall back to one uprobe per function.
		t.log.Info("uprobe_multi links unavailable, attaching single uprobes", zap.Error(err))
		t.multi = false
		for _, name := range []string{"cuda_enter", "cuda_exit"} {
			spec.Programs[name].AttachType = ebpf.AttachNone
		}
		err = spec.LoadAndAssign(&t.objs, nil)
	}
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EPERM) {
			return nil, fmt.Errorf("%w: %v", ErrPermission, err)
		}
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("BPF verifier rejected the programs: %+v", verr)
		}
		return nil, fmt.Errorf("load BPF objects: %w", err)
	}
	for name, prog := range map[string]*ebpf.Program{
		"sched_process_exec": t.objs.ProcExec,
		"sched_process_exit": t.objs.ProcExit,
	} {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: name, Program: prog})
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("attach raw tracepoint %s: %w", name, err)
		}
		t.links = append(t.links, l)
	}
	t.rd, err = ringbuf.NewReader(t.objs.Events)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	return t, nil
}

// StatKey returns the file key of path (following symlinks, so
// /proc/<pid>/map_files/... names the mapped file).
func StatKey(path string) (FileKey, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return FileKey{}, err
	}
	return FileKey{Dev: st.Dev, Inode: st.Ino}, nil
}

// Attached reports whether the file is already probed.
func (t *Tracer) Attached(key FileKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.libs[key]
	return ok
}

// AttachLibrary probes every known CUDA function the file at path defines,
// once per inode. It returns the library (nil with no error when the file
// was already probed) and an error when nothing could be attached.
func (t *Tracer) AttachLibrary(path string) (*Library, error) {
	key, err := StatKey(path)
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.libs[key]; ok {
		return nil, nil
	}
	tgts, aliases, err := targets(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(tgts) == 0 {
		return nil, fmt.Errorf("%s: defines none of the CUDA functions probed", path)
	}
	if t.entryOnly {
		for i := range tgts {
			if tgts[i].probe.api.Class() == ev.ClassLaunch {
				tgts[i].probe.flags |= ckEntryOnly
			}
		}
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	lib := &Library{Path: path, Key: key, Aliases: aliases}
	var links []link.Link
	var points int
	if t.multi {
		links, lib.Probes, points, err = t.attachMulti(ex, tgts)
	} else {
		links, lib.Probes, points = t.attachSingle(ex, path, tgts)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if lib.Probes == 0 {
		return nil, fmt.Errorf("%s: no probe could be attached (uprobe support or permissions?)", path)
	}
	t.links = append(t.links, links...)
	t.libs[key] = lib
	t.probes.Add(int64(points))
	return lib, nil
}

// attachMulti attaches all targets with one return and one entry link.
// The return link goes first: a call entering between the two is then seen
// whole or not at all (not at all: its return finds no entry and counts as
// an unmatched drop), never left as an entry that no return takes.
func (t *Tracer) attachMulti(ex *link.Executable, tgts []target) (links []link.Link, functions, points int, err error) {
	entry, ret := &link.UprobeMultiOptions{}, &link.UprobeMultiOptions{}
	for _, tg := range tgts {
		entry.Addresses = append(entry.Addresses, tg.offset)
		entry.Cookies = append(entry.Cookies, tg.probe.cookie())
		if !tg.entryOnly() {
			ret.Addresses = append(ret.Addresses, tg.offset)
			ret.Cookies = append(ret.Cookies, tg.probe.cookie())
		}
	}
	if len(ret.Addresses) > 0 {
		l, err := ex.UretprobeMulti(nil, t.objs.CudaExit, ret)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("uretprobe_multi: %w", err)
		}
		links = append(links, l)
	}
	l, err := ex.UprobeMulti(nil, t.objs.CudaEnter, entry)
	if err != nil {
		for _, l := range links {
			l.Close()
		}
		return nil, 0, 0, fmt.Errorf("uprobe_multi: %w", err)
	}
	return append(links, l), len(tgts), len(entry.Addresses) + len(ret.Addresses), nil
}

// attachSingle attaches each target with its own pair of perf-event uprobes,
// skipping (and logging) those the kernel refuses.
func (t *Tracer) attachSingle(ex *link.Executable, path string, tgts []target) (links []link.Link, functions, points int) {
	for _, tg := range tgts {
		opts := &link.UprobeOptions{Address: tg.offset, Cookie: tg.probe.cookie()}
		var ret link.Link
		if !tg.entryOnly() {
			var err error
			if ret, err = ex.Uretprobe(tg.symbol, t.objs.CudaExit, opts); err != nil {
				t.log.Debug("uretprobe failed", zap.String("library", path), zap.String("symbol", tg.symbol), zap.Error(err))
				continue
			}
			links = append(links, ret)
		}
		ent, err := ex.Uprobe(tg.symbol, t.objs.CudaEnter, opts)
		if err != nil {
			if ret != nil {
				ret.Close()
				links = links[:len(links)-1]
			}
			t.log.Debug("uprobe failed", zap.String("library", path), zap.String("symbol", tg.symbol), zap.Error(err))
			continue
		}
		links = append(links, ent)
		functions++
	}
	return links, functions, len(links)
}

// Libraries returns the probed files.
func (t *Tracer) Libraries() []Library {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Library, 0, len(t.libs))
	for _, l := range t.libs {
		out = append(out, *l)
	}
	return out
}

// Probes is the number of probe points attached: an entry and, unless it
// is reported at entry only, a return per probed function.
func (t *Tracer) Probes() int64 { return t.probes.Load() }

// ReadInto waits until deadline for the next record. It returns
// os.ErrDeadlineExceeded when none came, ringbuf.ErrClosed after Close or
// CloseReader, and ringbuf.ErrFlushed once it has read what the ring held
// after FlushReader. rec.RawSample is reused by the next call.
func (t *Tracer) ReadInto(rec *ringbuf.Record, deadline time.Time) error {
	t.rd.SetDeadline(deadline)
	return t.rd.ReadInto(rec)
}

// CloseReader interrupts a pending ReadInto; the probes stay attached.
func (t *Tracer) CloseReader() error { return t.rd.Close() }

// FlushReader interrupts a pending ReadInto without closing the ring:
// ReadInto returns the records the ring holds, then ringbuf.ErrFlushed.
func (t *Tracer) FlushReader() error { return t.rd.Flush() }

// Backlog is how many bytes of records the ring holds unread.
func (t *Tracer) Backlog() int { return t.rd.AvailableBytes() }

// RecordSize is how many bytes of the ring rec took: its 8-byte header and
// its data, padded to 8 bytes.
func RecordSize(rec *ringbuf.Record) int { return 8 + (len(rec.RawSample)+7)&^7 }

// Drops returns the kernel-side loss counters summed over CPUs: ring full,
// in-flight table full, and returns without a matching entry.
func (t *Tracer) Drops() (ringFull, inflightFull, unmatched uint64, err error) {
	sum := func(idx uint32) (uint64, error) {
		var per []uint64
		if err := t.objs.Drops.Lookup(idx, &per); err != nil {
			return 0, err
		}
		var s uint64
		for _, v := range per {
			s += v
		}
		return s, nil
	}
	if ringFull, err = sum(0); err != nil {
		return
	}
	if inflightFull, err = sum(1); err != nil {
		return
	}
	unmatched, err = sum(2)
	return
}

// Filter values (enum gpuext_filter).
const (
	filterTrace uint8 = 1
	filterSkip  uint8 = 2
)

// SetTraced records whether calls of process pid are traced, so skipped
// processes cost only a map lookup per call in the kernel.
func (t *Tracer) SetTraced(pid uint32, traced bool) error {
	v := filterSkip
	if traced {
		v = filterTrace
	}
	return t.objs.PidFilter.Put(pid, v)
}

// Traced reports what the kernel filter says of pid: known is false when
// the pid has no entry (it is then traced).
func (t *Tracer) Traced(pid uint32) (traced, known bool) {
	var v uint8
	if err := t.objs.PidFilter.Lookup(pid, &v); err != nil {
		return true, false
	}
	return v != filterSkip, true
}

// ClearFilter forgets whether pid is traced (after execve: the new program
// is judged again).
func (t *Tracer) ClearFilter(pid uint32) { _ = t.objs.PidFilter.Delete(pid) }

// ForgetProcess drops the kernel state of an exited process: its filter
// entry and any call it left unfinished.
func (t *Tracer) ForgetProcess(pid uint32) { t.ForgetProcesses([]uint32{pid}) }

// ForgetProcesses does ForgetProcess for several processes with one walk of
// the in-flight map.
func (t *Tracer) ForgetProcesses(pids []uint32) {
	if len(pids) == 0 {
		return
	}
	gone := make(map[uint32]bool, len(pids))
	for _, pid := range pids {
		t.ClearFilter(pid)
		gone[pid] = true
	}
	var (
		key   [16]byte
		val   []byte
		stale [][16]byte
		it    = t.objs.Inflight.Iterate()
	)
	for it.Next(&key, &val) {
		if gone[uint32(binary.LittleEndian.Uint64(key[:8])>>32)] {
			stale = append(stale, key)
		}
	}
	for _, k := range stale {
		_ = t.objs.Inflight.Delete(k)
	}
}

// Close detaches every probe and frees the programs and maps.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	if t.rd != nil {
		errs = append(errs, t.rd.Close())
	}
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.links = nil
	t.libs = map[FileKey]*Library{}
	t.probes.Store(0)
	errs = append(errs, t.objs.Close())
	return errors.Join(errs...)
}
