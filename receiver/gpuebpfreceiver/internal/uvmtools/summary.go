package uvmtools

import (
	"fmt"
	"io"
	"sort"
)

// Summary aggregates a stream of events: what the capture tool prints and
// what fixture tests recompute and compare. Map keys are the String forms of
// the enums.
type Summary struct {
	Events       uint64            `json:"events"`
	DecodeErrors uint64            `json:"decode_errors"`
	ByType       map[string]uint64 `json:"by_type"`
	// Migrations and MigratedBytes by direction ("cpu_to_gpu", ...), then by
	// direction and cause ("cpu_to_gpu/coherence").
	Migrations           map[string]uint64 `json:"migrations"`
	MigratedBytes        map[string]uint64 `json:"migrated_bytes"`
	MigratedBytesByCause map[string]uint64 `json:"migrated_bytes_by_cause"`
	GPUFaultsByAccess    map[string]uint64 `json:"gpu_faults_by_access"`
	GPUFaultsByType      map[string]uint64 `json:"gpu_faults_by_fault_type"`
	CPUFaultsByAccess    map[string]uint64 `json:"cpu_faults_by_access"`
	GPUFaultPages        uint64            `json:"gpu_fault_pages"` // distinct 4 KiB pages
	CPUFaultPages        uint64            `json:"cpu_fault_pages"`
	GPUFaultBatches      uint64            `json:"gpu_fault_batches"` // distinct (GPU, batch)
	MapRemoteBytes       map[string]uint64 `json:"map_remote_bytes"`  // by cause
	ThrashingBytes       uint64            `json:"thrashing_bytes"`
	ReadDuplicatedBytes  uint64            `json:"read_duplicated_bytes"`
	Processors           []string          `json:"processors"`    // indices seen, sorted
	FirstTimeNS          uint64            `json:"first_time_ns"` // driver CPU clock (CLOCK_MONOTONIC_RAW)
	LastTimeNS           uint64            `json:"last_time_ns"`
}

// SummaryPage is the page granularity of the distinct-page counts.
const SummaryPage = 4096

// Summarizer accumulates a Summary. The zero value is ready to use.
type Summarizer struct {
	s        Summary
	gpuPages map[uint64]struct{}
	cpuPages map[uint64]struct{}
	batches  map[uint64]struct{}
	procs    map[Processor]struct{}
}

func inc(m *map[string]uint64, k string, v uint64) {
	if *m == nil {
		*m = map[string]uint64{}
	}
	(*m)[k] += v
}

func addSet[K comparable](m *map[K]struct{}, k K) {
	if *m == nil {
		*m = map[K]struct{}{}
	}
	(*m)[k] = struct{}{}
}

// Add counts one event.
func (z *Summarizer) Add(e Event) {
	s := &z.s
	s.Events++
	inc(&s.ByType, e.Type.String(), 1)
	if e.Time != 0 {
		if s.FirstTimeNS == 0 || e.Time < s.FirstTimeNS {
			s.FirstTimeNS = e.Time
		}
		if e.Time > s.LastTimeNS {
			s.LastTimeNS = e.Time
		}
	}
	switch e.Type {
	case EventMigration:
		d := e.Direction().String()
		inc(&s.Migrations, d, 1)
		inc(&s.MigratedBytes, d, e.Size)
		inc(&s.MigratedBytesByCause, d+"/"+e.Cause.String(), e.Size)
		addSet(&z.procs, e.Src)
		addSet(&z.procs, e.Dst)
	case EventGPUFault:
		inc(&s.GPUFaultsByAccess, e.Access.String(), 1)
		inc(&s.GPUFaultsByType, e.FaultType.String(), 1)
		addSet(&z.gpuPages, e.Address/SummaryPage)
		addSet(&z.batches, uint64(e.Processor)<<32|uint64(e.Batch))
		addSet(&z.procs, e.Processor)
	case EventCPUFault:
		inc(&s.CPUFaultsByAccess, e.Access.String(), 1)
		addSet(&z.cpuPages, e.Address/SummaryPage)
		addSet(&z.procs, CPU)
	case EventMapRemote:
		inc(&s.MapRemoteBytes, e.MapCause.String(), e.Size)
	case EventThrashingDetected:
		s.ThrashingBytes += e.Size
	case EventReadDuplicate:
		s.ReadDuplicatedBytes += e.Size
	}
}

// AddError counts an entry that did not decode.
func (z *Summarizer) AddError() { z.s.DecodeErrors++ }

// Summary returns the totals so far.
func (z *Summarizer) Summary() Summary {
	s := z.s
	s.GPUFaultPages = uint64(len(z.gpuPages))
	s.CPUFaultPages = uint64(len(z.cpuPages))
	s.GPUFaultBatches = uint64(len(z.batches))
	procs := make([]int, 0, len(z.procs))
	for p := range z.procs {
		procs = append(procs, int(p))
	}
	sort.Ints(procs)
	s.Processors = nil
	for _, p := range procs {
		s.Processors = append(s.Processors, Processor(p).String())
	}
	return s
}

// Fprint writes the summary for a person to read.
func (s Summary) Fprint(w io.Writer) {
	fmt.Fprintf(w, "events: %d (decode errors %d), processors %v\n", s.Events, s.DecodeErrors, s.Processors)
	if s.LastTimeNS > s.FirstTimeNS {
		fmt.Fprintf(w, "span: %.3f ms of driver CPU time\n", float64(s.LastTimeNS-s.FirstTimeNS)/1e6)
	}
	printMap(w, "by type", s.ByType, "")
	printMap(w, "migrations by direction", s.Migrations, "")
	printMap(w, "bytes migrated by direction", s.MigratedBytes, "B")
	printMap(w, "bytes migrated by direction/cause", s.MigratedBytesByCause, "B")
	printMap(w, "GPU faults by access", s.GPUFaultsByAccess, "")
	printMap(w, "GPU faults by fault type", s.GPUFaultsByType, "")
	printMap(w, "CPU faults by access", s.CPUFaultsByAccess, "")
	fmt.Fprintf(w, "distinct 4 KiB pages faulted: GPU %d, CPU %d; GPU fault batches %d\n",
		s.GPUFaultPages, s.CPUFaultPages, s.GPUFaultBatches)
	printMap(w, "bytes mapped remotely by cause", s.MapRemoteBytes, "B")
	if s.ThrashingBytes+s.ReadDuplicatedBytes > 0 {
		fmt.Fprintf(w, "thrashing bytes %d, read-duplicated bytes %d\n", s.ThrashingBytes, s.ReadDuplicatedBytes)
	}
}

func printMap(w io.Writer, title string, m map[string]uint64, unit string) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "%s:\n", title)
	for _, k := range keys {
		if unit == "B" {
			fmt.Fprintf(w, "  %-40s %14d B (%.1f MiB)\n", k, m[k], float64(m[k])/(1<<20))
		} else {
			fmt.Fprintf(w, "  %-40s %14d\n", k, m[k])
		}
	}
}
