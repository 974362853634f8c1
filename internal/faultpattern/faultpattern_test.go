package faultpattern

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	kib  = 1 << 10
	mib  = 1 << 20
	gib  = 1 << 30
	page = 4 * kib
	// base is where the synthetic tensors live, 2 MiB aligned like
	// cudaMallocManaged allocations.
	base = uint64(0x7f00_0000_0000)
)

// stream builds a fault stream from addresses, with increasing TimeNs.
func stream(addrs []uint64) []Sample {
	s := make([]Sample, len(addrs))
	for i, a := range addrs {
		s[i] = Sample{Addr: a, TimeNs: uint64(i+1) * 1000}
	}
	return s
}

// strided returns n addresses from start, step bytes apart.
func strided(start uint64, n int, step int64) []uint64 {
	a := make([]uint64, n)
	for i := range a {
		a[i] = start + uint64(int64(i)*step)
	}
	return a
}

// shuffled shuffles a within consecutive blocks of size block, like a
// driver servicing each batch out of order.
func shuffled(a []uint64, block int, rng *rand.Rand) []uint64 {
	for lo := 0; lo < len(a); lo += block {
		b := a[lo:min(lo+block, len(a))]
		rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	}
	return a
}

// thinned keeps each address with probability keep until n are kept, like
// prefetching removing faults of a sweep.
func thinned(start uint64, n int, keep float64, rng *rand.Rand) []uint64 {
	a := make([]uint64, 0, n)
	for p := start; len(a) < n; p += page {
		if rng.Float64() < keep {
			a = append(a, p)
		}
	}
	return a
}

// uniform returns n page-aligned addresses uniform over size bytes.
// fronts returns n addresses of k sweeps advancing in turn, one page per
// round, their starts gap pages apart (negative: descending sweeps from
// start down).
func fronts(start uint64, k int, gap int64, n int) []uint64 {
	out := make([]uint64, 0, n)
	dir := int64(1)
	if gap < 0 {
		dir = -1
	}
	for round := int64(0); len(out) < n; round++ {
		for f := 0; f < k && len(out) < n; f++ {
			out = append(out, uint64(int64(start)+(int64(f)*gap+dir*round)*page))
		}
	}
	return out
}

func uniform(start uint64, size uint64, n int, rng *rand.Rand) []uint64 {
	a := make([]uint64, n)
	for i := range a {
		a[i] = start + rng.Uint64N(size/page)*page
	}
	return a
}

// noisy replaces each address with a uniform one over 1 GiB with
// probability p.
func noisy(a []uint64, p float64, rng *rand.Rand) []uint64 {
	for i := range a {
		if rng.Float64() < p {
			a[i] = base + 4*gib + rng.Uint64N(gib/page)*page
		}
	}
	return a
}

// hotSetPages returns n distinct pages scattered over 1 GiB.
func hotSetPages(n int, rng *rand.Rand) []uint64 {
	seen := map[uint64]bool{}
	a := make([]uint64, 0, n)
	for len(a) < n {
		p := base + rng.Uint64N(gib/page)*page
		if !seen[p] {
			seen[p] = true
			a = append(a, p)
		}
	}
	return a
}

// cycled returns n addresses cycling through set in order.
func cycled(set []uint64, n int) []uint64 {
	a := make([]uint64, n)
	for i := range a {
		a[i] = set[i%len(set)]
	}
	return a
}

// sampled returns n addresses drawn uniformly from set.
func sampled(set []uint64, n int, rng *rand.Rand) []uint64 {
	a := make([]uint64, n)
	for i := range a {
		a[i] = set[rng.IntN(len(set))]
	}
	return a
}

// interleaved returns the addresses of streams taken in turn.
func interleaved(streams ...[]uint64) []uint64 {
	var a []uint64
	for i := 0; ; i++ {
		added := false
		for _, s := range streams {
			if i < len(s) {
				a = append(a, s[i])
				added = true
			}
		}
		if !added {
			return a
		}
	}
}

// repeated reports every address times times in a row, as UVM reports the
// merged duplicate instances of a fault.
func repeated(a []uint64, times int) []uint64 {
	r := make([]uint64, 0, len(a)*times)
	for _, x := range a {
		for range times {
			r = append(r, x)
		}
	}
	return r
}

func concat(parts ...[]uint64) []uint64 {
	var a []uint64
	for _, p := range parts {
		a = append(a, p...)
	}
	return a
}

// driverBatches models how UVM reports a sweep: batches of batch faults,
// each sorted by address. With gpuTime, TimeNs is the GPU's timestamp of
// each fault (the order of the sweep); without, the host time of the
// report (the order of the reports).
func driverBatches(a []uint64, batch int, gpuTime bool) []Sample {
	var out []Sample
	for lo := 0; lo < len(a); lo += batch {
		hi := min(lo+batch, len(a))
		idx := make([]int, 0, hi-lo)
		for i := lo; i < hi; i++ {
			idx = append(idx, i)
		}
		// sort the batch's faults by address (insertion sort: small)
		for i := 1; i < len(idx); i++ {
			for j := i; j > 0 && a[idx[j]] < a[idx[j-1]]; j-- {
				idx[j], idx[j-1] = idx[j-1], idx[j]
			}
		}
		for _, i := range idx {
			t := uint64(len(out)+1) * 1000
			if gpuTime {
				t = uint64(i+1) * 1000
			}
			out = append(out, Sample{Addr: a[i], TimeNs: t})
		}
	}
	return out
}

func classify(opts Options, samples []Sample) Result {
	c := New(opts)
	for _, s := range samples {
		c.Add(s)
	}
	return c.Classify()
}

type classifyCase struct {
	name       string
	opts       Options
	samples    []Sample
	want       Pattern
	stride     int64
	workingSet int // checked for HotSet
	minConf    float64
	maxConf    float64
}

// classifyCases are the synthetic streams, their random parts drawn from
// seed.
func classifyCases(seed uint64) []classifyCase {
	n := uint64(0)
	rng := func() *rand.Rand { n++; return rand.New(rand.NewPCG(seed, n)) }
	hot64 := hotSetPages(64, rng())
	var chunks64K, chunks2M []uint64
	r := rng()
	for len(chunks64K) < 1024 {
		chunks64K = append(chunks64K, strided(base+r.Uint64N(gib/(64*kib))*64*kib, 16, page)...)
	}
	for len(chunks2M) < 1024 {
		chunks2M = append(chunks2M, strided(base+r.Uint64N(gib/(2*mib))*2*mib, 512, page)...)
	}
	return []classifyCase{
		{
			name:    "sequential",
			samples: stream(strided(base, 1024, page)),
			want:    Sequential, stride: page, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "sequential shuffled within batches of 32",
			samples: stream(shuffled(strided(base, 1024, page), 32, rng())),
			want:    Sequential, stride: page, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "sequential with 30% of faults removed by prefetch",
			samples: stream(thinned(base, 1024, 0.7, rng())),
			want:    Sequential, stride: page, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "sequential shuffled and thinned",
			samples: stream(shuffled(thinned(base, 1024, 0.7, rng()), 32, rng())),
			want:    Sequential, stride: page, minConf: 0.85, maxConf: 1,
		},
		{
			name:    "descending sequential",
			samples: stream(strided(base+gib, 1024, -page)),
			want:    Sequential, stride: -page, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "descending sequential shuffled within batches of 32",
			samples: stream(shuffled(strided(base+gib, 1024, -page), 32, rng())),
			want:    Sequential, stride: -page, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "sequential with each fault reported 4 times",
			samples: stream(repeated(strided(base, 256, page), 4)),
			want:    Sequential, stride: page, minConf: 0.9, maxConf: 1,
		},
		{
			// Batches sorted ascending although the sweep descends.
			name:    "descending sweep reported in address-sorted batches of 128",
			samples: driverBatches(strided(base+gib, 1024, -page), 128, false),
			want:    Sequential, stride: -page, minConf: 0.85, maxConf: 1,
		},
		{
			// Batches of a quarter window, undone by the GPU timestamps.
			name:    "descending sweep in sorted batches of 256 with GPU timestamps",
			samples: driverBatches(strided(base+gib, 1024, -page), 256, true),
			want:    Sequential, stride: -page, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "stride 64 KiB",
			samples: stream(strided(base, 1024, 64*kib)),
			want:    Strided, stride: 64 * kib, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "stride 2 MiB",
			samples: stream(strided(base, 1024, 2*mib)),
			want:    Strided, stride: 2 * mib, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "stride -128 KiB",
			samples: stream(strided(base+gib, 1024, -128*kib)),
			want:    Strided, stride: -128 * kib, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "stride 8 KiB",
			samples: stream(strided(base, 1024, 8*kib)),
			want:    Strided, stride: 8 * kib, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "stride 64 KiB with 10% random faults",
			samples: stream(noisy(strided(base, 1024, 64*kib), 0.1, rng())),
			want:    Strided, stride: 64 * kib, minConf: 0.6, maxConf: 0.9,
		},
		{
			name:    "stride 64 KiB shuffled within batches of 32",
			samples: stream(shuffled(strided(base, 1024, 64*kib), 32, rng())),
			want:    Strided, stride: 64 * kib, minConf: 0.9, maxConf: 1,
		},
		{
			// 64 KiB faults seen at the 4 KiB granularity are a stride...
			name:    "big-page sweep at 4 KiB granularity",
			samples: stream(strided(base, 1024, 64*kib)),
			opts:    Options{PageSize: 4 * kib},
			want:    Strided, stride: 64 * kib, minConf: 0.9, maxConf: 1,
		},
		{
			// ...and sequential at the 64 KiB granularity.
			name:    "big-page sweep at 64 KiB granularity",
			samples: stream(strided(base, 1024, 64*kib)),
			opts:    Options{PageSize: 64 * kib},
			want:    Sequential, stride: 64 * kib, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "uniform random over 1 GiB",
			samples: stream(uniform(base, gib, 1024, rng())),
			want:    Random, minConf: 0.9, maxConf: 1,
		},
		{
			// A GPU kernel sweeping a buffer with many thread blocks: 32
			// places advance 4 pages at a time, interleaved, and half the
			// pages are served by prefetch (as recorded on an H200).
			name:    "parallel sweep: 32 interleaved short runs, thinned",
			samples: stream(parallelSweep(32, 4, 2048)),
			want:    Sequential, stride: page, minConf: 0.6, maxConf: 1,
		},
		{
			// Every page of 4 MiB once, in random order: dense in space
			// but without direction.
			name:    "random permutation of a dense range",
			samples: stream(shuffled(strided(base, 1024, page), 1024, rng())),
			want:    Random, minConf: 0.8, maxConf: 1,
		},
		{
			name:    "hot set of 64 scattered pages cycled",
			samples: stream(cycled(hot64, 1024)),
			want:    HotSet, workingSet: 64, minConf: 0.95, maxConf: 1,
		},
		{
			name:    "hot set of 64 scattered pages sampled randomly",
			samples: stream(sampled(hot64, 1024, rng())),
			want:    HotSet, workingSet: 64, minConf: 0.95, maxConf: 1,
		},
		{
			name:    "hot set of 64 contiguous pages cycled",
			samples: stream(cycled(strided(base, 64, page), 1024)),
			want:    HotSet, workingSet: 64, minConf: 0.95, maxConf: 1,
		},
		{
			name:    "hot set of 4 pages cycled",
			samples: stream(cycled(hot64[:4], 1024)),
			want:    HotSet, workingSet: 4, minConf: 0.95, maxConf: 1,
		},
		{
			name:    "sequential then random: the window follows the random",
			samples: stream(concat(strided(base, 2048, page), uniform(base+gib, gib, 1024, rng()))),
			want:    Random, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "random then sequential: the window follows the sweep",
			samples: stream(concat(uniform(base+gib, gib, 2048, rng()), strided(base, 1024, page))),
			want:    Sequential, stride: page, minConf: 0.9, maxConf: 1,
		},
		{
			// Mid-transition the window is mixed: the newer 3/4 wins,
			// with the confidence it leaves.
			name:    "sequential then 3/4 window of random",
			samples: stream(concat(strided(base, 2048, page), uniform(base+gib, gib, 768, rng()))),
			want:    Random, minConf: 0.6, maxConf: 0.9,
		},
		{
			name:    "random then 3/4 window of sequential",
			samples: stream(concat(uniform(base+gib, gib, 2048, rng()), strided(base, 768, page))),
			want:    Sequential, stride: page, minConf: 0.6, maxConf: 0.9,
		},
		{
			name:    "hot set then sequential",
			samples: stream(concat(sampled(hot64, 2048, rng()), strided(base, 1024, page))),
			want:    Sequential, stride: page, minConf: 0.9, maxConf: 1,
		},
		{
			name:    "sequential then hot set",
			samples: stream(concat(strided(base, 2048, page), sampled(hot64, 1024, rng()))),
			want:    HotSet, workingSet: 64, minConf: 0.95, maxConf: 1,
		},
		{
			// Two tensors read in lockstep: each is a sweep of its own.
			name: "two sequential streams interleaved",
			samples: stream(interleaved(
				strided(base, 512, page),
				strided(base+gib, 512, page))),
			want: Sequential, stride: page, minConf: 0.85, maxConf: 1,
		},
		{
			name: "two sequential streams interleaved, opposite directions",
			samples: stream(interleaved(
				strided(base, 512, page),
				strided(base+2*gib, 512, -page))),
			want: Sequential, stride: page, minConf: 0.85, maxConf: 1,
		},
		{
			name: "three strided streams interleaved",
			samples: stream(interleaved(
				strided(base, 400, 64*kib),
				strided(base+gib, 400, 64*kib),
				strided(base+2*gib, 400, 64*kib))),
			want: Strided, stride: 64 * kib, minConf: 0.85, maxConf: 1,
		},
		{
			name:    "sequential shuffled within batches of 128",
			samples: stream(shuffled(strided(base, 1024, page), 128, rng())),
			want:    Sequential, stride: page, minConf: 0.9, maxConf: 1,
		},
		{
			// A kernel sweeping 64 MiB with many blocks at once: 40 fronts,
			// 409 pages apart, each advancing a page per round with local
			// reordering, the window seeing ~25 pages of each (as on the
			// H200, fixture managed-64m).
			name:    "parallel sweep of 64 MiB by 40 interleaved fronts",
			samples: stream(shuffled(fronts(base, 40, 409, 1024), 8, rng())),
			want:    Sequential, stride: page, minConf: 0.6, maxConf: 1,
		},
		{
			name:    "parallel descending sweep by 40 interleaved fronts",
			samples: stream(shuffled(fronts(base+gib, 40, -409, 1024), 8, rng())),
			want:    Sequential, stride: -page, minConf: 0.6, maxConf: 1,
		},
		{
			// Runs of 16 pages are too short to be sweeps...
			name:    "random 64 KiB chunks read sequentially",
			samples: stream(chunks64K),
			want:    Random, minConf: 0.3, maxConf: 0.7,
		},
		{
			// ...runs of 512 pages are sweeps.
			name:    "random 2 MiB chunks read sequentially",
			samples: stream(chunks2M),
			want:    Sequential, stride: page, minConf: 0.9, maxConf: 1,
		},
		{
			// Random over 256 pages with 1024 faults: most are refaults.
			name:    "uniform random over 1 MiB",
			samples: stream(uniform(base, mib, 1024, rng())),
			want:    HotSet, workingSet: -1, minConf: 0.75, maxConf: 1,
		},
		{
			name:    "hot set of 16 pages in a window of 128",
			opts:    Options{Window: 128},
			samples: stream(cycled(hot64[:16], 1024)),
			want:    HotSet, workingSet: 16, minConf: 0.5, maxConf: 0.75,
		},
		{
			name:    "too few samples",
			samples: stream(strided(base, 63, page)),
			want:    Unknown,
		},
		{
			name:    "too few samples for MinSamples 200",
			opts:    Options{MinSamples: 200},
			samples: stream(strided(base, 199, page)),
			want:    Unknown,
		},
		{
			name:    "one page reported over and over",
			samples: stream(cycled(hot64[:1], 1024)),
			want:    Unknown,
		},
		{
			name:    "empty",
			samples: nil,
			want:    Unknown,
		},
		{
			// Just enough samples: the pattern, with the confidence of a
			// small sample.
			name:    "minimum samples sequential",
			samples: stream(strided(base, 64, page)),
			want:    Sequential, stride: page, minConf: 0.4, maxConf: 0.6,
		},
	}
}

// TestClassify runs every case with several seeds: the expected pattern
// and stride must not depend on the luck of the draw.
// parallelSweep covers pages [0, pages) of base with `streams` sweeps
// starting evenly apart, each advancing `run` pages per turn, the turns
// interleaved; every other run of each sweep is skipped (prefetched).
func parallelSweep(streams, run, pages int) []uint64 {
	var out []uint64
	per := pages / streams
	for turn := 0; turn*run < per; turn++ {
		for st := 0; st < streams; st++ {
			if turn%2 == 1 {
				continue
			}
			for k := 0; k < run; k++ {
				out = append(out, base+uint64(st*per+turn*run+k)*page)
			}
		}
	}
	return out
}

func TestClassify(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		for _, tt := range classifyCases(seed) {
			t.Run(fmt.Sprintf("%s/seed=%d", tt.name, seed), func(t *testing.T) {
				testClassifyCase(t, tt)
			})
		}
	}
}

func testClassifyCase(t *testing.T, tt classifyCase) {
	t.Helper()
	r := classify(tt.opts, tt.samples)
	t.Logf("%v conf=%.3f stride=%d ws=%d n=%d", r.Pattern, r.Confidence, r.Stride, r.WorkingSetPages, r.Samples)
	window := New(tt.opts).Options().Window
	assert.Equal(t, tt.want, r.Pattern, "%+v", r)
	assert.Equal(t, tt.stride, r.Stride, "%+v", r)
	assert.Equal(t, min(len(tt.samples), window), r.Samples)
	if tt.want == HotSet {
		if tt.workingSet >= 0 {
			assert.Equal(t, tt.workingSet, r.WorkingSetPages)
		} else {
			assert.Positive(t, r.WorkingSetPages)
		}
	} else {
		assert.Zero(t, r.WorkingSetPages)
	}
	if tt.want == Unknown {
		assert.Zero(t, r.Confidence)
		return
	}
	assert.GreaterOrEqual(t, r.Confidence, tt.minConf, "%+v", r)
	assert.LessOrEqual(t, r.Confidence, tt.maxConf, "%+v", r)
}

func TestPatternString(t *testing.T) {
	for p, want := range map[Pattern]string{
		Unknown:    "unknown",
		Sequential: "sequential",
		Strided:    "strided",
		Random:     "random",
		HotSet:     "hot_set",
		Pattern(9): "Pattern(9)",
	} {
		assert.Equal(t, want, p.String())
	}
}

func TestOptionsDefaults(t *testing.T) {
	assert.Equal(t, Options{
		Window: 1024, PageSize: 4096, MinSamples: 64, ReuseDistance: 64,
	}, New(Options{}).Options())
	assert.Equal(t, Options{
		Window: 32, PageSize: 64 * kib, MinSamples: 32, ReuseDistance: 32,
	}, New(Options{Window: 32, PageSize: 100 * kib, MinSamples: 100, ReuseDistance: 100}).Options())
	assert.Equal(t, MaxWindow, New(Options{Window: MaxWindow + 1}).Options().Window)
	assert.Equal(t, uint64(MaxPageSize), New(Options{PageSize: 1 << 63}).Options().PageSize)
}

func TestWriteFraction(t *testing.T) {
	c := New(Options{})
	for i := range 1000 {
		c.Add(Sample{Addr: base + uint64(i)*page, Write: i%4 == 0, TimeNs: uint64(i)})
	}
	r := c.Classify()
	assert.Equal(t, Sequential, r.Pattern)
	assert.InDelta(t, 0.25, r.WriteFraction, 1e-9)
}

func TestReset(t *testing.T) {
	c := New(Options{})
	for _, s := range stream(strided(base, 1024, page)) {
		c.Add(s)
	}
	require.Equal(t, Sequential, c.Classify().Pattern)
	c.Reset()
	assert.Equal(t, Result{}, c.Classify())
	// The window refills from scratch: the old sweep leaves no trace.
	for _, s := range stream(cycled(strided(base, 16, page), 200)) {
		c.Add(s)
	}
	r := c.Classify()
	assert.Equal(t, HotSet, r.Pattern)
	assert.Equal(t, 16, r.WorkingSetPages)
	assert.Equal(t, 200, r.Samples)
}

// TestClassifyIsPure checks that Classify does not change the window:
// classifying twice, or after more samples, gives what a fresh Classifier
// given the same samples gives.
func TestClassifyIsPure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	samples := stream(concat(uniform(base, gib, 700, rng), strided(base, 700, page)))
	c := New(Options{})
	for i, s := range samples {
		c.Add(s)
		if i%97 == 0 {
			c.Classify()
		}
	}
	r := c.Classify()
	assert.Equal(t, r, c.Classify())
	assert.Equal(t, classify(Options{}, samples), r)
}

func TestClassifyAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for name, addrs := range map[string][]uint64{
		"sequential": strided(base, 2048, page),
		"random":     uniform(base, gib, 2048, rng),
		"hot set":    sampled(hotSetPages(64, rng), 2048, rng),
	} {
		c := New(Options{})
		samples := stream(addrs)
		// Shuffle the timestamps of the last batch so that the TimeNs
		// sort runs too.
		tail := samples[len(samples)-256:]
		rng.Shuffle(len(tail), func(i, j int) { tail[i].TimeNs, tail[j].TimeNs = tail[j].TimeNs, tail[i].TimeNs })
		i := 0
		allocs := testing.AllocsPerRun(100, func() {
			c.Add(samples[i%len(samples)])
			i++
			c.Classify()
		})
		assert.Zero(t, allocs, name)
	}
}
