package translate

import (
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"golang.org/x/sys/unix"
)

// Clock converts the kernel's CLOCK_MONOTONIC nanoseconds (what
// bpf_ktime_get_ns returns) to wall-clock time. The offset is measured when
// the clock is made and again on Calibrate, so NTP steps are followed.
type Clock struct {
	offset atomic.Int64 // unix ns - monotonic ns
}

// NewClock returns a calibrated clock.
func NewClock() *Clock {
	c := &Clock{}
	c.Calibrate()
	return c
}

func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Calibrate re-measures the offset, taking the tightest of a few samples.
func (c *Clock) Calibrate() {
	best, bestGap := int64(0), int64(1<<62)
	for i := 0; i < 5; i++ {
		m1 := monotonicNow()
		wall := time.Now().UnixNano()
		m2 := monotonicNow()
		if gap := m2 - m1; gap < bestGap {
			bestGap, best = gap, wall-(m1+gap/2)
		}
	}
	c.offset.Store(best)
}

// Timestamp converts a monotonic time to a pdata timestamp.
func (c *Clock) Timestamp(mono uint64) pcommon.Timestamp {
	return pcommon.Timestamp(int64(mono) + c.offset.Load())
}

// Now is the wall-clock time.
func (c *Clock) Now() time.Time { return time.Now() }

// Monotonic is the current CLOCK_MONOTONIC time in nanoseconds.
func Monotonic() uint64 { return uint64(monotonicNow()) }
