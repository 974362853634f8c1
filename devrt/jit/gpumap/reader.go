package gpumap

import (
	"errors"
	"fmt"
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

// RingDrain takes up to max records from a ring whose cursors are kept in
// the region (TailOffset and StuckOffset of each shard), and advances them
// past them (RingRead, with the cursors and the losses written back: for a
// region only this reader writes, as tests and the GPU checks have).
// Shards are drained in order, each up to max records.
func (m Map) RingDrain(r Region, max int) ([][]byte, error) {
	var out [][]byte
	var bad error
	for s := range uint64(m.ringShards()) {
		var c RingCursor
		c.Tail, _ = r.U64(m.TailOffset(s))
		c.Stuck, _ = r.U64(m.StuckOffset(s))
		recs, c, lost, err := m.RingRead(r, s, c, max)
		_ = r.PutU64(m.TailOffset(s), c.Tail)
		_ = r.PutU64(m.StuckOffset(s), c.Stuck)
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

// RingCursor is a reader's place in one shard of a ring, which the reader
// keeps (devrt's copy of the region overwrites whatever the host would
// write into it): Tail, the records it has consumed; Stuck, when the read
// before stopped at record Tail, unreadable while later records were
// whole, the last of those + 1.
type RingCursor struct{ Tail, Stuck uint64 }

// RingRead takes up to max records from shard shard of a ring (0 for a
// ring of one), in order, from c, and returns the cursor past them and the
// records lost on the way. It stops at the first record not written yet,
// or whose check does not match its bytes (its stores are not all visible
// yet; RecCheck), unless a record after it was whole at the read before:
// a record reserved earlier and still unreadable a read later had its slot
// written last by a writer of an earlier lap (the device claims nothing;
// the ring lapped within one burst), and is lost. Records the device
// overwrote before they were read (the ring is a lap ahead, a slot's seq
// is past the record, or changed while its payload was copied) and
// records with an impossible length are skipped and counted as lost. It
// never writes the region.
func (m Map) RingRead(r Region, shard uint64, c RingCursor, max int) (recs [][]byte, next RingCursor, lost uint64, err error) {
	tail := c.Tail
	if m.Type != Ringbuf {
		return nil, c, 0, fmt.Errorf("map %q is a %s, not a ring", m.Name, m.Type)
	}
	if shard >= uint64(m.ringShards()) {
		return nil, c, 0, fmt.Errorf("map %q has %d shards, not %d", m.Name, m.ringShards(), shard+1)
	}
	if err := r.check(m.Offset, HeaderSize+m.DataSize); err != nil {
		return nil, c, 0, fmt.Errorf("map %q: %w", m.Name, err)
	}
	slots := m.ShardSlots()
	head := r.load64(m.HeadOffset(shard))
	if head > tail && head-tail > slots {
		lost += head - slots - tail
		tail = head - slots
	}
	var bad error
	for tail < head && len(recs) < max {
		rec, st, err := m.ringRecord(r, shard, tail)
		switch {
		case err != nil:
			if bad == nil {
				bad = err
			}
			lost++
			tail++
		case st == recWhole:
			recs = append(recs, rec)
			tail++
		case st == recGone:
			lost++
			tail++
		case tail+1 < c.Stuck:
			lost++ // a writer of an earlier lap wrote it last
			tail++
		default:
			stuck := uint64(0)
			if w, ok := m.lastWhole(r, shard, tail, head); ok {
				stuck = w + 1
			}
			return recs, RingCursor{Tail: tail, Stuck: stuck}, lost, bad
		}
	}
	next = RingCursor{Tail: tail}
	if tail+1 < c.Stuck {
		next.Stuck = c.Stuck // stopped by max: still known stale up to there
	}
	return recs, next, lost, bad
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

// lastWhole returns the last whole record of shard shard after i (up to
// head), if any.
func (m Map) lastWhole(r Region, shard, i, head uint64) (uint64, bool) {
	for j := head; j > i+1; j-- {
		if _, st, err := m.ringRecord(r, shard, j-1); err == nil && st == recWhole {
			return j - 1, true
		}
	}
	return 0, false
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
