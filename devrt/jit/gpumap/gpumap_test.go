package gpumap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewLayout(t *testing.T) {
	l, err := NewLayout([]Def{
		{Name: "a", Type: Array, KeySize: 4, ValueSize: 12, MaxEntries: 3},
		{Name: "w", Type: PerWarpArray, KeySize: 4, ValueSize: 8, MaxEntries: 2, Copies: 5},
		{Name: "s", Type: PerSMArray, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		{Name: "h", Type: Hash, KeySize: 12, ValueSize: 4, MaxEntries: 5},
		{Name: "r", Type: Ringbuf, ValueSize: 20, MaxEntries: 7},
	})
	require.NoError(t, err)
	type got struct {
		Offset        uint64
		Slots, Stride uint32
		DataSize      uint64
	}
	var g []got
	for _, m := range l.Maps {
		g = append(g, got{m.Offset, m.Slots, m.Stride, m.DataSize})
	}
	require.Equal(t, []got{
		{0, 1, 16, 48},                     // 3 x 16
		{256, 5, 8, 80},                    // 128+48 -> 256; 5 copies x 2 x 8
		{512, DefaultSMCopies, 128, 32768}, // 256+128+80 -> 512; each SM's 8 bytes padded to a line
		{33408, 16, 32, 512},               // 512+128+32768 = 33408; 16 buckets of 8+16+8
		{34048, 7, 48, 336},                // 33408+128+512 = 34048; 7 x (16+24 rounded to 16)
	}, g)
	require.Equal(t, uint64(34048+128+336+128-(34048+128+336)%128), l.Size)
}

// Per-block arrays take a header in the region and their values in each
// block's shared memory, one after the other.
func TestNewLayoutPerBlock(t *testing.T) {
	l, err := NewLayout([]Def{
		{Name: "b1", Type: PerBlockArray, KeySize: 4, ValueSize: 16, MaxEntries: 1},
		{Name: "a", Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		{Name: "b2", Type: PerBlockArray, KeySize: 4, ValueSize: 12, MaxEntries: 3},
	})
	require.NoError(t, err)
	type got struct {
		Offset        uint64
		Slots, Stride uint32
		DataSize      uint64
		BlockOffset   uint32
	}
	var g []got
	for _, m := range l.Maps {
		g = append(g, got{m.Offset, m.Slots, m.Stride, m.DataSize, m.BlockOffset})
	}
	require.Equal(t, []got{
		{0, 1, 16, 0, 0},    // the header alone
		{128, 1, 8, 8, 0},   // not a per-block map
		{384, 1, 16, 0, 16}, // 128+128+8 -> 384; 12 bytes padded to 16, after b1's 16
	}, g)
	require.Equal(t, uint32(16+3*16), l.BlockSize)
	require.Equal(t, uint64(512), l.Size)
	b2 := l.Maps[2]
	for _, c := range []struct {
		key  uint64
		off  uint64
		want bool
	}{{0, 16, true}, {2, 48, true}, {3, 0, false}} {
		off, ok := b2.ElemOffset(0, c.key)
		require.Equal(t, c.want, ok, "key %d", c.key)
		require.Equal(t, c.off, off, "key %d", c.key)
	}
	_, ok := b2.ElemOffset(1, 0)
	require.False(t, ok, "a per-block array has one copy")
	_, err = b2.ArrayCopy(make(Region, l.Size), 0)
	require.EqualError(t, err, `map "b2" is a per_block_array, not an array in the region`)
}

func TestSMStride(t *testing.T) {
	for _, c := range []struct{ entries, stride, want uint32 }{
		{1, 8, 128},   // one SM per line
		{1, 24, 128},  // sm_load's struct gpuext_dev_sm
		{2, 24, 64},   // two elements fill the line
		{3, 8, 48},    // 43 rounded to 8: a copy of 144 bytes
		{5, 8, 32},    // 26 rounded to 8
		{16, 8, 8},    // a copy is a line already
		{64, 8, 8},    // sm_load's warp slots: 512 bytes per SM
		{1, 200, 200}, // larger than a line
		{4, 48, 48},   // 192 bytes
	} {
		require.Equal(t, c.want, smStride(c.entries, c.stride), "%d entries of %d bytes", c.entries, c.stride)
	}
}

func TestNewLayoutErrors(t *testing.T) {
	for _, c := range []struct {
		def  Def
		want string
	}{
		{Def{Name: "x", Type: Array, KeySize: 8, ValueSize: 8, MaxEntries: 1}, `map "x": array key_size 8: must be 4`},
		{Def{Name: "x", Type: Hash, KeySize: 65, ValueSize: 8, MaxEntries: 1}, `map "x": hash key_size 65 not in 1..64`},
		{Def{Name: "x", Type: Hash, KeySize: 8, ValueSize: 0, MaxEntries: 1}, `map "x": value_size 0 not in 1..4096`},
		{Def{Name: "x", Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 0}, `map "x": max_entries is 0`},
		{Def{Name: "x", Type: 7, KeySize: 4, ValueSize: 8, MaxEntries: 1}, `map "x": unsupported map type type(7)`},
		{Def{Name: "x", Type: Array, KeySize: 4, ValueSize: 4096, MaxEntries: 1 << 20}, `map "x": needs 4294967296 bytes, more than 1073741824`},
		{Def{Name: "x", Type: PerBlockArray, KeySize: 4, ValueSize: 8, MaxEntries: 1, Copies: 2}, `map "x": per_block_array has one copy per block: map_extra 2 must be 0`},
		{Def{Name: "x", Type: PerBlockArray, KeySize: 4, ValueSize: 12, MaxEntries: 65}, `map "x": per_block_array of 65 x 16 bytes: more than 1024 bytes of shared memory`},
	} {
		_, err := NewLayout([]Def{c.def})
		require.EqualError(t, err, c.want)
	}
	_, err := NewLayout([]Def{{Name: "x", Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}, {Name: "x", Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}})
	require.EqualError(t, err, `map "x" declared twice`)
	half := Def{Type: PerBlockArray, KeySize: 4, ValueSize: 8, MaxEntries: 64}
	a, b := half, half
	a.Name, b.Name = "a", "b"
	_, err = NewLayout([]Def{a, b, {Name: "c", Type: PerBlockArray, KeySize: 4, ValueSize: 8, MaxEntries: 1}})
	require.EqualError(t, err, `per-block arrays need more than 1024 bytes of shared memory per block (map "c" ends at 1032)`)
}

func region(t *testing.T, defs ...Def) (Layout, Region) {
	l, err := NewLayout(defs)
	require.NoError(t, err)
	r := make(Region, l.Size)
	require.NoError(t, l.Init(r))
	return l, r
}

func key64(v uint64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, v); return b }

func TestArray(t *testing.T) {
	l, r := region(t, Def{Name: "w", Type: PerWarpArray, KeySize: 4, ValueSize: 8, MaxEntries: 2, Copies: 3})
	m := l.Maps[0]
	k1 := []byte{1, 0, 0, 0}
	res, err := m.Update(r, 2, k1, key64(77), Any)
	require.NoError(t, err)
	require.Equal(t, int64(0), res)
	res, _ = m.Update(r, 2, k1, key64(1), NoExist)
	require.Equal(t, int64(-EEXIST), res)
	res, _ = m.Update(r, 3, k1, key64(1), Any) // copy 3 of 3: beyond
	require.Equal(t, int64(-E2BIG), res)
	res, _ = m.Update(r, 0, []byte{2, 0, 0, 0}, key64(1), Any) // key beyond
	require.Equal(t, int64(-E2BIG), res)
	res, _ = m.Add(r, 2, k1, 5)
	require.Equal(t, int64(0), res)
	res, _ = m.Delete(r, k1)
	require.Equal(t, int64(-EINVAL), res)
	vals, err := m.ArrayCopy(r, 2)
	require.NoError(t, err)
	require.Equal(t, [][]byte{make([]byte, 8), key64(82)}, vals)
	h, err := m.ReadHeader(r)
	require.NoError(t, err)
	require.Equal(t, uint64(1), h.Drops) // only the copy beyond counts a drop
}

func TestHash(t *testing.T) {
	l, r := region(t, Def{Name: "h", Type: Hash, KeySize: 8, ValueSize: 8, MaxEntries: 2})
	m := l.Maps[0] // 4 buckets
	for i, c := range []struct {
		key   uint64
		flags uint64
		want  int64
	}{
		{1, Exist, -ENOENT}, {1, NoExist, 0}, {1, NoExist, -EEXIST}, {1, Exist, 0}, {2, Any, 0}, {3, Any, 0}, {4, Any, 0},
		{5, Any, -E2BIG}, {1, 3, -EINVAL},
	} {
		res, err := m.Update(r, 0, key64(c.key), key64(c.key*10+uint64(i)), c.flags)
		require.NoError(t, err)
		require.Equal(t, c.want, res, "step %d", i)
	}
	res, _ := m.Delete(r, key64(2))
	require.Equal(t, int64(0), res)
	res, _ = m.Delete(r, key64(2))
	require.Equal(t, int64(-ENOENT), res)
	res, _ = m.Add(r, 0, key64(9), 4) // reuses 2's tombstone
	require.Equal(t, int64(0), res)
	es, err := m.HashEntries(r)
	require.NoError(t, err)
	got := map[uint64]uint64{}
	for _, e := range es {
		got[binary.LittleEndian.Uint64(e.Key)] = binary.LittleEndian.Uint64(e.Value)
	}
	require.Equal(t, map[uint64]uint64{1: 13, 3: 35, 4: 46, 9: 4}, got)
	h, err := m.ReadHeader(r)
	require.NoError(t, err)
	require.Equal(t, uint64(4), h.Count)
	require.Equal(t, uint64(1), h.Drops)
}

func TestRing(t *testing.T) {
	l, r := region(t, Def{Name: "r", Type: Ringbuf, ValueSize: 4, MaxEntries: 2})
	m := l.Maps[0]
	out := func(b ...byte) int64 { res, err := m.RingOutput(r, b); require.NoError(t, err); return res }
	drain := func() [][]byte { t.Helper(); recs, err := m.RingDrain(r, 10); require.NoError(t, err); return recs }
	require.Equal(t, int64(0), out(1, 2))
	require.Equal(t, int64(0), out(3))
	require.Equal(t, int64(-E2BIG), out(1, 2, 3, 4, 5))
	recs, err := m.RingDrain(r, 1)
	require.NoError(t, err)
	require.Equal(t, [][]byte{{1, 2}}, recs)
	require.Equal(t, int64(0), out(5, 6, 7, 8)) // record 2, into slot 0
	recs = drain()
	require.Equal(t, [][]byte{{3}, {5, 6, 7, 8}}, recs)
	h, err := m.ReadHeader(r)
	require.NoError(t, err)
	require.Equal(t, Header{Magic: Magic, Type: uint32(Ringbuf), ValueSize: 4, MaxEntries: 2, Slots: 2, Stride: 32,
		DataSize: 64, Head: 3, Tail: 3, Shards: 1, BlockSample: 1}, h)
	// The device never waits: three more records overwrite one the host
	// had not read; the host counts it.
	out(9)
	out(10)
	out(11)
	recs = drain()
	require.Equal(t, [][]byte{{10}, {11}}, recs)
	h, _ = m.ReadHeader(r)
	require.Equal(t, uint64(1), h.Drops)
	require.Equal(t, uint64(6), h.Tail)
	// A record whose check does not match what is read (its payload not
	// all visible yet, or its header not) stops the drain until it does; a
	// record whose seq is past it was overwritten; a corrupt length is
	// skipped with an error.
	out(12, 13)
	s := m.RingSlotOffset(6)
	require.NoError(t, r.PutU32(s+RecHeaderSize, 99)) // payload of another write
	recs = drain()
	require.Empty(t, recs)
	h, _ = m.ReadHeader(r)
	require.Equal(t, uint64(6), h.Tail, "the drain waits at the record")
	require.NoError(t, r.PutU32(s+RecHeaderSize, 12|13<<8))
	require.NoError(t, r.PutU32(s+RecCheckOff, 0)) // its header's check not yet
	recs = drain()
	require.Empty(t, recs)
	require.NoError(t, r.PutU32(s+RecCheckOff, RecCheck(RecCommitted(7), []byte{12, 13})))
	recs = drain()
	require.Equal(t, [][]byte{{12, 13}}, recs, "whole: taken")
	out(14)
	require.NoError(t, r.PutU64(m.RingSlotOffset(7)+RecSeq, RecCommitted(10)))
	recs = drain()
	require.Empty(t, recs)
	h, _ = m.ReadHeader(r)
	require.Equal(t, uint64(2), h.Drops)
	require.Equal(t, uint64(8), h.Tail)
	out(15)
	require.NoError(t, r.PutU32(m.RingSlotOffset(8)+RecLen, 99))
	_, err = m.RingDrain(r, 10)
	require.EqualError(t, err, `map "r": record 8 has 99 bytes, at most 4 (skipped)`)
	h, _ = m.ReadHeader(r)
	require.Equal(t, uint64(9), h.Tail)
	require.Equal(t, uint64(3), h.Drops)
	// The writer claims nothing: a record of an earlier lap written late
	// (record 8 into record 10's slot) replaces it, and the drain waits
	// at the slot until the ring laps it (the loss is then counted).
	out(16, 17)
	s = m.RingSlotOffset(9)
	require.NoError(t, r.PutU64(s+RecSeq, RecCommitted(9)))
	recs = drain()
	require.Empty(t, recs)
	out(18)
	out(19)
	recs = drain()
	require.Equal(t, [][]byte{{18}, {19}}, recs)
	h, _ = m.ReadHeader(r)
	require.Equal(t, uint64(4), h.Drops)
	// The same with a later record whole (the ring lapped within one
	// burst): the drain counts the stale slot lost and goes on.
	out(20)
	out(21)
	s = m.RingSlotOffset(12)
	stale := append([]byte(nil), r[s:s+RecHeaderSize+8]...)
	out(22) // record 14, into record 12's slot
	out(23)
	copy(r[m.RingSlotOffset(14):], stale) // record 12 written last
	recs = drain()
	require.Equal(t, [][]byte{{23}}, recs)
	h, _ = m.ReadHeader(r)
	require.Equal(t, uint64(16), h.Tail)
	require.Equal(t, uint64(4+2+1), h.Drops, "20 and 21 lapped, 22 written over by 20")
}

func TestRecCheck(t *testing.T) {
	k := RecKey
	for _, tc := range []struct {
		name    string
		seq     uint64
		payload []byte
		want    uint32
	}{
		{"empty", 2, nil, 2 * k(1)},
		{"one word", 4, []byte{1, 0, 0, 0, 0, 0, 0, 0}, 8*k(0) + 4*k(1) + 1*k(3)},
		{"padded", 4, []byte{1, 2, 3}, 3*k(0) + 4*k(1) + 0x030201*k(3)},
		{"two words", 6, []byte{1, 0, 0, 0, 7, 0, 0, 0, 9}, 9*k(0) + 6*k(1) + 1*k(3) + 7*k(4) + 9*k(5)},
		{"seq's high half", 1<<33 | 2, nil, 2*k(1) + 2*k(2)},
		// by hand (python, from the definition in gpuext_abi.h)
		{"exact", 2, []byte{1, 0, 0, 0, 0, 0, 0, 0}, 0x5c075e1d},
		{"exact, two words", 5<<32 | 6, []byte{1, 0, 0, 0, 0, 0, 0, 0, 9}, 0x1ed8837e},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, RecCheck(tc.seq, tc.payload))
		})
	}
	require.Equal(t, []uint32{0x92ca2f0f, 0x3cd6e3f3, 0x1b147dcd, 0x4c081dbf},
		[]uint32{k(0), k(1), k(2), k(3)}, "keys by hand")
	// What a torn read looks like fails it: another seq, length, word, or
	// a whole 16-byte store of the slot's previous record (the same kernel
	// a lap earlier: other block, times a fixed step later).
	p := []byte("a record of 48 bytes of payload................")
	c := RecCheck(RecCommitted(8193), p)
	require.NotEqual(t, c, RecCheck(RecCommitted(1), p))
	require.NotEqual(t, c, RecCheck(RecCommitted(8193), p[:40]))
	q := append([]byte(nil), p...)
	q[20] ^= 1
	require.NotEqual(t, c, RecCheck(RecCommitted(8193), q))
	rec := func(block, start, end, sm, grid uint64) []byte {
		b := make([]byte, 48)
		for i, w := range []uint64{7, block, start, end, sm | 256<<32, grid} {
			binary.LittleEndian.PutUint64(b[8*i:], w)
		}
		return b
	}
	cur := rec(100, 5_000_000_000, 5_000_001_000, 17, 900)
	for _, step := range []uint64{1, 2, 1000, 1 << 31, 1 << 32, 3 << 32} {
		old := rec(100-step%64-1, 5_000_000_000-step, 5_000_001_000-step, 17+step%3+1, 900-step)
		for o := 0; o < 48; o += 16 {
			torn := append([]byte(nil), cur...)
			copy(torn[o:o+16], old[o:o+16])
			require.NotEqual(t, RecCheck(RecCommitted(8193), cur), RecCheck(RecCommitted(8193), torn), "step %d, store at %d", step, o)
		}
	}
}

func TestReadersRejectForeignRegions(t *testing.T) {
	l, r := region(t, Def{Name: "h", Type: Hash, KeySize: 8, ValueSize: 8, MaxEntries: 2})
	m := l.Maps[0]
	_, err := m.ReadHeader(r[:100])
	require.EqualError(t, err, `map "h": region access [0,+224) outside 100 bytes`)
	zero := make(Region, len(r))
	_, err = m.ReadHeader(zero)
	require.ErrorIs(t, err, ErrNotInitialised)
	require.NoError(t, r.PutU32(OffValueSize, 16))
	_, err = m.ReadHeader(r)
	require.ErrorContains(t, err, "does not match the layout")
	require.NoError(t, r.PutU32(m.BucketOffset(1), 7))
	_, err = m.HashEntries(r)
	require.EqualError(t, err, `map "h": bucket 1 has state 7`)
	_, err = m.RingDrain(r, 1)
	require.EqualError(t, err, `map "h" is a hash, not a ring`)
}

// FuzzReaders: any region bytes give values or errors, never a panic;
// RingRead, from any cursor, returns at most max records and a valid
// cursor of its own, and accounts for each index it was given once
// (returned, lost, pending or before the tail returned).
func FuzzReaders(f *testing.F) {
	l, err := NewLayout([]Def{
		{Name: "a", Type: PerSMArray, KeySize: 4, ValueSize: 8, MaxEntries: 2, Copies: 2},
		{Name: "h", Type: Hash, KeySize: 8, ValueSize: 8, MaxEntries: 4},
		{Name: "r", Type: Ringbuf, ValueSize: 8, MaxEntries: 4},
		{Name: "s", Type: Ringbuf, ValueSize: 8, MaxEntries: 16, Shards: 2},
	})
	if err != nil {
		f.Fatal(err)
	}
	seed := make(Region, l.Size)
	_ = l.Init(seed)
	_, _ = l.Maps[2].RingOutput(seed, []byte{1, 2, 3})
	_, _ = l.Maps[1].Update(seed, 0, key64(5), key64(6), Any)
	_, _ = seed.addU64(l.Maps[3].HeadOffset(1), 1) // a claim not written
	for range 3 {
		_, _ = l.Maps[3].RingOutputSM(seed, 1, []byte{4})
	}
	f.Add([]byte(seed), uint64(0), []byte(nil), uint16(100), uint8(0))
	f.Add([]byte(seed[:300]), uint64(0), []byte(nil), uint16(1), uint8(0))
	f.Add([]byte(seed), uint64(1), []byte{1, 0}, uint16(100), uint8(1))
	f.Add([]byte(seed), uint64(4), []byte{4, 0, 2, 0, 2, 0, 0, 0, 0xff, 0xff}, uint16(1), uint8(1))
	f.Add([]byte(seed), uint64(1<<63), make([]byte, 2*(MaxPending+8)), uint16(2), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, tail uint64, pend []byte, max uint16, shard uint8) {
		r := Region(b)
		for _, m := range l.Maps {
			_, _ = m.ReadHeader(r)
			_, _ = m.ArrayCopy(r, 1)
			_, _ = m.HashEntries(r)
			// pending: tail minus each little-endian int16 of pend
			// (below and past it, repeated, any order), up to MaxPending+8
			c := RingCursor{Tail: tail}
			for i := 0; i+1 < len(pend) && len(c.Pending) < MaxPending+8; i += 2 {
				c.Pending = append(c.Pending, tail-uint64(int16(binary.LittleEndian.Uint16(pend[i:]))))
			}
			in := append([]uint64(nil), c.Pending...)
			valid := slices.Compact(slices.Sorted(slices.Values(in)))
			valid = slices.DeleteFunc(valid, func(p uint64) bool { return p >= tail })
			recs, next, lost, err := m.RingRead(r, uint64(shard%2), c, int(max))
			if len(recs) > int(max) {
				t.Fatalf("%d records, max %d", len(recs), max)
			}
			if !slices.Equal(in, c.Pending) {
				t.Fatalf("the caller's pending %v changed to %v", in, c.Pending)
			}
			if len(next.Pending) > 0 && len(c.Pending) > 0 && &next.Pending[:cap(next.Pending)][cap(next.Pending)-1] == &c.Pending[:cap(c.Pending)][cap(c.Pending)-1] {
				t.Fatal("the pending returned shares the caller's array")
			}
			drained, derr := m.RingDrain(append(Region(nil), r...), 100)
			if derr == nil && len(drained) > int(m.Slots) {
				t.Fatalf("%d records from a ring of %d", len(drained), m.Slots)
			}
			if m.Type != Ringbuf || uint64(shard%2) >= uint64(m.ringShards()) || r.check(m.Offset, HeaderSize+m.DataSize) != nil {
				if err == nil || len(recs) > 0 || lost > 0 || next.Tail != tail || !slices.Equal(next.Pending, in) {
					t.Fatalf("nothing to read: got %d records, %d lost, %+v, %v", len(recs), lost, next, err)
				}
				continue
			}
			ringCursorValid(t, next)
			if head := r.load64(m.HeadOffset(uint64(shard % 2))); head < tail {
				// a region made anew: read as from its start
				wrecs, wnext, wlost, werr := m.RingRead(r, uint64(shard%2), RingCursor{}, int(max))
				if !slices.EqualFunc(recs, wrecs, bytes.Equal) || next.Tail != wnext.Tail || !slices.Equal(next.Pending, wnext.Pending) ||
					lost != wlost || (err == nil) != (werr == nil) {
					t.Fatalf("head %d behind tail %d: got %d records, %+v, %d lost; from the start %d, %+v, %d", head, tail,
						len(recs), next, lost, len(wrecs), wnext, wlost)
				}
				continue
			}
			if next.Tail < tail {
				t.Fatalf("tail %d went back to %d", tail, next.Tail)
			}
			if got, want := uint64(len(recs))+lost+uint64(len(next.Pending)), uint64(len(valid))+next.Tail-tail; got != want {
				t.Fatalf("from %+v: %d records, %d lost, %+v: %d indexes, want %d", c, len(recs), lost, next, got, want)
			}
		}
	})
}

func TestRingShards(t *testing.T) {
	l, r := region(t, Def{Name: "r", Type: Ringbuf, ValueSize: 8, MaxEntries: 9, Shards: 4})
	m := l.Maps[0]
	require.Equal(t, uint32(8), m.Slots, "two slots a shard")
	require.Equal(t, uint64(4*ShardHeadStride+8*32), m.DataSize)
	require.Equal(t, m.DataOffset()+2*ShardHeadStride, m.HeadOffset(2))
	require.Equal(t, m.DataOffset()+4*ShardHeadStride+(3*2+1)*32, m.ShardSlotOffset(3, 5))
	out := func(sm uint64, b byte) {
		res, err := m.RingOutputSM(r, sm, []byte{b})
		require.NoError(t, err)
		require.Equal(t, int64(0), res)
	}
	out(0, 'a')
	out(0, 'b')
	out(4, 'c') // SM 4: shard 0 again, overwriting a
	out(1, 'd')
	out(5, 'e')
	require.Equal(t, uint64(5), m.RingHead(r))
	recs, err := m.RingDrain(r, 10)
	require.NoError(t, err)
	require.Equal(t, [][]byte{{'b'}, {'c'}, {'d'}, {'e'}}, recs)
	h, err := m.ReadHeader(r)
	require.NoError(t, err)
	require.Equal(t, uint32(4), h.Shards)
	require.Equal(t, uint64(1), h.Drops)
	require.Equal(t, uint64(0), h.Head, "the header's head is unused with shards")
	recs, err = m.RingDrain(r, 10)
	require.NoError(t, err)
	require.Empty(t, recs)
	_, _, _, err = m.RingRead(r, 4, RingCursor{}, 1)
	require.EqualError(t, err, `map "r" has 4 shards, not 5`)
	_, err = NewLayout([]Def{{Name: "x", Type: Ringbuf, ValueSize: 8, MaxEntries: 8, Shards: 3}})
	require.EqualError(t, err, `map "x": ring shards 3: a power of two up to 256`)
}

// ringRec is the payload of record i in the ring tests: i, 4 bytes.
func ringRec(i uint64) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, uint32(i))
	return b
}

// ringIDs is the records' indexes (ringRec), nil for none.
func ringIDs(recs [][]byte) []uint64 {
	var out []uint64
	for _, b := range recs {
		out = append(out, uint64(binary.LittleEndian.Uint32(b)))
	}
	return out
}

// ringClaim takes shard sh's next record index without writing it, as a
// probe does when a block starts.
func ringClaim(t *testing.T, m Map, r Region, sh uint64) uint64 {
	t.Helper()
	i, err := r.addU64(m.HeadOffset(sh), 1)
	require.NoError(t, err)
	return i
}

// ringWrite writes record i of shard sh (ringRec(i)) as a probe does when
// a block ends: payload, length and check, then seq.
func ringWrite(t *testing.T, m Map, r Region, sh, i uint64) {
	t.Helper()
	s, data := m.ShardSlotOffset(sh, i), ringRec(i)
	copy(r[s+RecHeaderSize:], data)
	require.NoError(t, r.PutU32(s+RecLen, uint32(len(data))))
	require.NoError(t, r.PutU32(s+RecCheckOff, RecCheck(RecCommitted(i+1), data)))
	require.NoError(t, r.PutU64(s+RecSeq, RecCommitted(i+1)))
}

// ringOps does ops to shard sh, space-separated: c claims an index, o
// claims one and writes its record, c*N and o*N do it N times, wI writes
// record I (claimed before), sI writes record I-slots into record I's
// slot (a stale writer of the lap before, after I was claimed).
func ringOps(t *testing.T, m Map, r Region, sh uint64, ops string) {
	t.Helper()
	for _, op := range strings.Fields(ops) {
		n := 1
		if k, cnt, ok := strings.Cut(op, "*"); ok {
			var err error
			n, err = strconv.Atoi(cnt)
			require.NoError(t, err, op)
			op = k
		}
		var arg uint64
		if len(op) > 1 {
			v, err := strconv.ParseUint(op[1:], 10, 64)
			require.NoError(t, err, op)
			arg = v
		}
		for range n {
			switch op[0] {
			case 'c':
				ringClaim(t, m, r, sh)
			case 'o':
				ringWrite(t, m, r, sh, ringClaim(t, m, r, sh))
			case 'w':
				ringWrite(t, m, r, sh, arg)
			case 's':
				ringWrite(t, m, r, sh, arg-m.ShardSlots())
			default:
				t.Fatalf("op %q", op)
			}
		}
	}
}

// seqs is [a, b).
func seqs(a, b uint64) []uint64 {
	var out []uint64
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

// ringCursorValid fails unless c.Pending is ascending, without
// duplicates, below c.Tail, at most MaxPending.
func ringCursorValid(t *testing.T, c RingCursor) {
	t.Helper()
	if len(c.Pending) > MaxPending {
		t.Fatalf("%d pending, more than %d", len(c.Pending), MaxPending)
	}
	for i, p := range c.Pending {
		if p >= c.Tail || i > 0 && c.Pending[i-1] >= p {
			t.Fatalf("pending %v of tail %d: not ascending below the tail", c.Pending, c.Tail)
		}
	}
}

// TestRingReadPending: a record claimed when a block starts and written
// when it ends stays pending while the records after it are read, until
// it is whole (returned once) or its slot is claimed a lap later (lost
// once); with MaxPending pending a read stops without losing anything.
func TestRingReadPending(t *testing.T) {
	type read struct {
		ops  string      // ringOps before the read
		from *RingCursor // the cursor read from; nil: the read before's
		max  int         // 0: 100
		recs []uint64    // the records returned (their indexes)
		next RingCursor  // the cursor returned
		lost uint64
	}
	for _, tc := range []struct {
		name          string
		slots, shards uint32 // the ring's max_entries, shards
		shard         uint64
		reads         []read
	}{
		{name: "unwritten claim kept pending, returned once written", slots: 8, reads: []read{
			{ops: "c o o", recs: []uint64{1, 2}, next: RingCursor{Tail: 3, Pending: []uint64{0}}},
			{ops: "o o", recs: []uint64{3, 4}, next: RingCursor{Tail: 5, Pending: []uint64{0}}},
			{ops: "c o", recs: []uint64{6}, next: RingCursor{Tail: 7, Pending: []uint64{0, 5}}},
			{ops: "o", recs: []uint64{7}, next: RingCursor{Tail: 8, Pending: []uint64{0, 5}}},
			{ops: "w5", recs: []uint64{5}, next: RingCursor{Tail: 8, Pending: []uint64{0}}},
			{ops: "w0", recs: []uint64{0}, next: RingCursor{Tail: 8}},
			{next: RingCursor{Tail: 8}},
		}},
		{name: "sharded: shard 1", slots: 16, shards: 2, shard: 1, reads: []read{
			{ops: "c c o", recs: []uint64{2}, next: RingCursor{Tail: 3, Pending: []uint64{0, 1}}},
			{ops: "w1 o", recs: []uint64{1, 3}, next: RingCursor{Tail: 4, Pending: []uint64{0}}},
		}},
		{name: "pending slot claimed a lap later: lost once", slots: 8, reads: []read{
			{ops: "c o o", recs: []uint64{1, 2}, next: RingCursor{Tail: 3, Pending: []uint64{0}}},
			{ops: "o*5", recs: []uint64{3, 4, 5, 6, 7}, next: RingCursor{Tail: 8, Pending: []uint64{0}}}, // head 8: not yet
			{ops: "c", next: RingCursor{Tail: 9, Pending: []uint64{8}}, lost: 1},                         // head 9: 8 took 0's slot
			{ops: "w0", next: RingCursor{Tail: 9, Pending: []uint64{8}}},                                 // 0 written late, over 8's slot
			{next: RingCursor{Tail: 9, Pending: []uint64{8}}},
			{ops: "w8", recs: []uint64{8}, next: RingCursor{Tail: 9}},
		}},
		{name: "stale writer of the lap before: pending until the lap after", slots: 8, reads: []read{
			{ops: "o*8", recs: seqs(0, 8), next: RingCursor{Tail: 8}},
			{ops: "c o s8", recs: []uint64{9}, next: RingCursor{Tail: 10, Pending: []uint64{8}}},
			{ops: "o*6", recs: seqs(10, 16), next: RingCursor{Tail: 16, Pending: []uint64{8}}},
			{ops: "o", recs: []uint64{16}, next: RingCursor{Tail: 17}, lost: 1},
		}},
		{name: "pending and the tail both lapped: each lost once", slots: 8, reads: []read{
			{ops: "c o o", recs: []uint64{1, 2}, next: RingCursor{Tail: 3, Pending: []uint64{0}}},
			// head 13: 0 lapped (pending), 3 and 4 lapped (tail)
			{ops: "o*10", recs: seqs(5, 13), next: RingCursor{Tail: 13}, lost: 1 + 2},
		}},
		{name: "max with pending: the ones not looked at stay", slots: 8, reads: []read{
			{ops: "c c o o", recs: []uint64{2, 3}, next: RingCursor{Tail: 4, Pending: []uint64{0, 1}}},
			{ops: "w0 w1 o", max: 1, recs: []uint64{0}, next: RingCursor{Tail: 4, Pending: []uint64{1}}},
			{max: 1, recs: []uint64{1}, next: RingCursor{Tail: 4}},
			{max: 1, recs: []uint64{4}, next: RingCursor{Tail: 5}},
		}},
		{name: "max reached before a lapped pending one: lost the read after", slots: 8, reads: []read{
			{ops: "c c o", recs: []uint64{2}, next: RingCursor{Tail: 3, Pending: []uint64{0, 1}}},
			{ops: "w0 o*5", max: 1, recs: []uint64{0}, next: RingCursor{Tail: 3, Pending: []uint64{1}}}, // head 8
			{ops: "o o", max: 3, recs: []uint64{3, 4, 5}, next: RingCursor{Tail: 6}, lost: 1},           // head 10: 9 took 1's slot
		}},
		{name: "MaxPending: the read stops, nothing lost, then goes on", slots: 4 * MaxPending, reads: []read{
			{ops: fmt.Sprintf("c*%d o o", MaxPending+1), next: RingCursor{Tail: MaxPending, Pending: seqs(0, MaxPending)}},
			{next: RingCursor{Tail: MaxPending, Pending: seqs(0, MaxPending)}},
			{ops: "w0", recs: []uint64{0, MaxPending + 1, MaxPending + 2}, next: RingCursor{Tail: MaxPending + 3, Pending: seqs(1, MaxPending+1)}},
			{ops: "w1 w2", max: 1, recs: []uint64{1}, next: RingCursor{Tail: MaxPending + 3, Pending: seqs(2, MaxPending+1)}},
			{recs: []uint64{2}, next: RingCursor{Tail: MaxPending + 3, Pending: seqs(3, MaxPending+1)}},
		}},
		{name: "a cursor not RingRead's: made valid", slots: 8, reads: []read{
			{ops: "c o c o o", from: &RingCursor{Tail: 3, Pending: []uint64{2, 0, 2, 4, 3}}, recs: []uint64{3, 4},
				next: RingCursor{Tail: 5, Pending: []uint64{0, 2}}},
		}},
		{name: "a cursor not RingRead's: more than MaxPending, the lowest lost", slots: 4 * MaxPending, reads: []read{
			{ops: fmt.Sprintf("c*%d", MaxPending+10), from: &RingCursor{Tail: MaxPending + 10, Pending: seqs(0, MaxPending+3)},
				next: RingCursor{Tail: MaxPending + 10, Pending: seqs(3, MaxPending+3)}, lost: 3},
		}},
		{name: "the head behind the cursor: a region made anew, read from its start", slots: 8, reads: []read{
			{ops: "o c o", from: &RingCursor{Tail: 100, Pending: []uint64{50, 60}}, recs: []uint64{0, 2}, next: RingCursor{Tail: 3, Pending: []uint64{1}}},
		}},
		{name: "max 0", slots: 8, reads: []read{
			{ops: "c o", max: -1, next: RingCursor{Tail: 0}},
			{recs: []uint64{1}, next: RingCursor{Tail: 2, Pending: []uint64{0}}},
			{ops: "w0", max: -1, next: RingCursor{Tail: 2, Pending: []uint64{0}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, r := region(t, Def{Name: "r", Type: Ringbuf, ValueSize: 4, MaxEntries: tc.slots, Shards: tc.shards})
			m := l.Maps[0]
			var c RingCursor
			for i, rd := range tc.reads {
				ringOps(t, m, r, tc.shard, rd.ops)
				if rd.from != nil {
					c = *rd.from
				}
				max := rd.max
				switch max {
				case 0:
					max = 100
				case -1:
					max = 0
				}
				recs, next, lost, err := m.RingRead(r, tc.shard, c, max)
				require.NoError(t, err, "read %d", i)
				require.Equal(t, rd.recs, ringIDs(recs), "read %d", i)
				require.Equal(t, rd.next, next, "read %d", i)
				require.Equal(t, rd.lost, lost, "read %d", i)
				ringCursorValid(t, next)
				c = next
			}
		})
	}
}

// TestRingCursorNotAliased: the cursor RingRead returns has a Pending of
// its own, and it leaves the caller's as it was.
func TestRingCursorNotAliased(t *testing.T) {
	l, r := region(t, Def{Name: "r", Type: Ringbuf, ValueSize: 4, MaxEntries: 8})
	m := l.Maps[0]
	ringOps(t, m, r, 0, "c c o")
	for _, tc := range []struct {
		name string
		in   RingCursor
		max  int
		want RingCursor
	}{
		{"all kept", RingCursor{Tail: 3, Pending: []uint64{0, 1}}, 10, RingCursor{Tail: 3, Pending: []uint64{0, 1}}},
		{"not looked at", RingCursor{Tail: 3, Pending: []uint64{0, 1}}, 0, RingCursor{Tail: 3, Pending: []uint64{0, 1}}},
		{"made valid", RingCursor{Tail: 3, Pending: []uint64{1, 0}}, 10, RingCursor{Tail: 3, Pending: []uint64{0, 1}}},
		{"not a shard", RingCursor{Tail: 3, Pending: []uint64{0, 1}}, 10, RingCursor{Tail: 3, Pending: []uint64{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Pending = append(make([]uint64, 0, 64), in.Pending...) // room to append into
			orig := append([]uint64(nil), in.Pending...)
			shard := uint64(0)
			if tc.name == "not a shard" {
				shard = 1
			}
			_, next, _, err := m.RingRead(r, shard, in, tc.max)
			require.Equal(t, shard != 0, err != nil)
			require.Equal(t, tc.want, next)
			require.Equal(t, orig, in.Pending, "the caller's untouched")
			for i := range next.Pending {
				next.Pending[i] = 99
			}
			require.Equal(t, orig, in.Pending, "nothing shared")
			require.Equal(t, orig, in.Pending[:len(orig)])
			require.Equal(t, []uint64{0, 0}, in.Pending[len(orig):len(orig)+2], "nothing appended into the caller's array")
		})
	}
}

// TestRingDrainFinished: RingDrain on a region no kernel writes any more:
// a record claimed and never written (or written over by the lap before)
// with a later record consumed is counted lost and does not hold the
// later ones up; the ones after the last record consumed stay at the
// stored tail, not counted; each record is returned or lost once over
// drains of a few records each.
func TestRingDrainFinished(t *testing.T) {
	type drain struct {
		ops        string
		max        int
		recs       []uint64
		tail, lost uint64 // the stored tail; the drops after
	}
	for _, tc := range []struct {
		name   string
		drains []drain
	}{
		{"one at a time", []drain{
			{ops: "o c o c c", max: 1, recs: []uint64{0}, tail: 1},
			{max: 1, recs: []uint64{2}, tail: 3, lost: 1},
			{max: 1, tail: 3, lost: 1},
			{max: 1, tail: 3, lost: 1},
			{ops: "w4", max: 1, recs: []uint64{4}, tail: 5, lost: 2},
			{max: 1, tail: 5, lost: 2},
		}},
		{"all at once", []drain{
			{ops: "c o c c o c", max: 100, recs: []uint64{1, 4}, tail: 5, lost: 3},
			{max: 100, tail: 5, lost: 3},
			{ops: "o", max: 100, recs: []uint64{6}, tail: 7, lost: 4},
		}},
		{"stale writer of the lap before", []drain{
			{ops: "o*8", max: 100, recs: seqs(0, 8), tail: 8},
			{ops: "c o s8", max: 100, recs: []uint64{9}, tail: 10, lost: 1},
		}},
		{"stale at the end: until the ring laps it", []drain{
			{ops: "o*8", max: 100, recs: seqs(0, 8), tail: 8},
			{ops: "c s8", max: 100, tail: 8},
			{max: 100, tail: 8},
			{ops: "o*8", max: 100, recs: seqs(9, 17), tail: 17, lost: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, r := region(t, Def{Name: "r", Type: Ringbuf, ValueSize: 4, MaxEntries: 8})
			m := l.Maps[0]
			for i, d := range tc.drains {
				ringOps(t, m, r, 0, d.ops)
				recs, err := m.RingDrain(r, d.max)
				require.NoError(t, err, "drain %d", i)
				require.Equal(t, d.recs, ringIDs(recs), "drain %d", i)
				h, err := m.ReadHeader(r)
				require.NoError(t, err)
				require.Equal(t, d.tail, h.Tail, "drain %d", i)
				require.Equal(t, d.lost, h.Drops, "drain %d", i)
			}
		})
	}
}
