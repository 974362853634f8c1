package gpuevent

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Layout of struct gpuext_gpu_exec (bpf/include/gpuext_abi.h), checked
// against the BTF of bpf/abi.bpf.c in tests.
const (
	gxOffKind      = 0
	gxOffAPI       = 2
	gxOffSource    = 4
	gxOffFlags     = 6
	gxOffPID       = 8
	gxOffTID       = 12
	gxOffCallStart = 16
	gxOffGPUStart  = 24
	gxOffGPUEnd    = 32
	gxOffStream    = 40
	gxOffHandle    = 48
	gxOffBytes     = 56
	gxOffCorr      = 64
	// GPUExecSize is the size of a GPU execution record.
	GPUExecSize = 80
)

// GPU execution record flags (GPUEXT_XF_*).
const (
	// ExecFlagClamped: the GPU start was before the call (clock skew): the
	// interval was moved to start at the call's start, its duration kept.
	ExecFlagClamped = 1 << 0
	// ExecFlagCallFailed: the call returned an error; the times are those of
	// the events around it.
	ExecFlagCallFailed = 1 << 1
)

// ErrNotEnqueuing is returned for a GPU execution record whose API enqueues
// no GPU work (only launches, copies and sets do).
var ErrNotEnqueuing = errors.New("API enqueues no GPU work")

// GPUExec is when the work a sampled call enqueued (a kernel, a graph, a
// copy or a set) ran on the GPU, on the host's CLOCK_MONOTONIC.
type GPUExec struct {
	API       API // the call that enqueued the work
	Source    Source
	Flags     uint16
	PID       uint32
	TID       uint32 // the thread that made the call
	CallStart uint64 // start of the call's record (ns)
	GPUStart  uint64 // when the work started on the GPU (ns)
	GPUEnd    uint64 // ... and ended
	Stream    uint64
	Handle    uint64 // CUfunction or CUgraphExec; 0 for copies and sets
	Bytes     uint64 // copies and sets: bytes moved or written
	Corr      uint32 // the call's record carries the same number
}

// Duration is how long the work ran on the GPU, in nanoseconds.
func (x *GPUExec) Duration() uint64 { return x.GPUEnd - x.GPUStart }

// QueueDelay is the time from the call's start (the work was enqueued
// during the call) to the work starting on the GPU, in nanoseconds; 0 when
// the clocks disagree.
func (x *GPUExec) QueueDelay() uint64 {
	if x.GPUStart < x.CallStart {
		return 0
	}
	return x.GPUStart - x.CallStart
}

// DecodeGPUExec parses a GPU execution record into x. It never panics; a
// malformed record returns an error saying why and leaves x unspecified.
func DecodeGPUExec(b []byte, x *GPUExec) error {
	if len(b) != GPUExecSize {
		return fmt.Errorf("%w: gpu exec record of %d bytes, want %d", ErrSize, len(b), GPUExecSize)
	}
	le := binary.LittleEndian
	if k := Kind(le.Uint16(b[gxOffKind:])); k != KindGPUExec {
		return fmt.Errorf("%w: %d in a gpu exec record", ErrKind, k)
	}
	*x = GPUExec{
		API:       API(le.Uint16(b[gxOffAPI:])),
		Source:    Source(le.Uint16(b[gxOffSource:])),
		Flags:     le.Uint16(b[gxOffFlags:]),
		PID:       le.Uint32(b[gxOffPID:]),
		TID:       le.Uint32(b[gxOffTID:]),
		CallStart: le.Uint64(b[gxOffCallStart:]),
		GPUStart:  le.Uint64(b[gxOffGPUStart:]),
		GPUEnd:    le.Uint64(b[gxOffGPUEnd:]),
		Stream:    le.Uint64(b[gxOffStream:]),
		Handle:    le.Uint64(b[gxOffHandle:]),
		Bytes:     le.Uint64(b[gxOffBytes:]),
		Corr:      le.Uint32(b[gxOffCorr:]),
	}
	if !x.API.Known() {
		return fmt.Errorf("%w: %d", ErrAPI, x.API)
	}
	if c := x.API.Class(); c != ClassLaunch && c != ClassCopy {
		return fmt.Errorf("%w: %s", ErrNotEnqueuing, x.API)
	}
	if x.GPUEnd < x.GPUStart {
		return fmt.Errorf("%w: gpu start %d end %d", ErrTimeBack, x.GPUStart, x.GPUEnd)
	}
	return nil
}

// AppendGPUExec appends the wire form of x, for fixtures, test producers and
// benchmarks. It is the inverse of DecodeGPUExec.
func AppendGPUExec(b []byte, x *GPUExec) []byte {
	start := len(b)
	b = append(b, make([]byte, GPUExecSize)...)
	r := b[start:]
	le := binary.LittleEndian
	le.PutUint16(r[gxOffKind:], uint16(KindGPUExec))
	le.PutUint16(r[gxOffAPI:], uint16(x.API))
	le.PutUint16(r[gxOffSource:], uint16(x.Source))
	le.PutUint16(r[gxOffFlags:], x.Flags)
	le.PutUint32(r[gxOffPID:], x.PID)
	le.PutUint32(r[gxOffTID:], x.TID)
	le.PutUint64(r[gxOffCallStart:], x.CallStart)
	le.PutUint64(r[gxOffGPUStart:], x.GPUStart)
	le.PutUint64(r[gxOffGPUEnd:], x.GPUEnd)
	le.PutUint64(r[gxOffStream:], x.Stream)
	le.PutUint64(r[gxOffHandle:], x.Handle)
	le.PutUint64(r[gxOffBytes:], x.Bytes)
	le.PutUint32(r[gxOffCorr:], x.Corr)
	return b
}

// RecordKind returns the kind of a raw record (its first field), or 0 when
// the record is too short to have one. Sources that carry several record
// types (devrt's rings) pick the decoder with it.
func RecordKind(b []byte) Kind {
	if len(b) < 2 {
		return 0
	}
	return Kind(binary.LittleEndian.Uint16(b))
}
