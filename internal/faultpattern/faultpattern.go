package faultpattern

import (
	"math"
	"math/bits"
	"strconv"
)

// Pattern is the access pattern of a fault stream.
type Pattern uint8

// The patterns. Their String forms are the values exported as attributes.
const (
	// Unknown: too few samples (or too few distinct consecutive pages) to
	// say anything.
	Unknown Pattern = iota
	// Sequential: a sweep through memory about one page at a time,
	// ascending or descending.
	Sequential
	// Strided: a sweep with a dominant constant step of more than one page.
	Strided
	// Random: none of the structures above.
	Random
	// HotSet: most faults hit pages already faulted earlier in the window,
	// a small working set refaulted again and again (thrashing).
	HotSet
)

var patternNames = [...]string{"unknown", "sequential", "strided", "random", "hot_set"}

// String returns "unknown", "sequential", "strided", "random" or "hot_set".
func (p Pattern) String() string {
	if int(p) < len(patternNames) {
		return patternNames[p]
	}
	return "Pattern(" + strconv.Itoa(int(p)) + ")"
}

// Defaults of Options.
const (
	// DefaultWindow is the number of most recent samples classified.
	DefaultWindow = 1024
	// DefaultPageSize is the fault granularity: UVM services faults on
	// 4 KiB pages.
	DefaultPageSize = 4096
	// DefaultMinSamples is the number of samples below which Classify
	// answers Unknown.
	DefaultMinSamples = 64
	// DefaultReuseDistance is the fewest touches between two faults of a
	// page for the second to count as a refault. Closer repeats are one
	// access reported again: UVM fetches up to 256 faults per batch
	// (uvm_perf_fault_batch_count), and warps that fault on a page before
	// its migration completes fault again in the next batch.
	DefaultReuseDistance = 64
	// MaxWindow bounds Options.Window (positions are stored in 31 bits).
	MaxWindow = 1 << 20
	// MaxPageSize bounds Options.PageSize: 1 GiB, the largest GPU page.
	MaxPageSize = 1 << 30
)

// Decision thresholds. Every fraction below is measured on the window as
// described in the package documentation.
const (
	// minTouches is the fewest touches (samples left after merging
	// consecutive reports of one page) that can show a pattern: a window
	// of one page reported over and over is Unknown.
	minTouches = 8

	// confidentTouches is the number of touches from which sample size no
	// longer limits confidence. Below it confidence is scaled by
	// sqrt(touches/confidentTouches): the standard error of a fraction
	// shrinks as 1/sqrt(n), so 64 touches give half the confidence of 256.
	confidentTouches = 256

	// hotSetMinReuse is the fraction of touches that must revisit a page
	// first touched more than ReuseDistance touches earlier for the window
	// to be a hot set. Uniform random faults over a large range revisit
	// almost nothing (birthday collisions: ~0.2% for 1024 faults over
	// 1 GiB); a sweep revisits nothing.
	hotSetMinReuse = 0.5

	// hotSetFullReuse is the reuse fraction at which a hot set gets full
	// confidence. A finite window cannot reach 1: the first touch of every
	// page, and every touch in the first ReuseDistance, are not reuses; a
	// 64-page set in a 1024 window peaks near 0.87.
	hotSetFullReuse = 0.8

	// strideMinShare is the share of the gaps between consecutive distinct
	// pages (in address order) that the most common gap must have for the
	// window to be a stride candidate. A sequential stream with 30% of its
	// faults removed by prefetch has gap 1 at ~70%; with random removal the
	// most common gap stays 1 until more than half the faults are gone.
	strideMinShare = 0.5

	// sweepMinEvidence is the sweep evidence (the fraction of the window's
	// distinct pages that lie on directed, locally consistent runs) needed
	// to call the window sequential or strided. Below it the window is
	// random: a window half sequential, half random is still random, which
	// makes the classification follow a change of behaviour once the new
	// behaviour fills ~half of the window.
	sweepMinEvidence = 0.6

	// adjacentPages is how close (in pages, either way) a touch must be to
	// the one before it to count as a local step of a sweep.
	adjacentPages = 4
	// parallelMinAdjacency and parallelFullAdjacency: a GPU kernel sweeps a
	// buffer with many thread blocks at once, so its faults come as short
	// ascending runs from many places interleaved (seen on an H200: runs of
	// about four pages from some thirty points of a 16 MiB buffer). A window
	// whose distinct pages are dense (most common gap one page, share at
	// least strideMinShare) and whose consecutive touches are adjacent at
	// least this often is such a parallel sweep: Sequential. A dense random
	// permutation has almost no adjacent steps (about 8/n) and stays Random.
	// Confidence reaches its top at parallelFullAdjacency.
	parallelMinAdjacency  = 0.2
	parallelFullAdjacency = 0.3
	// parallelMinDensity: the distinct pages must also cover at least this
	// share of their address span. The H200's sweep covered a third of it
	// (UVM's prefetcher serves the rest without faults); short sequential
	// chunks scattered over a large range cover a sliver, and are Random.
	parallelMinDensity = 0.1
	// frontLookback, frontMinContinuity and frontFullContinuity: a sweep of
	// a buffer much larger than the window (64 MiB on an H200: 67 runs of
	// about 11 pages over 15489 pages in a window of 1024 faults) is
	// neither dense nor adjacent touch to touch, but each of its concurrent
	// fronts continues: the page just below (or above) a touch was first
	// touched a few dozen touches earlier, by the same front. A sparse
	// window (density under parallelMinDensity) whose pages mostly sit next
	// to each other (most common gap one page), whose consecutive touches
	// are not adjacent (adjacency under parallelMinAdjacency: the fronts
	// interleave), and whose touches continue a page at most adjacentPages
	// away, first touched at most frontLookback touches before, this often,
	// is a parallel sweep. Random faults over a sparse range continue
	// almost nothing (frontLookback*2*adjacentPages/span: 13% over 64 MiB);
	// dense random windows are excluded by their density, short chunks read
	// one after the other by their adjacency. Short chunks gathered by many
	// threads at once look like such a sweep in one window; the window's
	// next faults tell them apart.
	frontLookback       = 256
	frontMinContinuity  = 0.5
	frontFullContinuity = 0.8

	// minLag is the shortest lag, in distinct pages, at which sweeps are
	// looked for: runs shorter than about 2*minLag pages are not sweeps.
	minLag = 8

	// maxSpread is how far apart, in units of the step (one page, or the
	// stride), pages lag ranks apart may lie and still be on one run: a run
	// may skip up to 3 of every 4 steps, as when prefetching removes most
	// of the faults of a sweep.
	maxSpread = 4
)

// Options configure a Classifier. Zero values take the defaults.
type Options struct {
	// Window is the number of most recent samples kept and classified;
	// default 1024, at most MaxWindow.
	Window int
	// PageSize is the granularity, in bytes, at which addresses are
	// compared: the unit of "one page" for Sequential, of strides and of
	// WorkingSetPages. Default 4096, UVM's migration unit. Set it to the
	// granularity at which the driver reports faults: on GPUs that report
	// per 64 KiB big page, a sweep seen at 4 KiB is Strided by 64 KiB. A
	// size that is not a power of two is rounded down to one; at most
	// MaxPageSize.
	PageSize uint64
	// MinSamples is the number of samples below which Classify returns
	// Unknown; default 64, at most Window.
	MinSamples int
	// ReuseDistance is the fewest touches between two faults of a page for
	// the second to be a refault (see DefaultReuseDistance); default 64,
	// capped at an eighth of the samples in the window so that a short
	// window can still show reuse.
	ReuseDistance int
}

// Sample is one GPU page fault.
type Sample struct {
	// Addr is the faulting virtual address.
	Addr uint64
	// Write reports a write (or atomic) access; it is counted in
	// Result.WriteFraction and plays no part in the pattern.
	Write bool
	// TimeNs orders the samples: the window is analysed in TimeNs order,
	// ties (and streams whose TimeNs are all zero) in order of Add. Feed
	// the GPU's own fault timestamp (UVM tools' timeStampGpu) to undo the
	// driver's sorting of each batch by address; the host time of the
	// report (timeStamp) never decreases and leaves the order of Add.
	TimeNs uint64
}

// Result is the classification of the window.
type Result struct {
	Pattern Pattern
	// Confidence in [0,1]: the fraction of the window that the pattern
	// explains (for Random: 1 minus the strongest structure found), scaled
	// by sqrt(touches/256) when the window holds fewer than 256 touches
	// (samples left after merging consecutive reports of one page). 0 for
	// Unknown.
	Confidence float64
	// Stride is the step in bytes, negative for a descending sweep: the
	// stride for Strided, ±PageSize for Sequential, 0 otherwise. For
	// several interleaved sweeps the sign is the majority direction.
	Stride int64
	// WorkingSetPages is, for HotSet, the number of distinct pages
	// refaulted in the window (more than ReuseDistance touches after their
	// first fault); 0 otherwise.
	WorkingSetPages int
	// Samples is the number of samples in the window (at most Window).
	Samples int
	// WriteFraction is the fraction of the window's samples that are
	// writes: dirty pages cost a write-back when evicted.
	WriteFraction float64
}

// Classifier keeps the last Window fault samples of one stream (one process
// on one GPU) and classifies them. All memory is allocated by New: Add and
// Classify allocate nothing. A Classifier is not safe for concurrent use.
type Classifier struct {
	opts  Options
	shift uint // log2(PageSize)

	// The ring of samples, as parallel arrays. head is the next slot
	// written; n the number of samples held.
	pages  []uint64
	times  []uint64
	writes []bool
	head   int
	n      int

	// Scratch reused by Classify.
	orderT   []uint64 // TimeNs of the window's samples, then sorted
	orderA   []uint32 // their arrival indices (0 = oldest), alike
	distinct []uint64 // distinct pages in order of first touch, then sorted
	firstAt  []uint32 // first-touch index of distinct[i], alike
	tmpK     []uint64 // sortPairs scratch
	tmpV     []uint32
	first    table // page -> first-touch index + 1, reuseFlag
	gaps     table // gap between sorted distinct pages -> count
}

// reuseFlag marks, in the first-touch table, a page already counted as
// refaulted.
const reuseFlag = 1 << 31

// New returns a Classifier with opts, zero fields replaced by defaults and
// out-of-range ones clamped (Options reports the values in use).
func New(opts Options) *Classifier {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	opts.Window = min(opts.Window, MaxWindow)
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	opts.PageSize = min(opts.PageSize, MaxPageSize)
	shift := uint(63 - bits.LeadingZeros64(opts.PageSize))
	opts.PageSize = 1 << shift
	if opts.MinSamples <= 0 {
		opts.MinSamples = DefaultMinSamples
	}
	opts.MinSamples = min(opts.MinSamples, opts.Window)
	if opts.ReuseDistance <= 0 {
		opts.ReuseDistance = DefaultReuseDistance
	}
	opts.ReuseDistance = min(opts.ReuseDistance, opts.Window)
	w := opts.Window
	c := &Classifier{
		opts:     opts,
		shift:    shift,
		pages:    make([]uint64, w),
		times:    make([]uint64, w),
		writes:   make([]bool, w),
		orderT:   make([]uint64, w),
		orderA:   make([]uint32, w),
		distinct: make([]uint64, 0, w),
		firstAt:  make([]uint32, 0, w),
		tmpK:     make([]uint64, w),
		tmpV:     make([]uint32, w),
	}
	c.first.init(w)
	c.gaps.init(w)
	return c
}

// Options returns the options in use, defaults filled in.
func (c *Classifier) Options() Options { return c.opts }

// Add appends s to the window, dropping the oldest sample when it is full.
func (c *Classifier) Add(s Sample) {
	c.pages[c.head] = s.Addr >> c.shift
	c.times[c.head] = s.TimeNs
	c.writes[c.head] = s.Write
	c.head++
	if c.head == len(c.pages) {
		c.head = 0
	}
	if c.n < len(c.pages) {
		c.n++
	}
}

// Reset empties the window.
func (c *Classifier) Reset() {
	c.head, c.n = 0, 0
}

// Classify classifies the samples in the window. It runs in O(N) for a
// window of N samples, with radix sorts of the distinct pages and (when they
// were not added in TimeNs order) of the samples by TimeNs, and allocates
// nothing.
func (c *Classifier) Classify() Result {
	n := c.n
	r := Result{Samples: n}
	if n == 0 {
		return r
	}
	w := len(c.pages)
	start := c.head - n
	if start < 0 {
		start += w
	}

	// Analysis order: arrival order, sorted by TimeNs if it is not
	// already in TimeNs order.
	writes := 0
	for i := range n {
		s := start + i
		if s >= w {
			s -= w
		}
		c.orderT[i], c.orderA[i] = c.times[s], uint32(i)
		if c.writes[s] {
			writes++
		}
	}
	r.WriteFraction = float64(writes) / float64(n)
	if n < c.opts.MinSamples {
		return r
	}
	order := c.orderA[:n]
	sortPairs(c.orderT[:n], order, c.tmpK, c.tmpV)

	// Touches: the samples with consecutive reports of one page merged
	// (UVM reports a fault's merged duplicate instances one after the
	// other). For each, whether it refaults a page first touched more than
	// k touches earlier: ReuseDistance, but at most an eighth of the
	// window, so that a short window can still show reuse.
	k := uint32(min(c.opts.ReuseDistance, max(1, n/8)))
	c.first.reset()
	distinct, firstAt := c.distinct[:0], c.firstAt[:0]
	var prev uint64
	var touches, far, adjUp, adjDown, contUp, contDown uint32
	reused := 0
	for i, o := range order {
		s := start + int(o)
		if s >= w {
			s -= w
		}
		p := c.pages[s]
		if i > 0 && p == prev {
			continue
		}
		if touches > 0 {
			switch {
			case p > prev && p-prev <= adjacentPages:
				adjUp++
			case p < prev && prev-p <= adjacentPages:
				adjDown++
			}
		}
		prev = p
		j := touches
		touches++
		up, down := c.continues(p, j)
		if up {
			contUp++
		} else if down {
			contDown++
		}
		slot, found := c.first.slot(p)
		if !found {
			c.first.keys[slot] = p
			c.first.vals[slot] = j + 1
			distinct = append(distinct, p)
			firstAt = append(firstAt, j)
			continue
		}
		v := c.first.vals[slot]
		if j-(v&^reuseFlag-1) > k {
			far++
			if v&reuseFlag == 0 {
				c.first.vals[slot] = v | reuseFlag
				reused++
			}
		}
	}
	c.distinct, c.firstAt = distinct, firstAt
	if touches < minTouches {
		return r
	}
	sizeFactor := math.Sqrt(min(1, float64(touches)/confidentTouches))

	reuse := float64(far) / float64(touches)
	if reuse >= hotSetMinReuse {
		r.Pattern = HotSet
		r.WorkingSetPages = reused
		r.Confidence = clamp01(sizeFactor * min(1, reuse/hotSetFullReuse))
		return r
	}

	// Spatial structure: the distinct pages in address order and the most
	// common gap between neighbours. Reordering cannot hide it.
	sortPairs(distinct, firstAt, c.tmpK, c.tmpV)
	d := len(distinct)
	c.gaps.reset()
	var gap uint64
	var gapCount uint32
	for i := 1; i < d; i++ {
		g := distinct[i] - distinct[i-1]
		slot, found := c.gaps.slot(g)
		if !found {
			c.gaps.keys[slot] = g
		}
		c.gaps.vals[slot]++
		cnt := c.gaps.vals[slot]
		if cnt > gapCount || (cnt == gapCount && g < gap) {
			gap, gapCount = g, cnt
		}
	}
	gapShare := 0.0
	if d > 1 {
		gapShare = float64(gapCount) / float64(d-1)
	}
	pageSize := c.opts.PageSize
	strideCandidate := gap > 1 && gapShare >= strideMinShare &&
		gap <= uint64(math.MaxInt64)/pageSize
	unit := uint64(1)
	if strideCandidate {
		unit = gap
	}

	// Temporal structure along the address order.
	evidence, ascending := sweep(distinct, firstAt, unit)

	// A parallel sweep: dense pages, many short local runs (see
	// parallelMinAdjacency).
	adjacency := float64(adjUp+adjDown) / float64(touches-1)
	density := float64(d) / float64(distinct[d-1]-distinct[0]+1)
	continuity := float64(contUp+contDown) / float64(touches)
	if evidence < sweepMinEvidence && gap == 1 && gapShare >= strideMinShare {
		local := adjacency >= parallelMinAdjacency && density >= parallelMinDensity
		fronts := continuity >= frontMinContinuity && density < parallelMinDensity &&
			adjacency < parallelMinAdjacency
		if local || fronts {
			r.Pattern = Sequential
			score := 0.0
			if local {
				score = min(1, adjacency/parallelFullAdjacency)
			}
			if fronts {
				score = max(score, min(1, continuity/frontFullContinuity))
			}
			r.Confidence = clamp01(sizeFactor * gapShare * score)
			r.Stride = int64(pageSize)
			if adjDown+contDown > adjUp+contUp {
				r.Stride = -r.Stride
			}
			return r
		}
	}

	if evidence < sweepMinEvidence {
		r.Pattern = Random
		structure := max(evidence, min(1, reuse/hotSetMinReuse))
		r.Confidence = clamp01(sizeFactor * (1 - structure))
		return r
	}
	step := int64(pageSize)
	if strideCandidate {
		r.Pattern = Strided
		step = int64(gap * pageSize)
		r.Confidence = clamp01(sizeFactor * evidence * gapShare)
	} else {
		r.Pattern = Sequential
		r.Confidence = clamp01(sizeFactor * evidence)
	}
	if !ascending {
		step = -step
	}
	r.Stride = step
	return r
}

// continues reports whether touch j (of page p) continues an ascending
// (up) or descending (down) front: a page at most adjacentPages below
// (above) p was first touched in the frontLookback touches before j.
func (c *Classifier) continues(p uint64, j uint32) (up, down bool) {
	near := func(q uint64) bool {
		slot, found := c.first.slot(q)
		if !found {
			return false
		}
		at := c.first.vals[slot]&^reuseFlag - 1
		return at < j && j-at <= frontLookback
	}
	for d := uint64(1); d <= adjacentPages; d++ {
		if p >= d && near(p-d) {
			return true, false
		}
	}
	for d := uint64(1); d <= adjacentPages; d++ {
		if p+d > p && near(p+d) {
			return false, true
		}
	}
	return false, false
}

// sweep measures how much of the window is a sweep with the given step (in
// pages), at every lag from minLag to a quarter of the distinct pages,
// doubling (see sweepAt). evidence is the largest evidence found: a short
// lag sees short runs and several interleaved streams, a long lag sees
// through heavy reordering. ascending is the majority direction at the
// longest lag at which at least a quarter of the pairs are run pairs, which
// is the lag that sees furthest past the driver's per-batch sorting; at the
// lag of the best evidence if there is none.
func sweep(u []uint64, t []uint32, unit uint64) (evidence float64, ascending bool) {
	d := len(u)
	if d < 2 {
		return 0, true
	}
	top := max(1, d/4)
	bestAsc, longAsc, haveLong := true, true, false
	for lag := min(minLag, top); lag <= top; lag *= 2 {
		ev, runs, up, down := sweepAt(u, t, unit, lag)
		if ev > evidence {
			evidence, bestAsc = ev, up >= down
		}
		if 4*runs >= d-lag {
			longAsc, haveLong = up >= down, true
		}
	}
	if haveLong {
		return evidence, longAsc
	}
	return evidence, bestAsc
}

// sweepAt pairs each distinct page u[i] (in address order) with the page
// lag ranks further, u[i+lag]. The pair is a run pair if the two pages lie
// at most lag*unit*maxSpread pages apart, and its direction is the order in
// which they were first touched (t). Reordering that moves faults by fewer
// than lag distinct pages cannot change that order, whereas in a window
// touched in no particular order each run pair gets a random direction.
// evidence is the fraction of pairs that are run pairs times the
// consistency of the directions of consecutive run pairs,
// 2*agree/(agree+disagree) - 1: 0 for random directions, 1 for a sweep.
// Comparing neighbours rather than counting a global majority lets several
// interleaved sweeps, even in opposite directions, each count.
func sweepAt(u []uint64, t []uint32, unit uint64, lag int) (evidence float64, runs, up, down int) {
	d := len(u)
	limit := uint64(math.MaxUint64)
	if span := uint64(lag) * maxSpread; unit <= math.MaxUint64/span {
		limit = unit * span
	}
	var agree, disagree int
	prev := 0 // direction of the previous pair if it was a run pair
	uh, th := u[lag:], t[lag:len(u)]
	u, t = u[:len(uh)], t[:len(uh)]
	for i := range uh {
		if uh[i]-u[i] > limit {
			prev = 0
			continue
		}
		runs++
		dir := 1
		if th[i] < t[i] {
			dir = -1
			down++
		} else {
			up++
		}
		if prev != 0 {
			if dir == prev {
				agree++
			} else {
				disagree++
			}
		}
		prev = dir
	}
	if agree+disagree == 0 {
		return 0, runs, up, down
	}
	consistency := 2*float64(agree)/float64(agree+disagree) - 1
	return float64(runs) / float64(d-lag) * max(0, consistency), runs, up, down
}

func clamp01(x float64) float64 {
	if !(x > 0) { // also NaN
		return 0
	}
	return min(x, 1)
}
