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
	_, ok := m.Offset()
	require.False(t, ok)

	// devrt's timing of the second launch (its start event 50 ns before the
	// first block) calibrates; the waiting pairs come out with the offset's
	// error: 300 - 50 ns.
	m.Timed(k, 2000, 2000+250)
	o, ok := m.Offset()
	require.True(t, ok)
	require.Equal(t, int64(off+50), o)
	require.Equal(t, []Latency{{k, 1000, 250}, {k, 2000, 250}, {other, 2500, 250}}, m.Take())

	// Calibrated, a queued pipeline: four calls, then their blocks, each
	// long after every call (the GPU works through the queue). Paired in
	// order; by "the latest call before the block" only the last would
	// have been, with the first block.
	at := func(kernel, a uint64) Launch { return Launch{KernelID: k, StartNS: a + off + 50} } // host clock a
	for _, c := range []uint64{10_000, 10_100, 10_200, 10_300} {
		m.Host(k, c)
	}
	m.Device([]Launch{at(k, 20_000), at(k, 30_000)})
	require.Equal(t, []Latency{{k, 10_000, 10_000}, {k, 10_100, 19_900}}, m.Take())
	// A record that comes before its call waits for it. A timed call's
	// record refreshes the offset, the least of the recent ones (the start
	// event comes before the block by a gap of its own): 30 ns more than
	// the offset leaves it, 30 ns less takes it.
	m.Timed(k, 10_300, 50_000-30)
	m.Device([]Launch{at(k, 40_000), at(k, 50_000), at(k, 60_000)})
	require.Equal(t, []Latency{{k, 10_200, 29_800}, {k, 10_300, 39_700}}, m.Take())
	o, _ = m.Offset()
	require.Equal(t, int64(off+50), o)
	m.Host(k, 55_000)
	m.Timed(k, 55_000, 60_000+30)
	require.Equal(t, []Latency{{k, 55_000, 5_000}}, m.Take()) // paired before its timing came
	o, _ = m.Offset()
	require.Equal(t, int64(off+20), o)

	// A record well older than every pending call lost its call:
	// dropped. One a little older (within Tolerance) is the offset's
	// error on a short latency: paired.
	m.Host(k, 190_000)
	m.Device([]Launch{at(k, 80_000), at(k, 190_500)})
	require.Equal(t, []Latency{{k, 190_000, 530}}, m.Take())
	m.Host(k, 200_000)
	m.Device([]Launch{at(k, 199_000)})
	require.Equal(t, []Latency{{k, 200_000, -970}}, m.Take())
	require.Zero(t, m.Realigned+m.Shifted)
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
	require.Equal(t, []Latency{{k, 100_100, 49_900}, {k, 100_200, 149_800}}, m.Take())
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{m.Realigned, m.Shifted})
	m.Host(k, 300_000) // in order again
	m.Device([]Launch{at(301_000)})
	require.Equal(t, []Latency{{k, 300_000, 1000}}, m.Take())

	// The host ring lost a call (A): B took A's record, C B's. B's timing
	// shows it; the kernel is suspect until a later timed call (D)
	// realigns it: C's record and A's are dropped, D and E paired right
	// (their records 10 µs apart, D's the nearest to its timing).
	m = calibrated()
	m.Host(k, 300_100)                                        // B
	m.Host(k, 300_200)                                        // C
	m.Device([]Launch{at(400_000), at(500_000), at(600_000)}) // A's, B's, C's
	require.Equal(t, []Latency{{k, 300_100, 99_900}, {k, 300_200, 199_800}}, m.Take(), "shifted, not known yet")
	m.Timed(k, 300_100, 500_000)
	require.Equal(t, uint64(1), m.Shifted)
	m.Host(k, 700_000) // D
	m.Host(k, 700_100) // E
	m.Device([]Launch{at(710_000), at(720_000)})
	require.Empty(t, m.Take(), "suspect: waits for a timed call")
	m.Timed(k, 700_000, 710_000+20)
	require.Equal(t, []Latency{{k, 700_000, 10_020}, {k, 700_100, 19_920}}, m.Take())
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
	require.Equal(t, []Latency{{k, 800_100, 199_900}, {k, 1_100_000, 1000}}, m.Take())
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
