package uvm

// monoRaw maps the fentry backend's times (CLOCK_MONOTONIC, bpf_ktime_get_ns)
// to the driver's clock the tools backend reports and the accounting works
// in (CLOCK_MONOTONIC_RAW), with their difference measured again each
// second of record time: the two drift apart by NTP's slewing only, a few
// hundred ppm at most, so the error stays under a millisecond.
type monoRaw struct {
	now  func() int64 // CLOCK_MONOTONIC_RAW - CLOCK_MONOTONIC, ns
	off  int64
	next uint64
}

func (c *monoRaw) raw(mono uint64) uint64 {
	if mono >= c.next || c.next == 0 {
		c.off = c.now()
		c.next = mono + 1e9
	}
	return uint64(int64(mono) + c.off)
}
