package proberegion

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkRegionRead is the collector's cost of one poll of one region
// (devprobes reads each every devrt::poll_interval, 50 ms by default): the
// four shipped probes' maps on an H100's 132 SMs, every occupancy slot
// marked (a lap of work), the counts grown by a little between reads, as a
// running kernel grows them; Read alone, and Read with the tracker's
// occupancy differences.
func BenchmarkRegionRead(b *testing.B) {
	s := newSet(b)
	lay := s.Layout()
	region := make([]byte, lay.Size)
	require.NoError(b, lay.Init(region))
	r, err := FromBytes(region, lay)
	require.NoError(b, err)
	occ, ok := lay.Find(MapOcc)
	require.True(b, ok)
	const sms = 132
	first := base >> OccShift
	grow := func(round uint64) {
		for sm := uint64(0); sm < sms; sm++ {
			for k := uint64(0); k < uint64(occ.MaxEntries); k++ {
				off, ok := occ.ElemOffset(sm, k)
				require.True(b, ok)
				bucket := first + (k-first%uint64(occ.MaxEntries)+uint64(occ.MaxEntries))%uint64(occ.MaxEntries)
				binary.LittleEndian.PutUint64(region[off:], bucket)
				binary.LittleEndian.PutUint64(region[off+8:], 256*(round+1))
				binary.LittleEndian.PutUint64(region[off+16:], 1_000_000*(round+1))
			}
		}
	}
	grow(0)
	b.Run("read", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := r.Read(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read+occupancy", func(b *testing.B) {
		tr := NewTracker()
		b.ReportAllocs()
		for i := range b.N {
			snap, err := r.Read()
			if err != nil {
				b.Fatal(err)
			}
			tr.Blocks(snap.Blocks, snap.BlockProgress(), time.Time{})
			tr.SMs(snap.SMs)
			tr.Occupancy(snap.Occupancy, snap.OccSlots, snap.OccResident, ReadClock{})
			if i%8 == 0 {
				b.StopTimer()
				grow(uint64(i))
				b.StartTimer()
			}
		}
	})
}
