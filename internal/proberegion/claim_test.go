package proberegion

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
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
				for _, run := range tr.Blocks(snap.Blocks, snap.BlockProgress(), t0.Add(now)) {
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
	require.Empty(t, tr.Blocks([]Block{blk(1, 0), blk(1, 1)}, BlockProgress{Done: 2, Running: 1}, at(0)))
	require.Empty(t, tr.Blocks(nil, BlockProgress{Done: 2, Running: 1}, at(30*time.Second)), "a block still running")
	runs := tr.Blocks(nil, BlockProgress{Done: 2, Running: 1}, at(MaxQuietRunning))
	require.Len(t, runs, 1)
	require.Len(t, runs[0].Blocks, 2)
	// launch 2, with the stuck claim still counted running
	require.Empty(t, tr.Blocks([]Block{blk(2, 0)}, BlockProgress{Done: 3, Running: 1}, at(MaxQuietRunning+10*time.Second)))
	require.Empty(t, tr.Blocks(nil, BlockProgress{Done: 3, Running: 1}, at(MaxQuietRunning+10*time.Second+QuietClose-time.Millisecond)))
	runs = tr.Blocks(nil, BlockProgress{Done: 3, Running: 1}, at(MaxQuietRunning+10*time.Second+QuietClose))
	require.Len(t, runs, 1, "closed QuietClose after its block: the stuck claim holds it no more")
	require.Equal(t, uint64(2), runs[0].KernelID)
	// a launch with a block of its own running again holds
	require.Empty(t, tr.Blocks([]Block{blk(3, 0)}, BlockProgress{Done: 4, Running: 2}, at(2*MaxQuietRunning)))
	require.Empty(t, tr.Blocks(nil, BlockProgress{Done: 4, Running: 2}, at(2*MaxQuietRunning+5*time.Second)), "its own block running")
}

// TestRunsComplete: a run whose records say their launch's blocks (and
// weight) is over with the read that brings the last block that ran the
// probes, and not before, though other launches' blocks end meanwhile;
// one missing ends when the ring lost records since the read before it
// opened, when nothing ends and nothing runs for QuietClose, or when none
// of its own came for MaxQuietRunning. Records that disagree on their
// launch's blocks, and a launch's second run (a block id again), leave it
// to the rule of runs of unknown blocks.
func TestRunsComplete(t *testing.T) {
	blk := func(kernel, grid, b, blocks uint64, w uint32) Block {
		return Block{KernelID: kernel, Block: b, StartNS: base + b, EndNS: base + b + 1000, Threads: 64, Weight: w, GridID: grid, GridBlocks: blocks}
	}
	// L: launch 1 of kernel 1, 4 blocks; M: kernel 2's launches, 1 block
	l := func(b uint64) Block { return blk(1, 1, b, 4, 1) }
	m := func(grid uint64) Block { return blk(2, grid, 0, 1, 1) }
	// by launch at 1 in 4: the blocks of 64 that ran the probes
	var by []Block
	for i := range uint32(64) {
		if ptx.BlockSampled(i, 4) {
			by = append(by, blk(3, 5, uint64(i), 64, 4))
		}
	}
	type step struct {
		at     time.Duration
		blocks []Block
		p      BlockProgress
		want   []int // the blocks of each run over
	}
	ms := time.Millisecond
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"complete at once", []step{{0, []Block{l(2), l(0), l(3), l(1)}, BlockProgress{Done: 4}, []int{4}}}},
		{"long launch beside others", []step{
			{0, []Block{l(0), l(1), l(2)}, BlockProgress{Done: 3, Running: 1}, nil},
			{100 * ms, []Block{m(10)}, BlockProgress{Done: 4, Running: 1}, []int{1}},
			{200 * ms, []Block{m(11)}, BlockProgress{Done: 5, Running: 1}, []int{1}},
			{300 * ms, nil, BlockProgress{Done: 5, Running: 1}, nil},
			{2000 * ms, []Block{m(12)}, BlockProgress{Done: 6, Running: 1}, []int{1}},
			{2100 * ms, []Block{l(3)}, BlockProgress{Done: 7}, []int{4}},
		}},
		{"records lost", []step{
			{0, []Block{l(0), l(1), l(2)}, BlockProgress{Done: 3, Running: 1}, nil},
			{100 * ms, []Block{m(10)}, BlockProgress{Done: 4, Running: 1}, []int{1}},
			{200 * ms, []Block{m(11)}, BlockProgress{Done: 6, Lost: 1}, []int{1, 3}},
		}},
		{"lost in the read that opens it", []step{
			{0, []Block{l(0), l(1), l(2)}, BlockProgress{Done: 4, Lost: 1}, nil},
			{100 * ms, []Block{m(10)}, BlockProgress{Done: 5, Lost: 1}, []int{1, 3}},
		}},
		{"lost, then a copy read again", []step{
			{0, []Block{l(0), l(1), m(10)}, BlockProgress{Done: 4, Lost: 1}, []int{1}},
			{50 * ms, nil, BlockProgress{Done: 4, Lost: 1}, nil},
			{100 * ms, []Block{l(2), l(3)}, BlockProgress{Done: 6, Lost: 1}, []int{4}},
		}},
		{"its blocks after a run of it ended short", []step{
			{0, []Block{l(0), l(1)}, BlockProgress{Done: 2, Running: 3}, nil},
			{100 * ms, []Block{m(10)}, BlockProgress{Done: 4, Running: 2, Lost: 1}, []int{1, 2}},
			{200 * ms, []Block{l(2), l(3)}, BlockProgress{Done: 6, Running: 1, Lost: 1}, nil},
			{300 * ms, []Block{m(11)}, BlockProgress{Done: 7, Running: 1, Lost: 1}, []int{1, 2}},
		}},
		{"a block id again", []step{
			{0, []Block{l(0), l(1)}, BlockProgress{Done: 2, Running: 2}, nil},
			{100 * ms, []Block{l(0)}, BlockProgress{Done: 3, Running: 2}, []int{2}},
			{200 * ms, []Block{m(10)}, BlockProgress{Done: 4, Running: 2}, []int{1, 1}},
		}},
		{"gone quiet", []step{
			{0, []Block{l(0), l(1)}, BlockProgress{Done: 2}, nil},
			{QuietClose - ms, nil, BlockProgress{Done: 2}, nil},
			{QuietClose, nil, BlockProgress{Done: 2}, []int{2}},
		}},
		{"its own stopped, others did not", []step{
			{0, []Block{l(0), l(1)}, BlockProgress{Done: 2, Running: 2}, nil},
			{MaxQuietRunning - ms, []Block{m(10)}, BlockProgress{Done: 3, Running: 2}, []int{1}},
			{MaxQuietRunning, []Block{m(11)}, BlockProgress{Done: 4, Running: 2}, []int{1, 2}},
		}},
		{"sampled by launch", []step{
			{0, by[:len(by)-1], BlockProgress{Done: uint64(len(by) - 1), Running: 1}, nil},
			{100 * ms, []Block{m(10)}, BlockProgress{Done: uint64(len(by)), Running: 1}, []int{1}},
			{200 * ms, by[len(by)-1:], BlockProgress{Done: uint64(len(by) + 1)}, []int{len(by)}},
		}},
		{"records that disagree", []step{
			{0, []Block{l(0), blk(1, 1, 1, 8, 1)}, BlockProgress{Done: 2, Running: 2}, nil},
			{100 * ms, []Block{m(10)}, BlockProgress{Done: 3, Running: 2}, []int{1, 2}},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker()
			t0 := time.Unix(1000, 0)
			for i, st := range tt.steps {
				var got []int
				for _, r := range tr.Blocks(st.blocks, st.p, t0.Add(st.at)) {
					got = append(got, len(r.Blocks))
				}
				slices.Sort(got)
				require.Equal(t, st.want, got, "step %d at %v", i, st.at)
			}
		})
	}
	require.Len(t, by, 17, "the hash's 1 in 4 of 64")
}
