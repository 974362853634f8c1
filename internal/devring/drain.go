package devring

import (
	"encoding/binary"
	"sync/atomic"
)

// slotOff is the offset in the mapping of the slot at position pos.
func (r *Ring) slotOff(pos uint64) int { return DataOffset + int(pos&r.mask)*SlotSize }

// Drain hands each complete record at the consumer's position to fn, in
// order, and frees its slots; rec is valid until fn returns. It stops at
// the first record not yet committed, after one lap of the ring (records
// committed meanwhile wait for the next call), or when fn returns an error,
// which Drain returns (that record counts as consumed). n is the number of
// records handed to fn.
//
// A record that breaks the protocol (a sequence number no producer could
// have written, a length beyond MaxRecordSize or not matching its slot
// count, a continuation slot not committed) breaks the ring: Drain returns
// an error wrapping ErrCorrupt, now and at every later call.
func (r *Ring) Drain(fn func(rec []byte) error) (n int, err error) {
	if r.broken != nil {
		return 0, r.broken
	}
	var fnErr error
	err = r.guard(func() { n, fnErr = r.drain(fn) })
	if err != nil {
		return n, err
	}
	if r.broken != nil {
		return n, r.broken
	}
	return n, fnErr
}

func (r *Ring) drain(fn func(rec []byte) error) (int, error) {
	capacity := r.mask + 1
	pos := r.tail
	defer func() {
		r.tail = pos
		atomic.StoreUint64(r.u64(hdrTail), pos)
	}()
	n := 0
	for budget := capacity; budget > 0; {
		first := r.slotOff(pos)
		seq := atomic.LoadUint64(r.u64(first + slotSeq))
		if seq == pos {
			return n, nil // free, or claimed and being written
		}
		if seq != pos+1 {
			return n, r.breakf("position %d: slot sequence %d, want %d or %d", pos, seq, pos, pos+1)
		}
		le := binary.LittleEndian
		length := le.Uint32(r.mem[first+slotLen:])
		nslots := uint32(le.Uint16(r.mem[first+slotNSlots:]))
		if length == 0 || length > MaxRecordSize || nslots != slotsFor(length) {
			return n, r.breakf("position %d: record of %d bytes in %d slots", pos, length, nslots)
		}
		if uint64(nslots) > budget {
			return n, nil // a lap is done; the rest next time
		}
		// The first slot is committed last: every other slot of the
		// record must be committed already.
		for i := uint64(1); i < uint64(nslots); i++ {
			q := pos + i
			if s := atomic.LoadUint64(r.u64(r.slotOff(q) + slotSeq)); s != q+1 {
				return n, r.breakf("position %d: continuation slot %d has sequence %d, want %d", pos, q, s, q+1)
			}
		}
		rec := r.buf[:length]
		for i, done := uint64(0), 0; done < len(rec); i++ {
			off := r.slotOff(pos+i) + slotData
			done += copy(rec[done:], r.mem[off:off+SlotPayload])
		}
		// Free the slots in position order: a producer checks only the
		// last slot of what it claims, which is then the last freed.
		for i := uint64(0); i < uint64(nslots); i++ {
			q := pos + i
			atomic.StoreUint64(r.u64(r.slotOff(q)+slotSeq), q+capacity)
		}
		pos += uint64(nslots)
		budget -= uint64(nslots)
		n++
		if err := fn(rec); err != nil {
			return n, err
		}
	}
	return n, nil
}
