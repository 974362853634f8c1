package uvmfentry

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// encode writes r as the BPF program does (the inverse of Decode).
func encode(r Record) []byte {
	b := make([]byte, RecordSize)
	le := binary.LittleEndian
	le.PutUint16(b[offKind:], KindUVM)
	b[offType] = byte(r.Type)
	b[offFlags] = byte(r.Flags)
	le.PutUint32(b[offPID:], r.PID)
	le.PutUint64(b[offStart:], r.Start)
	le.PutUint64(b[offEnd:], r.End)
	copy(b[offGPU:], r.GPU[:])
	le.PutUint64(b[offAddress:], r.Address)
	le.PutUint64(b[offBytes:], r.Bytes)
	le.PutUint64(b[offValue:], r.Value)
	le.PutUint32(b[offBatch:], r.Batch)
	le.PutUint32(b[offCount:], r.Count)
	le.PutUint16(b[offSrc:], r.Src)
	le.PutUint16(b[offDst:], r.Dst)
	le.PutUint16(b[offSrcNID:], uint16(r.SrcNUMA))
	le.PutUint16(b[offDstNID:], uint16(r.DstNUMA))
	b[offCause] = byte(r.Cause)
	b[offAccess] = byte(r.Access)
	b[offFaultType] = byte(r.FaultType)
	le.PutUint32(b[offTID:], r.TID)
	le.PutUint32(b[offStatus:], uint32(r.Status))
	for i, v := range r.Aux {
		le.PutUint32(b[offAux+4*i:], v)
	}
	return b
}

var testGPU = uvmtools.UUID{0x94, 0x8a, 0xd2, 0x4a, 0xc6, 0x2e, 0x62, 0xf7, 0xd2, 0xbd, 0xad, 0x21, 0x81, 0x9f, 0x9f, 0x3d}

type decodeCase struct {
	name string
	in   []byte
	want Record
	err  string
}

// decodeCases are the decoder's table, one per record type and one per
// way to be rejected; the fuzz seeds are written from them.
func decodeCases() []decodeCase {
	rec := func(r Record) decodeCase { return decodeCase{name: r.Type.String(), in: encode(r), want: r} }
	cases := []decodeCase{
		rec(Record{Type: TypeGPUFault, Flags: FlagDuplicate, PID: 4242, Start: 1_000_000, End: 1_000_000, GPU: testGPU,
			Address: 0x7f3a_0020_0000, Value: 987654321, Batch: 17, Count: 3, Src: 1, SrcNUMA: -1, DstNUMA: -1,
			Access: AccessWrite, FaultType: uvmtools.FaultInvalidPTE}),
		rec(Record{Type: TypeCPUFault, PID: 4242, TID: 4250, Start: 2_000_000, End: 2_000_000, Address: 0x7f3a_0000_1000,
			Value: 0x5555_0000_1234, SrcNUMA: -1, DstNUMA: -1, Access: AccessRead, Aux: [3]uint32{7}}),
		rec(Record{Type: TypeMigration, PID: 4242, Start: 3_000_000, End: 3_000_000, GPU: testGPU, Address: 0x7f3a_0020_0000,
			Bytes: 2 << 20, Src: 0, Dst: 1, SrcNUMA: -1, DstNUMA: -1, Cause: CausePrefetch}),
		rec(Record{Type: TypeMigration, Flags: FlagNoOwner, Start: 3_500_000, End: 3_500_000, Address: 0x1000, Bytes: 4096,
			SrcNUMA: 0, DstNUMA: 1, Cause: CauseAPIMigrate}),
		rec(Record{Type: TypeReplay, Start: 4_000_000, End: 4_000_000, GPU: testGPU, Batch: 17, Src: 1, SrcNUMA: -1, DstNUMA: -1}),
		rec(Record{Type: TypeThrashing, PID: 4242, Start: 5_000_000, End: 5_000_000, Address: 0x7f3a_0000_0000, Bytes: 4096,
			Value: 0b11, SrcNUMA: -1, DstNUMA: -1}),
		rec(Record{Type: TypeThrottling, PID: 4242, Start: 6_000_000, End: 6_000_000, GPU: testGPU, Address: 0x7f3a_0000_0000,
			Src: 1, SrcNUMA: -1, DstNUMA: -1}),
		rec(Record{Type: TypeEviction, PID: 4242, Start: 7_000_000, End: 7_000_000, GPU: testGPU, Address: 0x7f3a_0000_0000,
			Src: 1, Dst: 0, SrcNUMA: -1, DstNUMA: -1}),
		rec(Record{Type: TypePrefetch, PID: 4242, Start: 8_000_000, End: 8_000_000, GPU: testGPU, Address: 0x7f3a_0000_0000,
			Bytes: 96 * 4096, Count: 96, Dst: 1, SrcNUMA: -1, DstNUMA: -1}),
		rec(Record{Type: TypeFaultBatch, Flags: FlagThrottled, Start: 9_000_000, End: 9_150_000, GPU: testGPU, Batch: 17,
			Count: 256, Value: 1, SrcNUMA: -1, DstNUMA: -1, Aux: [3]uint32{200, 56, 3}}),
		rec(Record{Type: TypeFaultService, Start: 10_000_000, End: 10_900_000, GPU: testGPU, Batch: 23, Count: 6,
			SrcNUMA: -1, DstNUMA: -1}),
		rec(Record{Type: TypeRootEviction, Flags: FlagPMA, Start: 11_000_000, End: 11_040_000, GPU: testGPU,
			Address: 0x3_4000_0000, Bytes: 2 << 20, Src: 1, SrcNUMA: -1, DstNUMA: -1, Status: 0x51}),
	}
	// The migration with NUMA nodes needs its own name.
	cases[3].name = "migration_numa"
	short := encode(Record{Type: TypeGPUFault})[:RecordSize-1]
	long := append(encode(Record{Type: TypeGPUFault}), 0)
	wrongKind := encode(Record{Type: TypeGPUFault})
	wrongKind[offKind] = 1
	typeZero := encode(Record{Type: TypeGPUFault})
	typeZero[offType] = 0
	typeUnknown := encode(Record{Type: TypeGPUFault})
	typeUnknown[offType] = 12
	return append(cases,
		decodeCase{name: "reject_short", in: short, err: "uvmfentry: bad record: 103 bytes, want 104"},
		decodeCase{name: "reject_long", in: long, err: "uvmfentry: bad record: 105 bytes, want 104"},
		decodeCase{name: "reject_kind", in: wrongKind, err: "uvmfentry: bad record: kind 1, want 7 (GPUEXT_KIND_UVM)"},
		decodeCase{name: "reject_type_zero", in: typeZero, err: "uvmfentry: bad record: unknown record type 0"},
		decodeCase{name: "reject_type_unknown", in: typeUnknown, err: "uvmfentry: bad record: unknown record type 12"},
	)
}

func TestDecode(t *testing.T) {
	for _, c := range decodeCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode(c.in)
			if c.err != "" {
				require.EqualError(t, err, c.err)
				require.ErrorIs(t, err, ErrBadRecord)
				require.Equal(t, Record{}, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

// TestDecodeBytes pins the wire positions with a record written by hand,
// byte by byte, as the BPF program lays it out (not through encode).
func TestDecodeBytes(t *testing.T) {
	b := make([]byte, RecordSize)
	b[0] = 7                                             // kind
	b[2] = 3                                             // migration
	b[3] = 1                                             // no owner
	copy(b[4:], []byte{0x92, 0x10, 0, 0})                // pid 4242
	copy(b[8:], []byte{0x40, 0x42, 0x0f, 0, 0, 0, 0, 0}) // start 1,000,000
	copy(b[16:], []byte{0x40, 0x42, 0x0f, 0, 0, 0, 0, 0})
	copy(b[24:], testGPU[:])
	copy(b[40:], []byte{0, 0, 0x20, 0, 0x3a, 0x7f, 0, 0}) // address
	copy(b[48:], []byte{0, 0, 0x20, 0, 0, 0, 0, 0})       // 2 MiB
	copy(b[72:], []byte{2, 0, 1, 0})                      // src 2, dst 1
	copy(b[76:], []byte{0xff, 0xff, 0xff, 0xff})          // no NUMA nodes
	b[80] = 5                                             // eviction
	copy(b[88:], []byte{0x51, 0, 0, 0})                   // status
	got, err := Decode(b)
	require.NoError(t, err)
	assert.Equal(t, Record{
		Type: TypeMigration, Flags: FlagNoOwner, PID: 4242, Start: 1_000_000, End: 1_000_000, GPU: testGPU,
		Address: 0x7f3a_0020_0000, Bytes: 2 << 20, Src: 2, Dst: 1, SrcNUMA: -1, DstNUMA: -1, Cause: CauseEviction, Status: 0x51,
	}, got)
	assert.Equal(t, "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d", "GPU-"+got.GPU.String())
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "root_eviction", TypeRootEviction.String())
	assert.Equal(t, "unknown(12)", Type(12).String())
	assert.Equal(t, "api_hint", CauseAPIHint.String())
	assert.Equal(t, "unknown(10)", Cause(10).String())
	assert.Equal(t, "atomic_weak", AccessAtomicWeak.String())
	assert.Equal(t, "unknown(6)", Access(6).String())
}

// TestToolsMapping: causes and accesses map as the driver's tools code maps
// them, so both backends account alike.
func TestToolsMapping(t *testing.T) {
	causes := map[Cause]uvmtools.MigrationCause{
		CauseUnknown:            uvmtools.CauseInvalid,
		CauseReplayableFault:    uvmtools.CauseCoherence,
		CauseNonReplayableFault: uvmtools.CauseCoherence,
		CauseAccessCounter:      uvmtools.CauseAccessCounters,
		CausePrefetch:           uvmtools.CausePrefetch,
		CauseEviction:           uvmtools.CauseEviction,
		CauseAPITools:           uvmtools.CauseInvalid,
		CauseAPIMigrate:         uvmtools.CauseUser,
		CauseAPISetRangeGroup:   uvmtools.CauseCoherence,
		CauseAPIHint:            uvmtools.CauseUser,
		Cause(10):               uvmtools.CauseInvalid,
	}
	for c, want := range causes {
		assert.Equal(t, want, c.ToolsCause(), "%s", c)
	}
	access := map[Access]uvmtools.AccessType{
		AccessUnknown:    uvmtools.AccessInvalid,
		AccessRead:       uvmtools.AccessRead,
		AccessWrite:      uvmtools.AccessWrite,
		AccessAtomic:     uvmtools.AccessAtomic,
		AccessPrefetch:   uvmtools.AccessPrefetch,
		AccessAtomicWeak: uvmtools.AccessAtomic,
		Access(6):        uvmtools.AccessInvalid,
	}
	for a, want := range access {
		assert.Equal(t, want, a.ToolsAccess(), "%s", a)
	}
}

func TestDuration(t *testing.T) {
	assert.Equal(t, uint64(150_000), (&Record{Start: 9_000_000, End: 9_150_000}).Duration())
	assert.Equal(t, uint64(0), (&Record{Start: 9, End: 8}).Duration())
}

// TestLayoutMatchesBTF checks the Go view of the record against the layout
// clang gave it in the compiled object, so gpuext_abi.h stays the one
// definition.
func TestLayoutMatchesBTF(t *testing.T) {
	spec, err := bpf.LoadUvm()
	require.NoError(t, err)
	var st *btf.Struct
	require.NoError(t, spec.Types.TypeByName("gpuext_uvm_event", &st))
	require.Equal(t, uint32(RecordSize), st.Size)
	want := map[string]uint32{
		"kind": offKind, "type": offType, "flags": offFlags, "pid": offPID, "start_ns": offStart, "end_ns": offEnd,
		"gpu": offGPU, "address": offAddress, "bytes": offBytes, "value": offValue, "batch": offBatch, "count": offCount,
		"src": offSrc, "dst": offDst, "src_nid": offSrcNID, "dst_nid": offDstNID, "cause": offCause, "access": offAccess,
		"fault_type": offFaultType, "tid": offTID, "status": offStatus, "aux": offAux,
	}
	got := map[string]uint32{}
	for _, m := range st.Members {
		if !strings.HasPrefix(m.Name, "_") {
			got[m.Name] = m.Offset.Bytes()
		}
	}
	require.Equal(t, want, got)

	var kind *btf.Enum
	require.NoError(t, spec.Types.TypeByName("gpuext_kind", &kind))
	kinds := map[string]uint64{}
	for _, v := range kind.Values {
		kinds[v.Name] = v.Value
	}
	require.Equal(t, uint64(KindUVM), kinds["GPUEXT_KIND_UVM"])
}

// TestEnumsMatchBTF: Go knows every value of the record's enums by the
// same number and name, and no other.
func TestEnumsMatchBTF(t *testing.T) {
	spec, err := bpf.LoadUvm()
	require.NoError(t, err)
	fromC := func(name, prefix string) map[string]uint64 {
		var e *btf.Enum
		require.NoError(t, spec.Types.TypeByName(name, &e))
		m := map[string]uint64{}
		for _, v := range e.Values {
			m[strings.ToLower(strings.TrimPrefix(v.Name, prefix))] = v.Value
		}
		return m
	}
	types := map[string]uint64{}
	for ty := Type(1); ty < numTypes; ty++ {
		types[ty.String()] = uint64(ty)
	}
	assert.Equal(t, fromC("gpuext_uvm_type", "GPUEXT_UVM_"), types)
	causes := map[string]uint64{}
	for c := CauseUnknown; c <= CauseAPIHint; c++ {
		causes[c.String()] = uint64(c)
	}
	assert.Equal(t, fromC("gpuext_uvm_cause", "GPUEXT_UVM_CAUSE_"), causes)
	access := map[string]uint64{}
	for a := AccessUnknown; a <= AccessAtomicWeak; a++ {
		access[a.String()] = uint64(a)
	}
	assert.Equal(t, fromC("gpuext_uvm_access", "GPUEXT_UVM_ACCESS_"), access)
}
