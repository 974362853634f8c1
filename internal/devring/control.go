package devring

import "sync/atomic"

// Control is what the collector tells devrt through the control page.
type Control struct {
	Classes     uint32 // Class* bits: what devrt reports
	SampleEvery uint32 // time 1 of every N launches/copies per thread; 0: none
	SampleGapUS uint32 // no two timed calls of a thread closer than this (µs); 0: no minimum
	ConsumerPID uint32 // the collector's pid; 0: none attached
}

// WriteControl writes c into the control page as a seqlock writer:
// generation odd while the fields change, even (and different) after, so
// devrt, which reads the fields without a lock, takes a consistent copy
// when the generation has moved and is even.
func (r *Ring) WriteControl(c Control) error {
	return r.guard(func() {
		gen := r.u32(CtlOffset + ctlGeneration)
		g := atomic.LoadUint32(gen)
		// Odd now: g+1 from an even value; from an odd one (a writer that
		// died, or garbage) g+2, still odd and visibly new.
		g = (g + 1) | 1
		atomic.StoreUint32(gen, g)
		atomic.StoreUint32(r.u32(CtlOffset+ctlClasses), c.Classes)
		atomic.StoreUint32(r.u32(CtlOffset+ctlSampleEvery), c.SampleEvery)
		atomic.StoreUint32(r.u32(CtlOffset+ctlSampleGap), c.SampleGapUS)
		atomic.StoreUint32(r.u32(CtlOffset+ctlConsumerPID), c.ConsumerPID)
		atomic.StoreUint32(gen, g+1)
	})
}

// Heartbeat stores when the collector last drained the ring (CLOCK_MONOTONIC
// ns). One aligned word, stored atomically on its own: it changes at every
// drain and is no reason for devrt to re-read the configuration, so it does
// not move the generation.
func (r *Ring) Heartbeat(ns uint64) error {
	return r.guard(func() { atomic.StoreUint64(r.u64(CtlOffset+ctlHeartbeat), ns) })
}

// ReadControl returns the control page's fields and generation as devrt
// would read them (tests; a collector that takes over a ring).
func (r *Ring) ReadControl() (c Control, generation uint32, heartbeat uint64, err error) {
	err = r.guard(func() {
		generation = atomic.LoadUint32(r.u32(CtlOffset + ctlGeneration))
		c.Classes = atomic.LoadUint32(r.u32(CtlOffset + ctlClasses))
		c.SampleEvery = atomic.LoadUint32(r.u32(CtlOffset + ctlSampleEvery))
		c.SampleGapUS = atomic.LoadUint32(r.u32(CtlOffset + ctlSampleGap))
		c.ConsumerPID = atomic.LoadUint32(r.u32(CtlOffset + ctlConsumerPID))
		heartbeat = atomic.LoadUint64(r.u64(CtlOffset + ctlHeartbeat))
	})
	return
}
