package gpuevent

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Wire layout of struct gpuext_event and struct gpuext_named_event
// (bpf/include/gpuext_abi.h). Tests check every offset against the BTF of the
// compiled BPF object.
const (
	ABIVersion = 1

	offKind     = 0
	offAPI      = 2
	offSource   = 4
	offFlags    = 6
	offPID      = 8
	offTID      = 12
	offStart    = 16
	offEnd      = 24
	offCgroupID = 32
	offResult   = 40
	offCorr     = 44
	offArgs     = 48
	offOut      = 120
	offAux      = 128

	NArgs        = 9
	NameMax      = 512
	EventSize    = 168
	NamedSize    = EventSize + NameMax
	auxRawWords  = 5
	launchAuxLen = 40
	commLen      = 16
)

// Kind is enum gpuext_kind.
type Kind uint16

// Record kinds.
const (
	KindCall      Kind = 1
	KindCallNamed Kind = 2
	KindExec      Kind = 3
	KindExit      Kind = 4
	KindXID       Kind = 5 // struct gpuext_xid_event, decoded by DecodeXID
	KindGPUExec   Kind = 6 // struct gpuext_gpu_exec
	KindUVM       Kind = 7 // struct gpuext_uvm_event, decoded by receiver/gpuebpfreceiver/internal/uvmfentry
)

// Source is enum gpuext_source.
type Source uint16

// Sources.
const (
	SourceUprobe Source = 1
	SourceDevrt  Source = 2
)

func (s Source) String() string {
	switch s {
	case SourceUprobe:
		return "uprobe"
	case SourceDevrt:
		return "devrt"
	}
	return "unknown"
}

// Record flags (GPUEXT_F_*).
const (
	FlagOutValid   = 1 << 0
	FlagAuxValid   = 1 << 1
	FlagStackValid = 1 << 2
	FlagNameTrunc  = 1 << 3
	FlagReadFault  = 1 << 4
	FlagNoReturn   = 1 << 5 // reported at entry (lean launch probes): no result, no duration
	// FlagDeviceValid: a launch's device is in aux (devrt, while device
	// probes are in).
	FlagDeviceValid = 1 << 6
)

// Errors returned by Decode. Use errors.Is.
var (
	ErrShort    = errors.New("record too short")
	ErrKind     = errors.New("unknown record kind")
	ErrAPI      = errors.New("unknown API id")
	ErrSize     = errors.New("record size does not match its kind")
	ErrNoName   = errors.New("named record without NUL-terminated name")
	ErrTimeBack = errors.New("call ends before it starts")
)

// Decode parses one record into ev, overwriting every field. It never
// panics; a malformed record returns an error saying why and leaves ev in an
// unspecified state. Only named records allocate (the name string).
func Decode(b []byte, ev *Event) error {
	if len(b) < EventSize {
		return fmt.Errorf("%w: %d bytes, need %d", ErrShort, len(b), EventSize)
	}
	le := binary.LittleEndian
	*ev = Event{
		Kind:     Kind(le.Uint16(b[offKind:])),
		API:      API(le.Uint16(b[offAPI:])),
		Source:   Source(le.Uint16(b[offSource:])),
		Flags:    le.Uint16(b[offFlags:]),
		PID:      le.Uint32(b[offPID:]),
		TID:      le.Uint32(b[offTID:]),
		Start:    le.Uint64(b[offStart:]),
		End:      le.Uint64(b[offEnd:]),
		CgroupID: le.Uint64(b[offCgroupID:]),
		Result:   int32(le.Uint32(b[offResult:])),
		Corr:     le.Uint32(b[offCorr:]),
		Out:      le.Uint64(b[offOut:]),
		Device:   -1,
	}
	for i := 0; i < NArgs; i++ {
		ev.Args[i] = le.Uint64(b[offArgs+8*i:])
	}
	for i := 0; i < auxRawWords; i++ {
		ev.Aux[i] = le.Uint64(b[offAux+8*i:])
	}

	switch ev.Kind {
	case KindExec, KindExit:
		if len(b) != EventSize {
			return fmt.Errorf("%w: kind %d with %d bytes", ErrSize, ev.Kind, len(b))
		}
		if ev.Kind == KindExec {
			// The new program's comm, NUL-padded in args[0..1].
			comm := b[offArgs : offArgs+commLen]
			if n := indexNUL(comm); n >= 0 {
				comm = comm[:n]
			}
			ev.Name = string(comm)
		}
		return nil
	case KindCall:
		if len(b) != EventSize {
			return fmt.Errorf("%w: call with %d bytes", ErrSize, len(b))
		}
	case KindCallNamed:
		if len(b) != NamedSize {
			return fmt.Errorf("%w: named call with %d bytes", ErrSize, len(b))
		}
		name := b[EventSize:]
		n := indexNUL(name)
		if n < 0 {
			return ErrNoName
		}
		ev.Name = string(name[:n])
	default:
		return fmt.Errorf("%w: %d", ErrKind, ev.Kind)
	}
	if !ev.API.Known() {
		return fmt.Errorf("%w: %d", ErrAPI, ev.API)
	}
	if ev.End < ev.Start {
		return fmt.Errorf("%w: start %d end %d", ErrTimeBack, ev.Start, ev.End)
	}
	interpret(ev)
	return nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
