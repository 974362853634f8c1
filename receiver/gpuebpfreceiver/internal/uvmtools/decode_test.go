package uvmtools

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// eb builds an entry byte by byte at the offsets of the C layout (written
// out here independently of the Go structs, so a wrong struct fails).
type eb []byte

func entry(size int, typ EventType) eb { b := make(eb, size); b[0] = byte(typ); return b }
func (b eb) u8(off int, v uint8) eb    { b[off] = v; return b }
func (b eb) u16(off int, v uint16) eb  { binary.LittleEndian.PutUint16(b[off:], v); return b }
func (b eb) u32(off int, v uint32) eb  { binary.LittleEndian.PutUint32(b[off:], v); return b }
func (b eb) s32(off int, v int32) eb   { return b.u32(off, uint32(v)) }
func (b eb) u64(off int, v uint64) eb  { binary.LittleEndian.PutUint64(b[off:], v); return b }

const (
	addr  = 0x7f12_3456_7000
	tsCPU = 1_000_000_123
	tsGPU = 1_700_000_000_000_000_456
)

type decodeCase struct {
	name string
	in   eb
	want Event
}

func decodeCases() []decodeCase {
	return []decodeCase{
		{"v1 cpu fault", entry(64, EventCPUFault).u8(1, 2).u32(4, 7).u64(8, addr).u64(16, tsCPU).u32(24, 4242).u32(28, 4243).u64(32, 0x401000),
			Event{Type: EventCPUFault, Version: V1, Processor: CPU, Access: AccessWrite, CPUID: 7, Address: addr, Time: tsCPU, PID: 4242, TID: 4243, PC: 0x401000}},
		{"v2 cpu fault", entry(72, EventCPUFault).u8(1, 1).u32(4, 3).u64(8, addr).u64(16, tsCPU).u32(24, 10).u32(28, 11).u64(32, 0x500000),
			Event{Type: EventCPUFault, Version: V2, Processor: CPU, Access: AccessRead, CPUID: 3, Address: addr, Time: tsCPU, PID: 10, TID: 11, PC: 0x500000}},

		{"v1 migration htod", entry(64, EventMigration).u8(1, 2).u8(2, 0).u8(3, 1).u64(8, addr).u64(16, 2<<20).u64(24, tsCPU).u64(32, tsCPU+500).u64(40, 9).u64(48, tsGPU).u64(56, tsGPU+400),
			Event{Type: EventMigration, Version: V1, Src: CPU, Dst: 1, SrcNUMA: -1, DstNUMA: -1, Cause: CauseCoherence, Address: addr, Size: 2 << 20,
				Time: tsCPU, TimeEnd: tsCPU + 500, RangeGroup: 9, TimeGPU: tsGPU, TimeGPUEnd: tsGPU + 400}},
		{"v2 migration dtoh", entry(72, EventMigration).u8(1, 3).u16(4, 9).u16(6, 0).s32(8, -1).s32(12, 1).u64(16, addr).u64(24, 65536).u64(32, tsCPU).u64(40, 0).u64(48, 0).u64(56, tsGPU).u64(64, tsGPU+77),
			Event{Type: EventMigration, Version: V2, Src: 9, Dst: CPU, SrcNUMA: -1, DstNUMA: 1, Cause: CausePrefetch, Address: addr, Size: 65536,
				Time: tsCPU, TimeGPU: tsGPU, TimeGPUEnd: tsGPU + 77}},

		{"v1 gpu fault", entry(64, EventGPUFault).u8(1, 2).u8(2, 1).u8(3, 1).u16(4, 5).u16(6, 33).u64(8, addr).u64(16, tsCPU).u64(24, tsGPU).u32(32, 77).u8(36, 1),
			Event{Type: EventGPUFault, Version: V1, Processor: 1, FaultType: FaultInvalidPTE, Access: AccessRead, GPC: 5, ClientID: 33, Address: addr,
				Time: tsCPU, TimeGPU: tsGPU, Batch: 77, FaultClient: 1}},
		{"v2 gpu fault", entry(72, EventGPUFault).u8(1, 3).u16(2, 17).u16(4, 6).u16(6, 40).u64(8, addr).u64(16, tsCPU).u64(24, tsGPU).u32(32, 78).u8(36, 2).u8(37, 3),
			Event{Type: EventGPUFault, Version: V2, Processor: 17, FaultType: FaultWrite, Access: AccessAtomic, GPC: 6, ClientID: 40, Address: addr,
				Time: tsCPU, TimeGPU: tsGPU, Batch: 78, FaultClient: 2}},

		{"v1 gpu fault replay", entry(64, EventGPUFaultReplay).u8(1, 2).u8(2, 1).u32(4, 99).u64(8, tsCPU).u64(16, tsGPU),
			Event{Type: EventGPUFaultReplay, Version: V1, Processor: 2, FaultClient: 1, Batch: 99, Time: tsCPU, TimeGPU: tsGPU}},
		{"v2 gpu fault replay", entry(72, EventGPUFaultReplay).u8(1, 1).u16(2, 9).u32(4, 100).u64(8, tsCPU).u64(16, tsGPU),
			Event{Type: EventGPUFaultReplay, Version: V2, Processor: 9, FaultClient: 1, Batch: 100, Time: tsCPU, TimeGPU: tsGPU}},

		{"v1 fatal fault", entry(64, EventFatalFault).u8(1, 6).u8(2, 2).u8(3, 1).u8(4, 1).u64(8, addr).u64(16, tsCPU),
			Event{Type: EventFatalFault, Version: V1, FaultType: 6, Access: AccessWrite, Processor: 1, Fatal: 1, Address: addr, Time: tsCPU}},
		{"v2 fatal fault", entry(72, EventFatalFault).u8(1, 0).u8(2, 1).u8(3, 5).u16(4, 0).u64(8, addr).u64(16, tsCPU),
			Event{Type: EventFatalFault, Version: V2, Access: AccessRead, Processor: CPU, Fatal: 5, Address: addr, Time: tsCPU}},

		{"v1 read duplicate", entry(64, EventReadDuplicate).u64(8, 0b11).u64(16, addr).u64(24, 4096).u64(32, tsCPU),
			Event{Type: EventReadDuplicate, Version: V1, Processors: ProcessorMask{0b11}, Address: addr, Size: 4096, Time: tsCPU}},
		{"v2 read duplicate", entry(72, EventReadDuplicate).u64(8, addr).u64(16, 4096).u64(24, tsCPU).u64(32, 1).u64(40, 0).u64(64, 1<<0),
			Event{Type: EventReadDuplicate, Version: V2, Processors: ProcessorMask{1, 0, 0, 0, 1}, Address: addr, Size: 4096, Time: tsCPU}},

		{"v1 read duplicate invalidate", entry(64, EventReadDuplicateInvalidate).u8(1, 1).u64(8, addr).u64(16, 4096).u64(24, tsCPU),
			Event{Type: EventReadDuplicateInvalidate, Version: V1, Processor: 1, Address: addr, Size: 4096, Time: tsCPU}},
		{"v2 read duplicate invalidate", entry(72, EventReadDuplicateInvalidate).u16(2, 257-1).u64(8, addr).u64(16, 4096).u64(24, tsCPU),
			Event{Type: EventReadDuplicateInvalidate, Version: V2, Processor: 256, Address: addr, Size: 4096, Time: tsCPU}},

		{"v1 page size change", entry(64, EventPageSizeChange).u8(1, 1).u32(4, 2<<20).u64(8, addr).u64(16, tsCPU),
			Event{Type: EventPageSizeChange, Version: V1, Processor: 1, Size: 2 << 20, Address: addr, Time: tsCPU}},
		{"v2 page size change", entry(72, EventPageSizeChange).u16(2, 9).u32(4, 65536).u64(8, addr).u64(16, tsCPU),
			Event{Type: EventPageSizeChange, Version: V2, Processor: 9, Size: 65536, Address: addr, Time: tsCPU}},

		{"v1 thrashing", entry(64, EventThrashingDetected).u64(8, 0b101).u64(16, addr).u64(24, 4096).u64(32, tsCPU),
			Event{Type: EventThrashingDetected, Version: V1, Processors: ProcessorMask{0b101}, Address: addr, Size: 4096, Time: tsCPU}},
		{"v2 thrashing", entry(72, EventThrashingDetected).u64(8, addr).u64(16, 4096).u64(24, tsCPU).u64(32, 0b10_0000_0011),
			Event{Type: EventThrashingDetected, Version: V2, Processors: ProcessorMask{0b10_0000_0011}, Address: addr, Size: 4096, Time: tsCPU}},

		{"v1 throttling start", entry(64, EventThrottlingStart).u8(1, 1).u64(8, addr).u64(16, tsCPU),
			Event{Type: EventThrottlingStart, Version: V1, Processor: 1, Address: addr, Time: tsCPU}},
		{"v2 throttling end", entry(72, EventThrottlingEnd).u16(2, 0).u64(8, addr).u64(16, tsCPU),
			Event{Type: EventThrottlingEnd, Version: V2, Processor: CPU, Address: addr, Time: tsCPU}},
		{"v2 throttling start", entry(72, EventThrottlingStart).u16(2, 9).u64(8, addr).u64(16, tsCPU),
			Event{Type: EventThrottlingStart, Version: V2, Processor: 9, Address: addr, Time: tsCPU}},
		{"v1 throttling end", entry(64, EventThrottlingEnd).u8(1, 2).u64(8, addr).u64(16, tsCPU),
			Event{Type: EventThrottlingEnd, Version: V1, Processor: 2, Address: addr, Time: tsCPU}},

		{"v1 map remote", entry(64, EventMapRemote).u8(1, 1).u8(2, 0).u8(3, 2).u64(8, addr).u64(16, 1<<16).u64(24, tsCPU).u64(32, tsGPU),
			Event{Type: EventMapRemote, Version: V1, Src: 1, Dst: CPU, MapCause: 2, Address: addr, Size: 1 << 16, Time: tsCPU, TimeGPU: tsGPU}},
		{"v2 map remote", entry(72, EventMapRemote).u8(1, 3).u16(4, 0).u16(6, 9).u64(8, addr).u64(16, 4096).u64(24, tsCPU).u64(32, 0),
			Event{Type: EventMapRemote, Version: V2, Src: CPU, Dst: 9, MapCause: 3, Address: addr, Size: 4096, Time: tsCPU}},

		{"v1 eviction", entry(64, EventEviction).u8(1, 1).u8(2, 0).u64(8, addr).u64(16, addr+0x200000).u64(24, 2<<20).u64(32, tsCPU),
			Event{Type: EventEviction, Version: V1, Src: 1, Dst: CPU, Address: addr, AddressIn: addr + 0x200000, Size: 2 << 20, Time: tsCPU}},
		{"v2 eviction", entry(72, EventEviction).u16(4, 9).u16(6, 0).u64(8, addr).u64(16, addr+0x200000).u64(24, 2<<20).u64(32, tsCPU),
			Event{Type: EventEviction, Version: V2, Src: 9, Dst: CPU, Address: addr, AddressIn: addr + 0x200000, Size: 2 << 20, Time: tsCPU}},

		{"v2 fault buffer overflow", entry(72, EventFaultBufferOverflow).u64(8, 0xdead),
			Event{Type: EventFaultBufferOverflow, Version: V2}},
	}
}

func TestDecode(t *testing.T) {
	covered := map[Version]map[EventType]bool{V1: {}, V2: {}}
	for _, c := range decodeCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode(c.in)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
		covered[c.want.Version][c.want.Type] = true
	}
	// Every type with a payload, in both layouts.
	for v, types := range covered {
		for typ := EventCPUFault; typ < numEventTypes; typ++ {
			if typ != EventFaultBufferOverflow {
				assert.True(t, types[typ], "no %v case for %v", v, typ)
			}
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		msg  string
	}{
		{"nil", nil, "0 bytes, want 64 (V1) or 72 (V2)"},
		{"short", make([]byte, 40), "40 bytes"},
		{"long", make([]byte, 80), "80 bytes"},
		{"type 0", make([]byte, 72), "event type 0"},
		{"type 15", entry(72, 15), "unknown event type 15"},
		{"type 61", entry(64, 61), "unknown event type 61"},
		{"test access counter", entry(72, 63), "self-test type"},
		{"test split invalidate", entry(64, 62), "self-test type"},
		{"type 255", entry(72, 255), "unknown event type 255"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.in)
			require.ErrorIs(t, err, ErrBadEntry)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

func TestDecodeKeepsUnknownEnums(t *testing.T) {
	e, err := Decode(entry(72, EventGPUFault).u8(1, 200).u8(37, 9).u8(36, 7))
	require.NoError(t, err)
	assert.Equal(t, "unknown(200)", e.FaultType.String())
	assert.Equal(t, "unknown(9)", e.Access.String())
	assert.Equal(t, "unknown(7)", e.FaultClient.String())
}

func TestDirection(t *testing.T) {
	for _, c := range []struct {
		src, dst Processor
		want     Direction
	}{
		{CPU, 1, DirectionCPUToGPU}, {1, CPU, DirectionGPUToCPU}, {1, 9, DirectionGPUToGPU}, {CPU, CPU, DirectionCPUToCPU},
	} {
		e := Event{Type: EventMigration, Src: c.src, Dst: c.dst}
		assert.Equal(t, c.want, e.Direction())
	}
	assert.Equal(t, DirectionNone, (&Event{Type: EventGPUFault}).Direction())
	assert.Equal(t, "cpu_to_gpu", DirectionCPUToGPU.String())
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "gpu_fault", EventGPUFault.String())
	assert.Equal(t, "unknown(99)", EventType(99).String())
	assert.Equal(t, "prefetch", AccessPrefetch.String())
	assert.Equal(t, "cc_violation", FaultType(16).String())
	assert.Equal(t, "access_counters", CauseAccessCounters.String())
	assert.Equal(t, "eviction", MapRemoteCause(5).String())
	assert.Equal(t, "invalid_operation", FatalReason(6).String())
	assert.Equal(t, "cpu", CPU.String())
	assert.Equal(t, "gpu9", Processor(9).String())
	assert.True(t, AllEvents.Has(EventEviction))
	assert.False(t, AllEvents.Has(EventInvalid))
	assert.False(t, AllEvents.Has(EventType(63)))
}

func TestProcessorMask(t *testing.T) {
	m := ProcessorMask{0b11, 0, 0, 0, 1}
	assert.Equal(t, []Processor{0, 1, 256}, m.List())
	assert.True(t, m.Has(256))
	assert.False(t, m.Has(2))
	assert.False(t, m.Has(1000))
}
