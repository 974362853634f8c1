package proberegion

import "sort"

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
// Matching a device record to its launch call, per kernel: before the
// offset is known, in order (the k-th record of a kernel is its k-th
// launch); after, by time: the latest launch call of the kernel that
// started before the block (older calls lost their device record).

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
}

// Bounds of a matcher's queues.
const (
	MaxPending = 512 // launches of one kernel waiting for their pair
	MaxKernels = 512 // kernels with launches waiting
)

// NewLaunchMatcher returns an empty matcher.
func NewLaunchMatcher() *LaunchMatcher {
	return &LaunchMatcher{host: map[uint64][]HostLaunch{}, dev: map[uint64][]Launch{}}
}

// Offset is the calibrated %globaltimer - CLOCK_MONOTONIC, if known.
func (m *LaunchMatcher) Offset() (int64, bool) { return m.offset, m.calibrated }

// Host adds a launch call of kernel.
func (m *LaunchMatcher) Host(kernel uint64, start uint64) {
	if _, ok := m.host[kernel]; !ok && len(m.host) >= MaxKernels {
		clear(m.host)
	}
	q := append(m.host[kernel], HostLaunch{Start: start})
	if len(q) > MaxPending {
		q = q[len(q)-MaxPending:]
	}
	m.host[kernel] = q
	m.match(kernel)
}

// Timed adds devrt's GPU start (host clock) of the launch call of kernel
// that started at callStart. The first one matched with a device record
// calibrates the offset.
func (m *LaunchMatcher) Timed(kernel uint64, callStart, gpuStart uint64) {
	for i := range m.host[kernel] {
		if h := &m.host[kernel][i]; h.Start == callStart {
			h.GPUStart = gpuStart
			return
		}
	}
	for _, p := range m.pairs {
		if p.kernel == kernel && p.host.Start == callStart {
			m.calibrate(p.gpu, gpuStart)
			return
		}
	}
}

// Device adds launch_latency's records.
func (m *LaunchMatcher) Device(ls []Launch) {
	touched := map[uint64]bool{}
	for _, l := range ls {
		if _, ok := m.dev[l.KernelID]; !ok && len(m.dev) >= MaxKernels {
			clear(m.dev)
		}
		q := append(m.dev[l.KernelID], l)
		if len(q) > MaxPending {
			q = q[len(q)-MaxPending:]
		}
		m.dev[l.KernelID] = q
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
	m.offset, m.calibrated = int64(gpu-gpuStartHost), true
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
	for len(m.dev[kernel]) > 0 && len(m.host[kernel]) > 0 {
		d := m.dev[kernel][0]
		hs := m.host[kernel]
		i := 0
		if m.calibrated {
			at := d.StartNS - uint64(m.offset)
			i = sort.Search(len(hs), func(j int) bool { return hs[j].Start > at }) - 1
			if i < 0 { // no call before it yet (or it lost its call): drop the record
				m.dev[kernel] = m.dev[kernel][1:]
				continue
			}
		}
		h := hs[i]
		m.host[kernel] = hs[i+1:]
		m.dev[kernel] = m.dev[kernel][1:]
		p := pair{kernel: kernel, host: h, gpu: d.StartNS}
		if !m.calibrated && h.GPUStart != 0 {
			m.pairs = append(m.pairs, p)
			m.calibrate(d.StartNS, h.GPUStart)
			continue
		}
		if m.calibrated {
			m.emit(p)
			continue
		}
		m.pairs = append(m.pairs, p)
		if len(m.pairs) > MaxPending {
			m.pairs = m.pairs[1:]
		}
	}
	if len(m.host[kernel]) == 0 {
		delete(m.host, kernel)
	}
	if len(m.dev[kernel]) == 0 {
		delete(m.dev, kernel)
	}
}

// Take returns the latencies found since the last call.
func (m *LaunchMatcher) Take() []Latency {
	out := m.out
	m.out = nil
	return out
}
