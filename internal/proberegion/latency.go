package proberegion

import (
	"slices"
	"sort"
)

// Launch latency is host enqueue -> first block start: the launch call's
// start (devrt's call record, CLOCK_MONOTONIC) against launch_latency's
// record of thread 0 of block 0 (%globaltimer). The two clocks differ by an
// offset the GPU does not tell; LaunchMatcher learns it from launches devrt
// timed: devrt's GPU execution record of a launch gives, on the host clock,
// when the work began on the GPU (from CUDA events around it), so for that
// launch offset = first block's %globaltimer - its host-clock GPU start.
// Its error is the events' (the start event is recorded on the stream
// just before the kernel: the block starts a little after it, so
// latencies come out a little short, by the gap between the event and the
// first block, on the order of a microsecond) plus devrt's clock
// conversion. Until one timed launch has been matched, nothing is
// reported: there is no assumption about %globaltimer's epoch.
//
// The GPU's clock does not run at the host's rate (18 ppm apart on an H100
// host: the offset moves 18 µs a second), so the offset is not one number:
// a launch's is the least of the timed launches' within OffsetSpan of its
// call (each is the offset plus its own event-to-block gap), else the
// nearest one's, and the tolerances below grow with the distance to it
// (MaxDrift). Each timed launch also bounds the offset from below: its
// block started before its end event, so the offset is at least its
// block's %globaltimer minus that; the greatest of those near a call and
// the least of the others bound the offset there, and the checks below
// allow for anything between them (a first launch timed alone, its blocks
// 52 µs after its start event, leaves the offset near it that uncertain).
// A pair is reported once a timed launch OffsetSpan or more
// after its call has been seen, when every timed launch near it has (and
// devrt's timings come a poll after the records they would correct), or
// once it is MaxHold old (Expire, or newer calls). Reported at the first
// timed launch after its call, as until 2026-11-27, it took the offset of
// the few seen by then: a kernel's first launch, that of its second, whose
// blocks started 35 µs after its start event, and read -11.6 µs.
//
// Matching a device record to its launch call, per kernel (and per GPU:
// one matcher each), is in order: the k-th record of a kernel is its k-th
// launch. Launches queue (an asynchronous program enqueues many before the
// GPU starts the first), so a block may start long after later calls of
// its kernel; pairing it with the latest call before it (as until
// 2026-11-23) dropped most launches of a queued pipeline and made the rest
// look short. Once calibrated, a record whose oldest pending call started
// after it (at the latest the offset's bounds put the block, by more than
// Tolerance) lost its call and is dropped.
//
// Records lost on either side (a device ring that lapped, a host ring
// that dropped) would shift the pairing for good; devrt's timed launches
// catch and repair that, and a record the ring reader handed over late
// (gpumap.RingRead keeps a record not whole yet, torn by a read of the
// copy in the middle of its stores, pending and returns the records after
// it first: of one kernel only when launches on two streams overlap)
// shifts it the same way until the next timed launch.
//
// A timed call's work ran between its start and end events, at known host
// times, so its record's first block lies between them, within Tolerance,
// at some offset between the bounds. Not near the start event: a block may start long
// after it when other streams' work fills the GPU, or the first launch of
// a kernel loads it (on an H100, 20-90 µs late in probes_check.sh's
// runs; taken for a shifted pairing until 2026-11-27, which dropped the
// kernel's latencies up to its next timed call, and could realign on the
// previous launch's record, nearer the start event: latencies a launch
// off, negative). When a pairing is found off by more (Timed), or the
// device ring says it lost records (Lost), the kernel's pairing is
// suspect: nothing is paired until the next timed call still pending
// finds its record (the first one nearest its events' span, within
// Tolerance); the calls and records before those two are dropped, and
// pairing goes on in order from there. A timed call whose record is found
// also refreshes the offset (refresh: the clocks drift).

// HostLaunch is a launch call of a kernel, as devrt reported it.
type HostLaunch struct {
	Start    uint64 // the call's start, CLOCK_MONOTONIC ns
	GPUStart uint64 // devrt's GPU start of the work (host clock), 0: not timed
	GPUEnd   uint64 // ... and its end (below GPUStart: taken as GPUStart)
}

// Latency is one launch's host enqueue to first block start.
type Latency struct {
	KernelID uint64
	HostNS   uint64 // the call's start (CLOCK_MONOTONIC)
	NS       int64  // first block start - call start; negative only when the offset is off
}

type pair struct {
	kernel uint64
	host   HostLaunch
	gpu    uint64
}

// Tolerance bounds the distance between a timed call's GPU work (host
// clock, its start to end events) and its record's first block (through
// the offset, which may be late by the least event-to-block gap near the
// call), plus clock conversion errors; a pairing off by more is taken for
// shifted.
const Tolerance = 50_000 // ns

// MaxDoubt caps the offset's doubt below its estimate (off - lo): a long
// timed kernel's end event bounds the offset only as far as its run time,
// which would let any record of its neighbours pass the checks below; a
// warm launch's blocks start a few µs after its start event, a kernel's
// first launch's up to 52 µs in the day's traces, the doubt they leave
// within MaxDoubt of the checks' Tolerance.
const MaxDoubt = 25_000 // ns

// Bounds of the offset's samples (one per timed launch matched).
const (
	// OffsetSpan: the timed launches within this of a call make its
	// offset (the clocks drift 0.9 µs in 50 ms at 18 ppm).
	OffsetSpan = 50_000_000
	// MaxDrift bounds the clocks' drift, in ns per second: a pairing
	// check against a timed launch t ns away allows t*MaxDrift/1e9 more.
	MaxDrift = 100_000
	// MaxHold: a pair waits at most this long (host clock) for a timed
	// launch after it.
	MaxHold    = 1_000_000_000
	maxSamples = 256
	// SampleGrain: timed launches closer than this make one sample.
	SampleGrain = 5_000_000
)

// sample is one timed launch's bounds on the offset, at its call's start:
// its first block's %globaltimer minus its work's start on the host clock
// (off: the offset plus the event-to-block gap, never less) and minus its
// work's end (lo: never more, the block started before the end event).
type sample struct {
	at      uint64
	off, lo int64
}

// sampleOf is timed launch h's sample, its record's first block at gpu.
func sampleOf(h HostLaunch, gpu uint64) sample {
	s := sample{at: h.Start, off: int64(gpu - h.GPUStart)}
	s.lo = s.off
	if h.GPUEnd > h.GPUStart {
		s.lo = int64(gpu - h.GPUEnd)
	}
	return s
}

// recentPairs is how many of a kernel's last pairs are kept for checking
// against devrt's timing, which comes a poll after the call.
const recentPairs = 256

// LaunchMatcher pairs one process's launch calls with launch_latency's
// records. Bounded: at most MaxPending of each kind per kernel, and
// MaxKernels kernels with pending launches (beyond, the pending launches
// are forgotten: what a burst of distinct kernels without device records
// can cost is MaxKernels * MaxPending * 16 bytes).
type LaunchMatcher struct {
	host    map[uint64][]HostLaunch // per kernel, by start
	dev     map[uint64][]Launch     // per kernel, in ring order, not matched yet
	pairs   []pair                  // matched, waiting for a timed launch after them
	samples []sample                // the timed launches' offsets, by call start
	newest  uint64                  // the latest call start seen (the host clock, as far as calls tell)
	out     []Latency
	// recent: each kernel's last pairs (call start -> first block,
	// %globaltimer), for Timed's check.
	recent map[uint64][]pair
	// suspect: kernels whose pairing may be shifted, waiting for a timed
	// call to realign them; lost: every kernel is (the device ring lost
	// records of unknown kernels), until each realigns.
	suspect map[uint64]bool
	lostAll bool
	synced  map[uint64]bool // realigned since lostAll was set
	// confirmed: each kernel's latest timed call whose record passed its
	// check (its call start); the pairs up to it stand when one after is
	// found off.
	confirmed map[uint64]uint64
	// Realigned counts the realignments, Shifted the pairings found off.
	Realigned, Shifted uint64
}

// Bounds of a matcher's queues.
const (
	MaxPending = 512 // launches of one kernel waiting for their pair
	MaxKernels = 512 // kernels with launches waiting
)

// NewLaunchMatcher returns an empty matcher.
func NewLaunchMatcher() *LaunchMatcher {
	return &LaunchMatcher{host: map[uint64][]HostLaunch{}, dev: map[uint64][]Launch{},
		recent: map[uint64][]pair{}, suspect: map[uint64]bool{}, synced: map[uint64]bool{},
		confirmed: map[uint64]uint64{}}
}

// calibrated: a timed launch has been matched.
func (m *LaunchMatcher) calibrated() bool { return len(m.samples) > 0 }

// offsetAt is the offset for a call at host time t: the least of the
// samples within OffsetSpan of t, else the nearest one's; lo, the greatest
// of their lower bounds (the offset lies between lo and off: off - lo
// bounds its error); dist is how far that one is (0 within the span).
func (m *LaunchMatcher) offsetAt(t uint64) (off, lo int64, dist uint64) {
	// the samples are in call order: those within the span, else the
	// one on either side of t
	from := t - min(t, OffsetSpan)
	i := sort.Search(len(m.samples), func(i int) bool { return m.samples[i].at >= from })
	j := i
	for ; j < len(m.samples) && m.samples[j].at <= t+OffsetSpan; j++ {
		x := m.samples[j]
		if j == i {
			off, lo = x.off, x.lo
		}
		off, lo = min(off, x.off), max(lo, x.lo)
	}
	if j == i { // none within: the nearest
		dist = ^uint64(0)
		for _, k := range []int{i - 1, i} {
			if k >= 0 && k < len(m.samples) {
				x := m.samples[k]
				if d := max(x.at, t) - min(x.at, t); d < dist {
					off, lo, dist = x.off, x.lo, d
				}
			}
		}
	}
	return off, min(max(lo, off-MaxDoubt), off), dist
}

// tolerance is Tolerance plus what the clocks may have drifted over dist.
func tolerance(dist uint64) int64 {
	return Tolerance + int64(min(dist, 1<<40)/1_000_000*MaxDrift/1000)
}

// Offset is %globaltimer - CLOCK_MONOTONIC around the %globaltimer value
// gpu, if known.
func (m *LaunchMatcher) Offset(gpu uint64) (int64, bool) {
	if !m.calibrated() {
		return 0, false
	}
	last := m.samples[len(m.samples)-1]
	off, _, _ := m.offsetAt(uint64(int64(gpu) - last.off))
	return off, true
}

// Host adds a launch call of kernel.
func (m *LaunchMatcher) Host(kernel uint64, start uint64) {
	push(m.host, kernel, HostLaunch{Start: start}, MaxPending)
	m.newest = max(m.newest, start)
	m.match(kernel)
	// a newer call can only age pairs past MaxHold: the oldest first (a
	// walk of every waiting pair on each call cost a launch-bound program
	// 280 ns a call in the collector)
	if len(m.pairs) > 0 && m.pairs[0].host.Start+MaxHold <= m.newest {
		m.release(0)
	}
}

// Expire reports the pairs that waited MaxHold for a timed launch after
// them, as of host time now.
func (m *LaunchMatcher) Expire(now uint64) { m.release(now) }

// Flush reports every pair waiting for a timed launch after it (no more
// will come: the process's regions are gone).
func (m *LaunchMatcher) Flush() { m.release(^uint64(0) - MaxHold) }

// Timed adds devrt's GPU start and end (host clock) of the work of the
// launch call of kernel that started at callStart. The first one matched
// with a device record calibrates the offset; later ones check the
// pairing (and refresh the offset) or, for a suspect kernel, realign it.
func (m *LaunchMatcher) Timed(kernel uint64, callStart, gpuStart, gpuEnd uint64) {
	for i := range m.host[kernel] {
		if h := &m.host[kernel][i]; h.Start == callStart {
			h.GPUStart, h.GPUEnd = gpuStart, gpuEnd
			m.match(kernel)
			return
		}
	}
	if !m.calibrated() {
		for _, p := range m.pairs {
			if p.kernel == kernel && p.host.Start == callStart {
				m.refresh(sampleOf(HostLaunch{callStart, gpuStart, gpuEnd}, p.gpu))
				return
			}
		}
	}
	check := func(p pair, prev *uint64) {
		h := HostLaunch{callStart, gpuStart, gpuEnd}
		if m.misfit(h, p.gpu, prev) != fits {
			m.shifted(kernel) // paired with another launch's record
			return
		}
		m.confirm(kernel, callStart)
		m.refresh(sampleOf(h, p.gpu))
	}
	// the kernel's recent pairs know the record before; a pair made
	// before calibration is only among those waiting
	r := m.recent[kernel]
	for i, p := range r {
		if p.host.Start == callStart {
			var prev *uint64
			if i > 0 {
				prev = &r[i-1].gpu
			}
			check(p, prev)
			return
		}
	}
	for _, p := range m.pairs {
		if p.kernel == kernel && p.host.Start == callStart {
			check(p, nil)
			return
		}
	}
}

// Lost says the device ring lost records (of any kernel): every kernel's
// pairing is suspect until it realigns.
func (m *LaunchMatcher) Lost() {
	if m.calibrated() {
		m.lostAll = true
		clear(m.synced)
	}
}

// outside is how far the first block at gpu (%globaltimer), through the
// offset near timed call h (between its bounds: the block's host time is
// gpu - off at the earliest, gpu - lo at the latest), lies outside h's
// work on the GPU (host clock, GPUStart to GPUEnd): 0 where they meet,
// below 0 before its start, above 0 after its end; and the tolerance for
// that distance.
func (m *LaunchMatcher) outside(h HostLaunch, gpu uint64) (d, tol int64) {
	off, lo, dist := m.offsetAt(h.Start)
	return outsideAt(h, gpu, off, lo), tolerance(dist)
}

// outsideAt is outside through the offset's bounds off and lo.
func outsideAt(h HostLaunch, gpu uint64, off, lo int64) int64 {
	early, late := int64(gpu)-off, int64(gpu)-lo
	start, end := int64(h.GPUStart), int64(max(h.GPUEnd, h.GPUStart))
	switch {
	case late < start:
		return late - start
	case early > end:
		return early - end
	}
	return 0
}

// misfit tells whether the record whose first block is at gpu cannot be
// timed call h's: it lies outside h's work (beyond tolerance), or its
// block started more than Tolerance after h's start event while the
// kernel's record before it (prev, when known) lies near that start event
// (from it to Tolerance after). Back-to-back launches on a stream start each
// one's blocks as the previous work ends: after a call lost, a timed call
// takes the next launch's record, just after its own work ends, and its
// own record sits before it, near the start event. A block that started
// late (other streams' work, a first launch) has the kernel's previous
// record before its start event, or (a launch of it on another stream)
// later than near it.
func (m *LaunchMatcher) misfit(h HostLaunch, gpu uint64, prev *uint64) fit {
	off, lo, dist := m.offsetAt(h.Start)
	d, tol := outsideAt(h, gpu, off, lo), tolerance(dist)
	if d > tol || d < -tol {
		return outsideWork
	}
	if prev == nil || int64(gpu)-off-int64(h.GPUStart) <= Tolerance {
		return fits
	}
	if at := int64(*prev) - off; at >= int64(h.GPUStart)-(tol-Tolerance)-Slack && at <= int64(h.GPUStart)+tol {
		return ownTaken
	}
	return fits
}

// fit is misfit's answer: the record fits the timed call, lies outside its
// work, or lies within it while the call's own record went to the call
// before.
type fit int

const (
	fits fit = iota
	outsideWork
	ownTaken
)

// Slack is the error of a block's host time through the offset where that
// is the least of many timed launches' near it: devrt's anchor (under a
// µs) and the least gap's own (about a µs).
const Slack = 2_000 // ns

func (m *LaunchMatcher) isSuspect(kernel uint64) bool {
	return m.suspect[kernel] || m.lostAll && !m.synced[kernel]
}

// realign looks for kernel's first pending timed call's record (the first
// of those nearest its work, within tolerance); true when pairing may go
// on in order.
func (m *LaunchMatcher) realign(kernel uint64) bool {
	for {
		hs, ds := m.host[kernel], m.dev[kernel]
		j := -1
		for i := range hs {
			if hs[i].GPUStart != 0 {
				j = i
				break
			}
		}
		if j < 0 {
			return false // wait for a timed call
		}
		_, _, dist := m.offsetAt(hs[j].Start)
		tol := tolerance(dist)
		best, bestD := -1, tol+1
		beyond := false
		for i := range ds {
			d, _ := m.outside(hs[j], ds[i].StartNS)
			if d < 0 {
				d = -d
			} else if d > tol {
				beyond = true
				break // records are in order: none nearer after this one
			}
			if d < bestD {
				best, bestD = i, d
			}
		}
		if best >= 0 && (beyond || bestD == 0 || best < len(ds)-1) {
			// the nearest is known (a later record is no nearer)
			m.host[kernel], m.dev[kernel] = hs[j:], ds[best:]
			delete(m.suspect, kernel)
			if m.lostAll {
				m.synced[kernel] = true
			}
			m.Realigned++
			return true
		}
		if !beyond {
			return false // its record may still come
		}
		// its record was lost: drop it and what came before, try the next
		m.host[kernel] = hs[j+1:]
		k := 0
		for k < len(ds) {
			if d, _ := m.outside(hs[j], ds[k].StartNS); d > tol {
				break
			}
			k++
		}
		m.dev[kernel] = ds[k:]
	}
}

// Device adds launch_latency's records.
func (m *LaunchMatcher) Device(ls []Launch) {
	touched := map[uint64]bool{}
	for _, l := range ls {
		push(m.dev, l.KernelID, l, MaxPending)
		touched[l.KernelID] = true
	}
	ks := make([]uint64, 0, len(touched))
	for k := range touched {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	for _, k := range ks {
		m.match(k)
	}
}

// release reports the waiting pairs whose offset is known: a timed launch
// OffsetSpan after their call was seen, or (now, or the newest call, being
// MaxHold past them) none will be waited for any longer.
func (m *LaunchMatcher) release(now uint64) {
	if !m.calibrated() || len(m.pairs) == 0 {
		return
	}
	last := m.samples[len(m.samples)-1].at
	now = max(now, m.newest)
	n := 0
	for ; n < len(m.pairs); n++ {
		p := m.pairs[n]
		if p.host.Start+OffsetSpan > last && p.host.Start+MaxHold > now {
			break
		}
		off, _, _ := m.offsetAt(p.host.Start)
		m.out = append(m.out, Latency{KernelID: p.kernel, HostNS: p.host.Start,
			NS: int64(p.gpu) - off - int64(p.host.Start)})
	}
	m.pairs = m.pairs[n:] // not moved: append reallocates when the array's end is reached
}

func (m *LaunchMatcher) match(kernel uint64) {
	if m.calibrated() && m.isSuspect(kernel) && !m.realign(kernel) {
		m.forget(kernel)
		return
	}
	for len(m.dev[kernel]) > 0 && len(m.host[kernel]) > 0 {
		d := m.dev[kernel][0]
		h := m.host[kernel][0]
		_, lo, dist := m.offsetAt(h.Start)
		if m.calibrated() && int64(h.Start) > int64(d.StartNS)-lo+tolerance(dist) {
			// every pending call started well after the block, at the
			// latest the offset's bounds put it: its call was lost
			// (within Tolerance it is the offset's error: a short
			// latency, paired as it is). At the earliest, as until
			// 2026-11-27, the offset of a kernel's first launch alone,
			// its blocks 52 µs after its start event, dropped its third
			// launch's record on an H200, and each launch after took
			// the next one's.
			m.dev[kernel] = m.dev[kernel][1:]
			continue
		}
		m.host[kernel] = m.host[kernel][1:]
		m.dev[kernel] = m.dev[kernel][1:]
		p := pair{kernel: kernel, host: h, gpu: d.StartNS}
		if !m.calibrated() && h.GPUStart != 0 {
			m.hold(p)
			m.refresh(sampleOf(h, d.StartNS))
			continue
		}
		if m.calibrated() {
			var prev *uint64
			if r := m.recent[kernel]; len(r) > 0 {
				prev = &r[len(r)-1].gpu
			}
			f := fits
			if h.GPUStart != 0 {
				f = m.misfit(h, d.StartNS, prev)
			}
			if f != fits {
				// a timed call paired with another launch's record: put
				// both back and realign from the first timed call
				m.shifted(kernel)
				m.dev[kernel] = append([]Launch{d}, m.dev[kernel]...)
				if f == outsideWork {
					m.host[kernel] = append([]HostLaunch{h}, m.host[kernel]...)
				} // else its own record went to the call before: h is
				// lost; realign from the next timed call (from h, it
				// would take d again, and again)
				if !m.realign(kernel) {
					break
				}
				continue
			}
			m.remember(p)
			m.hold(p)
			if h.GPUStart != 0 {
				m.confirm(kernel, h.Start)
				m.refresh(sampleOf(h, d.StartNS))
			}
			continue
		}
		m.hold(p)
	}
	m.forget(kernel)
}

// shifted: kernel's pairing was found off. It is suspect until a timed
// call realigns it, and its pairs not reported yet, made in the same
// order, are dropped, but those up to its last timed call whose record
// passed its check (pairs wait OffsetSpan for their offset: dropping
// those too lost what checks had confirmed).
func (m *LaunchMatcher) shifted(kernel uint64) {
	m.Shifted++
	m.suspect[kernel] = true
	ok := m.confirmed[kernel]
	m.pairs = slices.DeleteFunc(m.pairs, func(p pair) bool { return p.kernel == kernel && p.host.Start > ok })
}

// confirm records that kernel's timed call at callStart passed its check.
func (m *LaunchMatcher) confirm(kernel, callStart uint64) {
	if _, ok := m.confirmed[kernel]; !ok && len(m.confirmed) >= MaxKernels {
		clear(m.confirmed)
	}
	m.confirmed[kernel] = max(m.confirmed[kernel], callStart)
}

// hold keeps a pair until its offset is known (release); the oldest go
// beyond MaxPending (before calibration) or are reported with the offset
// known so far (after).
func (m *LaunchMatcher) hold(p pair) {
	m.pairs = append(m.pairs, p)
	if len(m.pairs) <= MaxPending {
		return
	}
	if m.calibrated() {
		m.release(m.pairs[0].host.Start + MaxHold)
		return
	}
	m.pairs = m.pairs[1:]
}

// forget drops kernel's empty queues.
func (m *LaunchMatcher) forget(kernel uint64) {
	if len(m.host[kernel]) == 0 {
		delete(m.host, kernel)
	}
	if len(m.dev[kernel]) == 0 {
		delete(m.dev, kernel)
	}
}

// refresh takes one timed launch's offset: its first block's %globaltimer
// minus its GPU start on the host clock, at its call's start. The start
// event is recorded on the stream before the kernel, so that is the offset
// plus the event-to-block gap, never less (but for the anchor's error,
// under a microsecond): offsetAt takes the least of those near a call,
// which follows the clocks' drift and not each launch's gap (the last
// one's alone made a kernel's latencies read a few µs negative on an H200;
// the least of the last 64, tens of µs on an H100, whose clock drifts 18
// µs a second from the host's). Then the pairs it settles are reported.
func (m *LaunchMatcher) refresh(x sample) {
	i := len(m.samples)
	for i > 0 && m.samples[i-1].at > x.at {
		i--
	}
	// within SampleGrain of a neighbour: one sample of both (the clocks
	// drift 90 ns in 5 ms), so a call's offset takes the least of at most
	// 2*OffsetSpan/SampleGrain of them however many launches are timed
	for _, j := range []int{i - 1, i} {
		if j >= 0 && j < len(m.samples) && max(x.at, m.samples[j].at)-min(x.at, m.samples[j].at) < SampleGrain {
			y := &m.samples[j] // its time kept: a sample spans SampleGrain at most
			y.off, y.lo = min(y.off, x.off), max(y.lo, x.lo)
			m.release(0)
			return
		}
	}
	m.samples = slices.Insert(m.samples, i, x)
	if len(m.samples) > maxSamples {
		m.samples = slices.Delete(m.samples, 0, len(m.samples)-maxSamples)
	}
	m.release(0)
}

// remember keeps p among its kernel's recent pairs (Timed checks them).
func (m *LaunchMatcher) remember(p pair) { push(m.recent, p.kernel, p, recentPairs) }

// push appends v to kernel's queue in q, keeping its newest n; a new
// kernel beyond MaxKernels forgets every queue first.
func push[T any](q map[uint64][]T, kernel uint64, v T, n int) {
	if _, ok := q[kernel]; !ok && len(q) >= MaxKernels {
		clear(q)
	}
	r := append(q[kernel], v)
	if len(r) > n {
		r = r[len(r)-n:]
	}
	q[kernel] = r
}

// Take returns the latencies found since the last call.
func (m *LaunchMatcher) Take() []Latency {
	out := m.out
	m.out = nil
	return out
}
