package devring

import (
	"encoding/binary"
	"errors"
	"testing"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// fuzzSeed is a valid ring of capacity slots in pieces FuzzRing takes:
// header, control magic, file size, slot bytes, tail.
func fuzzSeed(capacity uint32, recs ...[]byte) ([]byte, uint64, uint32, []byte, uint64) {
	h := testHeader
	h.Capacity = capacity
	mem := NewMemory(h)
	p := ProducerFor(mem)
	for _, r := range recs {
		p.Write(r)
	}
	return mem[:hdrSize], CtlMagic, uint32(len(mem)), mem[DataOffset:], 0
}

// FuzzRing: whatever a producer leaves in the header and the slots, the
// consumer never panics, never reads beyond the mapping, never hands over
// a record longer than MaxRecordSize, reads at most one lap per Drain, and
// a ring it found corrupt stays broken.
func FuzzRing(f *testing.F) {
	x := ev.GPUExec{API: ev.APICuLaunchKernel, GPUStart: 1, GPUEnd: 2}
	named := ev.Event{Kind: ev.KindCallNamed, API: ev.APICuModuleGetFunction, Name: "_Z6vecAddPfS_S_i"}
	seed := func(hdr []byte, ctl uint64, size uint32, slots []byte, tail uint64) {
		f.Add(hdr, ctl, size, slots, tail)
	}
	seed(fuzzSeed(64))
	seed(fuzzSeed(64, record(1, 8), record(2, 200), record(3, 680)))
	seed(fuzzSeed(64, ev.AppendGPUExec(nil, &x), ev.AppendRecord(nil, &named)))
	seed(fuzzSeed(128, record(1, MaxRecordSize), record(2, 1)))
	hdr, ctl, size, slots, _ := fuzzSeed(64, record(1, 8), record(2, 8))
	f.Add(hdr, ctl, size, slots, uint64(1))       // resumes mid-ring
	f.Add(hdr, ctl, size, slots, uint64(1<<63))   // absurd tail
	f.Add(hdr, uint64(0), size, slots, uint64(0)) // control page not ready
	f.Add(hdr, ctl, uint32(DataOffset), slots, uint64(0))
	f.Add([]byte{}, uint64(0), uint32(0), []byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, hdr []byte, ctl uint64, size uint32, slots []byte, tail uint64) {
		n := int(size % (DataOffset + 1024*SlotSize + 1))
		mem := make([]byte, n)
		copy(mem, hdr[:min(len(hdr), hdrSize)])
		if n >= DataOffset {
			binary.LittleEndian.PutUint64(mem[CtlOffset:], ctl)
			copy(mem[DataOffset:], slots)
		}
		if n >= hdrSize {
			binary.LittleEndian.PutUint64(mem[hdrTail:], tail)
		}
		r, err := fromMemory(mem)
		if err != nil {
			if !errors.Is(err, ErrNotReady) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		capacity := uint64(r.Header().Capacity)
		for call := 0; call < 3; call++ {
			before := r.Tail()
			got, err := r.Drain(func(rec []byte) error {
				if len(rec) == 0 || len(rec) > MaxRecordSize {
					t.Fatalf("record of %d bytes", len(rec))
				}
				return nil
			})
			if r.Tail()-before > capacity || uint64(got) > capacity {
				t.Fatalf("one Drain read %d slots, %d records of a %d-slot ring", r.Tail()-before, got, capacity)
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) || r.Broken() == nil {
					t.Fatalf("drain error %v, broken %v", err, r.Broken())
				}
				if _, again := r.Drain(func([]byte) error { t.Fatal("read a broken ring"); return nil }); again == nil {
					t.Fatal("a broken ring drained again")
				}
				return
			}
		}
		if _, err := r.Counters(); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteControl(Control{Classes: ClassAll}); err != nil {
			t.Fatal(err)
		}
	})
}
