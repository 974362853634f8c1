package devprobes

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion/probesim"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes/internal/metadata"
)

// TestBlockSampleScalesCounts: with block_sample n the probes run only in
// the blocks ptx.BlockSampled picks, with blocks_per_launch in those
// ptx.LaunchSampled picks (simulated here: the others are left out of the
// launch); blocks, per-SM blocks and busy time, the schedule delay
// histogram and occupancy stand for n blocks each (the probes weigh them),
// while the span describes the blocks sampled and says n. With every
// block the same launch reads as itself.
func TestBlockSampleScalesCounts(t *testing.T) {
	const grid, nsm = 64, 4
	for _, tt := range []struct {
		sample     uint32
		perLaunch  uint32 // blocks_per_launch
		picked     int    // blocks the sampling picks of 64
		blocks     int64  // gpu.kernel.blocks
		smBlocks   []int64
		delayCount uint64
		spanAttr   any // gpu.kernel.block.sample, nil: none
	}{
		{1, 0, 64, 64, []int64{16, 16, 16, 16}, 64, nil},
		{1, 256, 64, 64, []int64{16, 16, 16, 16}, 64, nil}, // the default: 64 blocks, all
		{1, 64, 64, 64, []int64{16, 16, 16, 16}, 64, nil},
		{4, 0, 17, 68, []int64{20, 12, 20, 16}, 68, int64(4)},   // blocks 0 2 5 10 13 18 23 26 31 34 36 39 44 47 52 57 60
		{4, 256, 17, 68, []int64{20, 12, 20, 16}, 68, int64(4)}, // block_sample replaces blocks_per_launch
		{1, 16, 17, 68, []int64{20, 12, 20, 16}, 68, int64(4)},  // 64 blocks at 16 a launch: 1 in 4, the same blocks
		{0, 32, 32, 64, []int64{18, 14, 18, 14}, 64, int64(2)},
	} {
		t.Run(fmt.Sprintf("%d,%d", tt.sample, tt.perLaunch), func(t *testing.T) {
			dir := t.TempDir()
			cfg := NewDefaultConfig()
			cfg.Enabled = true
			cfg.BlockSample, cfg.BlocksPerLaunch = tt.sample, tt.perLaunch
			now := wall
			s, err := New(cfg, Options{Dirs: []string{dir}, Settings: receivertest.NewNopSettings(metadata.Type), HostName: "node",
				Alive: func(uint32) bool { return true }, Now: func() time.Time { return now },
				Monotonic: func() uint64 { return uint64(now.UnixNano() - wallMono) }})
			require.NoError(t, err)
			every, perLaunch := max(tt.sample, 1), tt.perLaunch
			if every > 1 {
				perLaunch = 0
			}
			require.Equal(t, every, s.Set().Layout().BlockSample)
			require.Equal(t, perLaunch, s.Set().Layout().BlocksPerLaunch)
			mem := mapRegion(t, s, dir, 1)
			var blocks []probesim.Block
			for _, b := range probesim.Imbalanced(base, grid, nsm) {
				if ptx.Sampled(b.Block, every, perLaunch, grid) {
					blocks = append(blocks, b)
				}
			}
			require.Len(t, blocks, tt.picked)
			require.NoError(t, probesim.Run(s.Set().Compiled(), mem, probesim.Launch{Kernel: "imbalanced", Grid: grid, Threads: 64, NSM: nsm, Blocks: blocks, GridID: 7}))
			s.Poll()
			now = wall.Add(proberegion.QuietClose)
			s.Poll()
			got := metrics(s.Metrics())

			require.Equal(t, []point{{map[string]any{"gpu.cuda.kernel.name": fmt.Sprintf("kernel-%016x", ptx.KernelID("imbalanced")), "pid": int64(pid)}, float64(tt.blocks)}}, got["gpu.kernel.blocks"])
			var smBlocks []int64
			for _, p := range got["gpu.kernel.sm.blocks"] {
				smBlocks = append(smBlocks, int64(p.value))
			}
			require.Equal(t, tt.smBlocks, smBlocks)
			// busy: 2 warps a block, each resident its block's time less
			// the gap between warps; scaled like the blocks
			var wantBusy float64
			for _, b := range blocks {
				wantBusy += float64(2*(b.End-b.Start-probesim.WarpGap)) / 1e9
			}
			var busy float64
			for _, p := range got["gpu.kernel.sm.busy"] {
				busy += p.value
			}
			require.InDelta(t, wantBusy*float64(ptx.SampleWeight(every, perLaunch, grid)), busy, 1e-12)
			require.Len(t, got["gpu.kernel.block.schedule.delay"], 1)
			require.Equal(t, float64(tt.delayCount), got["gpu.kernel.block.schedule.delay"][0].value)

			td, n := s.TakeSpans()
			require.Equal(t, 1, n)
			a := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().AsRaw()
			require.Equal(t, int64(tt.picked), a["gpu.kernel.blocks"])
			require.Equal(t, tt.spanAttr, a["gpu.kernel.block.sample"])
		})
	}
}
