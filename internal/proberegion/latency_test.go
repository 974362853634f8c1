package proberegion

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLaunchMatcher(t *testing.T) {
	const k, other = 0xabc, 0xdef
	const off = 5_000_000_000 // %globaltimer - CLOCK_MONOTONIC
	dev := func(kernel, h uint64) Launch { return Launch{KernelID: kernel, StartNS: h + 300 + off} }
	m := NewLaunchMatcher()

	// Before any timed launch: matched in order, nothing reported.
	m.Host(k, 1000)
	m.Host(k, 2000)
	m.Host(other, 2500)
	m.Device([]Launch{dev(k, 1000), dev(k, 2000), dev(other, 2500)})
	require.Empty(t, m.Take())
	_, ok := m.Offset(0)
	require.False(t, ok)

	// devrt's timing of the second launch (its start event 50 ns before the
	// first block) calibrates; the waiting pairs up to it come out with the
	// offset's error: 300 - 50 ns. The later one waits for a timed launch
	// after it, MaxHold at most.
	m.Timed(k, 2000, 2000+250)
	o, ok := m.Offset(2000 + off)
	require.True(t, ok)
	require.Equal(t, int64(off+50), o)
	require.Equal(t, []Latency{{k, 1000, 250}, {k, 2000, 250}}, m.Take())
	m.Expire(2500 + MaxHold - 1)
	require.Empty(t, m.Take())
	m.Expire(2500 + MaxHold)
	require.Equal(t, []Latency{{other, 2500, 250}}, m.Take())

	// Calibrated, a queued pipeline: four calls, then their blocks, each
	// long after every call (the GPU works through the queue). Paired in
	// order; by "the latest call before the block" only the last would
	// have been, with the first block.
	at := func(kernel, a uint64) Launch { return Launch{KernelID: k, StartNS: a + off + 50} } // host clock a
	for _, c := range []uint64{10_000, 10_100, 10_200, 10_300} {
		m.Host(k, c)
	}
	m.Device([]Launch{at(k, 20_000), at(k, 30_000)})
	require.Empty(t, m.Take(), "paired, waiting for a timed launch after them")
	// A record that comes before its call waits for it. A timed call's
	// record adds an offset; a call's is the least of those near it (the
	// start event comes before the block by a gap of its own): 30 ns more
	// than the offset leaves it, 30 ns less takes it.
	m.Timed(k, 10_300, 50_000-30)
	m.Device([]Launch{at(k, 40_000), at(k, 50_000), at(k, 60_000)})
	require.Equal(t, []Latency{{k, 10_000, 10_000}, {k, 10_100, 19_900}, {k, 10_200, 29_800}, {k, 10_300, 39_700}}, m.Take())
	o, _ = m.Offset(50_000 + off)
	require.Equal(t, int64(off+50), o)
	m.Host(k, 55_000)
	m.Timed(k, 55_000, 60_000+30)
	require.Equal(t, []Latency{{k, 55_000, 5_030}}, m.Take()) // paired before its timing came, reported with it
	o, _ = m.Offset(50_000 + off)
	require.Equal(t, int64(off+20), o)

	// A record well older than every pending call lost its call:
	// dropped. One a little older (within Tolerance) is the offset's
	// error on a short latency: paired.
	m.Host(k, 190_000)
	m.Device([]Launch{at(k, 80_000), at(k, 190_500)})
	m.Host(k, 200_000)
	m.Device([]Launch{at(k, 199_000)})
	m.Expire(200_000 + MaxHold)
	require.Equal(t, []Latency{{k, 190_000, 530}, {k, 200_000, -970}}, m.Take())
	require.Zero(t, m.Realigned+m.Shifted)

	// The process's regions are gone: what waits is reported now.
	m.Host(k, 300_000)
	m.Device([]Launch{at(k, 301_000)})
	require.Empty(t, m.Take())
	m.Flush()
	require.Equal(t, []Latency{{k, 300_000, 1030}}, m.Take())
}

// TestLaunchMatcherDrift: the GPU's clock runs at its own rate (18 ppm from
// the host's on an H100 host): each launch's latency comes from the timed
// launches near its call, and records read before any such timing wait for
// one. The least offset of the whole run would have made the last
// bursts' latencies up to 90 µs short, negative. (The offset steps once a
// second here, so that the expected values are exact; within OffsetSpan
// the real drift is under a microsecond.)
func TestLaunchMatcherDrift(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	offAt := func(h uint64) uint64 { return off - h/1_000_000_000*18_000 } // %globaltimer - host
	m := NewLaunchMatcher()
	for s := range uint64(6) { // a burst every second: 10 launches 1 ms apart, the 1st and 6th timed
		base := s * 1_000_000_000
		var recs []Launch
		var want []Latency
		for i := range uint64(10) {
			h := base + i*1_000_000
			m.Host(k, h)
			lat := 4000 + 100*i
			recs = append(recs, Launch{KernelID: k, StartNS: h + lat + offAt(h)})
			want = append(want, Latency{k, h, int64(lat) - 1000})
		}
		m.Device(recs) // the records first, as the region is read before devrt's timings
		require.Empty(t, m.Take(), "second %d: waits for its timings", s)
		for _, i := range []uint64{0, 5} { // the start event 1 µs before the first block
			h := base + i*1_000_000
			m.Timed(k, h, h+4000+100*i-1000)
		}
		require.Equal(t, want[:6], m.Take(), "second %d: up to its last timed launch", s)
		m.Expire(base + 9_000_000 + MaxHold)
		require.Equal(t, want[6:], m.Take(), "second %d: the rest, MaxHold later", s)
		o, ok := m.Offset(base + offAt(base))
		require.True(t, ok)
		require.Equal(t, int64(offAt(base)+1000), o, "second %d", s)
	}
	require.Zero(t, m.Shifted+m.Realigned)
}

// TestLaunchMatcherRealigns: records lost on either side would shift the
// in-order pairing for good; a lost device record (the ring says so) or a
// timed call found paired with another launch's record makes the kernel
// suspect, and the next pending timed call realigns it.
func TestLaunchMatcherRealigns(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	at := func(a uint64) Launch { return Launch{KernelID: k, StartNS: a + off} } // host clock a
	calibrated := func() *LaunchMatcher {
		m := NewLaunchMatcher()
		m.Host(k, 1000)
		m.Timed(k, 1000, 2000)
		m.Device([]Launch{at(2000)})
		require.Equal(t, []Latency{{k, 1000, 1000}}, m.Take())
		return m
	}

	// The device ring lost the first call's record. In order, the first
	// call would take the second's record and so on; suspect, nothing is
	// paired until the second call's timing says where its record is.
	m := calibrated()
	m.Lost()
	m.Host(k, 100_000)
	m.Host(k, 100_100)
	m.Host(k, 100_200)
	m.Device([]Launch{at(150_000), at(250_000)})
	require.Empty(t, m.Take())
	m.Timed(k, 100_100, 150_000-200)
	require.Equal(t, []Latency{{k, 100_100, 49_900}}, m.Take())
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{m.Realigned, m.Shifted})
	m.Host(k, 300_000) // in order again
	m.Device([]Launch{at(301_000)})
	m.Expire(300_000 + MaxHold)
	require.Equal(t, []Latency{{k, 100_200, 149_800}, {k, 300_000, 1000}}, m.Take())

	// The host ring lost a call (A): B took A's record, C B's. B's timing
	// shows it before either is reported: both are dropped, and the
	// kernel is suspect until a later timed call (D) realigns it: C's
	// record is dropped, D and E paired right (their records 10 µs apart,
	// D's the nearest to its timing).
	m = calibrated()
	m.Host(k, 300_100)                                        // B
	m.Host(k, 300_200)                                        // C
	m.Device([]Launch{at(400_000), at(500_000), at(600_000)}) // A's, B's, C's
	require.Empty(t, m.Take(), "waiting for a timed launch after them")
	m.Timed(k, 300_100, 500_000)
	require.Equal(t, uint64(1), m.Shifted)
	m.Host(k, 700_000) // D
	m.Host(k, 700_100) // E
	m.Device([]Launch{at(710_000), at(720_000)})
	require.Empty(t, m.Take(), "suspect: waits for a timed call")
	m.Timed(k, 700_000, 710_000+20)
	require.Equal(t, []Latency{{k, 700_000, 10_020}}, m.Take())
	m.Expire(700_100 + MaxHold)
	require.Equal(t, []Latency{{k, 700_100, 19_920}}, m.Take())
	require.Equal(t, uint64(1), m.Realigned)

	// A timed call whose record was lost too: it and what came before are
	// dropped, and the next timed call realigns.
	m = calibrated()
	m.Lost()
	m.Host(k, 800_000)
	m.Host(k, 800_100)
	m.Timed(k, 800_000, 900_000)
	m.Device([]Launch{at(1_000_000)}) // the second call's: beyond the first's tolerance
	require.Empty(t, m.Take())
	m.Timed(k, 800_100, 1_000_000)
	m.Host(k, 1_100_000)
	m.Device([]Launch{at(1_101_000)})
	require.Equal(t, []Latency{{k, 800_100, 199_900}}, m.Take())
	m.Expire(1_100_000 + MaxHold)
	require.Equal(t, []Latency{{k, 1_100_000, 1000}}, m.Take())
}

func TestLaunchMatcherTimedFirst(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	dev := func(h uint64) Launch { return Launch{KernelID: k, StartNS: h + 300 + off} }
	// Timed before the device record came: calibrates at the match.
	m2 := NewLaunchMatcher()
	m2.Host(k, 100)
	m2.Timed(k, 100, 100+300)
	m2.Device([]Launch{dev(100)})
	require.Equal(t, []Latency{{k, 100, 300}}, m2.Take()) // the event at the first block: exact
}

func TestLaunchMatcherBounded(t *testing.T) {
	m := NewLaunchMatcher()
	for i := range 3 * MaxPending {
		m.Host(1, uint64(i))
		m.Device([]Launch{{KernelID: 2, StartNS: uint64(i)}})
	}
	require.Len(t, m.host[1], MaxPending)
	require.Len(t, m.dev[2], MaxPending)
	require.Equal(t, uint64(2*MaxPending), m.host[1][0].Start)
	for k := range uint64(MaxKernels) {
		m.Host(100+k, 1)
	}
	require.Len(t, m.host, 1, "the kernels' queues were forgotten when full")
}
