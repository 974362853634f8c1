package gpumap

import (
	"errors"
	"fmt"
)

// Header is a map header as read back from a region.
type Header struct {
	Magic, Type, KeySize, ValueSize, MaxEntries, Slots, Stride, Flags uint32
	DataSize, Head, Drops, Count, Tail                                uint64
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
	}
	if h.Magic == 0 {
		return h, fmt.Errorf("map %q: %w", m.Name, ErrNotInitialised)
	}
	if h.Magic != Magic || Type(h.Type) != m.Type || h.KeySize != m.KeySize || h.ValueSize != m.ValueSize ||
		h.MaxEntries != m.MaxEntries || h.Slots != m.Slots || h.Stride != m.Stride || h.DataSize != m.DataSize {
		return h, fmt.Errorf("map %q: header %+v does not match the layout", m.Name, h)
	}
	return h, nil
}

// ArrayCopy returns the values of copy slot of an array map (one per key).
func (m Map) ArrayCopy(r Region, slot uint32) ([][]byte, error) {
	if !m.Type.IsArray() {
		return nil, fmt.Errorf("map %q is a %s, not an array", m.Name, m.Type)
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

// RingDrain takes up to max committed records from a ring, in order, and
// advances its tail past them (the host owns tail). It stops at the first
// slot whose record is not committed yet. A record longer than the map's
// payload is corruption: an error, and the tail stays where it was.
func (m Map) RingDrain(r Region, max int) ([][]byte, error) {
	if m.Type != Ringbuf {
		return nil, fmt.Errorf("map %q is a %s, not a ring", m.Name, m.Type)
	}
	if err := r.check(m.Offset, HeaderSize+m.DataSize); err != nil {
		return nil, fmt.Errorf("map %q: %w", m.Name, err)
	}
	head, _ := r.U64(m.Offset + OffHead)
	tail, _ := r.U64(m.Offset + OffTail)
	var out [][]byte
	for tail < head && len(out) < max {
		s := m.RingSlotOffset(tail)
		seq, _ := r.U32(s + 4)
		if seq != uint32(tail+1) {
			break
		}
		n, _ := r.U32(s)
		if n > m.ValueSize {
			// skip it: the records before it are taken, this one is lost
			_ = r.PutU64(m.Offset+OffTail, tail+1)
			return out, fmt.Errorf("map %q: record %d has %d bytes, at most %d (skipped)", m.Name, tail, n, m.ValueSize)
		}
		b, _ := r.Bytes(s+RecHeaderSize, uint64(n))
		out = append(out, append([]byte(nil), b...))
		tail++
	}
	if err := r.PutU64(m.Offset+OffTail, tail); err != nil {
		return out, err
	}
	return out, nil
}
