package ptx

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestJITFragments checks the interface with devrt/jit on its committed
// golden fragments: each parses as a fragment and round-trips, links into
// every corpus module, and its probes (__gpuext_probe_0 at entry,
// __gpuext_probe_1 at exits when there is one, carrying the entry's value
// when the entry returns one) instrument every kernel.
func TestJITFragments(t *testing.T) {
	files, err := filepath.Glob("../jit/testdata/golden/*.ptx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no devrt/jit golden fragments: %v", err)
	}
	corpus := corpusFiles(t)
	for _, f := range files {
		src := readFile(t, f)
		if _, err := RoundTrip(src, true); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		spec := Spec{Entry: []string{"__gpuext_probe_0"}}
		switch {
		case strings.Contains(src, "__gx_ret) __gpuext_probe_0("): // carried to the exit
			spec.Probes = []Probe{{Func: "__gpuext_probe_1", Kind: SiteExit, Carry: "__gpuext_probe_0"}}
		case strings.Contains(src, "__gpuext_probe_1("):
			spec.Exit = []string{"__gpuext_probe_1"}
		}
		for _, c := range corpus {
			m, err := Parse(readFile(t, c))
			if err != nil {
				t.Fatal(err)
			}
			kernels := len(m.KernelNames())
			frag, _ := ParseFragment(src)
			if err := Link(m, frag); err != nil {
				t.Errorf("%s into %s: %v", filepath.Base(f), c, err)
				continue
			}
			rep, err := Instrument(m, spec)
			if err != nil || len(rep.Kernels) != kernels || len(rep.Refused) != 0 {
				t.Errorf("%s into %s: %d of %d kernels, refused %v, err %v", filepath.Base(f), c, len(rep.Kernels), kernels, rep.Refused, err)
				continue
			}
			if _, err := RoundTrip(Write(m), false); err != nil {
				t.Errorf("%s into %s: %v", filepath.Base(f), c, err)
			}
		}
	}
}
