package uvmtools

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// managedRun is the JSON line bench/device/uvm/managed.cu prints.
type managedRun struct {
	Program     string `json:"program"`
	PID         int    `json:"pid"`
	GPUName     string `json:"gpu_name"`
	GPUUUID     string `json:"gpu_uuid"` // GPU-...
	FreeBytes   uint64 `json:"free_bytes"`
	Bytes       uint64 `json:"bytes"`
	PageSize    uint64 `json:"page_size"`
	Pages       uint64 `json:"pages"`
	Base        uint64 `json:"base"`
	Seed        uint64 `json:"seed"`
	RandomPages uint64 `json:"random_pages"`
	Clock       string `json:"clock"`
	Verified    bool   `json:"verified"`
	Phases      []struct {
		Name    string `json:"name"`
		Proc    string `json:"proc"` // "cpu" or "gpu"
		Pages   uint64 `json:"pages"`
		Stride  uint64 `json:"stride"`
		StartNS uint64 `json:"start_ns"`
		EndNS   uint64 `json:"end_ns"`
	} `json:"phases"`
}

// fixtureFiles lists the recorded fixtures: $UVMTOOLS_FIXTURES, else
// testdata/fixtures.
func fixtureFiles(t *testing.T) []string {
	dir := os.Getenv("UVMTOOLS_FIXTURES")
	if dir == "" {
		dir = filepath.Join("testdata", "fixtures")
	}
	var files []string
	for _, pat := range []string{"*.bin", "*.bin.gz"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		require.NoError(t, err)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skipf("no fixtures in %s yet (record them with bench/device/uvm.sh on a GPU machine)", dir)
	}
	sort.Strings(files)
	return files
}

// TestFixtures decodes every recorded capture and checks it against what the
// capture tool summarized and what the traced program says it did.
func TestFixtures(t *testing.T) {
	for _, path := range fixtureFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			meta, raw, err := LoadFixture(path)
			require.NoError(t, err)
			n := len(raw) / meta.EntrySize
			assert.Equal(t, meta.Entries, uint64(n), "entries in the .bin and in the .json")
			assert.Equal(t, meta.ABIVersion, int(map[int]Version{EntrySizeV1: V1, EntrySizeV2: V2}[meta.EntrySize]))

			var z Summarizer
			events := make([]Event, 0, n)
			for i := 0; i < n; i++ {
				e, err := Decode(raw[i*meta.EntrySize : (i+1)*meta.EntrySize])
				if !assert.NoError(t, err, "entry %d", i) {
					z.AddError()
					continue
				}
				z.Add(e)
				events = append(events, e)
			}
			s := z.Summary()
			assert.Equal(t, meta.Summary, s, "the summary the capture tool wrote")
			t.Logf("%s: %d entries, dropped %d, driver %q", filepath.Base(path), n, meta.Dropped, meta.Driver)

			var run managedRun
			if len(meta.Program) == 0 || json.Unmarshal(meta.Program, &run) != nil || run.Program != "managed" {
				t.Logf("no managed.cu report: only decoding checked")
				return
			}
			checkManagedRun(t, meta, run, events, s)
		})
	}
}

func checkManagedRun(t *testing.T, meta FixtureMeta, run managedRun, events []Event, s Summary) {
	require.True(t, run.Verified, "the program's own check of its buffer failed")
	require.NotZero(t, run.Bytes)
	t.Logf("program: %d bytes (%d pages) at %#x on %s %s, free %d", run.Bytes, run.Pages, run.Base, run.GPUName, run.GPUUUID, run.FreeBytes)

	// The processor table names the program's GPU.
	var hwids []string
	for _, p := range meta.Processors {
		if p.HWID != "" {
			hwids = append(hwids, p.HWID)
		}
	}
	assert.Contains(t, hwids, run.GPUUUID, "processor table %v", meta.Processors)

	assert.NotZero(t, s.ByType["gpu_fault"], "GPU faults")
	assert.NotZero(t, s.ByType["cpu_fault"], "CPU faults")
	assert.NotZero(t, s.ByType["migration"], "migrations")

	inBuf := func(a uint64) bool { return a >= run.Base && a < run.Base+run.Bytes }
	var gpuIn, gpuAll, cpuIn, cpuAll int
	for _, e := range events {
		switch e.Type {
		case EventGPUFault:
			gpuAll++
			if inBuf(e.Address) {
				gpuIn++
			}
		case EventCPUFault:
			cpuAll++
			if inBuf(e.Address) {
				cpuIn++
			}
		}
	}
	t.Logf("faults inside the buffer: GPU %d of %d, CPU %d of %d", gpuIn, gpuAll, cpuIn, cpuAll)
	assert.GreaterOrEqual(t, float64(gpuIn), 0.95*float64(gpuAll), "GPU faults should be on the managed buffer")
	assert.LessOrEqual(t, s.GPUFaultPages, run.Pages+uint64(gpuAll-gpuIn), "distinct GPU-faulted pages")

	// The clock: the driver's CPU timestamps are CLOCK_MONOTONIC_RAW, as are
	// the program's phase times. Faults must fall into their phases.
	// A timestamp belongs to the phase that contains it; one just outside
	// every phase (the driver stamps some events after the program's clock
	// read) to the nearest phase within slack. Phases of a small buffer last
	// a few milliseconds, so slack must not decide ahead of containment.
	const slack = 5_000_000 // 5 ms
	phaseOf := func(ts uint64) (string, string) {
		best, bestDist := -1, uint64(slack)+1
		for i, p := range run.Phases {
			var d uint64
			switch {
			case ts < p.StartNS:
				d = p.StartNS - ts
			case ts > p.EndNS:
				d = ts - p.EndNS
			}
			if d < bestDist {
				best, bestDist = i, d
			}
		}
		if best < 0 {
			return "outside", ""
		}
		return run.Phases[best].Name, run.Phases[best].Proc
	}
	perPhase := map[string]map[string]int{}
	var gpuInPhase, cpuInPhase int
	for _, e := range events {
		name, proc := phaseOf(e.Time)
		if perPhase[name] == nil {
			perPhase[name] = map[string]int{}
		}
		perPhase[name][e.Type.String()]++
		if e.Type == EventGPUFault && proc == "gpu" {
			gpuInPhase++
		}
		if e.Type == EventCPUFault && proc == "cpu" {
			cpuInPhase++
		}
	}
	names := make([]string, 0, len(perPhase))
	for n := range perPhase {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var parts []string
		for k, v := range perPhase[n] {
			parts = append(parts, k+"="+itoa(v))
		}
		sort.Strings(parts)
		t.Logf("phase %-12s %s", n, strings.Join(parts, " "))
	}
	assert.GreaterOrEqual(t, float64(gpuInPhase), 0.9*float64(gpuAll), "GPU faults timed inside GPU phases (clock check)")
	assert.GreaterOrEqual(t, float64(cpuInPhase), 0.9*float64(cpuAll), "CPU faults timed inside CPU phases (clock check)")

	if meta.Dropped != 0 {
		t.Logf("the driver dropped %d events: byte totals not checked", meta.Dropped)
		return
	}
	// Each GPU pass after a CPU pass must bring the touched pages over; the
	// first brings all of them, and the CPU pass after it all of them back.
	assert.GreaterOrEqual(t, s.MigratedBytes["cpu_to_gpu"], run.Bytes, "bytes migrated to the GPU")
	assert.GreaterOrEqual(t, s.MigratedBytes["gpu_to_cpu"], run.Bytes, "bytes migrated back")
	if c := meta.Counters; c != nil {
		t.Logf("counters: %+v", *c)
		assert.Equal(t, c.BytesHtD, s.MigratedBytes["cpu_to_gpu"], "HtD counter against migration events")
		assert.Equal(t, c.BytesDtH, s.MigratedBytes["gpu_to_cpu"], "DtH counter against migration events")
		assert.Equal(t, c.CPUPageFaults, s.ByType["cpu_fault"], "CPU fault counter against events")
		assert.LessOrEqual(t, c.GPUPageFaults, s.ByType["gpu_fault"], "GPU fault counter (one per serviced fault; events include merged duplicates)")
	}
}

func itoa(v int) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestLoadFixture round-trips a small fixture through the loader, .gz too.
func TestLoadFixture(t *testing.T) {
	dir := t.TempDir()
	var raw []byte
	var z Summarizer
	for _, c := range decodeCases() {
		if c.want.Version == V2 {
			raw = append(raw, c.in...)
			z.Add(c.want)
		}
	}
	meta := FixtureMeta{Format: FixtureFormat, EntrySize: EntrySizeV2, ABIVersion: 2, Entries: uint64(len(raw) / EntrySizeV2), Summary: z.Summary()}
	mb, err := json.Marshal(meta)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.json"), mb, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.bin"), raw, 0o644))
	got, gotRaw, err := LoadFixture(filepath.Join(dir, "x.bin"))
	require.NoError(t, err)
	assert.Equal(t, raw, gotRaw)
	assert.Equal(t, meta.Entries, got.Entries)

	t.Setenv("UVMTOOLS_FIXTURES", dir)
	TestFixtures(t)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.bin"), raw[:100], 0o644))
	_, _, err = LoadFixture(filepath.Join(dir, "x.bin"))
	assert.ErrorContains(t, err, "not a whole number")
}

// TestFixtureChecksSynthetic runs the managed.cu checks on a made-up
// capture of a 4-page buffer, so that their logic is exercised here.
func TestFixtureChecksSynthetic(t *testing.T) {
	const base, pages = 0x7f00_0000_0000, 4
	size := uint64(pages * 4096)
	prog := fmt.Sprintf(`{"program":"managed","pid":7,"gpu_name":"H100","gpu_uuid":"GPU-%s","bytes":%d,"page_size":4096,"pages":%d,"base":%d,`+
		`"verified":true,"clock":"CLOCK_MONOTONIC_RAW","phases":[`+
		`{"name":"cpu_init","proc":"cpu","pages":4,"start_ns":1000000000,"end_ns":1001000000},`+
		`{"name":"gpu_seq","proc":"gpu","pages":4,"start_ns":1100000000,"end_ns":1200000000},`+
		`{"name":"cpu_verify","proc":"cpu","pages":4,"start_ns":1300000000,"end_ns":1400000000}]}`,
		gpuA, size, pages, base)
	var raw []byte
	var z Summarizer
	add := func(b eb) {
		e, err := Decode(b)
		require.NoError(t, err)
		z.Add(e)
		raw = append(raw, b...)
	}
	for i := uint64(0); i < pages; i++ {
		add(entry(72, EventCPUFault).u8(1, 2).u64(8, base+i*4096).u64(16, 1000500000))
	}
	for i := uint64(0); i < pages; i++ {
		add(entry(72, EventGPUFault).u8(1, 2).u16(2, 1).u64(8, base+i*4096+8).u64(16, 1150000000).u32(32, 1).u8(37, 1))
	}
	add(entry(72, EventMigration).u8(1, 2).u16(4, 0).u16(6, 1).u64(16, base).u64(24, size).u64(32, 1150000000))
	for i := uint64(0); i < pages; i++ {
		add(entry(72, EventCPUFault).u8(1, 1).u64(8, base+i*4096).u64(16, 1350000000))
	}
	add(entry(72, EventMigration).u8(1, 2).u16(4, 1).u16(6, 0).u64(16, base).u64(24, size).u64(32, 1350000000))

	meta := FixtureMeta{
		Format: FixtureFormat, EntrySize: EntrySizeV2, ABIVersion: 2, Entries: uint64(len(raw) / EntrySizeV2),
		Processors: []FixtureProcessor{{Index: 0, UUID: CPUUUID.String()}, {Index: 1, UUID: gpuA.String(), HWID: "GPU-" + gpuA.String()}},
		Counters:   &Counters{BytesHtD: size, BytesDtH: size, CPUPageFaults: 2 * pages, GPUPageFaults: pages},
		Program:    json.RawMessage(prog),
		Summary:    z.Summary(),
	}
	dir := t.TempDir()
	mb, err := json.Marshal(meta)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m.json"), mb, 0o644))
	var gzbuf bytes.Buffer
	zw := gzip.NewWriter(&gzbuf)
	_, err = zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "m.bin.gz"), gzbuf.Bytes(), 0o644))
	t.Setenv("UVMTOOLS_FIXTURES", dir)
	TestFixtures(t)
}
