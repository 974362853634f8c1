package uvmtools

import (
	"encoding/hex"
	"fmt"
)

// UUID is an NvProcessorUuid: 16 bytes, printed 8-4-4-4-12 in byte order
// as the driver (uvm_uuid_string) and NVML do.
type UUID [uuidLen]byte

func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// IsZero reports whether no processor has this index.
func (u UUID) IsZero() bool { return u == UUID{} }

// CPUUUID is NV_PROCESSOR_UUID_CPU_DEFAULT (nvCpuUuid.c), the UUID the driver
// gives the CPU at index 0: 73772a14-2c41-4750-a27b-d4d74e0f5ea6, stored
// byte-reversed.
var CPUUUID = UUID{0xa6, 0x5e, 0x0f, 0x4e, 0xd7, 0xd4, 0x7b, 0xa2, 0x50, 0x47, 0x41, 0x2c, 0x14, 0x2a, 0x77, 0x73}

// ProcessorInfo describes one processor index of a process.
type ProcessorInfo struct {
	Index Processor
	// UUID is what the driver reports at this index: the GPU's UUID, or
	// with V2 under MIG, the GPU instance's (UVM's "GI-" UUID).
	UUID UUID
	// Parent is the physical GPU's UUID (equal to UUID unless MIG).
	Parent UUID
	// MIG is set when UUID names a GPU instance rather than the GPU.
	MIG bool
}

// HWID is the hw.id of the physical GPU, "GPU-<uuid>" (joins with NVML and
// DCGM series); "" for the CPU.
func (p ProcessorInfo) HWID() string {
	if p.Index == CPU {
		return ""
	}
	return "GPU-" + p.Parent.String()
}

// ProcessorTable maps the processor indices of one process's events to
// processors. It lists the GPUs registered in the process's UVM VA space
// when it was read: a GPU registers when the process creates its first
// context on it, so read it again on meeting an unknown index.
type ProcessorTable struct {
	Version Version
	byIndex map[Processor]ProcessorInfo
}

// Lookup returns the processor at index p.
func (t ProcessorTable) Lookup(p Processor) (ProcessorInfo, bool) {
	i, ok := t.byIndex[p]
	return i, ok
}

// HWID returns the hw.id of processor p's GPU ("" for the CPU or an unknown
// index).
func (t ProcessorTable) HWID(p Processor) string {
	if i, ok := t.byIndex[p]; ok {
		return i.HWID()
	}
	return ""
}

// GPUs lists the GPU entries, by index.
func (t ProcessorTable) GPUs() []ProcessorInfo {
	var out []ProcessorInfo
	for i := Processor(1); int(i) < maxProcessorsV2; i++ {
		if p, ok := t.byIndex[i]; ok {
			out = append(out, p)
		}
	}
	return out
}

// Len is the number of processors, the CPU included.
func (t ProcessorTable) Len() int { return len(t.byIndex) }

// parseUUIDTables builds a table from the raw output of
// UVM_TOOLS_GET_PROCESSOR_UUID_TABLE(_V2). v1 is the V1 table (33 entries,
// parent GPU UUIDs by parent id); v2, when the tracker is V2, the V2 table
// (257 entries, by V2 id = parent_index*8 + sub_index + 1). Either may be
// nil when that ioctl failed; a nil v2 gives a V1 table.
func parseUUIDTables(v1, v2 []byte) (ProcessorTable, error) {
	if v1 != nil && len(v1) != uuidTableSizeV1 {
		return ProcessorTable{}, fmt.Errorf("uvmtools: V1 processor table is %d bytes, want %d", len(v1), uuidTableSizeV1)
	}
	if v2 != nil && len(v2) != uuidTableSizeV2 {
		return ProcessorTable{}, fmt.Errorf("uvmtools: V2 processor table is %d bytes, want %d", len(v2), uuidTableSizeV2)
	}
	at := func(tab []byte, i int) (u UUID) {
		if tab != nil && (i+1)*uuidLen <= len(tab) {
			copy(u[:], tab[i*uuidLen:])
		}
		return u
	}
	t := ProcessorTable{byIndex: map[Processor]ProcessorInfo{}}
	if v2 == nil {
		t.Version = V1
		for i := 0; i < maxProcessorsV1; i++ {
			u := at(v1, i)
			if !u.IsZero() {
				t.byIndex[Processor(i)] = ProcessorInfo{Index: Processor(i), UUID: u, Parent: u}
			}
		}
		return t, nil
	}
	t.Version = V2
	for i := 0; i < maxProcessorsV2; i++ {
		u := at(v2, i)
		if u.IsZero() {
			continue
		}
		info := ProcessorInfo{Index: Processor(i), UUID: u, Parent: u}
		if i != int(CPU) && v1 != nil {
			// V2 GPU id i belongs to parent id (i-1)/8 + 1 of the V1 table.
			if parent := at(v1, (i-1)/maxSubProcessors+1); !parent.IsZero() && parent != u {
				info.Parent, info.MIG = parent, true
			}
		}
		t.byIndex[Processor(i)] = info
	}
	return t, nil
}
