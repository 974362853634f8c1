package proberegion

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
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
	// it, computed here from the same timeline: all in the slots' first
	// lap, so each slot holds its one bucket's counts.
	type key struct {
		sm     uint32
		bucket uint64
	}
	want := map[key]*Occ{}
	at := func(sm uint32, ts uint64) *Occ {
		k := key{sm, ts >> OccShift}
		if want[k] == nil {
			want[k] = &Occ{SM: sm, Slot: uint32(k.bucket % uint64(snap.OccSlots)), Bucket: k.bucket}
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
	require.Equal(t, uint32(256), snap.OccSlots)
	require.Len(t, snap.Occupancy, len(want))
	for _, o := range snap.Occupancy {
		require.Equal(t, *want[key{o.SM, o.Bucket}], o)
	}
	// First seen, a slot's counts may hold earlier laps: no points.
	require.Empty(t, tr.Occupancy(snap.Occupancy, snap.OccSlots))
}

// TestOccupancyLaps: warp_occupancy's slots keep counting over their
// buckets (one every 256 on the same slot); the tracker reports a bucket
// with exactly its own counts when it read the slot after the bucket
// before was over, and no point where it cannot know: a slot first seen,
// a bucket still the newest at the read before the next lap, a lap it
// missed; counts that go back start the slot again.
func TestOccupancyLaps(t *testing.T) {
	s := newSet(t, "warp_occupancy")
	region := make([]byte, s.Layout().Size)
	r, err := FromBytes(region, s.Layout())
	require.NoError(t, err)
	start := base &^ (BucketNS - 1) // a bucket's first ns
	const lap = 256
	bucket := func(n uint64) uint64 { return start + n*BucketNS } // bucket n's first ns
	block := func(sm uint32, at uint64, ns uint64) simBlock {
		return simBlock{Block: 0, SM: sm, Start: at + 1000, End: at + 1000 + ns}
	}
	run := func(blocks ...simBlock) {
		for _, b := range blocks {
			simulate(t, s.Compiled(), region, "k", 1, 4, []simBlock{b})
		}
	}
	point := func(b simBlock) OccPoint {
		var ns uint64
		for w := uint32(0); w < simThreads/32; w++ {
			in, out := warpTimes(b, w)
			ns += (out - in) * 32
		}
		return OccPoint{SM: b.SM, Bucket: b.Start >> OccShift, Threads: simThreads, Warps: float64(ns) / 32 / BucketNS}
	}
	tr := NewTracker()
	read := func() []OccPoint {
		snap, err := r.Read()
		require.NoError(t, err)
		require.Equal(t, uint32(lap), snap.OccSlots)
		return tr.Occupancy(snap.Occupancy, snap.OccSlots)
	}

	// Read 1: every slot first seen with counts, at the tracker's first
	// read: they may hold earlier laps.
	run(block(1, bucket(0), 8000), block(2, bucket(1), 4000))
	require.Empty(t, read())
	// Read 2, a lap on: SM 1's slot had bucket 0, over at read 1 (bucket
	// 1 was the newest): bucket lap is exact, and complete (SM 3 is in a
	// later one). SM 2's bucket 1 was the newest at read 1: its tail may
	// have come after the read, so bucket lap+1 is not known. SM 3's
	// slot, unwritten at read 1, counts from zero, but its bucket is the
	// newest: not over yet.
	b1, b0 := block(1, bucket(lap), 5000), block(3, bucket(lap+5), 2000)
	run(b1, block(2, bucket(lap+1), 3000), b0)
	require.Equal(t, []OccPoint{point(b1)}, read())
	require.Empty(t, read(), "reported once")
	// Read 3: SM 1 wrote a bucket 2 laps on and one 3 laps on between two
	// reads: the lap the tracker missed leaves its bucket unknown. SM 2's
	// slot: bucket lap+1 was over at read 2: 2lap+1 is exact. SM 3's
	// first bucket is over now.
	b2 := block(2, bucket(2*lap+1), 6000)
	b7 := block(0, bucket(3*lap+3), 1000)
	run(block(1, bucket(2*lap), 7000), block(1, bucket(3*lap), 7000), b2, b7)
	require.Equal(t, []OccPoint{point(b0), point(b2)}, read())
	// Read 4: SM 1 a lap after 3lap, which was over at read 3 (SM 0 was
	// in 3lap+3): its bucket is known, but the newest, so not yet over.
	// SM 0's 3lap+3, its slot's first, is over now.
	b3, b4 := block(1, bucket(4*lap), 9000), block(1, bucket(4*lap)+20000, 9000)
	run(b3)
	require.Equal(t, []OccPoint{point(b7)}, read())
	// Read 5: another block in the same bucket, and a later bucket on SM
	// 2: now over, the two blocks' counts together, once.
	b8 := block(2, bucket(4*lap+9), 1000)
	run(b4, b8)
	got := read()
	require.Len(t, got, 1)
	require.Equal(t, uint32(1), got[0].SM)
	require.Equal(t, b3.Start>>OccShift, got[0].Bucket)
	require.Equal(t, 2*uint64(simThreads), got[0].Threads)
	require.InDelta(t, point(b3).Warps+point(b4).Warps, got[0].Warps, 1e-12)
	require.Empty(t, read())
	// A warp held up for a lap stores an older epoch into SM 1's slot of
	// bucket 0 (4lap there): ignored, so the slot's next lap is exact.
	occ, ok := s.Layout().Find(MapOcc)
	require.True(t, ok)
	off, ok := occ.ElemOffset(1, (start>>OccShift)%lap)
	require.True(t, ok)
	binary.LittleEndian.PutUint64(region[off:], start>>OccShift+3*lap)
	require.Empty(t, read())
	b6 := block(1, bucket(5*lap), 2000)
	run(b6, block(3, bucket(5*lap+20), 1000))
	require.Equal(t, []OccPoint{point(b8), point(b6)}, read()) // b8: its slot's first bucket

	// A fresh region under the same tracker: SM 1's slot 0 a lap on, its
	// bucket before over, but its counts went back: not the slot it read
	// before, so it starts again, no point.
	clear(region)
	r2, err := FromBytes(region, s.Layout())
	require.NoError(t, err)
	r = r2
	run(block(1, bucket(6*lap), 1000), block(2, bucket(6*lap+2), 1000))
	require.Empty(t, read())
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
