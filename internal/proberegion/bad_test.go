package proberegion

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// smallLayout has the shipped probes' maps, small (fuzzing, bad regions).
func smallLayout(t testing.TB) gpumap.Layout {
	l, err := gpumap.NewLayout([]gpumap.Def{
		{Name: MapBlockRing, Type: gpumap.Ringbuf, ValueSize: BlockSize, MaxEntries: 8},
		{Name: MapLaunchRing, Type: gpumap.Ringbuf, ValueSize: LaunchSize, MaxEntries: 4},
		{Name: MapSM, Type: gpumap.PerSMArray, KeySize: 4, ValueSize: SMSize, MaxEntries: 1, Copies: 4},
		{Name: MapOcc, Type: gpumap.PerSMArray, KeySize: 4, ValueSize: OccSize, MaxEntries: 4, Copies: 4},
		{Name: "gx_private", Type: gpumap.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2},
	})
	require.NoError(t, err)
	return l
}

func TestBadRegions(t *testing.T) {
	lay := smallLayout(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}

	// Short: the layout does not fit.
	p := write("short.maps", make([]byte, lay.Size-1))
	_, err := Open(p, lay)
	require.ErrorIs(t, err, ErrBroken)
	require.ErrorIs(t, err, ErrShort)
	require.EqualError(t, err, "proberegion: region broken: "+p+" has "+strconv.FormatUint(lay.Size-1, 10)+" bytes, the probe set's maps need "+strconv.FormatUint(lay.Size, 10)+" (shorter than the layout)")

	// Garbage: headers of another layout (or none that make sense).
	g := make([]byte, lay.Size)
	for i := range g {
		g[i] = byte(i*7 + 3)
	}
	_, err = Open(write("garbage.maps", g), lay)
	require.ErrorIs(t, err, ErrBroken)
	require.ErrorContains(t, err, "foreign region")

	// Another probe set's initialised region.
	other := smallLayout(t)
	other.Maps[0].MaxEntries = 16
	o := make([]byte, lay.Size)
	require.NoError(t, lay.Init(o))
	binary.LittleEndian.PutUint32(o[lay.Maps[0].Offset+gpumap.OffMaxEntries:], 16)
	_, err = Open(write("other.maps", o), lay)
	require.ErrorContains(t, err, `foreign region (another probe set's?): map "gx_block_ring": header`)

	// Not a regular file; a second link.
	_, err = Open(dir, lay)
	require.Error(t, err)
	good := write("good.maps", make([]byte, lay.Size))
	require.NoError(t, os.Link(good, filepath.Join(dir, "link.maps")))
	_, err = Open(good, lay)
	require.EqualError(t, err, "proberegion: region broken: "+good+" has 2 links")
	require.NoError(t, os.Remove(filepath.Join(dir, "link.maps")))

	// Truncated under the mapping: the read faults, the region breaks, the
	// process goes on; another region is unaffected.
	r, err := Open(good, lay)
	require.NoError(t, err)
	defer r.Close()
	second := write("second.maps", make([]byte, lay.Size))
	r2, err := Open(second, lay)
	require.NoError(t, err)
	defer r2.Close()
	_, err = r.Read()
	require.NoError(t, err)
	require.NoError(t, os.Truncate(good, 0))
	_, err = r.Read()
	require.ErrorIs(t, err, ErrBroken)
	require.ErrorContains(t, err, "(file truncated?)")
	require.Equal(t, err, r.Broken())
	_, err = r.Read()
	require.Equal(t, r.Broken(), err) // never read again
	_, err = r2.Read()
	require.NoError(t, err)

	// A ring record of an impossible length is skipped and counted.
	mem := make([]byte, lay.Size)
	r3, err := FromBytes(mem, lay)
	require.NoError(t, err)
	m := lay.Maps[0]
	_, err = m.RingOutput(gpumap.Region(mem), make([]byte, BlockSize))
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(mem[m.RingSlotOffset(0)+gpumap.RecLen:], 1000)
	_, err = m.RingOutput(gpumap.Region(mem), make([]byte, 8)) // a record of the wrong size
	require.NoError(t, err)
	snap, err := r3.Read()
	require.NoError(t, err)
	require.Empty(t, snap.Blocks)
	require.Equal(t, 1, snap.Bad)
	require.Equal(t, uint64(1), snap.Drops[MapBlockRing])
}

// FuzzRegion: any bytes as a region are read without a panic; a region
// that opens reads again, and the tracker takes whatever it gave.
func FuzzRegion(f *testing.F) {
	lay := smallLayout(f)
	init := make([]byte, lay.Size)
	require.NoError(f, lay.Init(init))
	f.Add(init)
	f.Add([]byte{})
	f.Add(make([]byte, lay.Size))
	withRecords := append([]byte(nil), init...)
	reg := gpumap.Region(withRecords)
	for i := range 10 { // a lap and a bit of the block ring
		rec := make([]byte, BlockSize)
		binary.LittleEndian.PutUint64(rec[8:], uint64(i%3))
		binary.LittleEndian.PutUint64(rec[16:], uint64(100*i))
		binary.LittleEndian.PutUint64(rec[24:], uint64(100*i+50))
		binary.LittleEndian.PutUint32(rec[36:], 1) // weight
		_, _ = lay.Maps[0].RingOutput(reg, rec)
	}
	_, _ = lay.Maps[1].RingOutput(reg, make([]byte, LaunchSize))
	_ = reg.PutU64(lay.Maps[2].DataOffset()+16, 12345)
	_ = reg.PutU64(lay.Maps[3].DataOffset(), 77)
	f.Add(withRecords)
	// occupancy slots of SMs 0 and 1: buckets 400-403 (slot = bucket % 4),
	// entries and exits, a bucket's share negative
	withOcc := append([]byte(nil), withRecords...)
	occ := lay.Maps[3]
	for sm := range uint64(2) {
		for k := range uint64(4) {
			off, ok := occ.ElemOffset(sm, k)
			require.True(f, ok)
			binary.LittleEndian.PutUint64(withOcc[off:], 400+k)
			binary.LittleEndian.PutUint64(withOcc[off+8:], uint64(64-32*int64(k)))
			binary.LittleEndian.PutUint64(withOcc[off+16:], uint64(64_000-40_000*int64(k)))
		}
	}
	f.Add(withOcc)
	f.Fuzz(func(t *testing.T, b []byte) {
		mem := make([]byte, lay.Size)
		copy(mem, b)
		r, err := FromBytes(mem, lay)
		if err != nil {
			return
		}
		// Reads of the bytes, of the bytes with the occupancy slots a lap
		// on (buckets reported), of the bytes again (slots gone back),
		// and of the bytes rotated by half (another copy: the tracker's
		// differences between reads).
		rot := append(append([]byte(nil), b[len(b)/2:]...), b[:len(b)/2]...)
		adv := append([]byte(nil), b...)
		occ := lay.Maps[3]
		for sm := range uint64(occ.Slots) {
			for k := range uint64(occ.MaxEntries) {
				if off, ok := occ.ElemOffset(sm, k); ok && off+OccSize <= uint64(len(adv)) {
					for i, d := range []uint64{uint64(occ.MaxEntries), 32, 1000} {
						v := adv[off+8*uint64(i):]
						binary.LittleEndian.PutUint64(v, binary.LittleEndian.Uint64(v)+d)
					}
				}
			}
		}
		tr := NewTracker()
		// host clocks from the bytes too: any, as a hostile or torn
		// device record could give
		var clk ReadClock
		if len(b) >= 16 {
			clk = ReadClock{CopyStart: binary.LittleEndian.Uint64(b), Now: binary.LittleEndian.Uint64(b[8:])}
		}
		lastOut := map[uint32]uint64{}
		for i, img := range [][]byte{b, adv, b, rot} {
			clk.CopyStart += uint64(i) << 28
			clk.Now += uint64(i) << 28
			clear(mem)
			copy(mem, img)
			snap, err := r.Read()
			tr.Blocks(snap.Blocks, snap.BlockProgress(), time.Now())
			tr.SMs(snap.SMs)
			for _, p := range tr.Occupancy(snap.Occupancy, snap.OccSlots, snap.OccResident, clk) {
				// Whatever the counts (a bucket's share can be
				// negative now): warps a number, never negative, and
				// an SM's points only move forward.
				require.False(t, math.IsNaN(p.Warps) || math.IsInf(p.Warps, 0), "%+v", p)
				require.GreaterOrEqual(t, p.Warps, 0.0)
				require.Greater(t, p.Bucket, lastOut[p.SM], "%+v", p)
				lastOut[p.SM] = p.Bucket
			}
			if err != nil {
				return
			}
		}
		tr.Flush()
	})
}

// TestReaderNeverWrites: the reader keeps its ring tails and losses to
// itself, so devrt's copy of the device's memory over the file (which
// holds no tail) neither repeats nor loses records.
func TestReaderNeverWrites(t *testing.T) {
	lay := smallLayout(t)
	dev := make([]byte, lay.Size) // the device's region
	require.NoError(t, lay.Init(dev))
	ring := lay.Maps[0]
	block := func(i uint64) []byte {
		rec := make([]byte, BlockSize)
		binary.LittleEndian.PutUint64(rec[8:], i)
		binary.LittleEndian.PutUint64(rec[16:], 100*i)
		binary.LittleEndian.PutUint64(rec[24:], 100*i+50)
		binary.LittleEndian.PutUint32(rec[36:], 1)
		return rec
	}
	file := append([]byte(nil), dev...) // the mirror
	r, err := FromBytes(file, lay)
	require.NoError(t, err)
	ids := func(s Snapshot) []uint64 {
		var out []uint64
		for _, b := range s.Blocks {
			out = append(out, b.Block)
		}
		return out
	}
	for i := range uint64(3) {
		_, err := ring.RingOutput(gpumap.Region(dev), block(i))
		require.NoError(t, err)
	}
	copy(file, dev)
	s, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, []uint64{0, 1, 2}, ids(s))
	require.Equal(t, dev, file, "the reader wrote nothing")

	// The next copy: the old records again, and 11 new ones (a lap of 8
	// and 3 more): the 3 overwritten before the copy are lost, once.
	for i := uint64(3); i < 14; i++ {
		_, err := ring.RingOutput(gpumap.Region(dev), block(i))
		require.NoError(t, err)
	}
	copy(file, dev)
	s, err = r.Read()
	require.NoError(t, err)
	require.Equal(t, []uint64{6, 7, 8, 9, 10, 11, 12, 13}, ids(s))
	require.Equal(t, uint64(3), s.Drops[MapBlockRing])
	copy(file, dev)
	s, err = r.Read()
	require.NoError(t, err)
	require.Empty(t, s.Blocks, "nothing read twice")
	require.Equal(t, uint64(3), s.Drops[MapBlockRing])
	require.Equal(t, dev, file)
}

// TestBlockWeights: a block record's weight is 1 to MaxWeight (what block
// sampling gives); 0 or over MaxWeight is a bad record, counted and left
// out.
func TestBlockWeights(t *testing.T) {
	lay := smallLayout(t)
	dev := make([]byte, lay.Size)
	require.NoError(t, lay.Init(dev))
	for i, w := range []uint32{0, 1, 16, MaxWeight, MaxWeight + 1, ^uint32(0)} {
		rec := make([]byte, BlockSize)
		binary.LittleEndian.PutUint64(rec[8:], uint64(i))
		binary.LittleEndian.PutUint32(rec[36:], w)
		_, err := lay.Maps[0].RingOutput(gpumap.Region(dev), rec)
		require.NoError(t, err)
	}
	r, err := FromBytes(dev, lay)
	require.NoError(t, err)
	s, err := r.Read()
	require.NoError(t, err)
	var got [][2]uint64
	for _, b := range s.Blocks {
		got = append(got, [2]uint64{b.Block, uint64(b.Weight)})
	}
	require.Equal(t, [][2]uint64{{1, 1}, {2, 16}, {3, MaxWeight}}, got)
	require.Equal(t, 3, s.Bad)
}
