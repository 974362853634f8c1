package proberegion

import (
	"testing"
	"time"

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
	// first block) calibrates. The pairs wait for a timed launch OffsetSpan
	// after them (the offset near a call is the least of the timed
	// launches' within OffsetSpan of it: final once those are seen), MaxHold
	// at most; then come out with the offset's error: 300 - 50 ns.
	m.Timed(k, 2000, 2000+250, 0)
	o, ok := m.Offset(2000 + off)
	require.True(t, ok)
	require.Equal(t, int64(off+50), o)
	require.Empty(t, m.Take())
	m.Expire(2000 + MaxHold)
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
	m.Timed(k, 10_300, 50_000-30, 0)
	m.Device([]Launch{at(k, 40_000), at(k, 50_000), at(k, 60_000)})
	m.Expire(10_300 + MaxHold)
	require.Equal(t, []Latency{{k, 10_000, 10_000}, {k, 10_100, 19_900}, {k, 10_200, 29_800}, {k, 10_300, 39_700}}, m.Take())
	o, _ = m.Offset(50_000 + off)
	require.Equal(t, int64(off+50), o)
	m.Host(k, 55_000)
	m.Timed(k, 55_000, 60_000+30, 0) // paired before its timing came
	require.Empty(t, m.Take())
	m.Expire(55_000 + MaxHold)
	require.Equal(t, []Latency{{k, 55_000, 5_030}}, m.Take())
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
// bursts' latencies up to 45 µs short, negative. (The offset steps once a
// second here, so that the expected values are exact; within OffsetSpan
// the real drift is under a microsecond.) A burst's latencies come out
// when the next burst's first timed launch is matched, OffsetSpan or more
// after them: every timed launch near them has been seen by then.
func TestLaunchMatcherDrift(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	offAt := func(h uint64) uint64 { return off - h/1_000_000_000*18_000 } // %globaltimer - host
	m := NewLaunchMatcher()
	var prev []Latency
	for s := range uint64(6) { // a burst every half second: 10 launches 1 ms apart, the 1st and 6th timed
		base := s * 500_000_000
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
		require.Empty(t, m.Take(), "burst %d: waits for its timings", s)
		for _, i := range []uint64{0, 5} { // the start event 1 µs before the first block
			h := base + i*1_000_000
			m.Timed(k, h, h+4000+100*i-1000, 0)
		}
		require.Equal(t, prev, m.Take(), "burst %d: the one before it", s)
		prev = want
		o, ok := m.Offset(base + offAt(base))
		require.True(t, ok)
		require.Equal(t, int64(offAt(base)+1000), o, "burst %d", s)
	}
	m.Flush()
	require.Equal(t, prev, m.Take(), "the last burst, when the regions go")
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
	calibrated := func() *LaunchMatcher { return calibratedMatcher(t, k, off) }

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
	m.Timed(k, 100_100, 150_000-200, 0)
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{m.Realigned, m.Shifted})
	m.Host(k, 300_000) // in order again
	m.Device([]Launch{at(301_000)})
	m.Expire(300_000 + MaxHold)
	require.Equal(t, []Latency{{k, 100_100, 49_900}, {k, 100_200, 149_800}, {k, 300_000, 1000}}, m.Take())

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
	m.Timed(k, 300_100, 500_000, 0)
	require.Equal(t, uint64(1), m.Shifted)
	m.Host(k, 700_000) // D
	m.Host(k, 700_100) // E
	m.Device([]Launch{at(710_000), at(720_000)})
	require.Empty(t, m.Take(), "suspect: waits for a timed call")
	m.Timed(k, 700_000, 710_000+20, 0)
	m.Expire(700_100 + MaxHold)
	require.Equal(t, []Latency{{k, 700_000, 10_020}, {k, 700_100, 19_920}}, m.Take())
	require.Equal(t, uint64(1), m.Realigned)

	// A timed call whose record was lost too: it and what came before are
	// dropped, and the next timed call realigns.
	m = calibrated()
	m.Lost()
	m.Host(k, 800_000)
	m.Host(k, 800_100)
	m.Timed(k, 800_000, 900_000, 0)
	m.Device([]Launch{at(1_000_000)}) // the second call's: beyond the first's tolerance
	require.Empty(t, m.Take())
	m.Timed(k, 800_100, 1_000_000, 0)
	m.Host(k, 1_100_000)
	m.Device([]Launch{at(1_101_000)})
	m.Expire(1_100_000 + MaxHold)
	require.Equal(t, []Latency{{k, 800_100, 199_900}, {k, 1_100_000, 1000}}, m.Take())
}

func TestLaunchMatcherTimedFirst(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	dev := func(h uint64) Launch { return Launch{KernelID: k, StartNS: h + 300 + off} }
	// Timed before the device record came: calibrates at the match.
	m2 := NewLaunchMatcher()
	m2.Host(k, 100)
	m2.Timed(k, 100, 100+300, 0)
	m2.Device([]Launch{dev(100)})
	o, ok := m2.Offset(100 + 300 + off)
	require.True(t, ok)
	require.Equal(t, int64(off), o)
	m2.Expire(100 + MaxHold)
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

// TestLaunchMatcherLateStart: a timed launch whose first block starts long
// after its start event (the GPU busy with another stream's work, or the
// kernel's first launch loading it: 20-90 µs on an H100) is paired right:
// its block lies within its work (start to end event). Checked against
// the start event alone, as until 2026-11-27, it was taken for a shifted
// pairing, and the kernel's latencies up to the next timed call were
// dropped.
func TestLaunchMatcherLateStart(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	m := calibratedMatcher(t, k, off)

	// Synchronous launches 200 µs apart: start event 3 µs after the call,
	// first block 1 µs after it, end event 10 µs after the call; the 5th
	// (timed) starts 90 µs after its start event.
	var want []Latency
	var recs []Launch
	call := func(i uint64) uint64 { return 1_000_000 + i*200_000 }
	for i := range uint64(8) {
		lat := uint64(4000)
		if i == 4 {
			lat = 93_000
		}
		m.Host(k, call(i))
		recs = append(recs, Launch{KernelID: k, StartNS: call(i) + lat + off})
		want = append(want, Latency{k, call(i), int64(lat)})
	}
	m.Device(recs)
	m.Timed(k, call(0), call(0)+3000, call(0)+10_000)
	m.Timed(k, call(4), call(4)+3000, call(4)+100_000)
	m.Expire(call(7) + MaxHold)
	require.Equal(t, want, m.Take())
	require.Zero(t, m.Shifted+m.Realigned)

	// Its block after its end event: another launch's record.
	m.Host(k, 3_000_000)
	m.Device([]Launch{{KernelID: k, StartNS: 3_000_000 + 150_000 + off}})
	m.Timed(k, 3_000_000, 3_003_000, 3_010_000+Tolerance)
	require.Equal(t, uint64(1), m.Shifted)
	require.Empty(t, m.Take())
}

// TestLaunchMatcherRealignsOnItsWork: realigning, a timed call's record is
// the one within its work (start to end event), not the one nearest its
// start event: the previous launch's block, 38 µs before the start event,
// is nearer than its own, which started 60 µs after it. Nearest to the
// start event (until 2026-11-27), the call took the previous launch's
// record: a latency of -36 µs, and each one after a launch off.
func TestLaunchMatcherRealignsOnItsWork(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	at := func(a uint64) Launch { return Launch{KernelID: k, StartNS: a + off} }
	m := calibratedMatcher(t, k, off)

	m.Lost()
	m.Host(k, 3_000_000) // A (its record kept: the ring lost others)
	m.Host(k, 3_040_000) // B, timed
	m.Device([]Launch{at(3_004_000), at(3_102_000)})
	require.Empty(t, m.Take(), "suspect: waits for a timed call")
	m.Timed(k, 3_040_000, 3_042_000, 3_110_000)
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{m.Realigned, m.Shifted})
	m.Host(k, 3_200_000) // in order again
	m.Device([]Launch{at(3_204_000)})
	m.Expire(3_200_000 + MaxHold)
	require.Equal(t, []Latency{{k, 3_040_000, 62_000}, {k, 3_200_000, 4000}}, m.Take())
}

// TestLaunchMatcherWaitsForItsSpan: a launch's offset is the least of the
// timed launches' within OffsetSpan of its call, so its latency waits for
// a timed launch OffsetSpan after it. Reported at the first timed launch
// after it (until 2026-11-27), a kernel's first launch took the offset of
// its second, whose blocks started 35 µs after its start event: -11.5 µs
// here where it was 23.5 (-11.6 in testdata/latency/h100-a2-warp.trace, a
// live Triton attention kernel's on an H100).
func TestLaunchMatcherWaitsForItsSpan(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	at := func(a uint64) Launch { return Launch{KernelID: k, StartNS: a + off} } // host clock a
	m := calibratedMatcher(t, k, off)

	const c0 = 1_000_000_000 // a second later: the first sample is not near
	const c1, c2, c3 = c0 + 5_000_000, c0 + 6_000_000, c0 + 60_000_000
	m.Host(k, c0) // not timed: its first block 23.5 µs after the call
	m.Host(k, c1) // timed: start event 6.6 µs after the call, block 35 µs after it
	m.Host(k, c2) // timed: block at its start event, 3 µs after the call
	m.Device([]Launch{at(c0 + 23_500), at(c1 + 41_600), at(c2 + 3000)})
	m.Timed(k, c1, c1+6600, c1+100_000)
	require.Empty(t, m.Take(), "the offset near c0 is not final")
	m.Timed(k, c2, c2+3000, c2+10_000)
	require.Empty(t, m.Take(), "nor with c2's: a timed launch up to OffsetSpan after c0 may come")
	m.Host(k, c3)
	m.Device([]Launch{at(c3 + 3000)})
	m.Timed(k, c3, c3+3000, c3+10_000)
	require.Equal(t, []Latency{{k, c0, 23_500}, {k, c1, 41_600}, {k, c2, 3000}}, m.Take())
	m.Flush()
	require.Equal(t, []Latency{{k, c3, 3000}}, m.Take())
	require.Zero(t, m.Shifted+m.Realigned)
}

// TestLaunchMatcherLostCallBounds: a record is taken for one whose call
// was lost only when the call started after the latest time the offset's
// bounds allow its block (a timed launch's first block lies between its
// start and end events: the offset between its block's %globaltimer minus
// those). A kernel's first launch, timed, started its blocks 52 µs after
// its start event: its offset alone put the third launch's block 51 µs
// before its call, beyond Tolerance. At that earliest time, as until
// 2026-11-27, the record was dropped, each launch after took the next
// one's record, and the timed ones checked it within Tolerance (launches
// 40 µs apart): on an H200 (testdata/latency/h200-c5-warp.trace), a
// latency lost and the rest a launch off.
func TestLaunchMatcherLostCallBounds(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	at := func(a uint64) Launch { return Launch{KernelID: k, StartNS: a + off} } // host clock a
	m := calibratedMatcher(t, k, off)

	const c0 = 1_000_000_000 // a second later
	const c1 = c0 + 32_000_000
	const c2, c3, c4 = c1 + 77_000, c1 + 116_000, c1 + 158_000
	const s0, s3 = c0 + 12_000, c3 + 3000 // start events of the timed ones
	for _, c := range []uint64{c0, c1, c2, c3, c4} {
		m.Host(k, c)
	}
	m.Device([]Launch{at(s0 + 52_000)})
	m.Timed(k, c0, s0, s0+77_000)
	m.Timed(k, c3, s3, s3+24_000)
	m.Device([]Launch{at(c1 + 26_000), at(c2 + 1000), at(s3 + 1000), at(c4 + 3000)})
	m.Expire(c4 + MaxHold)
	// each through the least offset near it, c3's: 1 µs over
	require.Equal(t, []Latency{{k, c0, 63_000}, {k, c1, 25_000}, {k, c2, 0}, {k, c3, 3000}, {k, c4, 2000}}, m.Take())
	require.Zero(t, m.Shifted+m.Realigned)
}

// calibratedMatcher is a matcher that has paired one timed launch of
// kernel k (at host time 1000, its first block at its start event, 2000,
// its end event at 3000), at the offset off, and reported it.
func calibratedMatcher(t *testing.T, k uint64, off uint64) *LaunchMatcher {
	t.Helper()
	m := NewLaunchMatcher()
	m.Host(k, 1000)
	m.Timed(k, 1000, 2000, 3000)
	m.Device([]Launch{{KernelID: k, StartNS: 2000 + off}})
	m.Expire(1000 + MaxHold)
	require.Equal(t, []Latency{{k, 1000, 1000}}, m.Take())
	return m
}

// TestLaunchMatcherQueuedShift: back-to-back launches of a 300 µs kernel
// queued on a stream (calls 5 µs apart, every fourth timed: its start
// event 2 µs before its first block, its end event as the work ends, the
// next launch's block 3 µs later). A call lost, or a record lost without
// the ring saying so, shifts the in-order pairing by one; the next timed
// call's check finds it (its record before its start event; or just
// after its work ends while the record before it sits at the start
// event), and what it reports is each call's own latency, those the
// checks confirmed before the shift included.
func TestLaunchMatcherQueuedShift(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	const c0, b0 = 1_000_000_000, 1_000_100_000 // first call, first block
	call := func(i uint64) uint64 { return c0 + 5_000*i }
	block := func(i uint64) uint64 { return b0 + 303_000*i }
	for _, tc := range []struct {
		name           string
		lostCall, lost int  // the call or record lost (-1: none)
		timedFirst     bool // devrt's timings read before the records
	}{
		{"call lost", 5, -1, false},
		{"record lost", -1, 5, false},
		{"call lost, timed first", 5, -1, true},
		{"record lost, timed first", -1, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := calibratedMatcher(t, k, off)
			var recs []Launch
			for i := range uint64(20) {
				if int(i) != tc.lostCall {
					m.Host(k, call(i))
				}
				if int(i) != tc.lost {
					recs = append(recs, Launch{KernelID: k, StartNS: block(i) + off})
				}
			}
			timed := func() {
				for i := uint64(0); i < 20; i += 4 {
					m.Timed(k, call(i), block(i)-2000, block(i)+300_000)
				}
			}
			if tc.timedFirst {
				timed()
			}
			// found shifted while pairing: realigned on the next timed
			// call, not again on this one (it looped forever)
			returns(t, func() { m.Device(recs) })
			if !tc.timedFirst {
				timed()
			}
			m.Expire(call(19) + MaxHold)
			got := m.Take()
			require.NotZero(t, m.Shifted)
			byCall := map[uint64]int64{}
			for _, l := range got {
				byCall[l.HostNS] = l.NS
			}
			for i := range uint64(20) {
				ns, ok := byCall[call(i)]
				if i <= 4 {
					require.True(t, ok, "call %d, confirmed by the timed call 4", i)
				}
				if ok { // through the least gap near it: 2 µs
					require.Equal(t, int64(block(i)-call(i))-2000, ns, "call %d: its own record", i)
				}
			}
		})
	}
}

// TestLaunchMatcherTwoStreams: a kernel launched on two streams; the
// second launch, timed, starts its blocks 295 µs after its start event
// (the GPU full), after the first launch's block, which started 95 µs
// after that start event. The kernel's previous record lies after the
// start event, but not near it: not a shift (a queue's would be, its
// block as this work's start), and both latencies stand, whichever of
// the timing and the record is read first.
func TestLaunchMatcherTwoStreams(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	at := func(a uint64) Launch { return Launch{KernelID: k, StartNS: a + off} }
	for _, timedFirst := range []bool{false, true} {
		m := calibratedMatcher(t, k, off)
		m.Host(k, 1_000_000) // stream B
		m.Device([]Launch{at(1_100_000)})
		m.Host(k, 1_000_010) // stream A, timed
		if timedFirst {
			m.Timed(k, 1_000_010, 1_005_000, 1_500_000)
			m.Device([]Launch{at(1_300_000)})
		} else {
			m.Device([]Launch{at(1_300_000)})
			m.Timed(k, 1_000_010, 1_005_000, 1_500_000)
		}
		m.Expire(1_000_010 + MaxHold)
		require.Equal(t, []Latency{{k, 1_000_000, 100_000}, {k, 1_000_010, 299_990}}, m.Take(), "timed first: %v", timedFirst)
		require.Zero(t, m.Shifted+m.Realigned)
	}
}

// TestLaunchMatcherSamplesSpanTheirGrain: timed launches closer than
// SampleGrain make one sample, which keeps its time: merged into the
// newest one's, as until a review on 2026-11-27, a launch every 100 µs
// timed 1 in 10 made one sample of a whole run, and at 18 ppm most
// latencies read tens of µs off.
func TestLaunchMatcherSamplesSpanTheirGrain(t *testing.T) {
	const k = 0xabc
	const off = 5_000_000_000
	gpu := func(h uint64) uint64 { return off + h + h/1_000_000*18 } // the GPU's clock 18 ppm fast
	m := NewLaunchMatcher()
	worst := int64(0)
	n := 0
	for i := range uint64(20_000) { // 2 s
		c := 1_000_000_000 + i*100_000
		m.Host(k, c)
		s := c + 8000 // the start event; the block 2 µs after: 10 µs latency
		m.Device([]Launch{{KernelID: k, StartNS: gpu(s + 2000)}})
		if i%10 == 0 {
			m.Timed(k, c, s, s+20_000)
		}
		for _, l := range m.Take() {
			n++
			worst = max(worst, l.NS-8000, 8000-l.NS) // through the least gap: 2 µs
		}
	}
	m.Flush()
	n += len(m.Take())
	require.Equal(t, 20_000, n)
	require.Less(t, worst, int64(2000), "within the clocks' drift over a grain and a span")
	require.Greater(t, len(m.samples), 2*OffsetSpan/SampleGrain)
	require.Zero(t, m.Shifted+m.Realigned)
}

// returns fails the test if f has not returned within a second.
func returns(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("did not return within a second")
	}
}
