package proberegion

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// Run is one launch of a kernel as block_sched saw it: the blocks that
// finished, when the first started and the last ended (%globaltimer ns).
type Run struct {
	KernelID   uint64
	GridID     uint64  // the launch's %gridid
	Blocks     []Block // by start time
	FirstStart uint64
	LastEnd    uint64
	Threads    uint64
}

// Delays are each block's start minus the run's first block start (ns),
// in block order of Blocks.
func (r *Run) Delays() []uint64 {
	out := make([]uint64, len(r.Blocks))
	for i, b := range r.Blocks {
		out[i] = b.StartNS - r.FirstStart
	}
	return out
}

// Weight is the blocks of the launch each block of the run stands for
// (block sampling; the same in every block of a launch): the largest seen.
func (r *Run) Weight() uint32 {
	w := uint32(1)
	for _, b := range r.Blocks {
		w = max(w, b.Weight)
	}
	return w
}

// Duration is the run's first block start to its last block end (ns).
func (r *Run) Duration() uint64 { return r.LastEnd - r.FirstStart }

// SMBalance is the work each SM got in an interval (sm_load's counters,
// differences of two reads).
type SMBalance struct {
	SMs []SMLoad // SM 0 to the highest SM with work, idle SMs included
	// Imbalance is the busiest SM's lane-ns over the mean of SMs: 1 when
	// even; 0 when no SM worked.
	Imbalance float64
}

// OccPoint is the mean number of warps resident on an SM over one complete
// time bucket.
type OccPoint struct {
	SM     uint32
	Bucket uint64 // %globaltimer >> OccShift
	// Warps is the bucket's lane-ns / 32 / its length: the mean resident
	// warps (lane-weighted: a warp of 16 active lanes counts half), those
	// resident through it (from earlier buckets) included.
	Warps float64
	// Threads is the threads that became resident in the bucket: those
	// that entered less the lanes that exited (negative when more left).
	Threads int64
}

// BucketNS is the length of an occupancy bucket in ns.
const BucketNS = 1 << OccShift

// Tracker turns a region's successive snapshots into finished runs,
// per-interval SM balance and complete occupancy buckets. One per region.
//
// Runs: the blocks of one launch (kernel and %gridid) belong to one run;
// the ring's shards may hand over its blocks in any order, around other
// launches'. The records name their launch's blocks, which with their
// weight say how many ran the probes (ptx.BlocksSampled): a run is over
// with the read that brings the last of them, whatever else ends
// meanwhile, and one still missing some by the rules of Blocks. A run of
// a launch too large to count, or whose records disagree, is over when a
// fresh read brings none of its blocks, one read after its last block.
// A block id that comes back within a launch (a ring handing over
// garbage), or a launch past MaxOpenBlocks, starts a new run, of the
// latter rule, as do a launch's blocks after a run of it ended without
// all of them. A read is fresh when blocks ended since the read before (the
// block ring's records done, Snapshot.BlockDone, moved): devrt copies the
// region into its file every 100 ms or so, and the collector reads it
// more often, so most reads see the same copy again, and a copy taken in
// the middle of a launch would otherwise end its run there (its remaining
// blocks then opened a second run, which the next launch's blocks
// joined). Not the ring's head: block_sched claims a block's record when
// the block starts, so a copy in which only blocks started is not fresh.
// When no block has ended for QuietClose, every open run is over, unless
// blocks are still running (Snapshot.BlockRunning: records claimed, not
// yet written), which holds them open up to MaxQuietRunning: a launch
// whose light blocks ended long before its heavy ones (the imbalance the
// probes are there to show) stays one run, not a run of the light blocks
// and a later one of the heavy, when nothing else ends meanwhile (for a
// run of unknown blocks a fresh read without its blocks still ends it:
// another stream's launch ending while a long one runs splits the long
// one). A finished launch then
// waits for a concurrent long one's next block to end, or
// MaxQuietRunning; records still claimed after that are taken as never
// to come (a fault, a thread that left by trap) and hold no later launch
// open.
// Launches of one kernel that overlap (several streams) are separate runs.
type Tracker struct {
	done      uint64             // the block ring's records done at the last read
	moved     time.Time          // when they last moved
	stuck     uint64             // records claimed and not written after MaxQuietRunning
	lost      uint64             // the block ring's records lost, at the last read
	partial   map[launchKey]bool // launches whose run ended without all its blocks
	open      map[launchKey]*openRun
	sms       map[uint32]SMLoad // totals at the last read
	occ       map[uint32]*occSM // per SM, its occupancy slots as last read
	occNewest uint64            // the last read's bucket: the GPU had reached it (0: none)
	// occAnchorGPU and occAnchorHost: the GPU's clock had reached
	// occAnchorGPU (a bucket's first ns) by host time occAnchorHost
	// (CLOCK_MONOTONIC), from the newest bucket a read saw written since
	// the read before (clockBucket); 0: unknown.
	occAnchorGPU, occAnchorHost uint64
	// occPrevCopy is the last read's ReadClock.CopyStart (0: unknown).
	occPrevCopy uint64
	// occOffset is, by SM, the threads resident the last time the SMs'
	// added up to 0 (Occupancy).
	occOffset []int64
}

// ReadClock is when a read's contents are from, on the host's
// CLOCK_MONOTONIC: CopyStart is Snapshot.CopyStartNS (the contents are at
// least as new as the GPU was then) and Now the time the read was done.
// Zeros: unknown; the tracker then goes by the buckets it sees alone.
type ReadClock struct{ CopyStart, Now uint64 }

// maxDrift bounds how far apart the GPU's clock and the host's
// CLOCK_MONOTONIC may run: 1/maxDrift (1000 ppm, as devrt's timing allows;
// an H100's ran 18 ppm apart, and NTP slews the host's by up to 500).
const maxDrift = 1_000

// occSM is what the tracker knows of one SM's occupancy slots: each slot's
// bucket and cumulative counts at the last read (bucket 0: not seen yet),
// and the counts a bucket began from, for the few buckets known but not
// over at the read that found them (reported once over).
type occSM struct {
	bucket, threads, laneNS []uint64
	pending                 map[uint32]occCounts // by slot: the counts its bucket began from
	// out and outWarps are the last point reported: an SM's points only
	// move forward (a bucket reported as quiet is not reported again).
	out      uint64
	outWarps float64
}

type occCounts struct{ threads, laneNS uint64 }

type openRun struct {
	Run
	seen map[uint64]bool
	// want is how many blocks ran the probes (0: not known), lost the
	// ring's lost records at the read before it opened, last when its
	// last record came.
	want int
	lost uint64
	last time.Time
}

// launchKey names one launch: its kernel and %gridid.
type launchKey struct{ kernel, grid uint64 }

// QuietClose is how long no block may end (Snapshot.BlockDone stands
// still) before the open runs are over: well beyond devrt's copy period.
const QuietClose = time.Second

// MaxQuietRunning bounds how long blocks still running (claimed records
// not written) hold the open runs when no block ends: a kernel stopped by
// a fault never writes its claimed records.
const MaxQuietRunning = time.Minute

// maxPartial bounds Tracker.partial: launches a run of ended without all
// their blocks, whose later blocks open a run of the rule of unknown
// blocks (forgotten all at once when full).
const maxPartial = 4096

// MaxOpenBlocks bounds the blocks an open run keeps (a run that grows past
// it is reported and a new one started: a corrupt ring cannot grow memory).
const MaxOpenBlocks = 1 << 20

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{open: map[launchKey]*openRun{}, sms: map[uint32]SMLoad{}, occ: map[uint32]*occSM{}, partial: map[launchKey]bool{}}
}

// BlockProgress is what a read says of the block ring besides its
// records (Snapshot.BlockProgress).
type BlockProgress struct {
	Done    uint64 // records taken or counted lost (Snapshot.BlockDone)
	Running uint64 // records claimed, not yet written (Snapshot.BlockRunning)
	Lost    uint64 // records lost (Snapshot.Drops[MapBlockRing])
}

// BlockProgress is the snapshot's BlockProgress.
func (s *Snapshot) BlockProgress() BlockProgress {
	return BlockProgress{Done: s.BlockDone, Running: s.BlockRunning, Lost: s.Drops[MapBlockRing]}
}

// Blocks takes a read's block records and what it says of the block ring
// (p), read at now, and returns the runs it finished. A run whose records
// tell how many blocks ran the probes (their launch's blocks and weight:
// ptx.BlocksSampled) is over once it has them all, at once; while some
// are missing it stays open, though other launches' blocks end, until
// none ends and none runs for QuietClose, or a fresh read finds that the
// ring lost records since the read before it opened, or none of its own
// came for MaxQuietRunning. Any other run (and a launch's later run after
// one of it ended without all its blocks) is over at a
// read where blocks ended (done moved) but none of its own, or once done
// stood still for QuietClose with no block running, or for
// MaxQuietRunning.
func (t *Tracker) Blocks(blocks []Block, p BlockProgress, now time.Time) []Run {
	fresh := p.Done != t.done
	if fresh || t.moved.IsZero() {
		t.done, t.moved = p.Done, now
	}
	quiet := now.Sub(t.moved)
	// Claims still pending after MaxQuietRunning of nothing ending are
	// stuck (a block that never wrote its record: a fault, a thread that
	// left by trap): they hold no later launch open.
	t.stuck = min(t.stuck, p.Running)
	still := quiet >= QuietClose && p.Running == t.stuck || quiet >= MaxQuietRunning
	if quiet >= MaxQuietRunning {
		t.stuck = p.Running
	}
	var done []Run
	got := map[launchKey]bool{}
	for _, b := range blocks {
		k := launchKey{b.KernelID, b.GridID}
		got[k] = true
		o := t.open[k]
		again := o != nil && (o.seen[b.Block] || len(o.Blocks) >= MaxOpenBlocks)
		if again {
			done = append(done, o.finish())
			o = nil
		}
		if o == nil {
			// lost: the read before's, so that records lost in this
			// read (this launch's own, it may be) end it when missed
			o = &openRun{Run: Run{KernelID: b.KernelID, GridID: b.GridID, FirstStart: b.StartNS}, seen: map[uint64]bool{}, lost: t.lost}
			// a launch's later run (a block id again: a corrupt ring;
			// past MaxOpenBlocks; after a run of it ended without all
			// its blocks) cannot have them all
			if !again && !t.partial[k] {
				o.want = sampled(b.GridBlocks, b.Weight)
			}
			t.open[k] = o
		}
		if len(o.Blocks) > 0 && (b.GridBlocks != o.Blocks[0].GridBlocks || b.Weight != o.Blocks[0].Weight) {
			o.want = 0 // records that disagree: the launch's blocks not known
		}
		o.seen[b.Block] = true
		o.last = now
		o.Blocks = append(o.Blocks, b)
		o.FirstStart = min(o.FirstStart, b.StartNS)
		o.LastEnd = max(o.LastEnd, b.EndNS)
		o.Threads += uint64(b.Threads)
	}
	for k, o := range t.open {
		var end bool
		switch {
		case o.want > 0 && len(o.seen) >= o.want:
			end = true // all of them
		case o.want > 0:
			end = !got[k] && (still || fresh && p.Lost != o.lost || now.Sub(o.last) >= MaxQuietRunning)
		default:
			end = !got[k] && (fresh || still)
		}
		if end {
			if o.want > 0 && len(o.seen) < o.want {
				// its later blocks, if they come, are a run that
				// cannot have them all
				if len(t.partial) >= maxPartial {
					clear(t.partial)
				}
				t.partial[k] = true
			}
			done = append(done, o.finish())
			delete(t.open, k)
		}
	}
	t.lost = p.Lost
	sortRuns(done)
	return done
}

// sampled is how many of a launch's blocks ran the probes, at weight w
// (devrt/ptx's hash: the block weight n of ptx.BlockSampled is the 1 in n
// of sampling by launch too), or 0 when not known or more than a run
// keeps (MaxOpenBlocks: its records could never all be in one run).
func sampled(blocks uint64, w uint32) int {
	if blocks == 0 || blocks > ptx.MaxCountedBlocks || w == 0 || w > MaxWeight {
		return 0
	}
	n := ptx.BlocksSampled(blocks, w)
	if n > MaxOpenBlocks {
		return 0
	}
	return int(n)
}

// Flush returns the runs still open (the region is going away).
func (t *Tracker) Flush() []Run {
	var done []Run
	for k, o := range t.open {
		done = append(done, o.finish())
		delete(t.open, k)
	}
	sortRuns(done)
	return done
}

func (o *openRun) finish() Run {
	r := o.Run
	sort.SliceStable(r.Blocks, func(i, j int) bool { return r.Blocks[i].StartNS < r.Blocks[j].StartNS })
	return r
}

func sortRuns(rs []Run) {
	sort.Slice(rs, func(i, j int) bool {
		return rs[i].FirstStart < rs[j].FirstStart || rs[i].FirstStart == rs[j].FirstStart && rs[i].KernelID < rs[j].KernelID
	})
}

// SMs takes a read's per-SM totals and returns the work since the last
// read. Totals that went down (a region reused) count from zero.
func (t *Tracker) SMs(totals []SMLoad) SMBalance {
	var delta []SMLoad
	for _, s := range totals {
		p := t.sms[s.SM]
		d := SMLoad{SM: s.SM, Blocks: sub(s.Blocks, p.Blocks), Threads: sub(s.Threads, p.Threads), LaneNS: sub(s.LaneNS, p.LaneNS)}
		t.sms[s.SM] = s
		delta = append(delta, d)
	}
	return Balance(delta)
}

// Balance sums per-SM work (of one or several regions of a process) into
// SMs 0 to the highest SM with work, and its imbalance.
func Balance(loads []SMLoad) SMBalance {
	var b SMBalance
	top := -1
	sum := map[uint32]SMLoad{}
	for _, d := range loads {
		if d.Blocks|d.Threads|d.LaneNS == 0 {
			continue
		}
		s := sum[d.SM]
		s.Blocks += d.Blocks
		s.Threads += d.Threads
		s.LaneNS += d.LaneNS
		sum[d.SM] = s
		top = max(top, int(d.SM))
	}
	if top < 0 {
		return b
	}
	var total, most float64
	for sm := 0; sm <= top; sm++ {
		d := sum[uint32(sm)]
		d.SM = uint32(sm)
		b.SMs = append(b.SMs, d)
		total += float64(d.LaneNS)
		most = max(most, float64(d.LaneNS))
	}
	if total > 0 {
		b.Imbalance = most / (total / float64(len(b.SMs)))
	}
	return b
}

// clockBucket is the bucket the GPU's clock had at least reached when the
// copy a read began from was taken, from the host's clock since an earlier
// read saw a bucket written (0: not known). fresh, the newest bucket of
// the slots written since the last read (0: none), is the anchor of later
// reads when it says more than the anchor held: the GPU was in it before
// the read ended. An anchor more than a lap ahead of a bucket just written
// came from a bad epoch (a region's hostile bytes, a timer that stepped
// back) and is dropped, so one bad slot does not make every later bucket
// look over.
func (t *Tracker) clockBucket(fresh uint64, lap uint32, clk ReadClock) uint64 {
	at := func(h uint64) uint64 { // the anchor's bound at host time h >= its own
		d := h - t.occAnchorHost
		return t.occAnchorGPU + d - d/maxDrift
	}
	if t.occAnchorHost != 0 && fresh != 0 && clk.Now > t.occAnchorHost && at(clk.Now)>>OccShift > fresh+uint64(lap) {
		t.occAnchorGPU, t.occAnchorHost = 0, 0
	}
	var b uint64
	if t.occAnchorHost != 0 && clk.CopyStart > t.occAnchorHost {
		b = at(clk.CopyStart) >> OccShift
	}
	if clk.Now != 0 && fresh != 0 && (t.occAnchorHost == 0 || clk.Now > t.occAnchorHost && fresh<<OccShift > at(clk.Now)) {
		t.occAnchorGPU, t.occAnchorHost = fresh<<OccShift, clk.Now
	}
	return b
}

func sub(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return a - b
}

// Occupancy takes a read's occupancy slots (Snapshot's Occupancy and
// OccSlots: lap slots per SM, bucket b in slot b % lap) and when they are
// from (clk) and returns the buckets that are complete (older than the
// newest bucket any SM holds, or than the GPU's clock when the copy read
// began), known and not reported before, by bucket then SM.
//
// A slot's counts are cumulative over its buckets, so a bucket's are the
// slot's at a read after it was over minus the slot's at the last read
// before it began. That read's counts are the bucket's start when nothing
// could be written to the slot between them and the bucket: when the
// slot's bucket one lap earlier was already over at that read (older than
// its newest), which holds whenever the tracker reads at least once a lap
// (~268 ms; devrt copies the region every 100 ms by default), whatever the
// slot held before, idle laps included. It holds too when less than a lap
// passed, by the host's clock, from the copy the last read began from to
// the end of this read (clk: devrt notes when each copy began; the GPU's
// clock runs at the host's rate, to 1/maxDrift): a slot then took writes
// of one bucket at most between them, the one it now holds. And how far
// the GPU's clock had gone at a read (which buckets are over) is the
// newest bucket it saw or, when the GPU wrote nothing for a while, what
// the host's clock says since a bucket was seen written (clockBucket).
// Without clk, work in bursts more than a lap apart (a program idle
// between steps) gave no point until a burst's second read, and a burst's
// last bucket none until the next burst. A slot first seen counts from zero
// if an earlier read found it unwritten (by the same rule); one that
// already held counts at the tracker's first read (a collector started
// while the program ran) gives no point until its next bucket. A read
// that comes more than a lap after the one before loses the buckets it
// cannot tell apart: the probes' counts are never lost, only which bucket
// they belong to. Limits, from the probes: counts added
// before a bucket's first mark on its SM (a warp that entered late in it)
// go to the slot's next bucket or its base, and a warp held up a whole lap
// between its clock read and its mark (preempted) can hide its bucket's
// first counts in the base.
//
// A bucket's counts are those of the threads that entered or left in it
// (warp_occupancy.bpf.c); the threads resident through it come from the
// buckets before. resident (Snapshot.OccResident) is each SM's threads
// resident when the copy was taken, exactly (entries less exits since
// the region began); less what the newest bucket has added so far, it is
// the threads resident at that bucket's start, and each bucket reported
// at this read started from that less the buckets after it (a lost
// bucket errs only the points before it, at that read). Where the newest
// bucket's start is not known (its slot's count began before the read
// could tell: reads more than a lap apart), the SM has no point at that
// read. An SM with no bucket to report but threads resident (a block
// running for seconds, nothing entering or leaving) gets a point for the
// bucket before the newest, its threads over 32: the mean of a bucket
// nothing changed in; and one point of 0 when they have gone (with copy
// times: without, the newest bucket is the newest seen, and an SM's last
// bucket is not over until another is written). An SM's points only move
// forward: a bucket reported as quiet whose counts come later is not
// reported again. A block moved to another SM by preemption leaves its
// threads on the SM it started on and takes them from the one it ends
// on; whenever the SMs' threads add up to 0 (none resident), what each
// holds is taken as its offset. A thread that leaves unseen (trap, exit
// in a called function: devrt/ptx instruments the kernel's own exits)
// stays resident on its SM until the region goes.
func (t *Tracker) Occupancy(slots []Occ, lap uint32, resident []uint64, clk ReadClock) []OccPoint {
	if lap == 0 {
		return nil
	}
	if clk.CopyStart > clk.Now {
		clk.CopyStart = 0 // a copy after the read: not this host's clock (a time namespace?) or not devrt's
	}
	var seen, fresh uint64
	var last *occSM // the slots' SM as last read (Read gives an SM's slots in a row)
	lastID := ^uint32(0)
	for i := range slots {
		o := &slots[i]
		if !ownBucket(o.Bucket, o.Slot, lap) {
			continue
		}
		seen = max(seen, o.Bucket)
		if o.SM != lastID {
			last, lastID = t.occ[o.SM], o.SM
			if last != nil && len(last.bucket) != int(lap) {
				last = nil
			}
		}
		if last == nil || last.bucket[o.Slot] != o.Bucket {
			fresh = max(fresh, o.Bucket)
		}
	}
	newest := max(seen, t.clockBucket(fresh, lap, clk))
	prev := t.occNewest
	// Less than a lap (less a bucket: a lap's buckets of one slot are that
	// far apart) from the copy the last read began from to the end of this
	// read (which bounds any copy under way): a slot took one bucket at
	// most between them.
	span := uint64(lap-1) * BucketNS
	short := t.occPrevCopy != 0 && clk.Now > t.occPrevCopy && clk.Now-t.occPrevCopy < span-span/maxDrift
	t.occPrevCopy = clk.CopyStart
	// This read's complete buckets, by SM: their own counts (mod 2^64).
	type raw struct {
		bucket          uint64
		threads, laneNS int64
	}
	got := map[uint32][]raw{}
	report := func(sm uint32, b occCounts, o Occ) {
		got[sm] = append(got[sm], raw{o.Bucket, int64(o.Threads - b.threads), int64(o.LaneNS - b.laneNS)})
	}
	// What each SM's newest bucket has added so far (its slot's count
	// since the bucket began), or that it is not known.
	type newestAdded struct {
		threads int64
		unknown bool
	}
	added := map[uint32]*newestAdded{}
	var sm *occSM
	smID := uint32(0)
	for _, o := range slots {
		if !ownBucket(o.Bucket, o.Slot, lap) {
			continue // not the map's (Read leaves such slots out)
		}
		if sm == nil || o.SM != smID { // Read gives an SM's slots in a row
			sm, smID = t.occ[o.SM], o.SM
		}
		if sm == nil || len(sm.bucket) != int(lap) {
			sm = &occSM{bucket: make([]uint64, lap), threads: make([]uint64, lap), laneNS: make([]uint64, lap),
				pending: map[uint32]occCounts{}}
			t.occ[o.SM] = sm
		}
		k := o.Slot
		lastBucket, last := sm.bucket[k], occCounts{sm.threads[k], sm.laneNS[k]}
		// The bucket one lap before o's was over at the last read, or
		// the reads' copies are less than a lap apart: nothing but o's
		// bucket came between that read and this one.
		clean := o.Bucket-uint64(lap) < prev || short
		known := false
		switch {
		case lastBucket == 0:
			// Not seen before: from zero if the last read found it
			// unwritten (none at the first read: prev is 0).
			known = clean
		case o.Bucket > lastBucket:
			known = clean
			delete(sm.pending, k) // its bucket never came to an end in a read: lost
		default:
			// The same bucket, or an older one a late warp stored
			// (epochs only grow).
			o.Bucket = lastBucket
			if b, ok := sm.pending[k]; ok && o.Bucket < newest {
				report(o.SM, b, o)
				delete(sm.pending, k)
			}
		}
		if known {
			if o.Bucket < newest {
				report(o.SM, last, o)
			} else {
				sm.pending[k] = last
			}
		}
		if o.Bucket >= newest {
			a := added[o.SM]
			if a == nil {
				a = &newestAdded{}
				added[o.SM] = a
			}
			if b, ok := sm.pending[k]; ok {
				a.threads += int64(o.Threads - b.threads)
			} else {
				a.unknown = true
			}
		}
		sm.bucket[k], sm.threads[k], sm.laneNS[k] = o.Bucket, o.Threads, o.LaneNS
	}
	t.occNewest = newest
	// Each SM's threads resident less its offset: a block that moved to
	// another SM (preemption) left its threads on the first and took them
	// from the second; when the SMs' threads add up to 0, none is
	// resident anywhere, and what each SM holds is its offset.
	if len(t.occOffset) != len(resident) {
		t.occOffset = make([]int64, len(resident))
	}
	var sum int64
	for _, r := range resident {
		sum += int64(r)
	}
	if sum == 0 {
		for id, r := range resident {
			t.occOffset[id] = int64(r)
		}
	}
	var out []OccPoint
	point := func(id uint32, sm *occSM, bucket uint64, from int64, r raw) {
		// the threads resident from the start, over the whole bucket,
		// and what entered or left in it (never below 0: a corrupt
		// region, a count off by preemption)
		w := max(0, (float64(from)*BucketNS+float64(r.laneNS))/32/BucketNS)
		out = append(out, OccPoint{SM: id, Bucket: bucket, Warps: w, Threads: r.threads})
		sm.out, sm.outWarps = bucket, w
	}
	for id, sm := range t.occ {
		a := added[id]
		if len(sm.bucket) != int(lap) || int(id) >= len(resident) || a != nil && a.unknown {
			continue // the newest bucket's start not known: no point
		}
		// at the newest bucket's start, and back from there
		at := int64(resident[id]) - t.occOffset[id]
		if a != nil {
			at -= a.threads
		}
		pts := got[id]
		slices.SortFunc(pts, func(a, b raw) int { return cmp.Compare(a.bucket, b.bucket) })
		from := at
		for _, r := range pts {
			from -= r.threads
		}
		for _, r := range pts {
			if r.bucket > sm.out { // an SM's points only move forward
				point(id, sm, r.bucket, from, r)
			}
			from += r.threads
		}
		if len(pts) == 0 && newest > 1 && sm.out < newest-1 && (at != 0 || sm.outWarps != 0) {
			point(id, sm, newest-1, at, raw{})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Bucket < out[j].Bucket || out[i].Bucket == out[j].Bucket && out[i].SM < out[j].SM
	})
	return out
}
