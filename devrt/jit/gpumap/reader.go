package gpumap

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"
)

// Header is a map header as read back from a region.
type Header struct {
	Magic, Type, KeySize, ValueSize, MaxEntries, Slots, Stride, Flags uint32
	DataSize, Head, Drops, Count, Tail                                uint64
	Shards, BlockSample, BlocksPerLaunch                              uint32
}

// ErrNotInitialised is returned for a map header the host has not written yet.
var ErrNotInitialised = errors.New("map header not initialised")

// ReadHeader reads m's header and checks it describes m.
func (m Map) ReadHeader(r Region) (Header, error) {
	var h Header
	if err := r.check(m.Offset, HeaderSize+m.DataSize); err != nil {
		return h, fmt.Errorf("map %q: %w", m.Name, err)
	}
	u32 := func(o uint64) uint32 { v, _ := r.U32(m.Offset + o); return v }
	u64 := func(o uint64) uint64 { v, _ := r.U64(m.Offset + o); return v }
	h = Header{
		Magic: u32(OffMagic), Type: u32(OffType), KeySize: u32(OffKeySize), ValueSize: u32(OffValueSize),
		MaxEntries: u32(OffMaxEntries), Slots: u32(OffSlots), Stride: u32(OffStride), Flags: u32(OffFlags),
		DataSize: u64(OffDataSize), Head: u64(OffHead), Drops: u64(OffDrops), Count: u64(OffCount), Tail: u64(OffTail),
		Shards: u32(OffShards), BlockSample: u32(OffBlockSample), BlocksPerLaunch: u32(OffBlocksPerLaunch),
	}
	shards := uint32(0)
	if m.Type == Ringbuf {
		shards = max(m.Shards, 1)
	}
	if h.Magic == 0 {
		return h, fmt.Errorf("map %q: %w", m.Name, ErrNotInitialised)
	}
	if h.Magic != Magic || Type(h.Type) != m.Type || h.KeySize != m.KeySize || h.ValueSize != m.ValueSize ||
		h.MaxEntries != m.MaxEntries || h.Slots != m.Slots || h.Stride != m.Stride || h.DataSize != m.DataSize ||
		h.Shards != shards || h.BlockSample != max(m.BlockSample, 1) || h.BlocksPerLaunch != m.BlocksPerLaunch {
		return h, fmt.Errorf("map %q: header %+v does not match the layout", m.Name, h)
	}
	return h, nil
}

// ArrayCopy returns the values of copy slot of an array map (one per key).
func (m Map) ArrayCopy(r Region, slot uint32) ([][]byte, error) {
	if !m.Type.IsArray() || m.Type.InBlock() {
		return nil, fmt.Errorf("map %q is a %s, not an array in the region", m.Name, m.Type)
	}
	if slot >= m.Slots {
		return nil, fmt.Errorf("map %q: copy %d of %d", m.Name, slot, m.Slots)
	}
	out := make([][]byte, m.MaxEntries)
	for k := range out {
		off, _ := m.ElemOffset(uint64(slot), uint64(k))
		b, err := r.Bytes(off, uint64(m.ValueSize))
		if err != nil {
			return nil, fmt.Errorf("map %q: %w", m.Name, err)
		}
		out[k] = append([]byte(nil), b...)
	}
	return out, nil
}

// Entry is one key of a hash map.
type Entry struct {
	Key, Value []byte
}

// HashEntries returns the keys a hash map holds, in bucket order.
func (m Map) HashEntries(r Region) ([]Entry, error) {
	if m.Type != Hash {
		return nil, fmt.Errorf("map %q is a %s, not a hash", m.Name, m.Type)
	}
	var out []Entry
	for i := uint64(0); i < uint64(m.Slots); i++ {
		b := m.BucketOffset(i)
		st, err := r.U32(b)
		if err != nil {
			return nil, fmt.Errorf("map %q: %w", m.Name, err)
		}
		switch st {
		case StateEmpty, StateDeleted, StateBusy:
			continue
		case StateFull:
		default:
			return nil, fmt.Errorf("map %q: bucket %d has state %d", m.Name, i, st)
		}
		k, err := r.Bytes(b+BucketHeaderSize, uint64(m.KeySize))
		if err != nil {
			return nil, fmt.Errorf("map %q: %w", m.Name, err)
		}
		v, err := r.Bytes(m.HashValueOffset(b), uint64(m.ValueSize))
		if err != nil {
			return nil, fmt.Errorf("map %q: %w", m.Name, err)
		}
		out = append(out, Entry{Key: append([]byte(nil), k...), Value: append([]byte(nil), v...)})
	}
	return out, nil
}

// RingDrain takes up to max records from each shard of a ring and adds
// the records it lost to the map's drops. It is for a region no kernel
// writes any more, which only this reader writes (tests and the GPU
// checks): each shard's tail is kept in the region (TailOffset), no
// pending list is. Shards are drained in order, each up to max records,
// in index order.
//
// Each shard is read as RingRead from the stored tail with nothing
// pending and no bound on the records pending. In a finished region a
// record claimed and not whole stays so (its block never wrote it, or a
// stale writer of an earlier lap wrote its slot last), so RingDrain keeps
// none pending: one with a later record consumed (returned or lost) in
// the same drain is counted lost, and does not hold up the records after
// it. Those not whole after the last record consumed are neither returned
// nor counted: the stored tail stays at the first of them, where the next
// drain starts again (counting them lost once a later record is consumed
// or the ring laps them). Over repeated drains each record is returned or
// counted lost once at most.
func (m Map) RingDrain(r Region, max int) ([][]byte, error) {
	var out [][]byte
	var bad error
	for s := range uint64(m.ringShards()) {
		var c RingCursor
		c.Tail, _ = r.U64(m.TailOffset(s))
		recs, next, lost, err := m.ringRead(r, s, c, max, -1)
		tail, p := next.Tail, next.Pending
		for len(p) > 0 && p[len(p)-1] == tail-1 {
			p, tail = p[:len(p)-1], tail-1 // after the last record consumed
		}
		lost += uint64(len(p))
		_ = r.PutU64(m.TailOffset(s), tail)
		if lost > 0 {
			_, _ = r.addU64(m.Offset+OffDrops, lost)
		}
		if err != nil && bad == nil {
			bad = err
		}
		out = append(out, recs...)
	}
	return out, bad
}

// RingHead is the records the device reserved in a ring, over its shards.
func (m Map) RingHead(r Region) uint64 {
	n := uint64(0)
	for s := range uint64(m.ringShards()) {
		n += r.load64(m.HeadOffset(s))
	}
	return n
}

func (m Map) ringShards() uint32 { return max(m.Shards, 1) }

// MaxPending bounds RingCursor.Pending. The records of a shard claimed
// and not written yet are bounded by the thread blocks resident on the
// SMs that share it (a probe claims an index when a block starts and
// writes the record when it ends): on a 132-SM GPU with 32 shards (SM s
// writes shard s % 32), at most 5 SMs of up to 32 blocks each, 160; with
// one shard, 132 * 32 = 4224 (a 148-SM GPU: 4736). The rest is slack for
// slots a stale writer of an earlier lap wrote last, which stay pending
// until the lap after claims them again.
const MaxPending = 8192

// RingCursor is a reader's place in one shard of a ring, which the reader
// keeps (devrt's copy of the region overwrites whatever the host would
// write into it). A probe claims a record's index (the shard's head) when
// a thread block starts and writes the record when the block ends, so a
// claimed record may stay not whole for the block's whole life (up to
// minutes for a persistent kernel) while records claimed after it are
// written and read.
//
// Tail: the records before it were consumed (returned or counted lost)
// or are in Pending. Pending: the indexes below Tail claimed but not
// whole at the last read, ascending, at most MaxPending. Each stays
// pending until it is whole (then returned) or its slot is claimed again
// a lap later (then counted lost): a record is never counted lost while
// its slot can still be written.
//
// The zero cursor starts at the shard's first record. RingRead takes a
// cursor it did not return too: its Pending sorted, duplicates and
// indexes at or past Tail dropped, the lowest beyond MaxPending counted
// lost.
type RingCursor struct {
	Tail    uint64
	Pending []uint64
}

// RingRead takes up to max records from shard shard of a ring (0 for a
// ring of one) from c, and returns them, the cursor past them and the
// records lost on the way. It never writes the region. A head behind
// the cursor's Tail is a region made anew (its records start again at
// 0): the read starts there, with nothing pending.
//
// First it looks at c's pending records, in order: one whose slot was
// claimed again a lap later (the shard's head more than a lap past it) is
// lost, one whole is returned, one overwritten is lost, the others stay
// pending. Then the records more than a lap behind the head, which the
// device overwrote before they were read, are lost, and Tail moves up to
// a lap behind it. Then it takes the records from Tail to the head: whole
// ones are returned; overwritten ones (a slot's seq past the record, or
// changed while its payload was copied) and ones with an impossible
// length (the error returned, the first of them) are lost; ones not
// whole (claimed and not written yet, written but a check that does not
// match its bytes: its stores are not all visible yet, RecCheck; or its
// slot written last by a stale writer of an earlier lap) are added to
// Pending and passed. With MaxPending pending it stops at the next record
// not whole, which stays at Tail: back-pressure, nothing is lost until
// the ring laps it.
//
// Records are not returned in index order: pending ones (from the reads
// before) come first. It stops once max records are returned; pending
// records it did not look at yet stay pending. The cursor returned shares
// no memory with c. On an error before anything is read (not a ring, no
// such shard, a region too small) it returns c as it was.
func (m Map) RingRead(r Region, shard uint64, c RingCursor, max int) (recs [][]byte, next RingCursor, lost uint64, err error) {
	return m.ringRead(r, shard, c, max, MaxPending)
}

// ringRead is RingRead with at most maxPending records pending (no bound
// when negative).
func (m Map) ringRead(r Region, shard uint64, c RingCursor, max, maxPending int) (recs [][]byte, next RingCursor, lost uint64, err error) {
	if m.Type != Ringbuf {
		return nil, c.clone(), 0, fmt.Errorf("map %q is a %s, not a ring", m.Name, m.Type)
	}
	if shard >= uint64(m.ringShards()) {
		return nil, c.clone(), 0, fmt.Errorf("map %q has %d shards, not %d", m.Name, m.ringShards(), shard+1)
	}
	if err := r.check(m.Offset, HeaderSize+m.DataSize); err != nil {
		return nil, c.clone(), 0, fmt.Errorf("map %q: %w", m.Name, err)
	}
	slots := m.ShardSlots()
	head := r.load64(m.HeadOffset(shard))
	if head < c.Tail {
		// a head behind the cursor: the region was made anew (a
		// process's devrt reuses it), its records start again at 0
		c = RingCursor{}
	}
	in, dropped := c.pending()
	lost += dropped
	var pend []uint64
	var bad error
	// take returns record i or counts it lost; false: not whole yet
	take := func(i uint64) bool {
		rec, st, err := m.ringRecord(r, shard, i)
		switch {
		case err != nil:
			if bad == nil {
				bad = err
			}
			lost++
		case st == recWhole:
			recs = append(recs, rec)
		case st == recGone:
			lost++
		default:
			return false
		}
		return true
	}
	i := 0
	for ; i < len(in) && len(recs) < max; i++ {
		p := in[i]
		if head > p && head-p > slots {
			lost++ // its slot was claimed a lap later
			continue
		}
		if !take(p) {
			pend = append(pend, p)
		}
	}
	pend = append(pend, in[i:]...) // not looked at: max records returned
	tail := c.Tail
	if head > tail && head-tail > slots {
		lost += head - slots - tail
		tail = head - slots
	}
	for tail < head && len(recs) < max {
		if !take(tail) {
			if maxPending >= 0 && len(pend) >= maxPending {
				return recs, RingCursor{Tail: tail, Pending: pend}, lost, bad
			}
			pend = append(pend, tail)
		}
		tail++
	}
	return recs, RingCursor{Tail: tail, Pending: pend}, lost, bad
}

// clone is c with a Pending of its own.
func (c RingCursor) clone() RingCursor {
	return RingCursor{Tail: c.Tail, Pending: slices.Clone(c.Pending)}
}

// pending is c.Pending made valid (ascending, no duplicates, below Tail,
// at most MaxPending: the highest), and the indexes beyond MaxPending it
// dropped. It is c.Pending itself when that is valid: not to be written.
func (c RingCursor) pending() ([]uint64, uint64) {
	p := c.Pending
	ok := len(p) <= MaxPending
	for i := 0; ok && i < len(p); i++ {
		ok = p[i] < c.Tail && (i == 0 || p[i-1] < p[i])
	}
	if ok {
		return p, 0
	}
	p = slices.Clone(p)
	slices.Sort(p)
	p = slices.Compact(p)
	n, _ := slices.BinarySearch(p, c.Tail)
	p = p[:n]
	if len(p) > MaxPending {
		return p[len(p)-MaxPending:], uint64(len(p) - MaxPending)
	}
	return p, 0
}

// What a ring slot holds for the record a reader expects there.
const (
	recNotYet = iota // not written yet, or its stores not all visible
	recWhole
	recGone // a later record overwrote it
)

// ringRecord reads record i of shard shard: its payload when it is whole;
// an error for an impossible length.
func (m Map) ringRecord(r Region, shard, i uint64) ([]byte, int, error) {
	s := m.ShardSlotOffset(shard, i)
	seq := r.load64(s + RecSeq)
	if seq != RecCommitted(i+1) {
		if seq>>1 > i+1 {
			return nil, recGone, nil
		}
		return nil, recNotYet, nil
	}
	n, _ := r.U32(s + RecLen)
	if n > m.ValueSize {
		return nil, recGone, fmt.Errorf("map %q: record %d has %d bytes, at most %d (skipped)", m.Name, i, n, m.ValueSize)
	}
	b, _ := r.Bytes(s+RecHeaderSize, uint64(n))
	rec := append([]byte(nil), b...)
	check, _ := r.U32(s + RecCheckOff)
	if r.load64(s+RecSeq) != seq {
		return nil, recGone, nil // overwritten while copied
	}
	if check != RecCheck(seq, rec) {
		return nil, recNotYet, nil
	}
	return rec, recWhole, nil
}

// load64 reads a word the device may be writing (an atomic load: the
// region is shared memory).
func (r Region) load64(off uint64) uint64 {
	if r.check(off, 8) != nil || uintptr(unsafe.Pointer(&r[off]))%8 != 0 {
		v, _ := r.U64(off)
		return v
	}
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&r[off])))
}
