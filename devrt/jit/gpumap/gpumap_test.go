package gpumap

import (
	"encoding/binary"
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
	// burst): the drain stops at the stale slot once, then counts it lost.
	out(20)
	out(21)
	s = m.RingSlotOffset(12)
	stale := append([]byte(nil), r[s:s+RecHeaderSize+8]...)
	out(22) // record 14, into record 12's slot
	out(23)
	copy(r[m.RingSlotOffset(14):], stale) // record 12 written last
	recs = drain()
	require.Empty(t, recs)
	require.Equal(t, uint64(15+1), func() uint64 { v, _ := r.U64(m.StuckOffset(0)); return v }(), "stuck at record 14, record 15 whole")
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
	p := []byte("block_sched record, 48 bytes of payload........")
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

// FuzzReaders: any region bytes give values or errors, never a panic.
func FuzzReaders(f *testing.F) {
	l, err := NewLayout([]Def{
		{Name: "a", Type: PerSMArray, KeySize: 4, ValueSize: 8, MaxEntries: 2, Copies: 2},
		{Name: "h", Type: Hash, KeySize: 8, ValueSize: 8, MaxEntries: 4},
		{Name: "r", Type: Ringbuf, ValueSize: 8, MaxEntries: 4},
	})
	if err != nil {
		f.Fatal(err)
	}
	seed := make(Region, l.Size)
	_ = l.Init(seed)
	_, _ = l.Maps[2].RingOutput(seed, []byte{1, 2, 3})
	_, _ = l.Maps[1].Update(seed, 0, key64(5), key64(6), Any)
	f.Add([]byte(seed))
	f.Add([]byte(seed[:300]))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := Region(b)
		for _, m := range l.Maps {
			_, _ = m.ReadHeader(r)
			_, _ = m.ArrayCopy(r, 1)
			_, _ = m.HashEntries(r)
			recs, err := m.RingDrain(r, 100)
			if err == nil && len(recs) > int(m.Slots) {
				t.Fatalf("%d records from a ring of %d", len(recs), m.Slots)
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

// TestRingCursorKeepsStuck: a read stopped by max before the last record
// known whole keeps that knowledge for the next; one that passed it drops
// it.
func TestRingCursorKeepsStuck(t *testing.T) {
	l, r := region(t, Def{Name: "r", Type: Ringbuf, ValueSize: 4, MaxEntries: 4})
	m := l.Maps[0]
	for i := range 3 {
		_, err := m.RingOutput(r, []byte{byte(i)})
		require.NoError(t, err)
	}
	recs, c, lost, err := m.RingRead(r, 0, RingCursor{Stuck: 3}, 1)
	require.NoError(t, err)
	require.Equal(t, [][]byte{{0}}, recs)
	require.Equal(t, RingCursor{Tail: 1, Stuck: 3}, c)
	require.Zero(t, lost)
	recs, c, _, err = m.RingRead(r, 0, c, 10)
	require.NoError(t, err)
	require.Equal(t, [][]byte{{1}, {2}}, recs)
	require.Equal(t, RingCursor{Tail: 3}, c)
}
