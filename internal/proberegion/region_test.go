package proberegion

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion/probesim"
)

// TestImbalancedKernel: the four shipped probes run on the interpreter for
// an imbalanced launch; the reader and the tracker give back exactly what
// the simulated GPU did.
func TestImbalancedKernel(t *testing.T) {
	s := newSet(t)
	lay := s.Layout()
	path := filepath.Join(t.TempDir(), "gpuext-devmaps-1-2.maps")
	require.NoError(t, os.WriteFile(path, make([]byte, (lay.Size+4095)&^4095), 0o600))
	r, err := Open(path, lay)
	require.NoError(t, err)
	defer r.Close()
	blocks := imbalancedBlocks(base)
	simulate(t, s.Compiled(), r.mem, "imbalanced", 16, 4, blocks)

	snap, err := r.Read()
	require.NoError(t, err)
	kid := ptx.KernelID("imbalanced")
	require.Len(t, snap.Blocks, 16)
	got := map[uint64]Block{}
	for _, b := range snap.Blocks {
		got[b.Block] = b
	}
	grid := snap.Blocks[0].GridID // the simulator's next launch number
	require.NotZero(t, grid)
	for _, b := range blocks {
		require.Equal(t, Block{KernelID: kid, Block: uint64(b.Block), StartNS: b.Start, EndNS: b.End, SM: b.SM, Threads: simThreads, GridID: grid}, got[uint64(b.Block)])
	}
	require.Equal(t, []Launch{{KernelID: kid, StartNS: base, SM: 0}}, snap.Launches)
	require.Equal(t, map[string]uint64{MapBlockRing: 0, MapLaunchRing: 0, MapSM: 0, MapOcc: 0}, snap.Drops)
	require.Zero(t, snap.Bad)

	// SM load: per SM 4 blocks, 256 threads, lane-ns of its warps.
	wantSM := make([]SMLoad, 4)
	for _, b := range blocks {
		l := &wantSM[b.SM]
		l.SM = b.SM
		l.Blocks++
		l.Threads += simThreads
		for w := uint32(0); w < simThreads/32; w++ {
			in, out := warpTimes(b, w)
			l.LaneNS += (out - in) * 32
		}
	}
	require.Equal(t, wantSM, snap.SMs)
	tr := NewTracker()
	bal := tr.SMs(snap.SMs)
	require.Equal(t, wantSM, bal.SMs)
	// SM 0 runs blocks 0 and 8 (heavy) and 4, 12; the others four light ones.
	heavy := 2*(2*2_400_000-2*100) + 2*(2*300_000-2*100)
	light := 4 * (2*300_000 - 2*100)
	require.InDelta(t, float64(heavy)/(float64(heavy+3*light)/4), bal.Imbalance, 1e-12)
	require.InDelta(t, 2.400, bal.Imbalance, 0.001) // SM 0: 10.8 ms of warp residence, the mean 4.5
	// A read with nothing new: no work in the interval.
	require.Equal(t, SMBalance{}, tr.SMs(snap.SMs))

	// Runs: open while blocks come; a read of the same copy again (the
	// head did not move) ends nothing until the head stood still for
	// QuietClose.
	t0 := time.Unix(1000, 0)
	require.NotZero(t, snap.BlockHead)
	require.Empty(t, tr.Blocks(snap.Blocks, snap.BlockHead, t0))
	snap2, err := r.Read()
	require.NoError(t, err)
	require.Empty(t, snap2.Blocks)
	require.Empty(t, snap2.Launches)
	require.Equal(t, snap.BlockHead, snap2.BlockHead)
	require.Empty(t, tr.Blocks(snap2.Blocks, snap2.BlockHead, t0.Add(QuietClose-time.Millisecond)))
	runs := tr.Blocks(snap2.Blocks, snap2.BlockHead, t0.Add(QuietClose))
	require.Len(t, runs, 1)
	run := runs[0]
	require.Equal(t, kid, run.KernelID)
	require.Len(t, run.Blocks, 16)
	require.Equal(t, base, run.FirstStart)
	require.Equal(t, base+8000+2_400_000, run.LastEnd) // block 8
	require.Equal(t, uint64(16*simThreads), run.Threads)
	delays := run.Delays()
	for i, d := range delays {
		require.Equal(t, uint64(i)*1000, d)
	}

	// Occupancy: per SM and bucket, the threads of the blocks whose warp 0
	// entered in the bucket and the lane-ns of the warps that exited in
	// it, computed here from the same timeline.
	type key struct {
		sm     uint32
		bucket uint64
	}
	want := map[key]*Occ{}
	at := func(sm uint32, ts uint64) *Occ {
		k := key{sm, ts >> OccShift}
		if want[k] == nil {
			want[k] = &Occ{SM: sm, Bucket: k.bucket}
		}
		return want[k]
	}
	for _, b := range blocks {
		for w := uint32(0); w < simThreads/32; w++ {
			in, out := warpTimes(b, w)
			if w == 0 {
				at(b.SM, in).Threads += simThreads
			}
			at(b.SM, out).LaneNS += (out - in) * 32
		}
	}
	require.Len(t, snap.Occupancy, len(want))
	for _, o := range snap.Occupancy {
		require.Equal(t, *want[key{o.SM, o.Bucket}], o)
	}
	pts := tr.Occupancy(snap.Occupancy)
	newest := snap.Occupancy[len(snap.Occupancy)-1].Bucket
	var wantPts []OccPoint
	for _, o := range snap.Occupancy {
		if o.Bucket < newest {
			wantPts = append(wantPts, OccPoint{SM: o.SM, Bucket: o.Bucket, Threads: o.Threads, Warps: float64(o.LaneNS) / 32 / BucketNS})
		}
	}
	require.NotEmpty(t, wantPts)
	require.Equal(t, wantPts, pts)
	require.Empty(t, tr.Occupancy(snap.Occupancy)) // reported once
}

// TestRunsByLaunch: two launches of one kernel drained together are two
// runs (their %gridid differ), though the ring's shards hand over their
// blocks SM by SM, the second launch's before the first's last; another
// kernel's run is its own.
func TestRunsByLaunch(t *testing.T) {
	s := newSet(t, "block_sched")
	region := make([]byte, s.Layout().Size)
	r, err := FromBytes(region, s.Layout())
	require.NoError(t, err)
	first := imbalancedBlocks(base)
	second := imbalancedBlocks(base + 10_000_000)
	simulate(t, s.Compiled(), region, "imbalanced", 16, 4, first)
	simulate(t, s.Compiled(), region, "imbalanced", 16, 4, second)
	simulate(t, s.Compiled(), region, "vec_add", 2, 4, []simBlock{{Block: 0, SM: 1, Start: base + 20_000_000, End: base + 20_005_000}, {Block: 1, SM: 2, Start: base + 20_000_500, End: base + 20_004_000}})
	snap, err := r.Read()
	require.NoError(t, err)
	require.Len(t, snap.Blocks, 34)
	tr := NewTracker()
	t0 := time.Unix(1000, 0)
	runs := tr.Blocks(snap.Blocks, snap.BlockHead, t0)
	require.Empty(t, runs)                      // open until a fresh read without them
	runs = tr.Blocks(nil, snap.BlockHead+1, t0) // a fresh copy without them
	require.Len(t, runs, 3)
	for i, r := range runs[:2] {
		require.Equal(t, base+uint64(i)*10_000_000, r.FirstStart)
		require.Len(t, r.Blocks, 16)
		require.Equal(t, uint64(16*simThreads), r.Threads)
		for j, b := range r.Blocks {
			require.Equal(t, r.GridID, b.GridID)
			require.LessOrEqual(t, r.Blocks[max(j-1, 0)].StartNS, b.StartNS)
		}
	}
	require.NotEqual(t, runs[0].GridID, runs[1].GridID)
	require.Equal(t, ptx.KernelID("vec_add"), runs[2].KernelID)
	require.Equal(t, []uint64{0, 500}, runs[2].Delays())
	require.Equal(t, uint64(5000), runs[2].Duration())
	require.Empty(t, tr.Flush())
}

// TestOccupancySlotReused: a bucket 64 buckets after another takes over its
// slot; the probe that claims it subtracts the old bucket's counts, so the
// new bucket holds exactly its own threads and lane-ns.
func TestOccupancySlotReused(t *testing.T) {
	s := newSet(t, "warp_occupancy")
	region := make([]byte, s.Layout().Size)
	r, err := FromBytes(region, s.Layout())
	require.NoError(t, err)
	start := base &^ (BucketNS - 1) // a bucket's first ns
	later := start + 64*BucketNS    // the same slot, 64 buckets on
	simulate(t, s.Compiled(), region, "k", 1, 1, []simBlock{{Block: 0, SM: 3, Start: start + 1000, End: start + 9000}})
	simulate(t, s.Compiled(), region, "k", 1, 1, []simBlock{{Block: 0, SM: 3, Start: later + 1000, End: later + 5000}})
	snap, err := r.Read()
	require.NoError(t, err)
	require.Len(t, snap.Occupancy, 1, "the old bucket's slot was taken over")
	o := snap.Occupancy[0]
	require.Equal(t, later>>OccShift, o.Bucket)
	require.Equal(t, uint32(3), o.SM)
	require.Equal(t, uint64(simThreads), o.Threads)
	var ns uint64
	for w := uint32(0); w < simThreads/32; w++ {
		in, out := probesim.WarpTimes(simBlock{Start: later + 1000, End: later + 5000}, simThreads, w)
		ns += (out - in) * 32
	}
	require.Equal(t, ns, o.LaneNS)
}

// TestRunAcrossCopies: a copy taken in the middle of a launch, read again
// before the next copy, does not end the launch's run; the next fresh
// read completes it and a block id coming back starts the next launch's.
func TestRunAcrossCopies(t *testing.T) {
	const kid = 7
	launch := func(base uint64, ids ...uint64) []Block {
		var bs []Block
		for _, id := range ids {
			bs = append(bs, Block{KernelID: kid, Block: id, StartNS: base + id, EndNS: base + 100 + id, Threads: 32})
		}
		return bs
	}
	tr := NewTracker()
	t0 := time.Unix(1000, 0)
	require.Empty(t, tr.Blocks(launch(0, 0, 1, 2), 3, t0))           // a copy in the middle of launch 1
	require.Empty(t, tr.Blocks(nil, 3, t0.Add(20*time.Millisecond))) // the same copy again
	require.Empty(t, tr.Blocks(nil, 3, t0.Add(40*time.Millisecond))) // and again
	next := append(launch(0, 3, 4), launch(1000, 0, 1)...)           // the rest, then launch 2
	runs := tr.Blocks(next, 7, t0.Add(100*time.Millisecond))         // a fresh copy
	require.Len(t, runs, 1)
	require.Len(t, runs[0].Blocks, 5)
	require.Equal(t, uint64(0), runs[0].FirstStart)
	require.Equal(t, uint64(104), runs[0].LastEnd)
	runs = tr.Blocks(nil, 7, t0.Add(200*time.Millisecond)) // stale: launch 2 stays open
	require.Empty(t, runs)
	runs = tr.Blocks(nil, 9, t0.Add(300*time.Millisecond)) // fresh, other kernels wrote: over
	require.Len(t, runs, 1)
	require.Len(t, runs[0].Blocks, 2)
	require.Equal(t, uint64(1000), runs[0].FirstStart)
}
