package devrt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/fuzzseed"
)

// ringHeaderSize is the part of the header page the producer writes
// (struct gpuext_ring_hdr).
const ringHeaderSize = 384

// fuzzRingSeed is a valid ring file of capacity slots holding records of
// the given sizes, in the pieces FuzzSourceRingFile takes: header, control
// page magic, file size, the slots written, and where to cut the file (0:
// not).
func fuzzRingSeed(t testing.TB, capacity uint32, sizes ...int) ([]byte, uint64, uint32, []byte, uint32) {
	path := filepath.Join(t.TempDir(), "seed.ring")
	p, err := devring.Create(path, devring.Header{Capacity: capacity, PID: 4242, StartTime: 7, CreatedNS: 1, Version: "seed"})
	require.NoError(t, err)
	for i, n := range sizes {
		b := make([]byte, n)
		binary.LittleEndian.PutUint32(b, uint32(i+1))
		require.True(t, p.Write(b))
	}
	require.NoError(t, p.Close())
	mem, err := os.ReadFile(path)
	require.NoError(t, err)
	// The slots written (up to the producers' head, at offset 128): the
	// fuzz target makes the others free, as devrt does.
	used := binary.LittleEndian.Uint64(mem[128:])
	return mem[:ringHeaderSize], binary.LittleEndian.Uint64(mem[devring.CtlOffset:]), uint32(len(mem)),
		mem[devring.DataOffset : devring.DataOffset+int(used)*devring.SlotSize], 0
}

// sourceSeed is one input of FuzzSourceRingFile.
type sourceSeed struct {
	hdr   []byte
	ctl   uint64
	size  uint32
	slots []byte
	cut   uint32
}

func seedOf(hdr []byte, ctl uint64, size uint32, slots []byte, cut uint32) sourceSeed {
	return sourceSeed{hdr, ctl, size, slots, cut}
}

// fuzzSeeds are FuzzSourceRingFile's seeds, also written to
// testdata/fuzz/FuzzSourceRingFile by TestWriteSourceFuzzSeeds.
func fuzzSeeds(t testing.TB) map[string]sourceSeed {
	ok := seedOf(fuzzRingSeed(t, 64, 16, 16, 16))
	seeds := map[string]sourceSeed{
		"empty":   seedOf(fuzzRingSeed(t, 64)),
		"records": seedOf(fuzzRingSeed(t, 64, 16, 200, 680, devring.MaxRecordSize)),
	}
	with := func(name string, change func(s *sourceSeed)) {
		s := ok
		s.hdr = append([]byte(nil), ok.hdr...)
		s.slots = append([]byte(nil), ok.slots...)
		change(&s)
		seeds[name] = s
	}
	with("cut-in-slots", func(s *sourceSeed) { s.cut = devring.DataOffset + devring.SlotSize + 7 })
	with("cut-in-header", func(s *sourceSeed) { s.cut = 100 })
	with("file-short-for-capacity", func(s *sourceSeed) { s.size = devring.DataOffset + devring.SlotSize })
	with("corrupt-second-slot", func(s *sourceSeed) {
		binary.LittleEndian.PutUint64(s.slots[devring.SlotSize:], 77) // a sequence from nowhere
	})
	with("writer-died-mid-record", func(s *sourceSeed) {
		binary.LittleEndian.PutUint64(s.slots[0:], 0) // claimed, never committed
	})
	with("no-control-magic", func(s *sourceSeed) { s.ctl = 0 })
	with("capacity-max", func(s *sourceSeed) { binary.LittleEndian.PutUint32(s.hdr[16:], devring.MaxSlots) })
	return seeds
}

// FuzzSourceRingFile: whatever a traced program leaves in its ring file,
// and however it cuts the file while it is mapped, the source never
// panics, hands over only records of 1 to MaxRecordSize bytes, and once
// the process has gone or the source shut down, it holds no mapping or
// descriptor of the file. Seeds: testdata/fuzz/FuzzSourceRingFile (written
// by DEVRT_WRITE_SEEDS=1 go test -run TestWriteSourceFuzzSeeds).
func FuzzSourceRingFile(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s.hdr, s.ctl, s.size, s.slots, s.cut)
	}
	f.Fuzz(func(t *testing.T, hdr []byte, ctl uint64, size uint32, slots []byte, cut uint32) {
		n := int(size % (devring.DataOffset + 1024*devring.SlotSize + 1))
		mem := make([]byte, n)
		copy(mem, hdr[:min(len(hdr), ringHeaderSize)])
		if n >= devring.DataOffset {
			binary.LittleEndian.PutUint64(mem[devring.CtlOffset:], ctl)
			copy(mem[devring.DataOffset:], slots)
			// Slots beyond the input are free, as devrt makes them.
			for i := 0; devring.DataOffset+(i+1)*devring.SlotSize <= n; i++ {
				if i*devring.SlotSize >= len(slots) {
					binary.LittleEndian.PutUint64(mem[devring.DataOffset+i*devring.SlotSize:], uint64(i))
				}
			}
		}
		pid := uint32(4242)
		if n >= 24 {
			if p := binary.LittleEndian.Uint32(mem[20:]); p != 0 {
				pid = p
			}
		}
		var start uint64
		if n >= 32 {
			start = binary.LittleEndian.Uint64(mem[24:])
		}
		w := newWorld(t, nil)
		w.alive(pid, start)
		path := filepath.Join(w.dir, "gpuext-devrt-"+u(pid)+"-1.ring")
		require.NoError(t, os.WriteFile(path, mem, 0o600))
		w.src.opts.Handle = func(pid uint32, rec []byte) {
			if len(rec) == 0 || len(rec) > devring.MaxRecordSize {
				t.Fatalf("record of %d bytes", len(rec))
			}
		}
		w.poll()
		if cut != 0 { // the file is gone if the source gave the ring up
			if err := os.Truncate(path, int64(cut%uint32(n+1))); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		w.poll()
		w.kill(pid)
		w.poll()
		require.Zero(t, w.src.Rings(), "retired once its process has gone")
		w.src.Shutdown()
		noReferences(t, w.dir)
	})
}

// noReferences fails if this process still maps or holds open a file
// under dir.
func noReferences(t *testing.T, dir string) {
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	if strings.Contains(string(maps), dir) {
		t.Fatalf("a file of %s is still mapped", dir)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir) {
			t.Fatalf("descriptor %s still open on %s", fd.Name(), target)
		}
	}
}

func TestWriteSourceFuzzSeeds(t *testing.T) {
	if os.Getenv("DEVRT_WRITE_SEEDS") == "" {
		t.Skip("set DEVRT_WRITE_SEEDS=1 to rewrite testdata/fuzz/FuzzSourceRingFile")
	}
	for name, s := range fuzzSeeds(t) {
		require.NoError(t, fuzzseed.Write("", "FuzzSourceRingFile", name, s.hdr, s.ctl, s.size, s.slots, s.cut))
	}
}
