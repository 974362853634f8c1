//go:build cgo

package nvml

import "testing"

func TestParseBusID(t *testing.T) {
	want := [4]uint64{0, 0x17, 0, 0}
	for _, s := range []string{"00000000:17:00.0", "0000:17:00.0", "17:00.0", "00000000:17:00.0"} {
		if got, ok := parseBusID(s); !ok || got != want {
			t.Errorf("parseBusID(%q) = %v, %v", s, got, ok)
		}
	}
	if got, ok := parseBusID("0001:2A:1f.7"); !ok || got != [4]uint64{1, 0x2a, 0x1f, 7} {
		t.Errorf("hex parts: %v %v", got, ok)
	}
	for _, s := range []string{"", "GPU-1", "17:00", "zz:00.0", "1:2:3:4.5"} {
		if _, ok := parseBusID(s); ok {
			t.Errorf("parseBusID(%q) accepted", s)
		}
	}
}

func TestIntegrator(t *testing.T) {
	var in integrator
	in.add(100, t0)
	in.add(300, t0.Add(2e9)) // (100+300)/2 × 2 s
	in.add(0, t0.Add(2e9))   // no time passed: nothing added
	if in.total != 400 {
		t.Errorf("total = %v, want 400", in.total)
	}
}
