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
// Matching a device record to its launch call, per kernel (and per GPU:
// one matcher each), is in order: the k-th record of a kernel is its k-th
// launch. Launches queue (an asynchronous program enqueues many before the
// GPU starts the first), so a block may start long after later calls of
// its kernel; pairing it with the latest call before it (as until
// 2026-11-23) dropped most launches of a queued pipeline and made the rest
// look short. Once calibrated, a record whose oldest pending call started
// after it (by more than Tolerance: the offset's own error) lost its call
// and is dropped.
//
// Records lost on either side (a device ring that lapped, a host ring
// that dropped) would shift the pairing for good; devrt's timed launches
// catch and repair that. A timed call's work started at a known host time,
// so its record must lie within Tolerance of it. When a pairing is found
// to be off by more (Timed), or the device ring says it lost records
// (Lost), the kernel's pairing is suspect: nothing is paired until the
// next timed call still pending finds its record (the one nearest its
// start, within Tolerance); the calls and records before those two are
// dropped, and pairing goes on in order from there. A timed call whose
// record is found also refreshes the offset (refresh: the clocks drift).

// HostLaunch is a launch call of a kernel, as devrt reported it.
type HostLaunch struct {
	Start    uint64 // the call's start, CLOCK_MONOTONIC ns
	GPUStart uint64 // devrt's GPU start of the work (host clock), 0: not timed
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

// Tolerance bounds the distance between a timed call's GPU start (host
// clock) and its record's first block (through the offset): the start
// event is recorded just before the kernel on its stream, plus clock
// conversion errors; a pairing off by more is taken for shifted.
const Tolerance = 50_000 // ns

// offsetWindow is how many timed launches the offset is the least of.
const offsetWindow = 64

// recentPairs is how many of a kernel's last pairs are kept for checking
// against devrt's timing, which comes a poll after the call.
const recentPairs = 256

// LaunchMatcher pairs one process's launch calls with launch_latency's
// records. Bounded: at most MaxPending of each kind per kernel, and
// MaxKernels kernels with pending launches (beyond, the pending launches
// are forgotten: what a burst of distinct kernels without device records
// can cost is MaxKernels * MaxPending * 16 bytes).
type LaunchMatcher struct {
	host       map[uint64][]HostLaunch // per kernel, by start
	dev        map[uint64][]Launch     // per kernel, in ring order, not matched yet
	pairs      []pair                  // matched, waiting for the offset
	offset     int64                   // %globaltimer - CLOCK_MONOTONIC
	calibrated bool
	out        []Latency
	// recent: each kernel's last pairs (call start -> first block,
	// %globaltimer), for Timed's check.
	recent map[uint64][]pair
	// suspect: kernels whose pairing may be shifted, waiting for a timed
	// call to realign them; lost: every kernel is (the device ring lost
	// records of unknown kernels), until each realigns.
	suspect map[uint64]bool
	lostAll bool
	synced  map[uint64]bool // realigned since lostAll was set
	offs    []int64         // the last timed launches' offsets (refresh)
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
		recent: map[uint64][]pair{}, suspect: map[uint64]bool{}, synced: map[uint64]bool{}}
}

// Offset is the calibrated %globaltimer - CLOCK_MONOTONIC, if known.
func (m *LaunchMatcher) Offset() (int64, bool) { return m.offset, m.calibrated }

// Host adds a launch call of kernel.
func (m *LaunchMatcher) Host(kernel uint64, start uint64) {
	push(m.host, kernel, HostLaunch{Start: start}, MaxPending)
	m.match(kernel)
}

// Timed adds devrt's GPU start (host clock) of the launch call of kernel
// that started at callStart. The first one matched with a device record
// calibrates the offset; later ones check the pairing (and refresh the
// offset) or, for a suspect kernel, realign it.
func (m *LaunchMatcher) Timed(kernel uint64, callStart, gpuStart uint64) {
	for i := range m.host[kernel] {
		if h := &m.host[kernel][i]; h.Start == callStart {
			h.GPUStart = gpuStart
			m.match(kernel)
			return
		}
	}
	for _, p := range m.pairs {
		if p.kernel == kernel && p.host.Start == callStart {
			m.calibrate(p.gpu, gpuStart)
			return
		}
	}
	for _, p := range m.recent[kernel] {
		if p.host.Start != callStart {
			continue
		}
		if d := int64(p.gpu) - m.offset - int64(gpuStart); d > Tolerance || d < -Tolerance {
			m.Shifted++
			m.suspect[kernel] = true // paired with another launch's record
		} else {
			m.refresh(int64(p.gpu - gpuStart))
		}
		return
	}
}

// Lost says the device ring lost records (of any kernel): every kernel's
// pairing is suspect until it realigns.
func (m *LaunchMatcher) Lost() {
	if m.calibrated {
		m.lostAll = true
		clear(m.synced)
	}
}

func (m *LaunchMatcher) isSuspect(kernel uint64) bool {
	return m.suspect[kernel] || m.lostAll && !m.synced[kernel]
}

// realign looks for kernel's first pending timed call's record; true when
// pairing may go on in order.
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
		g := int64(hs[j].GPUStart)
		best, bestD := -1, int64(Tolerance)+1
		beyond := false
		for i := range ds {
			d := int64(ds[i].StartNS) - m.offset - g
			if d < 0 {
				d = -d
			} else if d > Tolerance {
				beyond = true
				break // records are in order: none nearer after this one
			}
			if d < bestD {
				best, bestD = i, d
			}
		}
		if best >= 0 && (beyond || best < len(ds)-1) {
			// the nearest is known (a later record is farther)
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
		for k < len(ds) && int64(ds[k].StartNS)-m.offset <= g+Tolerance {
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

func (m *LaunchMatcher) calibrate(gpu, gpuStartHost uint64) {
	if m.calibrated {
		return
	}
	m.refresh(int64(gpu - gpuStartHost))
	m.calibrated = true
	for _, p := range m.pairs {
		m.emit(p)
	}
	m.pairs = nil
}

func (m *LaunchMatcher) emit(p pair) {
	m.out = append(m.out, Latency{KernelID: p.kernel, HostNS: p.host.Start,
		NS: int64(p.gpu-uint64(m.offset)) - int64(p.host.Start)})
}

func (m *LaunchMatcher) match(kernel uint64) {
	if m.calibrated && m.isSuspect(kernel) && !m.realign(kernel) {
		m.forget(kernel)
		return
	}
	for len(m.dev[kernel]) > 0 && len(m.host[kernel]) > 0 {
		d := m.dev[kernel][0]
		h := m.host[kernel][0]
		if m.calibrated && int64(h.Start) > int64(d.StartNS)-m.offset+Tolerance {
			// every pending call started well after the block: its call
			// was lost (within Tolerance it is the offset's error: a
			// short latency, paired as it is)
			m.dev[kernel] = m.dev[kernel][1:]
			continue
		}
		m.host[kernel] = m.host[kernel][1:]
		m.dev[kernel] = m.dev[kernel][1:]
		p := pair{kernel: kernel, host: h, gpu: d.StartNS}
		if !m.calibrated && h.GPUStart != 0 {
			m.pairs = append(m.pairs, p)
			m.calibrate(d.StartNS, h.GPUStart)
			continue
		}
		if m.calibrated {
			off := int64(d.StartNS - h.GPUStart)
			if h.GPUStart != 0 && (off-m.offset > Tolerance || m.offset-off > Tolerance) {
				// a timed call paired with another launch's record: put
				// both back and realign from the first timed call
				m.Shifted++
				m.suspect[kernel] = true
				m.host[kernel] = append([]HostLaunch{h}, m.host[kernel]...)
				m.dev[kernel] = append([]Launch{d}, m.dev[kernel]...)
				if !m.realign(kernel) {
					break
				}
				continue
			}
			if h.GPUStart != 0 {
				m.refresh(off)
			}
			m.remember(p)
			m.emit(p)
			continue
		}
		m.pairs = append(m.pairs, p)
		if len(m.pairs) > MaxPending {
			m.pairs = m.pairs[1:]
		}
	}
	m.forget(kernel)
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

// refresh takes one timed launch's first block %globaltimer minus its GPU
// start on the host clock. The start event is recorded on the stream before
// the kernel, so that is the offset plus the event-to-block gap, never less
// (but for conversion errors of tens of ns): the offset is the least of the
// last offsetWindow, which follows the clocks' drift and not each launch's
// gap (the last one's alone made a kernel's latencies read a few µs
// negative on an H200).
func (m *LaunchMatcher) refresh(off int64) {
	m.offs = append(m.offs, off)
	if len(m.offs) > offsetWindow {
		m.offs = m.offs[len(m.offs)-offsetWindow:]
	}
	m.offset = slices.Min(m.offs)
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
