package uvmtools

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSummarizer(t *testing.T) {
	var z Summarizer
	for _, e := range []Event{
		{Type: EventGPUFault, Processor: 1, Access: AccessRead, FaultType: FaultInvalidPTE, Address: 0x1000, Batch: 1, Time: 100},
		{Type: EventGPUFault, Processor: 1, Access: AccessRead, FaultType: FaultInvalidPTE, Address: 0x1008, Batch: 1, Time: 101},
		{Type: EventGPUFault, Processor: 1, Access: AccessWrite, FaultType: FaultWrite, Address: 0x2000, Batch: 2, Time: 102},
		{Type: EventMigration, Src: CPU, Dst: 1, Cause: CauseCoherence, Size: 4096, Time: 103},
		{Type: EventMigration, Src: CPU, Dst: 1, Cause: CausePrefetch, Size: 61440, Time: 104},
		{Type: EventMigration, Src: 1, Dst: CPU, Cause: CauseCoherence, Size: 65536, Time: 90},
		{Type: EventCPUFault, Access: AccessWrite, Address: 0x1000, Time: 110},
		{Type: EventMapRemote, MapCause: 3, Size: 8192},
		{Type: EventThrashingDetected, Size: 4096},
		{Type: EventReadDuplicate, Size: 4096},
		{Type: EventGPUFaultReplay, Processor: 1, Batch: 1},
	} {
		z.Add(e)
	}
	z.AddError()
	s := z.Summary()
	assert.Equal(t, Summary{
		Events:       11,
		DecodeErrors: 1,
		ByType: map[string]uint64{"gpu_fault": 3, "migration": 3, "cpu_fault": 1, "map_remote": 1,
			"thrashing_detected": 1, "read_duplicate": 1, "gpu_fault_replay": 1},
		Migrations:           map[string]uint64{"cpu_to_gpu": 2, "gpu_to_cpu": 1},
		MigratedBytes:        map[string]uint64{"cpu_to_gpu": 65536, "gpu_to_cpu": 65536},
		MigratedBytesByCause: map[string]uint64{"cpu_to_gpu/coherence": 4096, "cpu_to_gpu/prefetch": 61440, "gpu_to_cpu/coherence": 65536},
		GPUFaultsByAccess:    map[string]uint64{"read": 2, "write": 1},
		GPUFaultsByType:      map[string]uint64{"invalid_pte": 2, "write": 1},
		CPUFaultsByAccess:    map[string]uint64{"write": 1},
		GPUFaultPages:        2,
		CPUFaultPages:        1,
		GPUFaultBatches:      2,
		MapRemoteBytes:       map[string]uint64{"policy": 8192},
		ThrashingBytes:       4096,
		ReadDuplicatedBytes:  4096,
		Processors:           []string{"cpu", "gpu1"},
		FirstTimeNS:          90,
		LastTimeNS:           110,
	}, s)

	var buf bytes.Buffer
	s.Fprint(&buf)
	assert.Contains(t, buf.String(), "cpu_to_gpu/prefetch")
	assert.Contains(t, buf.String(), "distinct 4 KiB pages faulted: GPU 2, CPU 1")
}
