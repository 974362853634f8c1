package uvmfentry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// Type is enum gpuext_uvm_type: what a record reports.
type Type uint8

const (
	TypeGPUFault     Type = 1  // a GPU fault buffer entry the driver serviced
	TypeCPUFault     Type = 2  // a CPU fault on managed memory
	TypeMigration    Type = 3  // one contiguous range copied between processors
	TypeReplay       Type = 4  // a fault batch ended in a replay (not per process)
	TypeThrashing    Type = 5  // thrashing detected on a region
	TypeThrottling   Type = 6  // the driver started throttling a GPU's faults
	TypeEviction     Type = 7  // a VA block's chunks evicted from a GPU root chunk
	TypePrefetch     Type = 8  // pages the prefetcher added to a fault's migration
	TypeFaultBatch   Type = 9  // one fault batch serviced (not per process)
	TypeFaultService Type = 10 // one servicing pass of a GPU's fault buffer (not per process)
	TypeRootEviction Type = 11 // a root chunk evicted from a GPU (not per process)
	numTypes         Type = 12
)

var typeNames = [numTypes]string{
	"invalid", "gpu_fault", "cpu_fault", "migration", "replay", "thrashing", "throttling",
	"eviction", "prefetch", "fault_batch", "fault_service", "root_eviction",
}

func (t Type) String() string {
	if t < numTypes {
		return typeNames[t]
	}
	return "unknown(" + strconv.Itoa(int(t)) + ")"
}

// Cause is enum gpuext_uvm_cause: why the driver made memory resident
// (uvm_make_resident_cause_t).
type Cause uint8

const (
	CauseUnknown            Cause = 0
	CauseReplayableFault    Cause = 1
	CauseNonReplayableFault Cause = 2
	CauseAccessCounter      Cause = 3
	CausePrefetch           Cause = 4
	CauseEviction           Cause = 5
	CauseAPITools           Cause = 6
	CauseAPIMigrate         Cause = 7
	CauseAPISetRangeGroup   Cause = 8
	CauseAPIHint            Cause = 9
)

func (c Cause) String() string {
	return enumName(uint8(c), "unknown", "replayable_fault", "non_replayable_fault", "access_counter",
		"prefetch", "eviction", "api_tools", "api_migrate", "api_set_range_group", "api_hint")
}

// ToolsCause is the cause the UVM tools interface reports for c
// (g_make_resident_to_tools_migration_cause of the driver), so that both
// backends account migrations alike.
func (c Cause) ToolsCause() uvmtools.MigrationCause {
	switch c {
	case CauseReplayableFault, CauseNonReplayableFault, CauseAPISetRangeGroup:
		return uvmtools.CauseCoherence
	case CauseAccessCounter:
		return uvmtools.CauseAccessCounters
	case CausePrefetch:
		return uvmtools.CausePrefetch
	case CauseEviction:
		return uvmtools.CauseEviction
	case CauseAPIMigrate, CauseAPIHint:
		return uvmtools.CauseUser
	}
	return uvmtools.CauseInvalid
}

// Access is enum gpuext_uvm_access; 1 to 4 number as the tools API does.
type Access uint8

const (
	AccessUnknown    Access = 0
	AccessRead       Access = 1
	AccessWrite      Access = 2
	AccessAtomic     Access = 3 // strong
	AccessPrefetch   Access = 4
	AccessAtomicWeak Access = 5
)

func (a Access) String() string {
	return enumName(uint8(a), "unknown", "read", "write", "atomic", "prefetch", "atomic_weak")
}

// ToolsAccess is the tools API's access type: both atomics are atomic.
func (a Access) ToolsAccess() uvmtools.AccessType {
	if a == AccessAtomicWeak {
		return uvmtools.AccessAtomic
	}
	if a <= AccessPrefetch {
		return uvmtools.AccessType(a)
	}
	return uvmtools.AccessInvalid
}

// Flags are GPUEXT_UVM_F_*.
type Flags uint8

const (
	FlagNoOwner   Flags = 1 << 0 // the owning process could not be determined
	FlagDuplicate Flags = 1 << 1 // GPU fault on the same page as the batch's previous one
	FlagThrottled Flags = 1 << 2 // fault batch: some faults were throttled
	FlagFatal     Flags = 1 << 3 // fault batch: a fatal fault was found
	FlagCancel    Flags = 1 << 4 // fault batch serviced to cancel faults
	FlagNoStart   Flags = 1 << 5 // timed record whose entry was missed: Start = End
	FlagPMA       Flags = 1 << 6 // root eviction asked by RM's allocator
)

// CPU is the processor id of the CPU; a GPU's is 1 + its index, the
// tools API's V2 processor index.
const CPU uint16 = 0

// RecordSize is the size of struct gpuext_uvm_event.
const RecordSize = 104

// KindUVM is GPUEXT_KIND_UVM, the first field of every record.
const KindUVM = 7

// Offsets of struct gpuext_uvm_event (record_test.go checks them against
// the object's BTF).
const (
	offKind      = 0
	offType      = 2
	offFlags     = 3
	offPID       = 4
	offStart     = 8
	offEnd       = 16
	offGPU       = 24
	offAddress   = 40
	offBytes     = 48
	offValue     = 56
	offBatch     = 64
	offCount     = 68
	offSrc       = 72
	offDst       = 74
	offSrcNID    = 76
	offDstNID    = 78
	offCause     = 80
	offAccess    = 81
	offFaultType = 82
	offTID       = 84
	offStatus    = 88
	offAux       = 92
)

// Record is one decoded gpuext_uvm_event. Which fields mean something
// depends on Type (see gpuext_abi.h); the others are zero.
type Record struct {
	Type  Type
	Flags Flags
	// PID is the thread group owning the memory (0: none or unknown, see
	// FlagNoOwner); TID the faulting thread of a CPU fault.
	PID, TID uint32
	// Start and End are CLOCK_MONOTONIC ns; equal except for the timed
	// records (fault batches and passes, root evictions).
	Start, End uint64
	// GPU is the physical GPU the record is about (zero: none, or not
	// known to the process's VA space).
	GPU uvmtools.UUID
	// Address: faulting address, start of the migrated range, VA block,
	// thrashing region, or the root chunk's GPU physical address.
	Address uint64
	// Bytes: migrated, prefetched, thrashing region, root chunk.
	Bytes uint64
	// Value: GPU fault: the GPU's timestamp; CPU fault: the faulting
	// instruction; thrashing: processors 0-63 involved; fault batch:
	// replays issued.
	Value uint64
	Batch uint32
	// Count: GPU fault: instances (it and the faults merged with it);
	// prefetch: pages; fault batch: faults fetched; servicing pass:
	// batches.
	Count uint32
	// Src, Dst: processor ids (CPU or 1 + GPU index).
	Src, Dst uint16
	// SrcNUMA, DstNUMA: CPU NUMA nodes of a CPU-to-CPU migration, else -1.
	SrcNUMA, DstNUMA int16
	Cause            Cause
	Access           Access
	// FaultType is the tools API's fault type (uvmtools.FaultType).
	FaultType uvmtools.FaultType
	// Status is the NV_STATUS the function returned (0: NV_OK).
	Status int32
	// Aux: CPU fault: [0] = CPU; fault batch: coalesced, duplicate and
	// invalid prefetch faults.
	Aux [3]uint32
}

// Duration is End - Start in ns (0 for untimed records).
func (r *Record) Duration() uint64 {
	if r.End < r.Start {
		return 0
	}
	return r.End - r.Start
}

// ErrBadRecord is wrapped by every error of Decode.
var ErrBadRecord = errors.New("uvmfentry: bad record")

// Decode decodes one ring buffer record. It rejects, with the reason,
// records of another size or kind and unknown types; enum fields are kept
// as written (their String says unknown(N) when out of range). It never
// panics and does not retain b.
func Decode(b []byte) (Record, error) {
	if len(b) != RecordSize {
		return Record{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadRecord, len(b), RecordSize)
	}
	le := binary.LittleEndian
	if k := le.Uint16(b[offKind:]); k != KindUVM {
		return Record{}, fmt.Errorf("%w: kind %d, want %d (GPUEXT_KIND_UVM)", ErrBadRecord, k, KindUVM)
	}
	t := Type(b[offType])
	if t == 0 || t >= numTypes {
		return Record{}, fmt.Errorf("%w: unknown record type %d", ErrBadRecord, t)
	}
	r := Record{
		Type:      t,
		Flags:     Flags(b[offFlags]),
		PID:       le.Uint32(b[offPID:]),
		TID:       le.Uint32(b[offTID:]),
		Start:     le.Uint64(b[offStart:]),
		End:       le.Uint64(b[offEnd:]),
		Address:   le.Uint64(b[offAddress:]),
		Bytes:     le.Uint64(b[offBytes:]),
		Value:     le.Uint64(b[offValue:]),
		Batch:     le.Uint32(b[offBatch:]),
		Count:     le.Uint32(b[offCount:]),
		Src:       le.Uint16(b[offSrc:]),
		Dst:       le.Uint16(b[offDst:]),
		SrcNUMA:   int16(le.Uint16(b[offSrcNID:])),
		DstNUMA:   int16(le.Uint16(b[offDstNID:])),
		Cause:     Cause(b[offCause]),
		Access:    Access(b[offAccess]),
		FaultType: uvmtools.FaultType(b[offFaultType]),
		Status:    int32(le.Uint32(b[offStatus:])),
	}
	copy(r.GPU[:], b[offGPU:offGPU+16])
	for i := range r.Aux {
		r.Aux[i] = le.Uint32(b[offAux+4*i:])
	}
	return r, nil
}

func enumName(v uint8, names ...string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return "unknown(" + strconv.Itoa(int(v)) + ")"
}
