package proberegion

import (
	"cmp"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion/probesim"
	"github.com/otelcol-gpu/otelcol-gpu/internal/probeset"
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
		require.Equal(t, Block{KernelID: kid, Block: uint64(b.Block), StartNS: b.Start, EndNS: b.End, SM: b.SM, Threads: simThreads, Weight: 1, GridID: grid, GridBlocks: 16}, got[uint64(b.Block)])
	}
	require.Equal(t, []Launch{{KernelID: kid, StartNS: base, SM: 0}}, snap.Launches)
	require.Equal(t, map[string]uint64{MapBlockRing: 0, MapLaunchRing: 0, MapSM: 0, MapOcc: 0}, snap.Drops)
	require.Zero(t, snap.Bad)

	// SM load: per SM 4 blocks, 256 threads, lane-ns of its warps.
	wantSM := wantSMLoad(blocks, 4, 1)
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

	// Runs: the records say their launch's 16 blocks, all of which ran
	// the probes: the run is over with the read that brings the last.
	t0 := time.Unix(1000, 0)
	require.NotZero(t, snap.BlockDone)
	runs := tr.Blocks(snap.Blocks, snap.BlockProgress(), t0)
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

	// Occupancy: all in the slots' first lap, so each slot holds its one
	// bucket's counts.
	require.Equal(t, uint32(256), snap.OccSlots)
	require.Equal(t, wantOccupancy(blocks, snap.OccSlots, 1), snap.Occupancy)
	// First seen, a slot's counts may hold earlier laps: no points.
	require.Empty(t, tr.Occupancy(snap.Occupancy, snap.OccSlots, snap.OccResident, ReadClock{}))
}

// wantSMLoad is sm_load's totals for blocks on nsm SMs, each block
// weighing weight: its blocks, threads and lane-ns of its warps, for the
// SMs that ran any.
func wantSMLoad(blocks []simBlock, nsm uint32, weight uint64) []SMLoad {
	want := make([]SMLoad, nsm)
	for _, b := range blocks {
		l := &want[b.SM]
		l.SM = b.SM
		l.Blocks += weight
		l.Threads += simThreads * weight
		for w := uint32(0); w < simThreads/32; w++ {
			in, out := warpTimes(b, w)
			l.LaneNS += (out - in) * 32 * weight
		}
	}
	return slices.DeleteFunc(want, func(l SMLoad) bool { return l.Blocks == 0 }) // Read leaves idle SMs out
}

// wantOccupancy is warp_occupancy's slots, in the order Read gives them
// (by SM, then slot), for blocks of weight each that all fall in the
// slots' first lap: per SM and bucket the threads of the blocks whose warp
// 0 entered in the bucket less the lanes of the warps that exited in it,
// and the same times the ns from each entry or exit to the bucket's end.
func wantOccupancy(blocks []simBlock, slots uint32, weight uint64) []Occ {
	type key struct {
		sm     uint32
		bucket uint64
	}
	want := map[key]*Occ{}
	at := func(sm uint32, ts uint64) *Occ {
		k := key{sm, ts >> OccShift}
		if want[k] == nil {
			want[k] = &Occ{SM: sm, Slot: uint32(k.bucket % uint64(slots)), Bucket: k.bucket}
		}
		return want[k]
	}
	for _, b := range blocks {
		for w := uint32(0); w < simThreads/32; w++ {
			in, out := warpTimes(b, w)
			if w == 0 {
				at(b.SM, in).Threads += simThreads * weight
				at(b.SM, in).LaneNS += simThreads * weight * (BucketNS - in%BucketNS)
			}
			at(b.SM, out).Threads -= 32 * weight
			at(b.SM, out).LaneNS -= 32 * weight * (BucketNS - out%BucketNS)
		}
	}
	var out []Occ
	for _, o := range want {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b Occ) int { return cmp.Or(cmp.Compare(a.SM, b.SM), cmp.Compare(a.Slot, b.Slot)) })
	return out
}

// occReader is a warp_occupancy region and a tracker's read of it at GPU
// time now: with clock, devrt's copy begun 0.5 ms before, the host's
// clock the GPU's less 2^50; without, no copy times.
func occReader(t *testing.T, clock bool) (*probeset.Set, []byte, func(now uint64) []OccPoint) {
	const off = 1 << 50 // GPU clock minus host clock, any
	s := newSet(t, "warp_occupancy")
	region := make([]byte, s.Layout().Size)
	r, err := FromBytes(region, s.Layout())
	require.NoError(t, err)
	tr := NewTracker()
	return s, region, func(now uint64) []OccPoint {
		snap, err := r.Read()
		require.NoError(t, err)
		var clk ReadClock
		if clock {
			clk = ReadClock{CopyStart: now - off - 500_000, Now: now - off}
		}
		return tr.Occupancy(snap.Occupancy, snap.OccSlots, snap.OccResident, clk)
	}
}

// busy leaves out the points of 0 warps (an SM whose threads have gone:
// TestOccupancyResident), for the tests of which buckets are known.
func busy(ps []OccPoint) []OccPoint {
	return slices.DeleteFunc(ps, func(p OccPoint) bool { return p.Warps == 0 && p.Threads == 0 })
}

// residentNS is the lane-ns warp_occupancy counts for a block: each warp
// resident from its block's thread 0's entry (a block's warps are placed
// at once) to its own exit.
func residentNS(b simBlock) uint64 {
	in0, _ := warpTimes(b, 0)
	var ns uint64
	for w := uint32(0); w < simThreads/32; w++ {
		_, out := warpTimes(b, w)
		ns += (out - in0) * 32
	}
	return ns
}

// TestSampledByLaunch: compiled for 4 blocks a launch, the probes run in
// the blocks of a 16-block launch that ptx.LaunchSampled picks (1 in 4)
// and weigh what they count by 4: every block record says 4, sm_load's
// and warp_occupancy's counts are 4 times the sampled blocks'.
func TestSampledByLaunch(t *testing.T) {
	s, err := probeset.New(probeset.Config{BlocksPerLaunch: 4})
	require.NoError(t, err)
	r, err := FromBytes(make([]byte, s.Layout().Size), s.Layout())
	require.NoError(t, err)
	var blocks []simBlock
	for _, b := range imbalancedBlocks(base) {
		if ptx.LaunchSampled(b.Block, 16, 4) {
			blocks = append(blocks, b)
		}
	}
	require.Len(t, blocks, 5) // 0 2 5 10 13: the hash's
	simulate(t, s.Compiled(), r.mem, "imbalanced", 16, 4, blocks)
	snap, err := r.Read()
	require.NoError(t, err)
	require.Len(t, snap.Blocks, len(blocks))
	for _, b := range snap.Blocks {
		require.Equal(t, uint32(4), b.Weight)
		require.True(t, ptx.LaunchSampled(uint32(b.Block), 16, 4))
	}
	require.Equal(t, wantSMLoad(blocks, 4, 4), snap.SMs)
	require.Equal(t, wantOccupancy(blocks, snap.OccSlots, 4), snap.Occupancy)
	require.Zero(t, snap.Bad)
}

// TestOccupancyLaps: warp_occupancy's slots keep counting over their
// buckets (one every 256 on the same slot); the tracker reports a bucket
// with exactly its own counts when nothing can have reached the slot
// between the read it starts from and the bucket (the slot's bucket a lap
// earlier was over at that read), idle laps and a slot's first bucket
// included, and no point where it cannot know: a slot first seen at the
// tracker's first read, reads more than a lap apart. A bucket known while
// still the newest is reported once over, with what came after; a late
// warp's older epoch does not move it.
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
	point := func(bs ...simBlock) OccPoint {
		var ns uint64
		for _, b := range bs {
			ns += residentNS(b)
		}
		return OccPoint{SM: bs[0].SM, Bucket: bs[0].Start >> OccShift, Warps: float64(ns) / 32 / BucketNS}
	}
	tr := NewTracker()
	read := func() []OccPoint {
		snap, err := r.Read()
		require.NoError(t, err)
		require.Equal(t, uint32(lap), snap.OccSlots)
		require.Zero(t, snap.Bad)
		return busy(tr.Occupancy(snap.Occupancy, snap.OccSlots, snap.OccResident, ReadClock{}))
	}
	slotOf := func(n uint64) uint64 { return (start>>OccShift + n) % lap }
	poke := func(sm uint32, n uint64, epoch uint64) {
		occ, ok := s.Layout().Find(MapOcc)
		require.True(t, ok)
		off, ok := occ.ElemOffset(uint64(sm), slotOf(n))
		require.True(t, ok)
		binary.LittleEndian.PutUint64(region[off:], epoch)
	}

	// Read 1, the tracker's first: slots with counts may hold earlier laps.
	run(block(1, bucket(0), 8000), block(2, bucket(1), 4000))
	require.Empty(t, read())
	// Read 2, more than a lap after read 1 (newest 1): SM 1's bucket lap
	// is known (bucket 0, a lap before it, was over at read 1) and over
	// (SM 3 is later). SM 2's lap+1: bucket 1 was the newest at read 1,
	// its tail may have come after. SM 3's slot, unwritten at read 1,
	// could have held bucket 5 since: not known.
	b1 := block(1, bucket(lap), 5000)
	run(b1, block(2, bucket(lap+1), 3000), block(3, bucket(lap+5), 2000))
	require.Equal(t, []OccPoint{point(b1)}, read())
	require.Empty(t, read(), "reported once")
	// Read 3, within a lap: SM 0's slot, unwritten until now, counts from
	// zero; SM 3's lap+9, its slot's first too, is known but the newest.
	b2, b3 := block(0, bucket(lap+7), 6000), block(3, bucket(lap+9), 9000)
	run(b2, b3)
	require.Equal(t, []OccPoint{point(b2)}, read())
	// Read 4: a second block in SM 3's lap+9, and a later bucket: lap+9
	// is over, both blocks in it. SM 2's lap+12: known, the newest.
	b4, b5 := block(3, bucket(lap+9)+20000, 9000), block(2, bucket(lap+12), 3000)
	run(b4, b5)
	require.Equal(t, []OccPoint{point(b3, b4)}, read())
	// Read 5: SM 0 in 2lap+10 (SM 1's slot has had no bucket since lap:
	// idle): SM 2's lap+12 is over.
	b6 := block(0, bucket(2*lap+10), 1000)
	run(b6)
	require.Equal(t, []OccPoint{point(b5)}, read())
	// Read 6: SM 1 again after an idle lap (3lap; 2lap, a lap before, was
	// over at read 5): exact from its counts after lap. SM 0's 2lap+10
	// (the newest at read 5) is over.
	b7, b9 := block(1, bucket(3*lap), 7000), block(3, bucket(3*lap+5), 1000)
	run(b7, b9)
	require.Equal(t, []OccPoint{point(b6), point(b7)}, read())
	// Read 7: SM 2's slot 40, unwritten at read 6, had two buckets since
	// (3lap+40 and 4lap+40: the reads more than a lap apart): not known,
	// not their sum. SM 3's 3lap+5 (its slot idle since lap+5, the newest
	// at read 6) is over, but SM 3's newest, 4lap+41, is not known (its
	// slot could have had 3lap+41 too): so nor are the threads resident
	// through 3lap+5 (a bucket lost between them would change them), no
	// point.
	run(block(2, bucket(3*lap+40), 2000), block(2, bucket(4*lap+40), 2000), block(3, bucket(4*lap+41), 1000))
	require.Empty(t, read())
	// Read 8: SM 1's 5lap is known but the newest; a warp held up a lap
	// stores the older epoch 4lap into that slot before read 9, which
	// reports 5lap once over, under its own bucket.
	b8 := block(1, bucket(5*lap), 3000)
	run(b8)
	require.Empty(t, read())
	require.Empty(t, read(), "still the newest")
	poke(1, 4*lap, start>>OccShift+4*lap)
	b10 := block(0, bucket(5*lap+3), 1000) // its slot's first bucket: known
	run(b10)
	require.Equal(t, []OccPoint{point(b8)}, read())
	// Read 10: SM 2's 5lap+20, known, the newest; by read 11 its slot has
	// 6lap+20 (the reads more than a lap apart): neither is known, and
	// the first is not reported under the second's bucket when that is
	// over (read 12).
	run(block(2, bucket(5*lap+20), 1000))
	require.Equal(t, []OccPoint{point(b10)}, read())
	run(block(2, bucket(6*lap+20), 1000))
	require.Empty(t, read())
	b11 := block(3, bucket(6*lap+30), 1000) // its slot's first: known
	run(b11)
	require.Empty(t, read())
	run(block(0, bucket(6*lap+40), 1000))
	require.Equal(t, []OccPoint{point(b11)}, read())
	// A fresh region (the tracker's readers keep one each): its slots
	// start from zero again.
	clear(region)
	r2, err := FromBytes(region, s.Layout())
	require.NoError(t, err)
	r = r2
	run(block(1, bucket(6*lap), 1000), block(2, bucket(6*lap+2), 1000))
	tr = NewTracker()
	require.Empty(t, read())

	// A slot holding another slot's bucket (a corrupt region, or an
	// earlier design's reset marker) is left out and counted bad.
	poke(2, 6*lap+2, start>>OccShift+6*lap+3)
	snap, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, 1, snap.Bad)
	require.Len(t, snap.Occupancy, 1)
	require.Equal(t, uint32(1), snap.Occupancy[0].SM)
	poke(2, 6*lap+2, OccResetting)
	snap, err = r.Read()
	require.NoError(t, err)
	require.Equal(t, 1, snap.Bad)
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
	runs := tr.Blocks(snap.Blocks, snap.BlockProgress(), t0) // each launch's blocks all there
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
	require.Empty(t, tr.Blocks(launch(0, 0, 1, 2), BlockProgress{Done: 3, Running: 0}, t0))           // a copy in the middle of launch 1
	require.Empty(t, tr.Blocks(nil, BlockProgress{Done: 3, Running: 0}, t0.Add(20*time.Millisecond))) // the same copy again
	require.Empty(t, tr.Blocks(nil, BlockProgress{Done: 3, Running: 0}, t0.Add(40*time.Millisecond))) // and again
	next := append(launch(0, 3, 4), launch(1000, 0, 1)...)                                            // the rest, then launch 2
	runs := tr.Blocks(next, BlockProgress{Done: 7, Running: 0}, t0.Add(100*time.Millisecond))         // a fresh copy
	require.Len(t, runs, 1)
	require.Len(t, runs[0].Blocks, 5)
	require.Equal(t, uint64(0), runs[0].FirstStart)
	require.Equal(t, uint64(104), runs[0].LastEnd)
	runs = tr.Blocks(nil, BlockProgress{Done: 7, Running: 0}, t0.Add(200*time.Millisecond)) // stale: launch 2 stays open
	require.Empty(t, runs)
	runs = tr.Blocks(nil, BlockProgress{Done: 9, Running: 0}, t0.Add(300*time.Millisecond)) // fresh, other kernels wrote: over
	require.Len(t, runs, 1)
	require.Len(t, runs[0].Blocks, 2)
	require.Equal(t, uint64(1000), runs[0].FirstStart)
}

// TestOccupancyBursts: work in bursts more than a lap apart, read every
// 20 ms between them as the collector does, each read's copy begun 0.5 ms
// before it. With devrt's copy times (ReadClock) every bucket comes out
// exact, the first burst's included: the copies of two reads less than a
// lap apart leave a slot one bucket at most, and the host's clock since a
// bucket was seen says when the GPU is past a burst's last bucket.
// Without them the tracker has only the buckets it sees: nothing of the
// first burst (no read before it gave the GPU's time), nothing of a burst
// a lap after the one before, and a burst's last bucket would wait for the
// next burst. Reads more than a lap apart give no point for a slot that
// may have taken two buckets between them.
func TestOccupancyBursts(t *testing.T) {
	start := base &^ (BucketNS - 1)
	bucket := func(n uint64) uint64 { return start + n*BucketNS }
	const lap = 256
	block := func(sm uint32, at uint64, ns uint64) simBlock {
		return simBlock{Block: 0, SM: sm, Start: at + 1000, End: at + 1000 + ns}
	}
	point := func(b simBlock) OccPoint {
		return OccPoint{SM: b.SM, Bucket: b.Start >> OccShift, Warps: float64(residentNS(b)) / 32 / BucketNS}
	}
	for _, clock := range []bool{true, false} {
		t.Run(map[bool]string{true: "copy times", false: "none"}[clock], func(t *testing.T) {
			s, region, readAll := occReader(t, clock)
			read := func(now uint64) []OccPoint { return busy(readAll(now)) }
			want := func(ps ...OccPoint) []OccPoint {
				if !clock {
					return nil
				}
				return ps
			}
			run := func(bs ...simBlock) {
				for _, b := range bs {
					simulate(t, s.Compiled(), region, "k", 1, 4, []simBlock{b})
				}
			}
			require.Empty(t, read(bucket(0)), "nothing yet")
			// Burst 1: SM 1 in bucket 2, SM 2 in bucket 3.
			b1, b2 := block(1, bucket(2), 8000), block(2, bucket(3), 4000)
			run(b1, b2)
			at := bucket(3) + BucketNS*9/10
			require.Equal(t, want(point(b1)), read(at), "bucket 2 over (3 seen)")
			// a bucket and 500 ns after the read that saw 3 its copy began:
			// the bound at the copy's start, less the clocks' drift, is still
			// in 3 (the read's end, not when the copy was taken, is past it)
			require.Empty(t, read(at+BucketNS+500+500_000), "3 not over at the copy's start")
			require.Equal(t, want(point(b2)), read(bucket(38)), "bucket 3 over: the host's clock says")
			for n := uint64(57); n < 2000; n += 19 {
				require.Empty(t, read(bucket(n)), "idle at %d", n)
			}
			// Burst 2, 2050 buckets (~2 s) on: SM 1 in bucket 2050, the
			// slot bucket 2 had (8 laps on), SM 3 in a slot of its own.
			b3, b4 := block(1, bucket(2+8*lap), 6000), block(3, bucket(2051), 3000)
			run(b3, b4)
			require.Equal(t, want(point(b3), point(b4)), read(bucket(2060)), "both over: the GPU is at 2059 at least")
			require.Empty(t, read(bucket(2079)))
			// Reads stop for more than a lap: SM 1 takes bucket 2050+lap
			// (2050's slot) and 2050+2*lap; the read after cannot split
			// them; the next burst, a read later, is exact again.
			run(block(1, bucket(2050+lap), 5000), block(1, bucket(2050+2*lap), 5000))
			require.Empty(t, read(bucket(2050+2*lap+10)), "two of the slot's buckets since the last read")
			b5 := block(1, bucket(2050+2*lap+20), 7000)
			run(b5)
			require.Empty(t, read(bucket(2050+2*lap+20)+BucketNS*9/10), "the newest: not over")
			require.Equal(t, want(point(b5)), read(bucket(2050+2*lap+44)))
			if !clock {
				return
			}
			// Just over a lap less a bucket (and the drift's margin) from
			// the copy of one read to the end of the next: SM 2's slot
			// took bucket x, which began before that copy, and x+lap; no
			// point, then or at the read after.
			require.Empty(t, read(bucket(2700)))
			x := uint64(3000)
			p := bucket(x+1) - 1000 // the first read's copy began 1 µs before x ended
			require.Empty(t, read(p+500_000))
			run(block(2, bucket(x)+BucketNS-2000, 500), block(2, bucket(x+lap), 500))
			span := uint64(lap-1) * BucketNS
			// the read's end 1 µs past the bound (its copy 0.5 ms before it)
			require.Empty(t, read(p+span-span/1000+1000), "a lap less a bucket and the margin, and 1 µs")
			require.Empty(t, read(p+span+3*BucketNS), "nothing pending")
		})
	}
}

// TestOccupancyBadClocks: a copy time after the read's end is not taken
// (not this host's clock: a program in a time namespace, or not devrt's),
// and an anchor from a slot's future epoch (hostile bytes, a timer that
// stepped back) is dropped once a slot is written more than a lap behind
// it: neither makes later buckets look over or known.
func TestOccupancyBadClocks(t *testing.T) {
	start := base &^ (BucketNS - 1)
	bucket := func(n uint64) uint64 { return start + n*BucketNS }
	const off = 1 << 50
	const lap = 256
	block := func(sm uint32, at uint64, ns uint64) simBlock {
		return simBlock{Block: 0, SM: sm, Start: at + 1000, End: at + 1000 + ns}
	}
	s := newSet(t, "warp_occupancy")
	region := make([]byte, s.Layout().Size)
	r, err := FromBytes(region, s.Layout())
	require.NoError(t, err)
	tr := NewTracker()
	readAt := func(now, copyStart uint64) []OccPoint {
		snap, err := r.Read()
		require.NoError(t, err)
		return tr.Occupancy(snap.Occupancy, snap.OccSlots, snap.OccResident, ReadClock{CopyStart: copyStart - off, Now: now - off})
	}
	read := func(now uint64) []OccPoint { return readAt(now, now-500_000) }
	run := func(bs ...simBlock) {
		for _, b := range bs {
			simulate(t, s.Compiled(), region, "k", 1, 4, []simBlock{b})
		}
	}
	require.Empty(t, read(bucket(0)))
	run(block(1, bucket(2), 4000))
	require.Empty(t, read(bucket(2)+BucketNS/2), "the newest")
	// A copy an hour after the read: not taken. Then the reads stop for
	// over a lap and SM 1's slot takes bucket 2+lap and 2+2*lap: no point.
	require.Empty(t, readAt(bucket(10), bucket(10)+3600e9), "2 not over: the copy time is not taken, no later bucket seen")
	run(block(1, bucket(2+lap), 4000), block(1, bucket(2+2*lap), 4000))
	require.Empty(t, read(bucket(2+2*lap+5)), "two of the slot's buckets since the last read")
	require.Empty(t, read(bucket(2+2*lap+30)), "nothing pending")

	// A future epoch in SM 3's slot of bucket 600: the anchor takes it.
	occ, ok := s.Layout().Find(MapOcc)
	require.True(t, ok)
	far := uint64(600) + 100*lap
	offSlot, ok := occ.ElemOffset(3, (start>>OccShift+600)%lap)
	require.True(t, ok)
	binary.LittleEndian.PutUint64(region[offSlot:], start>>OccShift+far)
	require.Empty(t, read(bucket(590)))
	// The slot rewritten by its real bucket, and SM 0 works in bucket
	// 600: the anchor is dropped, and 600, the newest, is not over.
	binary.LittleEndian.PutUint64(region[offSlot:], start>>OccShift+600)
	run(block(0, bucket(600), 4000))
	require.Empty(t, read(bucket(600)+BucketNS*9/10), "600 the newest, not over")
}

// TestCopyTimes: a region file with devrt's trailer page gives each read
// the times devrt noted of its last copy (read live: devrt updates them);
// none, torn (a start newer than the end: the next copy's) or a file
// without the record give zeros.
func TestCopyTimes(t *testing.T) {
	s := newSet(t, "warp_occupancy")
	lay := s.Layout()
	regionLen := (lay.Size + 4095) &^ 4095
	path := filepath.Join(t.TempDir(), "gpuext-devmaps-1-2.maps")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Truncate(int64(regionLen+devrtinject.DeviceTrailer)))
	record := func(start, end uint64) {
		d := devrtinject.DeviceInfo{RegionLen: regionLen, Device: 0, CopyStartNS: start, CopyEndNS: end}
		_, err := f.WriteAt(d.Encode(), int64(regionLen+devrtinject.DeviceTrailer-devrtinject.DeviceInfoSize))
		require.NoError(t, err)
	}
	record(0, 0)
	r, err := Open(path, lay)
	require.NoError(t, err)
	defer r.Close()
	for _, tt := range []struct {
		start, end, wantStart, wantEnd uint64
	}{
		{0, 0, 0, 0},             // no copy yet
		{1000, 1500, 1000, 1500}, // a copy
		{2000, 2600, 2000, 2600}, // the next, read live
		{3000, 2600, 0, 0},       // the next's start over the last's end: torn
		{3000, 0, 0, 0},          // no end
		{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}, // any values: the tracker bounds what it makes of them
	} {
		record(tt.start, tt.end)
		snap, err := r.Read()
		require.NoError(t, err)
		require.Equal(t, [2]uint64{tt.wantStart, tt.wantEnd}, [2]uint64{snap.CopyStartNS, snap.CopyEndNS}, "%d %d", tt.start, tt.end)
	}
	// another magic: not devrt's record
	_, err = f.WriteAt([]byte("XXXX"), int64(regionLen+devrtinject.DeviceTrailer-devrtinject.DeviceInfoSize))
	require.NoError(t, err)
	snap, err := r.Read()
	require.NoError(t, err)
	require.Zero(t, snap.CopyStartNS)

	// a file of the region alone (no trailer)
	bare := filepath.Join(t.TempDir(), "gpuext-devmaps-1-3.maps")
	require.NoError(t, os.WriteFile(bare, make([]byte, lay.Size), 0o600))
	r2, err := Open(bare, lay)
	require.NoError(t, err)
	defer r2.Close()
	snap, err = r2.Read()
	require.NoError(t, err)
	require.Zero(t, snap.CopyStartNS)
}

// TestOccupancyResident: warps resident for many buckets (a block of
// most of a second) count in every bucket they span, not all in the one
// they leave in (which read 30 000 warps per SM on an H100, 2026-11-27).
// Read every 20 buckets, the GPU's clock known from the host's: SM 1's
// block of 2 warps, from bucket 2 to 60, gives its entry bucket's share,
// then 2 warps in a read's last complete bucket while nothing enters or
// leaves, then its exit bucket's share, and a point of 0 once gone; SM
// 2's short block meanwhile is exact and as much its own.
func TestOccupancyResident(t *testing.T) {
	start := base &^ (BucketNS - 1)
	bucket := func(n uint64) uint64 { return start + n*BucketNS }
	n := func(b uint64) uint64 { return bucket(b) >> OccShift }
	s, region, read := occReader(t, true)
	long := simBlock{Block: 0, SM: 1, Start: bucket(2) + 1000, End: bucket(60) + 5000}
	short := simBlock{Block: 0, SM: 2, Start: bucket(31) + 2000, End: bucket(31) + 9000}
	part := func(from, until uint64) { // the long block's probes in [from, until)
		require.NoError(t, probesim.Run(s.Compiled(), region, probesim.Launch{Kernel: "k", Grid: 1, Threads: simThreads,
			NSM: 4, Blocks: []simBlock{long}, GridID: 7, From: from, Until: until}))
	}
	in0, out0 := warpTimes(long, 0)
	_, out1 := warpTimes(long, 1)
	share := func(laneNS uint64) float64 { return float64(laneNS) / 32 / BucketNS }

	require.Empty(t, read(bucket(1)))
	part(0, bucket(3)) // its warps enter
	require.Empty(t, read(bucket(20)), "bucket 2 the newest")
	require.Equal(t, []OccPoint{{SM: 1, Bucket: n(2), Warps: share(simThreads * (bucket(3) - in0)), Threads: simThreads}},
		read(bucket(40)), "bucket 2 over (the GPU at 21)")
	simulate(t, s.Compiled(), region, "k", 1, 4, []simBlock{short})
	// SM 3: a block from 25 to 28, another within 26: three buckets of
	// one SM in one read, each from the threads resident at its start.
	a, b := simBlock{Block: 0, SM: 3, Start: bucket(25) + 3000, End: bucket(28) + 7000}, simBlock{Block: 1, SM: 3, Start: bucket(26) + 100, End: bucket(26) + 50_000}
	simulate(t, s.Compiled(), region, "k", 2, 4, []simBlock{a, b})
	inA, outA0 := warpTimes(a, 0)
	_, outA1 := warpTimes(a, 1)
	require.Equal(t, []OccPoint{
		{SM: 3, Bucket: n(25), Warps: share(simThreads * (bucket(26) - inA)), Threads: simThreads},
		{SM: 3, Bucket: n(26), Warps: 2 + share(residentNS(b))},
		{SM: 3, Bucket: n(28), Warps: share(32*(outA0-bucket(28)) + 32*(outA1-bucket(28))), Threads: -simThreads},
		{SM: 2, Bucket: n(31), Warps: share(residentNS(short))},
		{SM: 1, Bucket: n(40), Warps: 2}},
		read(bucket(60)), "SM 1: 2 warps resident through 40, nothing else")
	part(bucket(3), 0) // its warps leave
	require.Equal(t, []OccPoint{{SM: 1, Bucket: n(60), Warps: share(32*(out0-bucket(60)) + 32*(out1-bucket(60))), Threads: -simThreads},
		{SM: 2, Bucket: n(60)}, {SM: 3, Bucket: n(60)}}, read(bucket(80)), "SMs 2 and 3 idle since: a point of 0")
	require.Equal(t, []OccPoint{{SM: 1, Bucket: n(80)}}, read(bucket(100)), "SM 1 gone: a point of 0")
	require.Empty(t, read(bucket(120)))

	// A block preempted on SM 4 and ended on SM 5: its threads stay on 4
	// and are taken from 5 until the SMs' threads add up to 0 again,
	// which here they do at once (nothing else resident): no SM keeps
	// warps that are not there.
	moved := simBlock{Block: 0, SM: 4, Start: bucket(122) + 1000, End: bucket(124) + 1000}
	launch := probesim.Launch{Kernel: "k", Grid: 1, Threads: simThreads, NSM: 8, Blocks: []simBlock{moved}, GridID: 9, Until: bucket(123)}
	require.NoError(t, probesim.Run(s.Compiled(), region, launch))
	moved.SM = 5
	launch.Blocks, launch.From, launch.Until = []simBlock{moved}, bucket(123), 0
	require.NoError(t, probesim.Run(s.Compiled(), region, launch))
	var last []OccPoint
	for _, at := range []uint64{140, 160, 180, 200} {
		for _, p := range read(bucket(at)) {
			require.LessOrEqual(t, p.Warps, 2.0, "read at %d: %+v", at, p)
			last = append(last, p)
		}
	}
	final := map[uint32]float64{}
	for _, p := range last {
		final[p.SM] = p.Warps
	}
	require.Equal(t, map[uint32]float64{4: 0, 5: 0}, final, "each SM's last point")
	require.Empty(t, read(bucket(220)), "no SM left with the moved block's warps")
}
