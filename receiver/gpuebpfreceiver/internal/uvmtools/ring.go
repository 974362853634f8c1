package uvmtools

import (
	"sync/atomic"
	"unsafe"
)

// ring is the consumer side of the driver's event queue: entries buffer
// (size entries of entrySize bytes) and the control page, both memory the
// driver has pinned and writes directly.
//
// The driver (uvm_tools.c, enqueue_event), under its queue lock, reads
// get_behind and put_behind, drops the entry (dropped[type]++) when
// put_behind+1 == get_behind, else copies the entry to slot put_behind and
// then stores put_ahead = put_behind = put_behind+1. So:
//   - we load put_behind atomically (acquire) before reading the slots below
//     it: the entry bytes were written before the index;
//   - we store get_ahead (the slots we are about to read: the driver uses it
//     only to decide on poll wake-ups), copy the entries out, then store
//     get_behind (release): only then may the driver reuse those slots.
//
// The driver masks every index it reads with size-1, and so do we.
type ring struct {
	buf       []byte
	ctrl      *controlData
	size      uint32 // entries, a power of two
	entrySize int
	get       uint32
	scratch   []byte
	dropped   uint64 // total of ctrl.Dropped at the last drain
}

func newRing(buf []byte, ctrlPage []byte, size uint32, entrySize int) *ring {
	return &ring{
		buf:       buf,
		ctrl:      (*controlData)(unsafe.Pointer(&ctrlPage[0])),
		size:      size,
		entrySize: entrySize,
		get:       atomic.LoadUint32(&(*controlData)(unsafe.Pointer(&ctrlPage[0])).GetBehind) & (size - 1),
		scratch:   make([]byte, entrySize),
	}
}

// drain hands every entry the driver has published to fn, in order, and
// frees their slots. The slice is valid only during the call. It returns the
// number of entries and how many the driver dropped since the last drain.
func (r *ring) drain(fn func([]byte)) (n int, dropped uint64) {
	mask := r.size - 1
	put := atomic.LoadUint32(&r.ctrl.PutBehind) & mask
	if put != r.get {
		atomic.StoreUint32(&r.ctrl.GetAhead, put)
		for r.get != put {
			off := int(r.get) * r.entrySize
			copy(r.scratch, r.buf[off:off+r.entrySize])
			fn(r.scratch)
			r.get = (r.get + 1) & mask
			n++
		}
		atomic.StoreUint32(&r.ctrl.GetBehind, put)
	}
	total := r.droppedTotal()
	dropped = total - r.dropped
	r.dropped = total
	return n, dropped
}

func (r *ring) droppedTotal() uint64 {
	var t uint64
	for i := range r.ctrl.Dropped {
		t += atomic.LoadUint64(&r.ctrl.Dropped[i])
	}
	return t
}

func (r *ring) droppedByType() map[EventType]uint64 {
	m := map[EventType]uint64{}
	for i := range r.ctrl.Dropped {
		if v := atomic.LoadUint64(&r.ctrl.Dropped[i]); v != 0 {
			m[EventType(i)] = v
		}
	}
	return m
}

// pending is the number of entries published and not yet drained.
func (r *ring) pending() uint32 {
	return (atomic.LoadUint32(&r.ctrl.PutBehind) - r.get) & (r.size - 1)
}
