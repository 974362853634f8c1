package gpumap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRingClaimOutputAt: gpuext_ring_claim's model takes consecutive
// indexes of the claiming SM's shard and writes nothing; the record
// written later at an index lands in that shard's slot, whole, whatever
// the order of the writes; ringbuf_output is a claim and a write at once.
func TestRingClaimOutputAt(t *testing.T) {
	l, r := region(t, Def{Name: "r", Type: Ringbuf, ValueSize: 8, MaxEntries: 16, Shards: 4})
	m := l.Maps[0]
	claim := func(sm uint64) uint64 { t.Helper(); i, err := m.RingClaimSM(r, sm); require.NoError(t, err); return i }
	write := func(sm, i uint64, b ...byte) int64 {
		t.Helper()
		res, err := m.RingOutputAt(r, sm, i, b)
		require.NoError(t, err)
		return res
	}
	for _, tt := range []struct{ sm, want uint64 }{{5, 0}, {1, 1}, {2, 0}, {9, 2}, {5, 3}} {
		require.Equal(t, tt.want, claim(tt.sm), "SM %d", tt.sm) // SMs 1, 5, 9 share shard 1
	}
	require.Equal(t, uint64(4), r.load64(m.HeadOffset(1)))
	require.Equal(t, uint64(1), r.load64(m.HeadOffset(2)))
	// claimed, nothing written: the shard reads nothing yet
	recs, _, lost, err := m.RingRead(r, 1, RingCursor{}, 10)
	require.NoError(t, err)
	require.Empty(t, recs)
	require.Zero(t, lost)
	// written out of order, each at its index (SM 13: shard 1 as well)
	require.Equal(t, int64(0), write(13, 3, 3))
	require.Equal(t, int64(0), write(5, 0, 0))
	require.Equal(t, int64(0), write(9, 2, 2))
	require.Equal(t, int64(0), write(1, 1, 1))
	require.Equal(t, int64(0), write(2, 0, 20))
	recs, _, lost, err = m.RingRead(r, 1, RingCursor{}, 10)
	require.NoError(t, err)
	require.Equal(t, [][]byte{{0}, {1}, {2}, {3}}, recs)
	require.Zero(t, lost)
	recs, _, _, err = m.RingRead(r, 2, RingCursor{}, 10)
	require.NoError(t, err)
	require.Equal(t, [][]byte{{20}}, recs)
	// errors: no claim (nothing written), too large, not a ring
	before := append(Region(nil), r...)
	require.Equal(t, int64(-ENOENT), write(1, NoClaim, 9))
	require.Equal(t, before, r, "a write without a claim changed the region")
	require.Equal(t, int64(-E2BIG), write(1, 4, 1, 2, 3, 4, 5, 6, 7, 8, 9))
	la, ra := region(t, Def{Name: "a", Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	res, err := la.Maps[0].RingOutputAt(ra, 0, 0, []byte{1})
	require.NoError(t, err)
	require.Equal(t, int64(-EINVAL), res)
	before = append(Region(nil), ra...)
	i, err := la.Maps[0].RingClaimSM(ra, 0)
	require.NoError(t, err)
	require.Zero(t, i)
	require.Equal(t, before, ra, "a claim in an array changed the region")
	// ringbuf_output on SM 6: the next index of shard 2, written
	res, err = m.RingOutputSM(r, 6, []byte{21})
	require.NoError(t, err)
	require.Equal(t, int64(0), res)
	recs, _, _, err = m.RingRead(r, 2, RingCursor{Tail: 1}, 10)
	require.NoError(t, err)
	require.Equal(t, [][]byte{{21}}, recs)
}
