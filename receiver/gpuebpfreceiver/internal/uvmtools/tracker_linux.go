//go:build linux

package uvmtools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ToolsDevicePath is the UVM tools device node.
const ToolsDevicePath = "/dev/nvidia-uvm-tools"

// DefaultQueueEntries is the default queue size: 16384 entries, 1.1 MiB of
// pinned memory with V2 entries.
const DefaultQueueEntries = 1 << 14

// MaxQueueEntries bounds Options.QueueEntries (1.2 GiB of V2 entries).
const MaxQueueEntries = 1 << 24

// Options configure Open. The zero value traces every event type with the
// default queue and no counters.
type Options struct {
	// Events to enable; 0 means AllEvents. Bits outside AllEvents are
	// refused (the driver accepts test types only with builtin tests).
	Events EventMask
	// QueueEntries is the queue's size in entries: a power of two from 2 to
	// MaxQueueEntries; 0 means DefaultQueueEntries. The driver holds at
	// most QueueEntries-1 and drops (and counts) what does not fit.
	QueueEntries uint32
	// Counters also creates a counters tracker (see Counters).
	Counters bool
	// Version of the entry layout: VersionAuto (V2, falling back to V1 on
	// drivers without the V2 ioctl), V1 or V2.
	Version Version
	// NotificationThreshold is how many pending entries make the tools fd
	// readable (Wait); 0 leaves the driver's default, half the queue.
	NotificationThreshold uint32
	// ToolsDevice is the tools device node; "" means ToolsDevicePath.
	ToolsDevice string
}

func (o Options) normalized() (Options, error) {
	if o.Events == 0 {
		o.Events = AllEvents
	}
	if o.Events&^AllEvents != 0 {
		return o, fmt.Errorf("uvmtools: Options.Events %#x has bits outside AllEvents (%#x)", uint64(o.Events), uint64(AllEvents))
	}
	if o.QueueEntries == 0 {
		o.QueueEntries = DefaultQueueEntries
	}
	if o.QueueEntries < 2 || o.QueueEntries > MaxQueueEntries || o.QueueEntries&(o.QueueEntries-1) != 0 {
		return o, fmt.Errorf("uvmtools: Options.QueueEntries %d: want a power of two from 2 to %d", o.QueueEntries, MaxQueueEntries)
	}
	if o.Version > V2 {
		return o, fmt.Errorf("uvmtools: Options.Version %d: want 0 (auto), 1 or 2", o.Version)
	}
	if o.NotificationThreshold >= o.QueueEntries {
		return o, fmt.Errorf("uvmtools: Options.NotificationThreshold %d: want less than QueueEntries (%d)", o.NotificationThreshold, o.QueueEntries)
	}
	if o.ToolsDevice == "" {
		o.ToolsDevice = ToolsDevicePath
	}
	return o, nil
}

// Tracker reads the UVM events of one process from the driver's queue.
// Read, Flush, Processors, Counters and Close serialize on a mutex; Wait may
// run beside them, and Close waits for it to return.
type Tracker struct {
	pid     int
	version Version

	mu       sync.Mutex
	pollMu   sync.RWMutex
	closed   atomic.Bool
	toolsFD  int // the event queue tracker
	countFD  int // the counters tracker, or -1
	uvmFD    int // our duplicate of the process's /dev/nvidia-uvm
	pidFD    int
	queueMem []byte // mmap: entries
	ctrlMem  []byte // mmap: UvmToolsEventControlData
	countMem []byte // mmap: NvU64[UVM_TOTAL_COUNTERS], or nil
	ring     *ring

	tableV1, tableV2 []byte // UUID table buffers (kept on the heap for the ioctl)

	entries      uint64
	decodeErrors uint64
}

// Open attaches a tracker to process pid: it finds the process's open
// /dev/nvidia-uvm in procRoot/<pid>/fd (procRoot is usually "/proc"; pid is
// in this process's PID namespace), duplicates it with pidfd_getfd (needs
// CAP_SYS_PTRACE or ptrace rights over the process), opens
// /dev/nvidia-uvm-tools, and creates an event queue on the process's VA
// space with the requested events (and a counters tracker if asked).
//
// Errors wrap ErrNoProcess, ErrNoDevice, ErrNotCUDA (retry later: the
// process has not initialized UVM yet), ErrPermission or ErrUnsupported.
func Open(procRoot string, pid int, opts Options) (_ *Tracker, err error) {
	opts, err = opts.normalized()
	if err != nil {
		return nil, err
	}
	if pid <= 0 {
		return nil, fmt.Errorf("%w: pid %d", ErrNoProcess, pid)
	}
	if _, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid))); err != nil {
		return nil, classifyFsErr(err, pid, filepath.Join(procRoot, strconv.Itoa(pid)))
	}
	t := &Tracker{pid: pid, toolsFD: -1, countFD: -1, uvmFD: -1, pidFD: -1}
	defer func() {
		if err != nil {
			t.release()
		}
	}()
	var toolsRdev uint64
	if t.toolsFD, toolsRdev, err = openToolsDevice(opts.ToolsDevice); err != nil {
		return nil, err
	}
	fds, err := FindUVMFds(procRoot, pid)
	if err != nil {
		return nil, err
	}
	if t.pidFD, err = unix.PidfdOpen(pid, 0); err != nil {
		switch {
		case errors.Is(err, unix.ESRCH):
			return nil, fmt.Errorf("%w: pid %d: pidfd_open: %v", ErrNoProcess, pid, err)
		case errors.Is(err, unix.ENOSYS):
			return nil, fmt.Errorf("%w: pidfd_open: %v", ErrUnsupported, err)
		}
		return nil, fmt.Errorf("uvmtools: pidfd_open(%d): %w", pid, err)
	}

	// The queue buffer is sized for V2 entries, the larger, so that a
	// fallback to V1 can reuse it. MAP_SHARED: the driver pins these pages;
	// shared anonymous memory is never copied on write after a fork.
	if t.queueMem, err = mmapAnon(int(opts.QueueEntries) * EntrySizeV2); err != nil {
		return nil, err
	}
	if t.ctrlMem, err = mmapAnon(int(unsafe.Sizeof(controlData{}))); err != nil {
		return nil, err
	}

	var tried []string
	for _, fd := range fds {
		dup, err := unix.PidfdGetfd(t.pidFD, fd, 0)
		if err != nil {
			switch {
			case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
				return nil, fmt.Errorf("%w: pidfd_getfd(pid %d, fd %d): %v (needs CAP_SYS_PTRACE or ptrace rights over the process)", ErrPermission, pid, fd, err)
			case errors.Is(err, unix.ESRCH):
				return nil, fmt.Errorf("%w: pid %d exited", ErrNoProcess, pid)
			case errors.Is(err, unix.ENOSYS):
				return nil, fmt.Errorf("%w: pidfd_getfd: %v", ErrUnsupported, err)
			}
			tried = append(tried, fmt.Sprintf("fd %d: %v", fd, err)) // EBADF: closed meanwhile
			continue
		}
		if why := checkUVMFd(dup, toolsRdev); why != "" {
			unix.Close(dup)
			tried = append(tried, fmt.Sprintf("fd %d: %s", fd, why))
			continue
		}
		v, err := t.initQueue(dup, opts)
		var st nvStatus
		if errors.As(err, &st) && (st == nvErrIllegalAction || st == nvErrInsufficientPermission) {
			// Not an initialized VA space: the mm fd of UVM_MM_INITIALIZE,
			// or a fd not yet through UVM_INITIALIZE.
			unix.Close(dup)
			tried = append(tried, fmt.Sprintf("fd %d: %v", fd, st))
			continue
		}
		if err != nil {
			unix.Close(dup)
			return nil, err
		}
		t.uvmFD, t.version = dup, v
		break
	}
	if t.uvmFD < 0 {
		return nil, fmt.Errorf("%w: pid %d: no /dev/nvidia-uvm fd is an initialized VA space (%v)", ErrNotCUDA, pid, tried)
	}
	t.ring = newRing(t.queueMem, t.ctrlMem, opts.QueueEntries, t.version.EntrySize())

	if err := t.maskIoctl(t.toolsFD, ioctlToolsEventQueueEnableEvents, uint64(opts.Events), "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS"); err != nil {
		return nil, err
	}
	if opts.NotificationThreshold != 0 {
		p := setNotificationThresholdParams{NotificationThreshold: opts.NotificationThreshold}
		if err := ioctlStatus(t.toolsFD, ioctlToolsSetNotificationThreshold, unsafe.Pointer(&p), &p.RMStatus, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD"); err != nil {
			return nil, err
		}
	}
	if opts.Counters {
		if err := t.openCounters(opts.ToolsDevice); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// initQueue creates the event queue on the tools fd for the VA space of
// uvmFD, V2 first unless opts says otherwise.
func (t *Tracker) initQueue(uvmFD int, opts Options) (Version, error) {
	p := initEventTrackerParams{
		QueueBuffer:     uint64(uintptr(unsafe.Pointer(&t.queueMem[0]))),
		QueueBufferSize: uint64(opts.QueueEntries),
		ControlBuffer:   uint64(uintptr(unsafe.Pointer(&t.ctrlMem[0]))),
		UVMFd:           uint32(uvmFD),
	}
	if opts.Version != V1 {
		err := initTracker(t.toolsFD, ioctlToolsInitEventTrackerV2, p)
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
			return V2, err
		}
		if opts.Version == V2 {
			return 0, fmt.Errorf("%w: UVM_TOOLS_INIT_EVENT_TRACKER_V2: %v (driver older than 565?)", ErrUnsupported, err)
		}
	}
	err := initTracker(t.toolsFD, ioctlToolsInitEventTracker, p)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
		return 0, fmt.Errorf("%w: UVM_TOOLS_INIT_EVENT_TRACKER: %v", ErrUnsupported, err)
	}
	return V1, err
}

func initTracker(fd int, req uintptr, p initEventTrackerParams) error {
	arg := initEventTrackerArg{p: p}
	if err := ioctl(fd, req, unsafe.Pointer(&arg)); err != nil {
		return err
	}
	if arg.p.RMStatus != nvOK {
		return arg.p.RMStatus
	}
	return nil
}

func (t *Tracker) openCounters(dev string) (err error) {
	fd, _, err := openToolsDevice(dev)
	if err != nil {
		return err
	}
	t.countFD = fd
	if t.countMem, err = mmapAnon(counterBufferSize); err != nil {
		return err
	}
	p := initEventTrackerParams{
		QueueBufferSize: 0, // a counters tracker
		ControlBuffer:   uint64(uintptr(unsafe.Pointer(&t.countMem[0]))),
		AllProcessors:   1,
		UVMFd:           uint32(t.uvmFD),
	}
	req := uintptr(ioctlToolsInitEventTrackerV2)
	if t.version == V1 {
		req = ioctlToolsInitEventTracker
	}
	if err := initTracker(fd, req, p); err != nil {
		return fmt.Errorf("uvmtools: counters: UVM_TOOLS_INIT_EVENT_TRACKER: %w", err)
	}
	return t.maskIoctl(fd, ioctlToolsEnableCounters, allCountersMask, "UVM_TOOLS_ENABLE_COUNTERS")
}

func (t *Tracker) maskIoctl(fd int, req uintptr, mask uint64, name string) error {
	p := maskParams{Flags: mask}
	return ioctlStatus(fd, req, unsafe.Pointer(&p), &p.RMStatus, name)
}

// ioctlStatus runs an ioctl whose params end in rmStatus (*st points into
// the params at arg).
func ioctlStatus(fd int, req uintptr, arg unsafe.Pointer, st *nvStatus, name string) error {
	if err := ioctl(fd, req, arg); err != nil {
		return fmt.Errorf("uvmtools: %s: %w", name, err)
	}
	if *st != nvOK {
		return fmt.Errorf("uvmtools: %s: %w", name, *st)
	}
	return nil
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// openToolsDevice opens the tools node and returns its device number.
func openToolsDevice(path string) (int, uint64, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENXIO):
			return -1, 0, fmt.Errorf("%w: %s: %v", ErrNoDevice, path, err)
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			return -1, 0, fmt.Errorf("%w: %s: %v", ErrPermission, path, err)
		}
		return -1, 0, fmt.Errorf("uvmtools: open %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("uvmtools: fstat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("%w: %s is not a character device", ErrNoDevice, path)
	}
	return fd, st.Rdev, nil
}

// checkUVMFd says why fd is not /dev/nvidia-uvm ("" when it is): nvidia-uvm
// registers one major with minor 0 for nvidia-uvm and minor 1 for the tools
// node (uvm_common.h, NVIDIA_UVM_*_MINOR_NUMBER). This guards against the
// process having closed the fd and reused its number since the scan.
func checkUVMFd(fd int, toolsRdev uint64) string {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "fstat: " + err.Error()
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != unix.Major(toolsRdev) || unix.Minor(st.Rdev) != 0 {
		return fmt.Sprintf("not /dev/nvidia-uvm (device %d:%d, tools device is %d:%d)",
			unix.Major(st.Rdev), unix.Minor(st.Rdev), unix.Major(toolsRdev), unix.Minor(toolsRdev))
	}
	return ""
}

func mmapAnon(size int) ([]byte, error) {
	page := os.Getpagesize()
	size = (size + page - 1) / page * page
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("uvmtools: mmap %d bytes: %w", size, err)
	}
	return b, nil
}

// PID is the traced process.
func (t *Tracker) PID() int { return t.pid }

// Version is the entry layout the driver granted.
func (t *Tracker) Version() Version { return t.version }

// EntrySize is the size of one raw entry (64 or 72 bytes).
func (t *Tracker) EntrySize() int { return t.version.EntrySize() }

// ReadRaw hands every entry queued since the last read to fn, oldest first,
// as the driver wrote it (the slice is reused: copy what you keep), and
// frees their slots. It returns how many entries it read and how many the
// driver dropped since the last read because the queue was full.
func (t *Tracker) ReadRaw(fn func(entry []byte)) (n int, dropped uint64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return 0, 0, ErrClosed
	}
	n, dropped = t.ring.drain(fn)
	t.entries += uint64(n)
	return n, dropped, nil
}

// Read decodes and hands to fn every event queued since the last read,
// oldest first. n counts the events handed to fn; entries that fail to
// decode are skipped and counted in Stats. dropped is as for ReadRaw.
func (t *Tracker) Read(fn func(Event)) (n int, dropped uint64, err error) {
	_, dropped, err = t.ReadRaw(func(b []byte) {
		e, err := Decode(b)
		if err != nil {
			t.decodeErrors++
			return
		}
		n++
		fn(e)
	})
	return n, dropped, err
}

// Pending is the number of entries waiting to be read.
func (t *Tracker) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return 0
	}
	return int(t.ring.pending())
}

// Wait blocks until the queue holds at least the notification threshold of
// entries, timeout passes (false), or the tracker is closed.
func (t *Tracker) Wait(timeout time.Duration) (bool, error) {
	t.pollMu.RLock()
	defer t.pollMu.RUnlock()
	if t.closed.Load() {
		return false, ErrClosed
	}
	fds := []unix.PollFd{{Fd: int32(t.toolsFD), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(timeout/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("uvmtools: poll: %w", err)
		}
		if n > 0 && fds[0].Revents&unix.POLLERR != 0 {
			return false, fmt.Errorf("uvmtools: poll: the driver reports an error on the tools fd")
		}
		return n > 0, nil
	}
}

// Flush asks the driver to deliver the events it holds back until GPU work
// completes (migrations, replays, remote mappings:
// UVM_TOOLS_FLUSH_EVENTS). Read afterwards.
func (t *Tracker) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return ErrClosed
	}
	p := flushEventsParams{}
	return ioctlStatus(t.uvmFD, ioctlToolsFlushEvents, unsafe.Pointer(&p), &p.RMStatus, "UVM_TOOLS_FLUSH_EVENTS")
}

// Processors reads the process's processor table
// (UVM_TOOLS_GET_PROCESSOR_UUID_TABLE, and _V2 for a V2 tracker).
func (t *Tracker) Processors() (ProcessorTable, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return ProcessorTable{}, ErrClosed
	}
	if t.tableV1 == nil {
		t.tableV1, t.tableV2 = make([]byte, uuidTableSizeV1), make([]byte, uuidTableSizeV2)
	}
	read := func(req uintptr, buf []byte, name string) error {
		clear(buf)
		p := uuidTableParams{TablePtr: uint64(uintptr(unsafe.Pointer(&buf[0])))}
		err := ioctlStatus(t.uvmFD, req, unsafe.Pointer(&p), &p.RMStatus, name)
		runtime.KeepAlive(buf)
		return err
	}
	errV1 := read(ioctlToolsGetProcessorUUIDTable, t.tableV1, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE")
	if t.version == V1 {
		if errV1 != nil {
			return ProcessorTable{}, errV1
		}
		return parseUUIDTables(t.tableV1, nil)
	}
	if err := read(ioctlToolsGetProcessorUUIDTableV2, t.tableV2, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2"); err != nil {
		return ProcessorTable{}, err
	}
	v1 := t.tableV1
	if errV1 != nil {
		v1 = nil // no parent UUIDs: MIG instances not told apart
	}
	return parseUUIDTables(v1, t.tableV2)
}

// Counters returns the driver's counters, if Options.Counters was set.
func (t *Tracker) Counters() (Counters, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() || t.countMem == nil {
		return Counters{}, false
	}
	words := (*[numCounters]uint64)(unsafe.Pointer(&t.countMem[0]))
	return countersFrom(func(i int) uint64 { return atomic.LoadUint64(&words[i]) }), true
}

// Stats are a tracker's totals.
type Stats struct {
	Entries       uint64               // entries read
	DecodeErrors  uint64               // entries Read could not decode
	Dropped       uint64               // entries the driver dropped, queue full
	DroppedByType map[EventType]uint64 // the same by type
}

// Stats returns the totals so far.
func (t *Tracker) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Stats{Entries: t.entries, DecodeErrors: t.decodeErrors}
	if !t.closed.Load() {
		s.Dropped, s.DroppedByType = t.ring.droppedTotal(), t.ring.droppedByType()
	}
	return s
}

// Exited reports whether the traced process has exited. The tracker keeps
// the process's UVM VA space alive until Close: read what is left, then
// close it.
func (t *Tracker) Exited() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(t.pidFD), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// Close destroys the trackers, unpins and frees the buffers, and drops the
// reference to the process's VA space. It waits for a Wait in progress.
func (t *Tracker) Close() error {
	t.pollMu.Lock()
	defer t.pollMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Swap(true) {
		return nil
	}
	t.release()
	return nil
}

// release closes the trackers first (the driver unpins the buffers when the
// tools fd is released), then unmaps and closes the rest.
func (t *Tracker) release() {
	for _, fd := range []*int{&t.countFD, &t.toolsFD, &t.uvmFD, &t.pidFD} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	for _, m := range []*[]byte{&t.queueMem, &t.ctrlMem, &t.countMem} {
		if *m != nil {
			_ = unix.Munmap(*m)
			*m = nil
		}
	}
}
