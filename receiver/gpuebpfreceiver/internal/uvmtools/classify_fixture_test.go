package uvmtools

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
)

// TestClassifierNamesRecordedPatterns feeds the GPU faults of each GPU phase
// of a real capture (managed.cu on an H200: a sequential pass, a 64 KiB
// stride, random pages) to the fault-pattern classifier, in the GPU's own
// timestamp order, and expects it to name the pattern the program used.
func TestClassifierNamesRecordedPatterns(t *testing.T) {
	paths, _ := filepath.Glob("testdata/fixtures/managed-*.bin.gz")
	if len(paths) == 0 {
		t.Skip("no recorded fixture")
	}
	want := map[string]struct {
		pattern faultpattern.Pattern
		stride  int64
	}{
		"gpu_seq":    {faultpattern.Sequential, 4096},
		"gpu_stride": {faultpattern.Strided, 65536},
		"gpu_random": {faultpattern.Random, 0},
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			meta, raw, err := LoadFixture(path)
			require.NoError(t, err)
			var run managedRun
			require.NoError(t, json.Unmarshal(meta.Program, &run))
			for _, ph := range run.Phases {
				w, ok := want[ph.Name]
				if !ok {
					continue
				}
				c := faultpattern.New(faultpattern.Options{})
				n := 0
				for off := 0; off+meta.EntrySize <= len(raw); off += meta.EntrySize {
					e, err := Decode(raw[off : off+meta.EntrySize])
					if err != nil || e.Type != EventGPUFault || e.Time < ph.StartNS || e.Time > ph.EndNS {
						continue
					}
					c.Add(faultpattern.Sample{Addr: e.Address, Write: e.Access == AccessWrite, TimeNs: e.TimeGPU})
					n++
				}
				r := c.Classify()
				t.Logf("%-10s %4d faults: %s stride %d confidence %.2f", ph.Name, n, r.Pattern, r.Stride, r.Confidence)
				require.Equal(t, w.pattern, r.Pattern, ph.Name)
				if w.stride != 0 {
					require.Equal(t, w.stride, r.Stride, ph.Name)
				}
				require.Greater(t, r.Confidence, 0.5, ph.Name)
			}
		})
	}
}
