package devrtinject

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// KindInject is the ring record kind of struct gpuext_inject_event
// (GPUEXT_KIND_INJECT; it continues enum gpuext_kind).
const KindInject = 8

// EventSize is sizeof(struct gpuext_inject_event): one ring slot.
const EventSize = 176

// Outcome is what devrt did with a module (enum gpuext_inj_outcome).
type Outcome uint32

// Outcomes.
const (
	OutPatched           Outcome = 1
	OutUnchanged         Outcome = 2
	OutRejected          Outcome = 3
	OutNotInstrumentable Outcome = 4
	OutFailed            Outcome = 5
)

var outcomeNames = [...]string{"", "patched", "unchanged", "rejected", "not_instrumentable", "failed"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o > 0 {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint32(o))
}

// Reason says why a module was not patched (enum gpuext_inj_reason).
type Reason uint32

// Reasons.
const (
	ReasonNone        Reason = 0
	ReasonSASSOnly    Reason = 1
	ReasonCompressed  Reason = 2
	ReasonBadImage    Reason = 3
	ReasonTooLarge    Reason = 4
	ReasonConnect     Reason = 5
	ReasonTimeout     Reason = 6
	ReasonIO          Reason = 7
	ReasonBadResponse Reason = 8
	ReasonServer      Reason = 9
	ReasonLoad        Reason = 10
	ReasonShared      Reason = 11
	ReasonFunction    Reason = 12
	ReasonNoMemory    Reason = 13
	ReasonDriver      Reason = 14
	ReasonTableFull   Reason = 15
	ReasonRefused     Reason = 16 // later: the twin refused what the original took
	ReasonFile        Reason = 17 // the file a module was loaded from could not be read again
	// ReasonVarsLimits: the twin owns the module's variables (RespVars)
	// and one of its kernels takes fewer threads a block than its
	// original, so launches the original takes would fail.
	ReasonVarsLimits Reason = 18
)

var reasonNames = [...]string{"none", "sass_only", "compressed", "bad_image", "too_large",
	"connect", "timeout", "io", "bad_response", "server", "load", "shared", "function",
	"no_memory", "driver", "table_full", "refused", "file", "vars_limits"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint32(r))
}

// Event flags (GPUEXT_IF_*).
const (
	FlagCollectorCache = 1 << 0 // the collector answered from its cache
	FlagLibrary        = 1 << 1 // Module and Patched are CUlibrary handles
	FlagRegionShared   = 1 << 2 // the region was made for an earlier module
	// FlagOtherContext: not a load but a patched library's binding to
	// another context, at the first launch of one of its kernels there.
	FlagOtherContext = 1 << 3
	// FlagGrid1D: not a load but one kernel's 1-D twin refusing what its
	// twin took (ReasonRefused): the kernel runs its twin for every grid,
	// the module stays patched.
	FlagGrid1D = 1 << 4
	// FlagVars: the twin owns the module's variables (RespVars), so every
	// kernel is redirected; with ReasonRefused the module stays patched
	// and the refused launch failed with the twin's error.
	FlagVars = 1 << 5
)

// Event is struct gpuext_inject_event: what devrt did with one module load.
type Event struct {
	API        uint16 // the load call (enum gpuext_api)
	Source     uint16
	Flags      uint16
	PID, TID   uint32
	TS         uint64 // CLOCK_MONOTONIC ns
	Module     uint64 // the program's CUmodule / CUlibrary
	Patched    uint64 // devrt's twin; 0 if none
	SharedDptr uint64 // written to __gpuext_shared; 0 if none
	SharedSize uint64
	AskNS      uint64 // asking the collector
	LoadNS     uint64 // loading (JIT) the patched PTX
	TotalNS    uint64 // all injection added to the load
	PTXLen     uint64
	Outcome    Outcome
	Reason     Reason
	SMArch     uint32
	Kernels    uint32 // kernels redirected (Patched)
	CUDAResult int32  // the driver's result for ReasonLoad/Shared/Function
	SHA256     [16]byte
	Text       string // the collector's reason
}

// Event decoding errors.
var (
	ErrEventKind = errors.New("devrtinject: not an injection record")
	ErrEventSize = errors.New("devrtinject: short injection record")
	ErrEventBad  = errors.New("devrtinject: injection record out of range")
)

// Field offsets in struct gpuext_inject_event (checked against BTF).
const (
	evOffKind       = 0
	evOffAPI        = 2
	evOffSource     = 4
	evOffFlags      = 6
	evOffPID        = 8
	evOffTID        = 12
	evOffTS         = 16
	evOffModule     = 24
	evOffPatched    = 32
	evOffSharedDptr = 40
	evOffSharedSize = 48
	evOffAskNS      = 56
	evOffLoadNS     = 64
	evOffTotalNS    = 72
	evOffPTXLen     = 80
	evOffOutcome    = 88
	evOffReason     = 92
	evOffSMArch     = 96
	evOffKernels    = 100
	evOffCUDAResult = 104
	evOffSHA256     = 112
	evOffText       = 128
	evTextLen       = 48
)

// DecodeEvent decodes a ring record of kind KindInject. A record a newer
// devrt made longer decodes; unknown outcomes and reasons are errors.
func DecodeEvent(b []byte, e *Event) error {
	if len(b) < 2 || binary.LittleEndian.Uint16(b) != KindInject {
		return ErrEventKind
	}
	if len(b) < EventSize {
		return ErrEventSize
	}
	le := binary.LittleEndian
	*e = Event{
		API: le.Uint16(b[evOffAPI:]), Source: le.Uint16(b[evOffSource:]),
		Flags: le.Uint16(b[evOffFlags:]), PID: le.Uint32(b[evOffPID:]),
		TID: le.Uint32(b[evOffTID:]), TS: le.Uint64(b[evOffTS:]),
		Module: le.Uint64(b[evOffModule:]), Patched: le.Uint64(b[evOffPatched:]),
		SharedDptr: le.Uint64(b[evOffSharedDptr:]), SharedSize: le.Uint64(b[evOffSharedSize:]),
		AskNS: le.Uint64(b[evOffAskNS:]), LoadNS: le.Uint64(b[evOffLoadNS:]),
		TotalNS: le.Uint64(b[evOffTotalNS:]), PTXLen: le.Uint64(b[evOffPTXLen:]),
		Outcome: Outcome(le.Uint32(b[evOffOutcome:])), Reason: Reason(le.Uint32(b[evOffReason:])),
		SMArch: le.Uint32(b[evOffSMArch:]), Kernels: le.Uint32(b[evOffKernels:]),
		CUDAResult: int32(le.Uint32(b[evOffCUDAResult:])),
	}
	copy(e.SHA256[:], b[evOffSHA256:evOffSHA256+16])
	text := b[evOffText : evOffText+evTextLen]
	if i := bytes.IndexByte(text, 0); i >= 0 {
		text = text[:i]
	}
	e.Text = string(text)
	if e.Outcome < OutPatched || e.Outcome > OutFailed || int(e.Reason) >= len(reasonNames) {
		return ErrEventBad
	}
	return nil
}
