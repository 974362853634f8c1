package uvm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

const fixtureGlob = "../uvmtools/testdata/fixtures/managed-*.bin.gz"

// fixture is a decoded recording of bench/device/uvm/managed.cu.
type fixture struct {
	name   string
	meta   uvmtools.FixtureMeta
	events []uvmtools.Event
	phases []phase
}

type phase struct {
	Name    string `json:"name"`
	StartNS uint64 `json:"start_ns"`
	EndNS   uint64 `json:"end_ns"`
}

func loadFixtures(t testing.TB) []fixture {
	paths, _ := filepath.Glob(fixtureGlob)
	if len(paths) == 0 {
		t.Skip("no recorded fixture")
	}
	var out []fixture
	for _, path := range paths {
		meta, raw, err := uvmtools.LoadFixture(path)
		require.NoError(t, err)
		f := fixture{name: filepath.Base(path), meta: meta}
		for off := 0; off+meta.EntrySize <= len(raw); off += meta.EntrySize {
			e, err := uvmtools.Decode(raw[off : off+meta.EntrySize])
			require.NoError(t, err)
			f.events = append(f.events, e)
		}
		var prog struct {
			Phases []phase `json:"phases"`
		}
		require.NoError(t, json.Unmarshal(meta.Program, &prog))
		f.phases = prog.Phases
		out = append(out, f)
	}
	return out
}

func (f fixture) gpuHWID() string {
	for _, p := range f.meta.Processors {
		if p.HWID != "" {
			return p.HWID
		}
	}
	return ""
}

// TestFixtureMetricsEqualSummary replays each recorded capture through
// Consume and checks every counter against the uvmtools Summarizer of the
// same events, and the driver's own counters.
func TestFixtureMetricsEqualSummary(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			var z uvmtools.Summarizer
			for _, e := range f.events {
				z.Add(e)
			}
			sum := z.Summary()
			table := tableOf(t, f.meta.Processors)
			hwid := f.gpuHWID()
			require.NotEmpty(t, hwid)

			s := newTestSource(t, NewDefaultConfig())
			defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
			pid := f.meta.PID
			for _, e := range f.events {
				s.Consume(pid, table, e)
			}
			md, err := s.Scrape(context.Background())
			require.NoError(t, err)

			// Faults: GPU faults on the GPU's resource by access and by
			// type, CPU faults on the process's GPU-less resource.
			gpuByAccess := sumBy(md, "gpu.uvm.faults", func(p point) string {
				if attr(p, "gpu.uvm.processor") != "gpu" {
					return "-"
				}
				require.Equal(t, hwid, p.hwid)
				return attr(p, "gpu.uvm.access.type")
			})
			delete(gpuByAccess, "-")
			assert.Equal(t, sum.GPUFaultsByAccess, gpuByAccess)
			gpuByType := sumBy(md, "gpu.uvm.faults", func(p point) string { return attr(p, "gpu.uvm.fault.type") })
			delete(gpuByType, "")
			assert.Equal(t, sum.GPUFaultsByType, gpuByType)
			cpuByAccess := sumBy(md, "gpu.uvm.faults", func(p point) string {
				if attr(p, "gpu.uvm.processor") != "cpu" {
					return "-"
				}
				require.Empty(t, p.hwid, "CPU faults carry no hw.id")
				require.NotContains(t, p.attrs, "gpu.uvm.fault.type")
				return attr(p, "gpu.uvm.access.type")
			})
			delete(cpuByAccess, "-")
			assert.Equal(t, sum.CPUFaultsByAccess, cpuByAccess)

			// Migrations by direction and cause, on the GPU's resource.
			dirName := map[string]string{"htod": "cpu_to_gpu", "dtoh": "gpu_to_cpu", "dtod": "gpu_to_gpu", "htoh": "cpu_to_cpu"}
			causeName := map[string]string{"fault": "coherence", "prefetch": "prefetch", "eviction": "eviction", "explicit": "user"}
			bytesByDir := sumBy(md, "gpu.uvm.migrated", func(p point) string {
				require.Equal(t, hwid, p.hwid)
				return dirName[attr(p, "gpu.uvm.migration.direction")]
			})
			assert.Equal(t, sum.MigratedBytes, bytesByDir)
			byCause := sumBy(md, "gpu.uvm.migrated", func(p point) string {
				return dirName[attr(p, "gpu.uvm.migration.direction")] + "/" + causeName[attr(p, "gpu.uvm.migration.cause")]
			})
			assert.Equal(t, sum.MigratedBytesByCause, byCause)
			countByDir := sumBy(md, "gpu.uvm.migrations", func(p point) string { return dirName[attr(p, "gpu.uvm.migration.direction")] })
			assert.Equal(t, sum.Migrations, countByDir)
			prefetch := sumBy(md, "gpu.uvm.prefetch", func(p point) string { return dirName[attr(p, "gpu.uvm.migration.direction")] + "/prefetch" })
			for k, v := range prefetch {
				assert.Equal(t, sum.MigratedBytesByCause[k], v, k)
			}

			// The driver's counters agree with the events.
			require.NotNil(t, f.meta.Counters)
			assert.Equal(t, f.meta.Counters.BytesHtD, bytesByDir["cpu_to_gpu"])
			assert.Equal(t, f.meta.Counters.BytesDtH, bytesByDir["gpu_to_cpu"])
			// The driver counts a GPU fault once when it services it; the
			// events also report merged duplicates (2 of 5447 in the 64 MiB
			// capture), as uvmtools' TestFixtures notes.
			assert.LessOrEqual(t, f.meta.Counters.GPUPageFaults, sumMap(gpuByAccess))
			assert.Equal(t, sum.ByType["gpu_fault"], sumMap(gpuByAccess))
			assert.Equal(t, f.meta.Counters.CPUPageFaults, sumMap(cpuByAccess))

			// Replays: one per batch, all of this process.
			replays := sumBy(md, "gpu.uvm.fault.replays", func(p point) string { return p.hwid })
			assert.Equal(t, map[string]uint64{hwid: sum.ByType["gpu_fault_replay"]}, replays)
			assert.Equal(t, sum.GPUFaultBatches, sum.ByType["gpu_fault_replay"])

			// Batch histograms: every batch closed by its replay.
			wantDur, wantMin, wantMax := batchDurations(f.events)
			size := histogramOf(t, md, "gpu.uvm.fault.batch.size", hwid)
			assert.Equal(t, sum.GPUFaultBatches, size.Count())
			assert.Equal(t, float64(sum.ByType["gpu_fault"]), size.Sum())
			dur := histogramOf(t, md, "gpu.uvm.fault.batch.duration", hwid)
			assert.Equal(t, sum.GPUFaultBatches, dur.Count())
			assert.InDelta(t, wantDur, dur.Sum(), 1e-9)
			assert.InDelta(t, wantMin, dur.Min(), 1e-12)
			assert.InDelta(t, wantMax, dur.Max(), 1e-12)
			t.Logf("%d batches, %.0f faults, service time %.1f µs mean (%.1f .. %.1f)",
				dur.Count(), size.Sum(), dur.Sum()/float64(dur.Count())*1e6, dur.Min()*1e6, dur.Max()*1e6)

			// Nothing dropped in this capture; no thrashing.
			assert.Empty(t, points(md, "gpu.uvm.events.dropped"))
			assert.Empty(t, points(md, "gpu.uvm.thrashing"))

			// A pattern for the GPU (the last window is the random phase).
			pat := points(md, "gpu.uvm.fault.pattern")
			require.Len(t, pat, 1)
			assert.Equal(t, hwid, pat[0].hwid)
			r, ok := s.Pattern(pid)
			require.True(t, ok)
			assert.Equal(t, r.Pattern.String(), attr(pat[0], "gpu.uvm.pattern"))
			assert.Equal(t, r.Confidence, pat[0].value)
		})
	}
}

func sumMap(m map[string]uint64) (n uint64) {
	for _, v := range m {
		n += v
	}
	return n
}

// batchDurations computes, independently of the Source, the service time
// of every batch: its replay's CPU time minus its earliest fault's.
func batchDurations(evs []uvmtools.Event) (sum, lo, hi float64) {
	first := map[uint32]uint64{}
	lo = 1e9
	for _, e := range evs {
		switch e.Type {
		case uvmtools.EventGPUFault:
			if t, ok := first[e.Batch]; !ok || e.Time < t {
				first[e.Batch] = e.Time
			}
		case uvmtools.EventGPUFaultReplay:
			d := float64(e.Time-first[e.Batch]) / 1e9
			sum += d
			lo, hi = min(lo, d), max(hi, d)
		}
	}
	return sum, lo, hi
}

// TestFixturePatternPerPhase feeds each GPU phase of the captures to a
// fresh Source and expects the pattern gauge to name what the program did.
func TestFixturePatternPerPhase(t *testing.T) {
	want := map[string]struct {
		pattern string
		stride  int64
	}{
		"gpu_seq":    {"sequential", 0},
		"gpu_stride": {"strided", 65536},
		"gpu_random": {"random", 0},
	}
	for _, f := range loadFixtures(t) {
		table := tableOf(t, f.meta.Processors)
		for _, ph := range f.phases {
			w, ok := want[ph.Name]
			if !ok {
				continue
			}
			t.Run(f.name+"/"+ph.Name, func(t *testing.T) {
				s := newTestSource(t, NewDefaultConfig())
				defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
				for _, e := range f.events {
					if e.Time >= ph.StartNS && e.Time <= ph.EndNS {
						s.Consume(f.meta.PID, table, e)
					}
				}
				md, err := s.Scrape(context.Background())
				require.NoError(t, err)
				pat := points(md, "gpu.uvm.fault.pattern")
				require.Len(t, pat, 1)
				assert.Equal(t, f.gpuHWID(), pat[0].hwid)
				assert.Equal(t, w.pattern, attr(pat[0], "gpu.uvm.pattern"))
				assert.Greater(t, pat[0].value, 0.5)
				stride := points(md, "gpu.uvm.fault.stride")
				if w.stride != 0 {
					require.Len(t, stride, 1)
					assert.Equal(t, float64(w.stride), stride[0].value)
				} else {
					assert.Empty(t, stride)
				}
				r, ok := s.Pattern(f.meta.PID)
				require.True(t, ok)
				assert.Equal(t, w.pattern, r.Pattern.String())
				if w.pattern == "strided" {
					assert.Equal(t, faultpattern.Strided, r.Pattern)
				}
				t.Logf("%s: %s confidence %.2f stride %d", ph.Name, r.Pattern, r.Confidence, r.Stride)
			})
		}
	}
}
