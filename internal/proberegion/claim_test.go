package proberegion

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// TestRunOfClaimedBlocks: block_sched claims a block's record when the
// block starts and writes it when the block ends. Four blocks that start
// together, read every 50 ms, and end as each case has them: reads while
// they run (the ring's head moved at the claims, no record whole) neither
// lose them nor close the launch, though more than QuietClose passes
// between the claims and the records, or between the first blocks' ends
// and the last ones' (claims still pending hold the run open, up to
// MaxQuietRunning: a block that never ends).
func TestRunOfClaimedBlocks(t *testing.T) {
	s := newSet(t, "block_sched")
	var ring gpumap.Map
	for _, m := range s.Layout().Maps {
		if m.Name == MapBlockRing {
			ring = m
		}
	}
	const kid, grid = 77, 9
	never := time.Duration(-1)
	for _, tt := range []struct {
		name string
		ends [4]time.Duration // of blocks 0-3; never: not written
		// the runs, each its blocks, and when each run was reported
		runs [][]uint64
		at   []time.Duration
	}{
		{"together", [4]time.Duration{1200 * time.Millisecond, 1200 * time.Millisecond, 1300 * time.Millisecond, 1300 * time.Millisecond},
			[][]uint64{{0, 1, 2, 3}}, []time.Duration{2300 * time.Millisecond}},
		{"long tail", [4]time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 2500 * time.Millisecond},
			[][]uint64{{0, 1, 2, 3}}, []time.Duration{3500 * time.Millisecond}},
		{"longer than MaxQuietRunning", [4]time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, MaxQuietRunning + time.Second},
			[][]uint64{{0, 1, 2}, {3}}, []time.Duration{MaxQuietRunning + 100*time.Millisecond, MaxQuietRunning + 2*time.Second}},
		{"one never ends", [4]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, never},
			[][]uint64{{0, 1, 2}}, []time.Duration{MaxQuietRunning + 300*time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			region := make([]byte, s.Layout().Size)
			r, err := FromBytes(region, s.Layout())
			require.NoError(t, err)
			g := gpumap.Region(region)
			idx := make([]uint64, 4)
			for b := range idx {
				idx[b], err = ring.RingClaimSM(g, uint64(b))
				require.NoError(t, err)
			}
			end := func(b int, at time.Duration) {
				rec := make([]byte, BlockSize)
				binary.LittleEndian.PutUint64(rec[0:], kid)
				binary.LittleEndian.PutUint64(rec[8:], uint64(b))
				binary.LittleEndian.PutUint64(rec[16:], base)
				binary.LittleEndian.PutUint64(rec[24:], base+uint64(at))
				binary.LittleEndian.PutUint16(rec[32:], uint16(b))
				binary.LittleEndian.PutUint16(rec[34:], 128)
				binary.LittleEndian.PutUint32(rec[36:], 1)
				binary.LittleEndian.PutUint64(rec[40:], grid)
				res, err := ring.RingOutputAt(g, uint64(b), idx[b], rec)
				require.NoError(t, err)
				require.Zero(t, res)
			}
			tr := NewTracker()
			t0 := time.Unix(1000, 0)
			var runs [][]uint64
			var at []time.Duration
			var got int
			for now := time.Duration(0); now <= MaxQuietRunning+3*time.Second; now += 50 * time.Millisecond {
				for b, e := range tt.ends {
					if e == now {
						end(b, now)
					}
				}
				snap, err := r.Read()
				require.NoError(t, err)
				got += len(snap.Blocks)
				for _, run := range tr.Blocks(snap.Blocks, snap.BlockDone, snap.BlockRunning, t0.Add(now)) {
					var ids []uint64
					for _, b := range run.Blocks {
						ids = append(ids, b.Block)
					}
					slices.Sort(ids)
					runs = append(runs, ids)
					at = append(at, now)
					require.Equal(t, uint64(grid), run.GridID)
				}
				require.Zero(t, snap.Drops[MapBlockRing], "at %v", now)
			}
			want := 0
			for _, ids := range tt.runs {
				want += len(ids)
			}
			require.Equal(t, want, got)
			require.Equal(t, tt.runs, runs)
			require.Equal(t, tt.at, at)
		})
	}
}

// TestStuckClaim: a record claimed and never written (its block stopped
// by a fault) holds the open runs for MaxQuietRunning once, not every
// later launch: the next launch closes QuietClose after its last block.
func TestStuckClaim(t *testing.T) {
	tr := NewTracker()
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	blk := func(kernel uint64, b uint64) Block {
		return Block{KernelID: kernel, Block: b, StartNS: base, EndNS: base + 1000, Threads: 64, Weight: 1, GridID: kernel}
	}
	// launch 1: blocks 0 and 1 written, block 2's claim never is
	require.Empty(t, tr.Blocks([]Block{blk(1, 0), blk(1, 1)}, 2, 1, at(0)))
	require.Empty(t, tr.Blocks(nil, 2, 1, at(30*time.Second)), "a block still running")
	runs := tr.Blocks(nil, 2, 1, at(MaxQuietRunning))
	require.Len(t, runs, 1)
	require.Len(t, runs[0].Blocks, 2)
	// launch 2, with the stuck claim still counted running
	require.Empty(t, tr.Blocks([]Block{blk(2, 0)}, 3, 1, at(MaxQuietRunning+10*time.Second)))
	require.Empty(t, tr.Blocks(nil, 3, 1, at(MaxQuietRunning+10*time.Second+QuietClose-time.Millisecond)))
	runs = tr.Blocks(nil, 3, 1, at(MaxQuietRunning+10*time.Second+QuietClose))
	require.Len(t, runs, 1, "closed QuietClose after its block: the stuck claim holds it no more")
	require.Equal(t, uint64(2), runs[0].KernelID)
	// a launch with a block of its own running again holds
	require.Empty(t, tr.Blocks([]Block{blk(3, 0)}, 4, 2, at(2*MaxQuietRunning)))
	require.Empty(t, tr.Blocks(nil, 4, 2, at(2*MaxQuietRunning+5*time.Second)), "its own block running")
}
