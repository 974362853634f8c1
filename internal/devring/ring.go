package devring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Errors. Use errors.Is.
var (
	// ErrNotReady: the file is still being created (too short for a
	// header, or a magic not yet written). Try again later.
	ErrNotReady = errors.New("devrt ring not initialised yet")
	// ErrInvalid: the file is not a ring this collector can read.
	ErrInvalid = errors.New("not a valid devrt ring")
	// ErrCorrupt: the producer broke the protocol; the ring is abandoned.
	ErrCorrupt = errors.New("devrt ring corrupt")
	// ErrClosed: the ring was closed.
	ErrClosed = errors.New("devrt ring closed")
)

// Header is what the producer wrote into the header when it created the
// ring, validated and read once at Open.
type Header struct {
	Capacity  uint32 // slots, a power of two
	PID       uint32 // devrt's getpid(): the process's pid in its own namespace
	StartTime uint64 // process start, clock ticks after boot (/proc/pid/stat #22)
	CreatedNS uint64 // CLOCK_MONOTONIC: devrt reports every call from here on
	Version   string // devrt's version
	// PIDNS is devrt's pid namespace (the N of /proc/self/ns/pid's
	// "pid:[N]"), 0 when unknown: which of the processes of the file
	// name's pid the ring is, where containers share a directory.
	PIDNS uint64
}

// Ring is one mapped ring file, read by one goroutine.
type Ring struct {
	hdr    Header
	mem    []byte // the mapping: header, control page, slots
	mapped bool   // mem is an mmap (unmapped by Close)
	dev    uint64
	ino    uint64
	mask   uint64
	tail   uint64 // the consumer's position, kept here: the shared copy is the producer's to scribble on
	buf    []byte // one reassembled record
	broken error
}

// Open opens and maps the ring file at path. The last path element must
// not be a symbolic link (the producer names the file; the collector writes
// into what it opens).
func Open(path string) (*Ring, error) {
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FromFile(f)
}

// FromFile validates the ring in f, opened read-write, and maps it. f may
// be closed afterwards. It must be a regular file with one link (a hard
// link to another file is refused), long enough for the capacity its
// header declares.
func FromFile(f *os.File) (*Ring, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: not a regular file", ErrInvalid)
	}
	if st.Nlink != 1 {
		return nil, fmt.Errorf("%w: %d links", ErrInvalid, st.Nlink)
	}
	var page [hdrSize]byte
	if st.Size >= DataOffset {
		if _, err := f.ReadAt(page[:], 0); err != nil {
			return nil, err
		}
	}
	var ctl [8]byte
	if st.Size >= DataOffset {
		if _, err := f.ReadAt(ctl[:], CtlOffset); err != nil {
			return nil, err
		}
	}
	h, err := parseHeader(page[:], binary.LittleEndian.Uint64(ctl[:]), st.Size)
	if err != nil {
		return nil, err
	}
	size := DataOffset + int(h.Capacity)*SlotSize
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	r := newRing(h, mem)
	r.mapped = true
	r.dev, r.ino = uint64(st.Dev), st.Ino
	// The consumer's position: where a previous consumer stopped (0 for a
	// new ring). A wrong one shows at the first slot as corruption.
	r.tail = r.loadTail()
	return r, nil
}

// fromMemory makes a ring over mem without a file (tests and fuzzing).
func fromMemory(mem []byte) (*Ring, error) {
	var ctl uint64
	if len(mem) >= DataOffset {
		ctl = binary.LittleEndian.Uint64(mem[CtlOffset:])
	}
	h, err := parseHeader(mem[:min(len(mem), hdrSize)], ctl, int64(len(mem)))
	if err != nil {
		return nil, err
	}
	r := newRing(h, mem[:DataOffset+int(h.Capacity)*SlotSize])
	r.tail = r.loadTail()
	return r, nil
}

func newRing(h Header, mem []byte) *Ring {
	return &Ring{hdr: h, mem: mem, mask: uint64(h.Capacity) - 1, buf: make([]byte, MaxRecordSize)}
}

func (r *Ring) loadTail() (tail uint64) {
	_ = r.guard(func() { tail = atomic.LoadUint64(r.u64(hdrTail)) })
	return tail
}

// parseHeader checks a header snapshot against the file's size.
func parseHeader(b []byte, ctlMagicValue uint64, size int64) (Header, error) {
	if size < DataOffset || len(b) < hdrSize {
		return Header{}, fmt.Errorf("%w: %d bytes", ErrNotReady, size)
	}
	le := binary.LittleEndian
	switch m := le.Uint64(b[hdrMagic:]); m {
	case Magic:
	case 0:
		return Header{}, fmt.Errorf("%w: no magic", ErrNotReady)
	default:
		return Header{}, fmt.Errorf("%w: magic %#x", ErrInvalid, m)
	}
	var bad []string
	if v := le.Uint32(b[hdrABIVersion:]); v != ABIVersion {
		bad = append(bad, fmt.Sprintf("abi version %d, want %d", v, ABIVersion))
	}
	if v := le.Uint32(b[hdrSlotSize:]); v != SlotSize {
		bad = append(bad, fmt.Sprintf("slot size %d, want %d", v, SlotSize))
	}
	capacity := le.Uint32(b[hdrCapacity:])
	if capacity < MinSlots || capacity > MaxSlots || capacity&(capacity-1) != 0 {
		bad = append(bad, fmt.Sprintf("capacity %d is not a power of two in [%d, %d]", capacity, MinSlots, MaxSlots))
	} else if need := int64(DataOffset) + int64(capacity)*SlotSize; size < need {
		bad = append(bad, fmt.Sprintf("%d bytes, capacity %d needs %d", size, capacity, need))
	}
	if v := le.Uint32(b[hdrCtlOffset:]); v != CtlOffset {
		bad = append(bad, fmt.Sprintf("control page at %d, want %d", v, CtlOffset))
	}
	if v := le.Uint32(b[hdrDataOffset:]); v != DataOffset {
		bad = append(bad, fmt.Sprintf("slots at %d, want %d", v, DataOffset))
	}
	h := Header{
		Capacity:  capacity,
		PID:       le.Uint32(b[hdrPID:]),
		StartTime: le.Uint64(b[hdrStartTime:]),
		CreatedNS: le.Uint64(b[hdrCreated:]),
		Version:   cString(b[hdrVersion : hdrVersion+versionLen]),
		PIDNS:     le.Uint64(b[hdrPIDNS:]),
	}
	if h.PID == 0 {
		bad = append(bad, "pid 0")
	}
	if s := le.Uint32(b[hdrState:]); s < StateActive || s > StateClosed {
		bad = append(bad, fmt.Sprintf("state %d", s))
	}
	if len(bad) > 0 {
		return Header{}, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(bad, "; "))
	}
	switch ctlMagicValue {
	case CtlMagic:
	case 0:
		return Header{}, fmt.Errorf("%w: no control page magic", ErrNotReady)
	default:
		return Header{}, fmt.Errorf("%w: control page magic %#x", ErrInvalid, ctlMagicValue)
	}
	return h, nil
}

// cString is the NUL-terminated text at the start of b, made valid UTF-8
// (it ends up in logs).
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.ToValidUTF8(string(b), "?")
}

// Header is what the header said at Open.
func (r *Ring) Header() Header { return r.hdr }

// FileID is the device and inode of the ring file (0, 0 without a file):
// the same file reached by two paths is one ring.
func (r *Ring) FileID() (dev, ino uint64) { return r.dev, r.ino }

// Broken returns why the ring was abandoned, or nil.
func (r *Ring) Broken() error { return r.broken }

// Tail is the consumer's position: slots consumed since the ring was made.
func (r *Ring) Tail() uint64 { return r.tail }

// Counters are the producer's live counters.
type Counters struct {
	State          uint32 // StateActive, StateDisabled, StateClosed (or garbage)
	DisabledReason uint32 // devrt's internal error code when disabled
	Head           uint64 // producers' next position
	Records        uint64 // records committed
	Timed          uint64 // GPU execution records committed
	Drops          [NumDrops]uint64
}

// Counters reads the producer's counters (each atomically; together they
// are a snapshot of nothing in particular, which is fine for telemetry).
func (r *Ring) Counters() (c Counters, err error) {
	err = r.guard(func() {
		c.State = atomic.LoadUint32(r.u32(hdrState))
		c.DisabledReason = atomic.LoadUint32(r.u32(hdrDisabledReason))
		c.Head = atomic.LoadUint64(r.u64(hdrHead))
		c.Records = atomic.LoadUint64(r.u64(hdrRecords))
		c.Timed = atomic.LoadUint64(r.u64(hdrTimed))
		for i := range c.Drops {
			c.Drops[i] = atomic.LoadUint64(r.u64(hdrDrops + 8*i))
		}
	})
	return c, err
}

// Close unmaps the ring. It does not remove the file.
func (r *Ring) Close() error {
	if r.mem == nil {
		return nil
	}
	mem := r.mem
	r.mem = nil
	if r.broken == nil {
		r.broken = ErrClosed
	}
	if r.mapped {
		return unix.Munmap(mem)
	}
	return nil
}

func (r *Ring) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }
func (r *Ring) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }

// breakf abandons the ring for good.
func (r *Ring) breakf(format string, args ...any) error {
	r.broken = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	return r.broken
}

// guard runs f, which touches the mapping. The file may have been
// truncated under it (the producer can): the access faults (SIGBUS), and
// instead of the collector crashing, the ring is marked broken. Faults at
// other addresses, and other panics, are not ours to hide.
func (r *Ring) guard(f func()) (err error) {
	if r.mem == nil {
		if r.broken != nil {
			return r.broken
		}
		return ErrClosed
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			fault, ok := p.(interface{ Addr() uintptr })
			if !ok || !r.inMapping(fault.Addr()) {
				panic(p)
			}
			err = r.breakf("fault at offset %d of the mapping (file truncated?)", fault.Addr()-r.base())
		}
	}()
	f()
	return nil
}

func (r *Ring) base() uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(r.mem))) }

func (r *Ring) inMapping(addr uintptr) bool {
	b := r.base()
	return addr >= b && addr < b+uintptr(len(r.mem))
}
