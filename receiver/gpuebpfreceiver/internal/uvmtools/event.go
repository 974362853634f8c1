package uvmtools

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unsafe"
)

// Version is the layout of queue entries: V1 (UvmEventEntry, 64 bytes, 8-bit
// parent-GPU processor indices) or V2 (UvmEventEntry_V2, 72 bytes, 16-bit
// processor indices that count MIG instances, NUMA nodes on migrations).
type Version uint8

const (
	VersionAuto Version = 0 // Options: V2 where the driver has it, else V1
	V1          Version = 1
	V2          Version = 2
)

// EntrySize is the size of one queue entry of this version.
func (v Version) EntrySize() int {
	switch v {
	case V1:
		return EntrySizeV1
	case V2:
		return EntrySizeV2
	}
	return 0
}

// EventType is UvmEventType.
type EventType uint8

const (
	EventInvalid                 EventType = 0
	EventCPUFault                EventType = 1 // UvmEventTypeCpuFault (= MemoryViolation)
	EventMigration               EventType = 2
	EventGPUFault                EventType = 3
	EventGPUFaultReplay          EventType = 4
	EventFaultBufferOverflow     EventType = 5 // no payload; not emitted by 565–595
	EventFatalFault              EventType = 6
	EventReadDuplicate           EventType = 7
	EventReadDuplicateInvalidate EventType = 8
	EventPageSizeChange          EventType = 9  // not emitted by 565–595
	EventThrashingDetected       EventType = 10 // UvmEventTypeThrashingDetected
	EventThrottlingStart         EventType = 11
	EventThrottlingEnd           EventType = 12
	EventMapRemote               EventType = 13
	EventEviction                EventType = 14 // not emitted by 565–595
	numEventTypes                EventType = 15 // UvmEventNumTypes

	eventTestFirst EventType = 62 // UvmEventTestTypesFirst: only with uvm_enable_builtin_tests
	eventTestLast  EventType = 63
)

var eventTypeNames = [numEventTypes]string{
	"invalid", "cpu_fault", "migration", "gpu_fault", "gpu_fault_replay",
	"fault_buffer_overflow", "fatal_fault", "read_duplicate",
	"read_duplicate_invalidate", "page_size_change", "thrashing_detected",
	"throttling_start", "throttling_end", "map_remote", "eviction",
}

func (t EventType) String() string {
	if t < numEventTypes {
		return eventTypeNames[t]
	}
	return "unknown(" + strconv.Itoa(int(t)) + ")"
}

// EventMask selects event types: bit t enables EventType t
// (UVM_EVENT_ENABLE_*).
type EventMask uint64

// Mask returns the mask bit of t.
func (t EventType) Mask() EventMask { return EventMask(1) << t }

// AllEvents is every type the driver accepts without builtin tests (bits
// 1..UvmEventNumTypes-1); enabling one it never emits costs nothing.
const AllEvents EventMask = EventMask(1)<<numEventTypes - 2

// Has reports whether t is in m.
func (m EventMask) Has(t EventType) bool { return t < 64 && m&(1<<t) != 0 }

// AccessType is UvmEventMemoryAccessType.
type AccessType uint8

const (
	AccessInvalid  AccessType = 0
	AccessRead     AccessType = 1
	AccessWrite    AccessType = 2
	AccessAtomic   AccessType = 3 // strong and weak atomics both map here
	AccessPrefetch AccessType = 4
)

func (a AccessType) String() string {
	return enumName(uint8(a), "invalid", "read", "write", "atomic", "prefetch")
}

// FaultType is UvmEventFaultType. Values from FaultFatal on cannot be
// serviced by the driver.
type FaultType uint8

const (
	FaultInvalid    FaultType = 0
	FaultInvalidPDE FaultType = 1
	FaultInvalidPTE FaultType = 2
	FaultWrite      FaultType = 3
	FaultAtomic     FaultType = 4
	FaultFatal      FaultType = 5 // first fatal type (invalid PDE size)
)

func (f FaultType) String() string {
	return enumName(uint8(f), "invalid", "invalid_pde", "invalid_pte", "write", "atomic",
		"invalid_pde_size", "limit_violation", "unbound_inst_block", "priv_violation",
		"pitch_mask_violation", "work_creation", "unsupported_aperture",
		"compression_failure", "unsupported_kind", "region_violation", "poison", "cc_violation")
}

// FaultClient is UvmEventFaultClientType: GPC faults are replayable, HUB
// faults are not.
type FaultClient uint8

func (c FaultClient) String() string { return enumName(uint8(c), "invalid", "gpc", "hub") }

// MigrationCause is UvmEventMigrationCause.
//
// Driver quirk (uvm_tools.c, 565–595): for CPU-to-CPU migrations (between
// NUMA nodes) the driver stores its internal uvm_make_resident_cause_t value
// here instead of translating it, so those events carry a different
// numbering; Event.Cause is then meaningless.
type MigrationCause uint8

const (
	CauseInvalid        MigrationCause = 0
	CauseUser           MigrationCause = 1 // cudaMemPrefetchAsync / UvmMigrate, advice
	CauseCoherence      MigrationCause = 2 // faults: a processor needed the data
	CausePrefetch       MigrationCause = 3 // the driver's prefetch heuristics
	CauseEviction       MigrationCause = 4 // evicted from GPU memory
	CauseAccessCounters MigrationCause = 5 // access-counter driven
)

func (c MigrationCause) String() string {
	return enumName(uint8(c), "invalid", "user", "coherence", "prefetch", "eviction", "access_counters")
}

// MapRemoteCause is UvmEventMapRemoteCause.
type MapRemoteCause uint8

func (c MapRemoteCause) String() string {
	return enumName(uint8(c), "invalid", "coherence", "thrashing", "policy", "out_of_memory", "eviction")
}

// FatalReason is UvmEventFatalReason.
type FatalReason uint8

func (r FatalReason) String() string {
	return enumName(uint8(r), "invalid", "invalid_address", "invalid_permissions",
		"invalid_fault_type", "out_of_memory", "internal_error", "invalid_operation")
}

func enumName(v uint8, names ...string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return "unknown(" + strconv.Itoa(int(v)) + ")"
}

// Processor is a processor index as events carry it: 0 is the CPU (all CPUs
// share it; migrations give NUMA nodes separately), others are GPUs.
// ProcessorTable maps them to UUIDs.
type Processor uint16

// CPU is the processor index of the CPU.
const CPU Processor = 0

// IsCPU reports whether p is the CPU.
func (p Processor) IsCPU() bool { return p == CPU }

func (p Processor) String() string {
	if p == CPU {
		return "cpu"
	}
	return "gpu" + strconv.Itoa(int(p))
}

// ProcessorMask is a set of processor indices (bit p is processor p).
type ProcessorMask [processorMaskWords]uint64

// Has reports whether p is in the mask.
func (m ProcessorMask) Has(p Processor) bool {
	return int(p)/64 < len(m) && m[p/64]&(1<<(p%64)) != 0
}

// List returns the processors in the mask, in order.
func (m ProcessorMask) List() []Processor {
	var out []Processor
	for w, v := range m {
		for v != 0 {
			b := bits.TrailingZeros64(v)
			out = append(out, Processor(w*64+b))
			v &= v - 1
		}
	}
	return out
}

// Direction classifies a migration by its endpoints.
type Direction uint8

const (
	DirectionNone     Direction = iota // not a migration
	DirectionCPUToGPU                  // host to device
	DirectionGPUToCPU                  // device to host
	DirectionGPUToGPU                  // peer
	DirectionCPUToCPU                  // between NUMA nodes
)

func (d Direction) String() string {
	return enumName(uint8(d), "none", "cpu_to_gpu", "gpu_to_cpu", "gpu_to_gpu", "cpu_to_cpu")
}

// Event is one decoded queue entry. Which fields are set depends on Type;
// the others are zero.
//
// Times: Time, TimeEnd are the driver's CPU clock, ktime_get_raw (the
// CLOCK_MONOTONIC_RAW of clock_gettime(2)) in nanoseconds. TimeGPU,
// TimeGPUEnd are the GPU's own timer (ns, its own epoch).
type Event struct {
	Type    EventType
	Version Version

	// Processor: the faulting GPU (gpu_fault, gpu_fault_replay), the
	// processor of fatal_fault, throttling_*, page_size_change, and the
	// processor left holding the only copy (read_duplicate_invalidate).
	Processor Processor
	// Src, Dst: migration, map_remote (Src is being mapped to memory on
	// Dst), eviction.
	Src, Dst Processor
	// SrcNUMA, DstNUMA: V2 migrations, the CPU NUMA node of a CPU endpoint
	// (-1 when none).
	SrcNUMA, DstNUMA int32

	Address   uint64 // faulting address, first byte migrated/mapped/evicted
	AddressIn uint64 // eviction: the address whose need caused it
	Size      uint64 // migration: bytes migrated; regions: bytes; page_size_change: new page size

	Access      AccessType  // cpu_fault, gpu_fault, fatal_fault
	FaultType   FaultType   // gpu_fault, fatal_fault
	FaultClient FaultClient // gpu_fault, gpu_fault_replay
	ClientID    uint16      // gpu_fault: MMU client id (architecture specific)
	GPC         uint16      // gpu_fault: GPC (replayable faults) or channel id (not replayable)
	Batch       uint32      // gpu_fault, gpu_fault_replay: per-GPU fault batch

	Cause      MigrationCause // migration
	MapCause   MapRemoteCause // map_remote
	Fatal      FatalReason    // fatal_fault
	RangeGroup uint64         // migration

	Processors ProcessorMask // read_duplicate: holders; thrashing_detected: processors fighting

	CPUID, PID, TID uint32 // cpu_fault
	PC              uint64 // cpu_fault: faulting instruction

	Time       uint64 // CPU ns: fault seen, migration queued, event pushed
	TimeEnd    uint64 // migration: completion seen by the CPU (0 if async)
	TimeGPU    uint64 // GPU ns: fault written, migration started, replay/mapping done
	TimeGPUEnd uint64 // migration: finished on the GPU
}

// Direction returns the migration's direction (DirectionNone for other
// types).
func (e *Event) Direction() Direction {
	if e.Type != EventMigration {
		return DirectionNone
	}
	switch {
	case e.Src.IsCPU() && e.Dst.IsCPU():
		return DirectionCPUToCPU
	case e.Src.IsCPU():
		return DirectionCPUToGPU
	case e.Dst.IsCPU():
		return DirectionGPUToCPU
	}
	return DirectionGPUToGPU
}

// ErrBadEntry is wrapped by every error of Decode.
var ErrBadEntry = errors.New("uvmtools: bad event entry")

// Decode decodes one queue entry; its length picks the layout (EntrySizeV1
// or EntrySizeV2). It rejects, with the reason, entries of another size, the
// invalid type 0, test-only types (62, 63) and unknown types. Enum fields are
// kept as the driver wrote them (their String says unknown(N) when out of
// range). Decode never panics and does not retain entry.
func Decode(entry []byte) (Event, error) {
	switch len(entry) {
	case EntrySizeV1:
		var raw entryV1
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&raw)), EntrySizeV1), entry)
		return decodeV1(unsafe.Pointer(&raw))
	case EntrySizeV2:
		var raw entryV2
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&raw)), EntrySizeV2), entry)
		return decodeV2(unsafe.Pointer(&raw))
	}
	return Event{}, fmt.Errorf("%w: %d bytes, want %d (V1) or %d (V2)", ErrBadEntry, len(entry), EntrySizeV1, EntrySizeV2)
}

func checkType(t EventType) error {
	switch {
	case t == EventInvalid:
		return fmt.Errorf("%w: event type 0 (invalid; an empty entry)", ErrBadEntry)
	case t >= eventTestFirst && t <= eventTestLast:
		return fmt.Errorf("%w: event type %d is a driver self-test type", ErrBadEntry, t)
	case t >= numEventTypes:
		return fmt.Errorf("%w: unknown event type %d", ErrBadEntry, t)
	}
	return nil
}

// decodeV1 reads a UvmEventEntry; p points at 64 aligned bytes.
func decodeV1(p unsafe.Pointer) (Event, error) {
	e := Event{Type: EventType(*(*uint8)(p)), Version: V1}
	if err := checkType(e.Type); err != nil {
		return Event{}, err
	}
	switch e.Type {
	case EventCPUFault:
		decodeCPUFault(&e, (*cpuFaultInfo)(p))
	case EventMigration:
		r := (*migrationInfoV1)(p)
		e.Cause = MigrationCause(r.MigrationCause)
		e.Src, e.Dst = Processor(r.SrcIndex), Processor(r.DstIndex)
		e.SrcNUMA, e.DstNUMA = -1, -1
		e.Address, e.Size, e.RangeGroup = r.Address, r.MigratedBytes, r.RangeGroupID
		e.Time, e.TimeEnd = r.BeginTimeStamp, r.EndTimeStamp
		e.TimeGPU, e.TimeGPUEnd = r.BeginTimeStampGPU, r.EndTimeStampGPU
	case EventGPUFault:
		r := (*gpuFaultInfoV1)(p)
		e.FaultType, e.Access, e.Processor = FaultType(r.FaultType), AccessType(r.AccessType), Processor(r.GPUIndex)
		e.GPC, e.ClientID, e.Address = r.GPCID, r.ClientID, r.Address
		e.Time, e.TimeGPU, e.Batch, e.FaultClient = r.TimeStamp, r.TimeStampGPU, r.BatchID, FaultClient(r.ClientType)
	case EventGPUFaultReplay:
		r := (*gpuFaultReplayInfoV1)(p)
		e.Processor, e.FaultClient, e.Batch = Processor(r.GPUIndex), FaultClient(r.ClientType), r.BatchID
		e.Time, e.TimeGPU = r.TimeStamp, r.TimeStampGPU
	case EventFatalFault:
		r := (*fatalFaultInfoV1)(p)
		e.FaultType, e.Access, e.Processor, e.Fatal = FaultType(r.FaultType), AccessType(r.AccessType), Processor(r.ProcessorIndex), FatalReason(r.Reason)
		e.Address, e.Time = r.Address, r.TimeStamp
	case EventReadDuplicate, EventThrashingDetected:
		r := (*regionMaskInfoV1)(p)
		e.Processors[0], e.Address, e.Size, e.Time = r.Processors, r.Address, r.Size, r.TimeStamp
	case EventReadDuplicateInvalidate:
		r := (*readDuplicateInvalidateInfoV1)(p)
		e.Processor, e.Address, e.Size, e.Time = Processor(r.ResidentIndex), r.Address, r.Size, r.TimeStamp
	case EventPageSizeChange:
		r := (*pageSizeChangeInfoV1)(p)
		e.Processor, e.Size, e.Address, e.Time = Processor(r.ProcessorIndex), uint64(r.Size), r.Address, r.TimeStamp
	case EventThrottlingStart, EventThrottlingEnd:
		r := (*throttlingInfoV1)(p)
		e.Processor, e.Address, e.Time = Processor(r.ProcessorIndex), r.Address, r.TimeStamp
	case EventMapRemote:
		r := (*mapRemoteInfoV1)(p)
		e.Src, e.Dst, e.MapCause = Processor(r.SrcIndex), Processor(r.DstIndex), MapRemoteCause(r.MapRemoteCause)
		e.Address, e.Size, e.Time, e.TimeGPU = r.Address, r.Size, r.TimeStamp, r.TimeStampGPU
	case EventEviction:
		r := (*evictionInfoV1)(p)
		e.Src, e.Dst = Processor(r.SrcIndex), Processor(r.DstIndex)
		e.Address, e.AddressIn, e.Size, e.Time = r.AddressOut, r.AddressIn, r.Size, r.TimeStamp
	case EventFaultBufferOverflow:
		// The ABI defines no payload.
	}
	return e, nil
}

// decodeV2 reads a UvmEventEntry_V2; p points at 72 aligned bytes.
func decodeV2(p unsafe.Pointer) (Event, error) {
	e := Event{Type: EventType(*(*uint8)(p)), Version: V2}
	if err := checkType(e.Type); err != nil {
		return Event{}, err
	}
	switch e.Type {
	case EventCPUFault:
		decodeCPUFault(&e, (*cpuFaultInfo)(p))
	case EventMigration:
		r := (*migrationInfoV2)(p)
		e.Cause = MigrationCause(r.MigrationCause)
		e.Src, e.Dst = Processor(r.SrcIndex), Processor(r.DstIndex)
		e.SrcNUMA, e.DstNUMA = r.SrcNid, r.DstNid
		e.Address, e.Size, e.RangeGroup = r.Address, r.MigratedBytes, r.RangeGroupID
		e.Time, e.TimeEnd = r.BeginTimeStamp, r.EndTimeStamp
		e.TimeGPU, e.TimeGPUEnd = r.BeginTimeStampGPU, r.EndTimeStampGPU
	case EventGPUFault:
		r := (*gpuFaultInfoV2)(p)
		e.FaultType, e.Access, e.Processor = FaultType(r.FaultType), AccessType(r.AccessType), Processor(r.GPUIndex)
		e.GPC, e.ClientID, e.Address = r.GPCID, r.ClientID, r.Address
		e.Time, e.TimeGPU, e.Batch, e.FaultClient = r.TimeStamp, r.TimeStampGPU, r.BatchID, FaultClient(r.ClientType)
	case EventGPUFaultReplay:
		r := (*gpuFaultReplayInfoV2)(p)
		e.Processor, e.FaultClient, e.Batch = Processor(r.GPUIndex), FaultClient(r.ClientType), r.BatchID
		e.Time, e.TimeGPU = r.TimeStamp, r.TimeStampGPU
	case EventFatalFault:
		r := (*fatalFaultInfoV2)(p)
		e.FaultType, e.Access, e.Processor, e.Fatal = FaultType(r.FaultType), AccessType(r.AccessType), Processor(r.ProcessorIndex), FatalReason(r.Reason)
		e.Address, e.Time = r.Address, r.TimeStamp
	case EventReadDuplicate, EventThrashingDetected:
		r := (*regionMaskInfoV2)(p)
		e.Processors, e.Address, e.Size, e.Time = r.Processors, r.Address, r.Size, r.TimeStamp
	case EventReadDuplicateInvalidate:
		r := (*readDuplicateInvalidateInfoV2)(p)
		e.Processor, e.Address, e.Size, e.Time = Processor(r.ResidentIndex), r.Address, r.Size, r.TimeStamp
	case EventPageSizeChange:
		r := (*pageSizeChangeInfoV2)(p)
		e.Processor, e.Size, e.Address, e.Time = Processor(r.ProcessorIndex), uint64(r.Size), r.Address, r.TimeStamp
	case EventThrottlingStart, EventThrottlingEnd:
		r := (*throttlingInfoV2)(p)
		e.Processor, e.Address, e.Time = Processor(r.ProcessorIndex), r.Address, r.TimeStamp
	case EventMapRemote:
		r := (*mapRemoteInfoV2)(p)
		e.Src, e.Dst, e.MapCause = Processor(r.SrcIndex), Processor(r.DstIndex), MapRemoteCause(r.MapRemoteCause)
		e.Address, e.Size, e.Time, e.TimeGPU = r.Address, r.Size, r.TimeStamp, r.TimeStampGPU
	case EventEviction:
		r := (*evictionInfoV2)(p)
		e.Src, e.Dst = Processor(r.SrcIndex), Processor(r.DstIndex)
		e.Address, e.AddressIn, e.Size, e.Time = r.AddressOut, r.AddressIn, r.Size, r.TimeStamp
	case EventFaultBufferOverflow:
		// The ABI defines no payload.
	}
	return e, nil
}

func decodeCPUFault(e *Event, r *cpuFaultInfo) {
	e.Processor = CPU
	e.Access, e.CPUID, e.Address, e.Time = AccessType(r.AccessType), r.CPUID, r.Address, r.TimeStamp
	e.PID, e.TID, e.PC = r.PID, r.ThreadID, r.PC
}
