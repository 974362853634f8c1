package gpumap

import (
	"encoding/binary"
	"fmt"
)

// This file is what the probes do to the region, written once in Go for a
// single thread: the interpreter of devrt/jit runs it to compute the bytes
// a GPU run must produce, and the PTX the compiler emits does the same steps
// (with atom.cas / atom.add where lanes race).

// Region is the shared region as the device sees it, bounds-checked.
type Region []byte

func (r Region) check(off, n uint64) error {
	if off > uint64(len(r)) || n > uint64(len(r))-off {
		return fmt.Errorf("region access [%d,+%d) outside %d bytes", off, n, len(r))
	}
	return nil
}

// U64 reads a little-endian word.
func (r Region) U64(off uint64) (uint64, error) {
	if err := r.check(off, 8); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(r[off:]), nil
}

// U32 reads a little-endian 32-bit word.
func (r Region) U32(off uint64) (uint32, error) {
	if err := r.check(off, 4); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(r[off:]), nil
}

// PutU64 writes a little-endian word.
func (r Region) PutU64(off, v uint64) error {
	if err := r.check(off, 8); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(r[off:], v)
	return nil
}

// PutU32 writes a little-endian 32-bit word.
func (r Region) PutU32(off uint64, v uint32) error {
	if err := r.check(off, 4); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(r[off:], v)
	return nil
}

// Bytes returns n bytes at off.
func (r Region) Bytes(off, n uint64) ([]byte, error) {
	if err := r.check(off, n); err != nil {
		return nil, err
	}
	return r[off : off+n], nil
}

func (r Region) addU64(off, d uint64) (uint64, error) {
	v, err := r.U64(off)
	if err != nil {
		return 0, err
	}
	return v, r.PutU64(off, v+d)
}

// CountDrop adds one to the map's drop counter.
func (m Map) CountDrop(r Region) error {
	_, err := r.addU64(m.Offset+OffDrops, 1)
	return err
}

// ArrayLookup returns the region offset of element key of copy slot, or ok
// false when either is out of range (a slot beyond the copies counts a drop).
func (m Map) ArrayLookup(r Region, slot uint64, key uint32) (uint64, bool, error) {
	if slot >= uint64(m.Slots) {
		return 0, false, m.CountDrop(r)
	}
	off, ok := m.ElemOffset(slot, uint64(key))
	return off, ok, nil
}

// HashFind looks key up. found: the bucket offset of the key. Else insert
// (when asked) claims the first tombstone seen or the empty bucket that
// ends the probe sequence, writes the key and the value (val, or zeros when
// val is nil) and only then marks it full, so no lane ever sees a key
// without its value; ok false means the table had no room (a drop is
// counted).
func (m Map) HashFind(r Region, key []byte, insert bool, val []byte) (off uint64, ok bool, inserted bool, err error) {
	if uint32(len(key)) != m.KeySize {
		return 0, false, false, fmt.Errorf("key of %d bytes, map %q has %d", len(key), m.Name, m.KeySize)
	}
	w := KeyWords(key)
	h := HashWords(w)
	mask := uint64(m.Slots - 1)
	n := uint64(m.Slots)
	if n > MaxProbes {
		n = MaxProbes
	}
	free := int64(-1)
	for i := uint64(0); i < n; i++ {
		b := m.BucketOffset((h + i) & mask)
		st, err := r.U32(b)
		if err != nil {
			return 0, false, false, err
		}
		if st == StateFull {
			eq := true
			for j, x := range w {
				y, err := r.U64(b + BucketHeaderSize + 8*uint64(j))
				if err != nil {
					return 0, false, false, err
				}
				if x != y {
					eq = false
					break
				}
			}
			if eq {
				return b, true, false, nil
			}
			continue
		}
		if st == StateDeleted {
			if free < 0 {
				free = int64(b)
			}
			continue
		}
		if st == StateEmpty {
			if free < 0 {
				free = int64(b)
			}
			break
		}
		// StateBusy: another lane is writing a key; a single thread never
		// sees one, the GPU waits for it (bounded) then compares.
	}
	if !insert {
		return 0, false, false, nil
	}
	if free < 0 {
		return 0, false, false, m.CountDrop(r)
	}
	b := uint64(free)
	for j, x := range w {
		if err := r.PutU64(b+BucketHeaderSize+8*uint64(j), x); err != nil {
			return 0, false, false, err
		}
	}
	vo := b + BucketHeaderSize + uint64(Round8(m.KeySize))
	for j := uint64(0); j < uint64(Round8(m.ValueSize)); j += 8 {
		if err := r.PutU64(vo+j, 0); err != nil {
			return 0, false, false, err
		}
	}
	if val != nil {
		d, err := r.Bytes(vo, uint64(m.ValueSize))
		if err != nil {
			return 0, false, false, err
		}
		copy(d, val)
	}
	if err := r.PutU32(b, StateFull); err != nil {
		return 0, false, false, err
	}
	if _, err := r.addU64(m.Offset+OffCount, 1); err != nil {
		return 0, false, false, err
	}
	return b, true, true, nil
}

// HashValueOffset is where a bucket's value starts.
func (m Map) HashValueOffset(bucket uint64) uint64 {
	return bucket + BucketHeaderSize + uint64(Round8(m.KeySize))
}

// Update flags (BPF_ANY, BPF_NOEXIST, BPF_EXIST).
const (
	Any     = 0
	NoExist = 1
	Exist   = 2
)

// Update stores value under key (copy slot for arrays) and returns 0 or a
// negative errno, as bpf_map_update_elem does.
func (m Map) Update(r Region, slot uint64, key, value []byte, flags uint64) (int64, error) {
	if flags > Exist {
		return -EINVAL, nil
	}
	var dst uint64
	switch {
	case m.Type.IsArray():
		if flags == NoExist {
			return -EEXIST, nil
		}
		k := binary.LittleEndian.Uint32(key)
		off, ok, err := m.ArrayLookup(r, slot, k)
		if err != nil {
			return 0, err
		}
		if !ok {
			return -E2BIG, nil
		}
		dst = off
	case m.Type == Hash:
		b, found, _, err := m.HashFind(r, key, false, nil)
		if err != nil {
			return 0, err
		}
		if found && flags == NoExist {
			return -EEXIST, nil
		}
		if !found {
			if flags == Exist {
				return -ENOENT, nil
			}
			var ok, inserted bool
			b, ok, inserted, err = m.HashFind(r, key, true, value)
			if err != nil {
				return 0, err
			}
			if !ok {
				return -E2BIG, nil
			}
			if inserted {
				return 0, nil
			}
			if flags == NoExist {
				// another lane inserted it between the two looks
				return -EEXIST, nil
			}
		}
		dst = m.HashValueOffset(b)
	default:
		return -EINVAL, nil
	}
	d, err := r.Bytes(dst, uint64(m.ValueSize))
	if err != nil {
		return 0, err
	}
	copy(d, value)
	return 0, nil
}

// Delete removes key from a hash (arrays: -EINVAL, as the kernel's).
func (m Map) Delete(r Region, key []byte) (int64, error) {
	if m.Type != Hash {
		return -EINVAL, nil
	}
	b, found, _, err := m.HashFind(r, key, false, nil)
	if err != nil || !found {
		return -ENOENT, err
	}
	if err := r.PutU32(b, StateDeleted); err != nil {
		return 0, err
	}
	_, err = r.addU64(m.Offset+OffCount, ^uint64(0))
	return 0, err
}

// Add adds delta to the first 8 bytes of key's value (a hash inserts the
// key with a zero value first) and returns 0 or a negative errno.
func (m Map) Add(r Region, slot uint64, key []byte, delta uint64) (int64, error) {
	var off uint64
	switch {
	case m.Type.IsArray():
		o, ok, err := m.ArrayLookup(r, slot, binary.LittleEndian.Uint32(key))
		if err != nil {
			return 0, err
		}
		if !ok {
			return -E2BIG, nil
		}
		off = o
	case m.Type == Hash:
		b, ok, _, err := m.HashFind(r, key, true, nil)
		if err != nil {
			return 0, err
		}
		if !ok {
			return -E2BIG, nil
		}
		off = m.HashValueOffset(b)
	default:
		return -EINVAL, nil
	}
	_, err := r.addU64(off, delta)
	return 0, err
}

// RingOutput appends one record, as bpf_ringbuf_output does. The ring
// overwrites: the device never waits for the host and never fails; a record
// the host has not read when its slot comes round again is lost, and the
// host counts it (RingDrain). 0, or -E2BIG for a record larger than a slot.
func (m Map) RingOutput(r Region, data []byte) (int64, error) { return m.RingOutputSM(r, 0, data) }

// RingOutputSM is RingOutput by a probe on SM sm: into shard sm % Shards.
// The record is written as the compiled probe writes it: payload, then
// length and check, then seq, with no claim of the slot (the reader takes a
// record only when its seq and check agree: struct gpuext_gpuring_rec).
func (m Map) RingOutputSM(r Region, sm uint64, data []byte) (int64, error) {
	if m.Type != Ringbuf {
		return -EINVAL, nil
	}
	if uint32(len(data)) > m.ValueSize {
		return -E2BIG, nil
	}
	i, err := m.RingClaimSM(r, sm)
	if err != nil {
		return 0, err
	}
	return m.RingOutputAt(r, sm, i, data)
}

// RingClaimSM takes the next record index of SM sm's shard (sm % Shards),
// as gpuext_ring_claim does on the GPU for a lane that calls it alone in
// its warp (of lanes that call together, the lowest claims, the others get
// NoClaim), and returns it; 0 for a map that is not a ring (the verifier
// lets no program claim in one). Nothing is written:
// the slot keeps what it held until RingOutputAt (the reader keeps the
// record pending meanwhile: RingRead).
func (m Map) RingClaimSM(r Region, sm uint64) (uint64, error) {
	if m.Type != Ringbuf {
		return 0, nil
	}
	return r.addU64(m.HeadOffset(sm%uint64(max(m.Shards, 1))), 1)
}

// NoClaim is the index gpuext_ring_claim gives the lanes of a warp but
// the lowest of those that call it together (one lane claims).
const NoClaim = ^uint64(0)

// RingOutputAt writes record index of SM sm's shard (one RingClaimSM took
// on that SM), as gpuext_ring_output_at does: payload, then length and
// check, then seq. 0, -ENOENT for NoClaim (nothing written), or -E2BIG
// for a record larger than a slot.
func (m Map) RingOutputAt(r Region, sm, index uint64, data []byte) (int64, error) {
	if m.Type != Ringbuf {
		return -EINVAL, nil
	}
	if index == NoClaim {
		return -ENOENT, nil
	}
	if uint32(len(data)) > m.ValueSize {
		return -E2BIG, nil
	}
	s := m.ShardSlotOffset(sm%uint64(max(m.Shards, 1)), index)
	d, err := r.Bytes(s+RecHeaderSize, uint64(len(data)))
	if err != nil {
		return 0, err
	}
	copy(d, data)
	seq := RecCommitted(index + 1)
	if err := r.PutU32(s+RecLen, uint32(len(data))); err != nil {
		return 0, err
	}
	if err := r.PutU32(s+RecCheckOff, RecCheck(seq, data)); err != nil {
		return 0, err
	}
	return 0, r.PutU64(s+RecSeq, seq)
}

// RecCommitted is a ring slot's seq once record n (index + 1) is written
// (struct gpuext_gpuring_rec).
func RecCommitted(n uint64) uint64 { return n << 1 }

// RecCheck is the check word of a ring record of seq seq and payload
// payload (GPUEXT_GPURING_CHECK): the sum, modulo 2^32, of len(payload)
// times RecKey(0), seq's low and high 32 bits times RecKey(1) and
// RecKey(2), and each 32-bit little-endian half j of the payload (the
// last one zero-padded) times RecKey(3+j). Its terms are independent, so
// a writer sums its payload's while it waits for its slot and adds seq's
// two after: two multiply-adds follow the ring index's atomic, where a
// chain of 64-bit multiplies through every word cost block_sched a tenth
// of a short memory-bound kernel's time (bench/device/ablation, pchk). A
// record whose stores are only partly visible (the slot's previous
// record's words under this one's seq, or the reverse) passes only if
// the differences of the halves it mixed up, each times its key, sum to
// zero modulo 2^32: never for one half, about 2^-32 otherwise.
func RecCheck(seq uint64, payload []byte) uint32 {
	h := uint32(len(payload))*RecKey(0) + uint32(seq)*RecKey(1) + uint32(seq>>32)*RecKey(2)
	for j := 0; 4*j < len(payload); j++ {
		var w [4]byte
		copy(w[:], payload[4*j:])
		h += binary.LittleEndian.Uint32(w[:]) * RecKey(uint32(3+j))
	}
	return h
}

// RecKey is RecCheck's key of term i (GPUEXT_GPURING_KEY): (i+1) times
// the golden ratio's 32 bits, through murmur3's finaliser, made odd (so
// that a term that differs in one half always changes the sum). Keys with
// no simple relation between them keep differences that follow a
// pattern (consecutive timestamps, block indexes) from cancelling out.
func RecKey(i uint32) uint32 {
	x := (i + 1) * 0x9e3779b9
	x ^= x >> 16
	x *= 0x85ebca6b
	x ^= x >> 13
	x *= 0xc2b2ae35
	x ^= x >> 16
	return x | 1
}
