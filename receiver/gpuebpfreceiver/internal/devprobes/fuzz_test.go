package devprobes

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/fuzzseed"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion/probesim"
)

// FuzzRegionPID: any file name is parsed without a panic; a name it
// accepts is exactly gpuext-devmaps-<pid>-<created_ns>.maps with a
// non-zero 32-bit pid. Seeds: testdata/fuzz/FuzzRegionPID.
func FuzzRegionPID(f *testing.F) {
	f.Fuzz(func(t *testing.T, name string) {
		pid, ok := regionPID(name)
		if !ok {
			if pid != 0 {
				t.Fatalf("%q: pid %d without ok", name, pid)
			}
			return
		}
		if pid == 0 {
			t.Fatalf("%q: pid 0 accepted", name)
		}
		rest := strings.TrimSuffix(strings.TrimPrefix(name, "gpuext-devmaps-"), ".maps")
		p, ns, _ := strings.Cut(rest, "-")
		if v, err := strconv.ParseUint(p, 10, 32); err != nil || uint32(v) != pid {
			t.Fatalf("%q: pid %d from %q", name, pid, p)
		}
		if _, err := strconv.ParseUint(ns, 10, 64); err != nil {
			t.Fatalf("%q: created_ns %q accepted", name, ns)
		}
	})
}

// Ops of FuzzSourceRegion's input: what a kernel (or anything with the
// mapping) does to the region, and when the source reads it.
const (
	opWord   = iota // 3-byte word index, 8-byte value: any word of the region
	opBlock         // 1-byte SM, 56-byte gpuext_dev_block (kernel id forced to "imbalanced" when the SM byte is odd, the weight to 1-64 when its bit 1 is set)
	opLaunch        // 24-byte gpuext_dev_launch (the same kernel id rule on its first byte)
	opPoll          // the source reads the region (Poll), and emits (Metrics) every other time
	opHost          // 8-byte start: devrt's launch call of "imbalanced", timed when odd
	numOps
)

// regionOps runs ops on mem (a region of s's layout) and s.
func regionOps(t *testing.T, s *Source, mem []byte, b []byte, emit func()) {
	lay := s.Set().Layout()
	reg := gpumap.Region(mem)
	ring, _ := lay.Find(proberegion.MapBlockRing)
	launches, _ := lay.Find(proberegion.MapLaunchRing)
	known := ptx.KernelID("imbalanced")
	le := binary.LittleEndian
	polls := 0
	for len(b) > 0 {
		op := b[0] % numOps
		b = b[1:]
		switch op {
		case opWord:
			if len(b) < 11 {
				return
			}
			off := (uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16) * 8 % (lay.Size - 7)
			copy(mem[off:off+8], b[3:11])
			b = b[11:]
		case opBlock:
			if len(b) < 1+proberegion.BlockSize {
				return
			}
			rec := append([]byte(nil), b[1:1+proberegion.BlockSize]...)
			if b[0]&1 != 0 {
				le.PutUint64(rec, known)
			}
			if b[0]&2 != 0 { // a weight block sampling gives (others: mostly bad records)
				le.PutUint32(rec[36:], 1+uint32(rec[36])%64)
			}
			_, _ = ring.RingOutputSM(reg, uint64(b[0]), rec)
			b = b[1+proberegion.BlockSize:]
		case opLaunch:
			if len(b) < proberegion.LaunchSize {
				return
			}
			rec := append([]byte(nil), b[:proberegion.LaunchSize]...)
			if rec[0]&1 != 0 {
				le.PutUint64(rec, known)
			}
			_, _ = launches.RingOutput(reg, rec)
			b = b[proberegion.LaunchSize:]
		case opPoll:
			s.Poll()
			if polls++; polls%2 == 0 {
				emit()
			}
		case opHost:
			if len(b) < 8 {
				return
			}
			start := le.Uint64(b)
			dev := int32(int8(b[2])) // -1 and small ordinals mostly; others are ignored
			s.Launch(pid, "imbalanced", dev, start)
			if start&1 != 0 {
				s.Timed(pid, "imbalanced", dev, start, start+uint64(b[1]), start+uint64(b[1])+uint64(b[3])<<8)
			}
			b = b[8:]
		}
	}
}

// monotonicSums checks md (Metrics' output) and returns its monotonic
// series: "pid|metric|attrs" -> value (histograms: count). Sums must not
// be negative, nor monotonic ones go below before's, and histogram buckets
// must add up to their count.
func monotonicSums(t *testing.T, md pmetric.Metrics, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		res := fmt.Sprint(rm.Resource().Attributes().AsRaw())
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for d := 0; d < m.Sum().DataPoints().Len(); d++ {
						dp := m.Sum().DataPoints().At(d)
						v := dp.DoubleValue() + float64(dp.IntValue())
						key := res + "|" + m.Name() + "|" + fmt.Sprint(dp.Attributes().AsRaw())
						if v < 0 {
							t.Fatalf("%s = %v: negative", key, v)
						}
						if m.Sum().IsMonotonic() {
							if w, ok := before[key]; ok && v < w {
								t.Fatalf("%s went from %v to %v", key, w, v)
							}
							out[key] = v
						}
					}
				case pmetric.MetricTypeHistogram:
					for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
						dp := m.Histogram().DataPoints().At(d)
						var n uint64
						for _, c := range dp.BucketCounts().AsRaw() {
							n += c
						}
						if n != dp.Count() {
							t.Fatalf("%s: buckets add up to %d, count %d", m.Name(), n, dp.Count())
						}
						key := res + "|" + m.Name() + "|" + fmt.Sprint(dp.Attributes().AsRaw())
						if w, ok := before[key]; ok && float64(dp.Count()) < w {
							t.Fatalf("%s went from %v to %v", key, w, dp.Count())
						}
						out[key] = float64(dp.Count())
					}
				}
			}
		}
	}
	return out
}

// FuzzSourceRegion: whatever the process's kernels write into their
// region (it is device memory any of them can scribble on) and whatever
// devrt reports of its launches, the source never panics; its sums are
// never negative, monotonic ones never go down, histograms add up; once
// the region is gone, the process is forgotten. The input is a program of
// ops (see opWord...). Seeds: testdata/fuzz/FuzzSourceRegion
// (DEVPROBES_WRITE_SEEDS=1 go test -run TestWriteFuzzSeeds rewrites them).
func FuzzSourceRegion(f *testing.F) {
	dir := f.TempDir()
	s, _ := newSource(f, dir)
	patchCorpus(f, s)
	lay := s.Set().Layout()
	clean := make([]byte, lay.Size)
	require.NoError(f, lay.Init(clean))
	mem := make([]byte, lay.Size)
	n := 0
	f.Fuzz(func(t *testing.T, b []byte) {
		n++
		copy(mem, clean)
		r, err := proberegion.FromBytes(mem, lay)
		require.NoError(t, err)
		path := filepath.Join(dir, fmt.Sprintf("region-%d", n)) // not a name Poll looks for
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		s.mu.Lock()
		s.regions[path] = &region{r: r, tr: proberegion.NewTracker(), pid: pid, drops: map[string]uint64{}}
		s.proc(pid).open[0]++
		s.mu.Unlock()
		t.Cleanup(func() { // a failed input leaves nothing to the next one
			s.mu.Lock()
			delete(s.regions, path)
			delete(s.procs, pid)
			s.mu.Unlock()
			s.TakeSpans()
		})
		var before map[string]float64
		emit := func() {
			before = monotonicSums(t, s.Metrics(), before)
			s.TakeSpans()
		}
		regionOps(t, s, mem, b, emit)
		s.Poll()
		emit()
		require.NoError(t, os.Remove(path))
		s.Poll() // read once more, closed
		emit()
		s.Metrics()
		s.Metrics()
		require.Empty(t, s.regions)
		require.Empty(t, s.procs, "the process is forgotten")
		s.TakeSpans()
	})
}

// TestWriteFuzzSeeds writes testdata/fuzz/FuzzSourceRegion and
// FuzzRegionPID.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("DEVPROBES_WRITE_SEEDS") == "" {
		t.Skip("set DEVPROBES_WRITE_SEEDS=1 to rewrite testdata/fuzz/FuzzSourceRegion and FuzzRegionPID")
	}
	write := func(target, name string, value any) {
		require.NoError(t, fuzzseed.Write("", target, name, value))
	}
	for name, v := range map[string]string{
		"valid": "gpuext-devmaps-4242-1700000000000000000.maps", "pid_zero": "gpuext-devmaps-0-1.maps",
		"pid_too_big": "gpuext-devmaps-4294967296-1.maps", "no_ns": "gpuext-devmaps-4242.maps",
		"negative": "gpuext-devmaps--1-1.maps", "ns_too_big": "gpuext-devmaps-1-18446744073709551616.maps",
		"ring": "gpuext-devrt-4242-1.ring", "empty": "",
	} {
		write("FuzzRegionPID", name, v)
	}

	s, _ := newSource(t, t.TempDir())
	patchCorpus(t, s)
	lay := s.Set().Layout()
	clean := make([]byte, lay.Size)
	require.NoError(t, lay.Init(clean))
	word := func(off, v uint64) []byte {
		b := []byte{opWord, byte(off / 8), byte(off / 8 >> 8), byte(off / 8 >> 16)}
		return binary.LittleEndian.AppendUint64(b, v)
	}
	// The imbalanced launch as the shipped probes write it (probesim),
	// as word writes, read over several polls; devrt's launch call and
	// its timing before it.
	run := append([]byte(nil), clean...)
	require.NoError(t, probesim.Run(s.Set().Compiled(), run, probesim.Launch{Kernel: "imbalanced", Grid: 16, Threads: 64, NSM: 4,
		Blocks: probesim.Imbalanced(base, 16, 4), GridID: 0x2a}))
	host := func(start uint64) []byte { return binary.LittleEndian.AppendUint64([]byte{opHost}, start) }
	imbalanced := host(base - offset - 4999) // odd: timed too
	for off := uint64(0); off+8 <= lay.Size; off += 8 {
		if a, b := binary.LittleEndian.Uint64(clean[off:]), binary.LittleEndian.Uint64(run[off:]); a != b {
			imbalanced = append(imbalanced, word(off, b)...)
		}
	}
	imbalanced = append(imbalanced, opPoll, opPoll, opPoll)
	write("FuzzSourceRegion", "imbalanced_launch", imbalanced)

	ring, _ := lay.Find(proberegion.MapBlockRing)
	sm, _ := lay.Find(proberegion.MapSM)
	smOff, _ := sm.ElemOffset(0, 0)
	block := func(smID byte, id, start, end, grid uint64) []byte {
		b := []byte{opBlock, smID | 1}
		b = binary.LittleEndian.AppendUint64(b, 0) // kernel: "imbalanced" (odd SM byte)
		for _, v := range []uint64{id, start, end} {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(smID))
		b = binary.LittleEndian.AppendUint16(b, 64)
		b = binary.LittleEndian.AppendUint32(b, 1) // weight: every block
		return binary.LittleEndian.AppendUint64(b, grid)
	}
	var blocks, hostile []byte
	for i := range uint64(8) {
		blocks = append(blocks, block(byte(i%4), i, base+i*1000, base+i*1000+5000, 7)...)
	}
	blocks = append(blocks, opPoll, opPoll)
	write("FuzzSourceRegion", "blocks", blocks)
	hostile = append(hostile, block(1, 0, base+9000, base, 7)...)        // ends before it starts
	hostile = append(hostile, block(1, 0, base, base+1, 7)...)           // the same block again
	hostile = append(hostile, block(3, 5, ^uint64(0), ^uint64(0), 0)...) // at the end of time
	hostile = append(hostile, word(ring.Offset+gpumap.OffDrops, 1<<63)...)
	hostile = append(hostile, word(smOff, 1<<63)...)
	hostile = append(hostile, opPoll, opPoll)
	hostile = append(hostile, word(ring.Offset+gpumap.OffDrops, 5)...)
	hostile = append(hostile, word(smOff, 3)...)
	hostile = append(hostile, word(ring.Offset+gpumap.OffHead, ^uint64(0))...)
	hostile = append(hostile, opPoll, opPoll)
	write("FuzzSourceRegion", "hostile", hostile)
	write("FuzzSourceRegion", "empty", []byte(nil))
	write("FuzzSourceRegion", "polls_only", []byte{opPoll, opPoll, opPoll, opPoll})
}
