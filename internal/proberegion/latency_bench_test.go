package proberegion

import "testing"

// BenchmarkLaunchMatcher is the collector's work per launch of a
// launch-bound program (one kernel, a launch every 2 µs, its record read
// in batches of 64, 1 in 64 timed): a call, its record, its pairing and
// report.
func BenchmarkLaunchMatcher(b *testing.B) {
	const k, off = 0xabc, 5_000_000_000
	m := NewLaunchMatcher()
	var batch []Launch
	for i := range b.N {
		c := 1_000_000 + uint64(i)*2000
		m.Host(k, c)
		batch = append(batch, Launch{KernelID: k, StartNS: c + 5000 + off})
		if len(batch) == 64 {
			m.Device(batch)
			batch = batch[:0]
			for j := c - 63*2000; j <= c; j += 64 * 2000 {
				m.Timed(k, j, j+4000, j+9000)
			}
			m.Take()
		}
	}
}
