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

	// Calibrated: by time. The launch at 4000 lost its device record; the
	// one at 5000 is matched to its own call. A record that comes before
	// its call waits for it.
	m.Host(k, 4000)
	m.Host(k, 5000)
	m.Device([]Launch{dev(k, 5000), dev(k, 7000)})
	require.Equal(t, []Latency{{k, 5000, 250}}, m.Take())
	m.Host(k, 7000)
	require.Equal(t, []Latency{{k, 7000, 250}}, m.Take())

	// A record older than every pending call lost its call: dropped.
	m.Host(k, 9000)
	m.Device([]Launch{dev(k, 8000), dev(k, 9000)})
	require.Equal(t, []Latency{{k, 9000, 250}}, m.Take())

	// Timed before the device record came: calibrates at the match.
	m2 := NewLaunchMatcher()
	m2.Host(k, 100)
	m2.Timed(k, 100, 100+300)
	m2.Device([]Launch{dev(k, 100)})
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
