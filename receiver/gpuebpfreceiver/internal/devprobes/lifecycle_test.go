package devprobes

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion/probesim"
)

// patchCorpus patches the nvcc corpus module, so that its kernels
// ("imbalanced" among them) are known to the source's probe set.
func patchCorpus(t testing.TB, s *Source) {
	t.Helper()
	src, err := os.ReadFile("../../../../devrt/ptx/testdata/corpus/nvcc_kernels.ptx")
	require.NoError(t, err)
	res, err := s.Set().Patch(context.Background(), &devrtinject.Module{PTX: src})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status)
}

// TestShutdownFinishesOpenLaunches: the receiver's final Poll reads the
// blocks of the last launch, then Shutdown closes the regions; that launch
// is still open in its region's tracker (a launch ends only when a later
// copy of the region brings none of its blocks) and must not be lost: its
// blocks count in gpu.kernel.blocks and its span is handed over.
func TestShutdownFinishesOpenLaunches(t *testing.T) {
	for _, tc := range []struct {
		name      string
		polls     int // Polls after the launch before Shutdown
		wantBlock int64
		wantSpans int
	}{
		{"read once", 1, 16, 1},
		{"read twice (the same copy)", 2, 16, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := newSource(t, dir)
			patchCorpus(t, s)
			mem := mapRegion(t, s, dir, 1)
			require.NoError(t, probesim.Run(s.Set().Compiled(), mem, probesim.Launch{Kernel: "imbalanced", Grid: 16, Threads: 64, NSM: 4,
				Blocks: probesim.Imbalanced(base, 16, 4), GridID: 7}))
			for range tc.polls {
				s.Poll()
			}
			s.Shutdown()
			got := metrics(s.Metrics())
			require.Equal(t, []point{{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid)}, float64(tc.wantBlock)}},
				got["gpu.kernel.blocks"])
			_, n := s.TakeSpans()
			require.Equal(t, tc.wantSpans, n)
			require.Empty(t, s.regions)
			// The process had no region left: emitted once more, then dropped.
			s.Metrics()
			require.Empty(t, s.procs)
		})
	}
}

// TestProcessWithoutRegionIsForgotten: devrt's launch records of a process
// whose region the source never opens (a broken region, one in a directory
// it does not read) create the process's launch matcher; it must not be
// kept for ever (one per pid ever seen, each holding up to MaxPending host
// launches per kernel).
func TestProcessWithoutRegionIsForgotten(t *testing.T) {
	for _, tc := range []struct {
		name    string
		emits   int
		wantLen int
	}{
		{"kept through the emission that follows its launches", 1, 1},
		{"forgotten after a whole interval without a region", 2, 0},
		{"and stays forgotten", 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newSource(t, t.TempDir())
			patchCorpus(t, s)
			for p := uint32(1000); p < 1010; p++ {
				for i := range uint64(100) {
					s.Launch(p, "imbalanced", int32(i%3)-1, 1_000_000+i)
				}
			}
			for range tc.emits {
				s.Metrics()
			}
			require.Len(t, s.procs, tc.wantLen*10)
		})
	}
}

// TestHostileCountersKeepSumsMonotonic: the region is device memory any
// kernel of the process can scribble on. Drop counters and per-SM totals
// with absurd values (≥ 2^63) must not turn the cumulative, monotonic
// gpu.devrt.probes.dropped and gpu.kernel.sm.blocks negative.
func TestHostileCountersKeepSumsMonotonic(t *testing.T) {
	for _, tc := range []struct {
		name             string
		drops, smBlocks  []uint64 // successive values the region holds
		wantDrops, wantB []float64
	}{
		{
			name:  "plausible values pass through",
			drops: []uint64{5, 12}, smBlocks: []uint64{3, 10},
			wantDrops: []float64{5, 12}, wantB: []float64{3, 10},
		},
		{
			name:  "2^63 saturates",
			drops: []uint64{1 << 63, 1<<63 + 10}, smBlocks: []uint64{1 << 63, 1<<63 + 10},
			wantDrops: []float64{math.MaxInt64, math.MaxInt64}, wantB: []float64{math.MaxInt64, math.MaxInt64},
		},
		{
			name:  "all ones after a plausible value",
			drops: []uint64{7, math.MaxUint64}, smBlocks: []uint64{7, math.MaxUint64},
			wantDrops: []float64{7, math.MaxInt64}, wantB: []float64{7, math.MaxInt64},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := newSource(t, dir)
			mem := mapRegion(t, s, dir, 1)
			s.Poll() // opens the region, writes its headers
			require.Len(t, s.regions, 1)
			ring, ok := s.Set().Layout().Find(proberegion.MapBlockRing)
			require.True(t, ok)
			sm, ok := s.Set().Layout().Find(proberegion.MapSM)
			require.True(t, ok)
			smOff, _ := sm.ElemOffset(0, 0)
			for i := range tc.drops {
				binary.LittleEndian.PutUint64(mem[ring.Offset+gpumap.OffDrops:], tc.drops[i])
				binary.LittleEndian.PutUint64(mem[smOff:], tc.smBlocks[i])
				s.Poll()
				got := metrics(s.Metrics())
				var drops float64
				for _, p := range got["gpu.devrt.probes.dropped"] {
					if p.attrs["gpu.devrt.probe.map"] == proberegion.MapBlockRing {
						drops = p.value
					}
				}
				require.Equal(t, tc.wantDrops[i], drops, "dropped after read %d", i)
				require.Len(t, got["gpu.kernel.sm.blocks"], 1)
				require.Equal(t, tc.wantB[i], got["gpu.kernel.sm.blocks"][0].value, "sm blocks after read %d", i)
			}
			s.Shutdown()
		})
	}
}
