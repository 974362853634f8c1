package faultpattern

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzClassify drives a Classifier with a stream decoded from data and
// checks at every Classify that the result is well formed, that Classify
// does not change the window, and that the ring holds exactly the last
// Window samples (a fresh Classifier given them answers the same).
//
// data is a sequence of 9-byte records, an op byte and a 64-bit value:
// op&3 selects an absolute address (0), a step of int16(value) pages from
// the previous address (1), the previous address again (2) or a Classify
// (3; the first 32 only); bit 2 of op marks a write; bit 3 makes TimeNs go
// back instead of forward; op 0xff resets. Input past 4096 records is
// ignored.
func FuzzClassify(f *testing.F) {
	seq := make([]byte, 0, 9*200)
	for i := range 200 {
		op := byte(1)
		if i%50 == 49 {
			op = 3
		}
		seq = append(seq, op)
		seq = binary.LittleEndian.AppendUint64(seq, 1)
	}
	f.Add(uint16(0), uint64(0), uint16(0), uint16(0), seq)
	f.Add(uint16(128), uint64(4096), uint16(16), uint16(8), seq)
	f.Add(uint16(100), uint64(65536+1), uint16(1), uint16(1), seq)
	f.Add(uint16(64), uint64(1), uint16(64), uint16(2), []byte{
		0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		8, 0, 0, 0, 0, 0, 0, 0, 0,
		3, 0, 0, 0, 0, 0, 0, 0, 0,
	})
	f.Fuzz(fuzzClassify)
}

func fuzzClassify(t *testing.T, window uint16, pageSize uint64, minSamples, reuse uint16, data []byte) {
	{
		opts := Options{
			Window:        int(window % 2048),
			PageSize:      pageSize,
			MinSamples:    int(minSamples),
			ReuseDistance: int(reuse),
		}
		c := New(opts)
		o := c.Options()
		if o.Window <= 0 || o.PageSize == 0 || o.PageSize&(o.PageSize-1) != 0 || o.PageSize > MaxPageSize ||
			o.MinSamples <= 0 || o.MinSamples > o.Window || o.ReuseDistance <= 0 {
			t.Fatalf("options %+v from %+v", o, opts)
		}
		// Bound the work per input: a check replays the whole window.
		data = data[:min(len(data), 9*4096)]
		checks := 0
		var hist []Sample // everything added since the last reset
		var addr, now uint64
		for len(data) >= 9 {
			op, v := data[0], binary.LittleEndian.Uint64(data[1:9])
			data = data[9:]
			if op == 0xff {
				c.Reset()
				hist = hist[:0]
				continue
			}
			switch op & 3 {
			case 0:
				addr = v
			case 1:
				addr += uint64(int64(int16(v))) * o.PageSize
			case 3:
				if checks < 32 {
					check(t, c, hist)
					checks++
				}
				continue
			}
			if op&8 != 0 {
				now -= v >> 40
			} else {
				now += v >> 40
			}
			s := Sample{Addr: addr, Write: op&4 != 0, TimeNs: now}
			c.Add(s)
			hist = append(hist, s)
		}
		check(t, c, hist)
	}
}

func check(t *testing.T, c *Classifier, hist []Sample) {
	t.Helper()
	o := c.Options()
	r := c.Classify()
	if want := min(len(hist), o.Window); r.Samples != want {
		t.Fatalf("Samples %d, want %d", r.Samples, want)
	}
	if math.IsNaN(r.Confidence) || r.Confidence < 0 || r.Confidence > 1 {
		t.Fatalf("Confidence %v", r.Confidence)
	}
	if math.IsNaN(r.WriteFraction) || r.WriteFraction < 0 || r.WriteFraction > 1 {
		t.Fatalf("WriteFraction %v", r.WriteFraction)
	}
	if r.Pattern > HotSet {
		t.Fatalf("Pattern %v", r.Pattern)
	}
	if r.Samples < o.MinSamples && r.Pattern != Unknown {
		t.Fatalf("%v from %d samples, MinSamples %d", r.Pattern, r.Samples, o.MinSamples)
	}
	ps := int64(o.PageSize)
	switch r.Pattern {
	case Unknown:
		if r.Confidence != 0 {
			t.Fatalf("Unknown with confidence %v", r.Confidence)
		}
	case Sequential:
		if r.Stride != ps && r.Stride != -ps {
			t.Fatalf("Sequential stride %d, page size %d", r.Stride, ps)
		}
	case Strided:
		if r.Stride == 0 || r.Stride%ps != 0 || r.Stride == ps || r.Stride == -ps {
			t.Fatalf("Strided stride %d, page size %d", r.Stride, ps)
		}
	}
	if (r.Pattern == Sequential || r.Pattern == Strided) != (r.Stride != 0) {
		t.Fatalf("%v with stride %d", r.Pattern, r.Stride)
	}
	if r.Pattern == HotSet {
		if r.WorkingSetPages < 1 || r.WorkingSetPages > r.Samples {
			t.Fatalf("HotSet of %d pages in %d samples", r.WorkingSetPages, r.Samples)
		}
	} else if r.WorkingSetPages != 0 {
		t.Fatalf("%v with WorkingSetPages %d", r.Pattern, r.WorkingSetPages)
	}
	if again := c.Classify(); again != r {
		t.Fatalf("Classify changed: %+v then %+v", r, again)
	}
	fresh := New(o)
	for _, s := range hist[len(hist)-r.Samples:] {
		fresh.Add(s)
	}
	if got := fresh.Classify(); got != r {
		t.Fatalf("ring gives %+v, the last %d samples give %+v", r, r.Samples, got)
	}
}
