package ptx

import (
	"errors"
	"slices"
	"testing"
)

// addCorpusSeeds seeds a fuzzer with every item of the real PTX files, each
// as a small module of its own (whole files make the fuzzer crawl; the
// corpus round trip is TestCorpusRoundTrip's job). testdata/fuzz/<name>
// holds the hand-made seeds.
func addCorpusSeeds(f *testing.F) {
	for _, p := range corpusFiles(f) {
		m, err := Parse(readFile(f, p))
		if err != nil {
			f.Fatal(err)
		}
		for _, it := range m.Items {
			one := *m
			one.Items = []Item{it}
			if s := Write(&one); len(s) <= 4096 {
				f.Add(s)
			}
		}
	}
}

// FuzzLex: the lexer never panics, and its tokens are in source order with
// their text at their position.
func FuzzLex(f *testing.F) {
	addCorpusSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		toks, err := LexWithComments(src)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Pos.Line < 1 || pe.Pos.Col < 1 {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		last := Pos{1, 0}
		for _, tk := range toks {
			if tk.Pos.Line < last.Line || tk.Pos.Line == last.Line && tk.Pos.Col <= last.Col && tk.Kind != EOF {
				t.Fatalf("token %v at %s after %s", tk, tk.Pos, last)
			}
			if tk.Kind != EOF && tk.Text == "" {
				t.Fatalf("empty token at %s", tk.Pos)
			}
			last = tk.Pos
		}
	})
}

// FuzzParse: Parse never panics; whatever it accepts, Write prints as PTX
// that parses to an equal tree with the same tokens.
func FuzzParse(f *testing.F) {
	addCorpusSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		for _, fragment := range []bool{false, true} {
			if _, err := parse(src, fragment); err != nil {
				var pe *Error
				if !errors.As(err, &pe) {
					t.Fatalf("error without a position: %v", err)
				}
				continue
			}
			if _, err := RoundTrip(src, fragment); err != nil {
				t.Fatalf("accepted input does not round-trip: %v", err)
			}
		}
	})
}

// FuzzInstrument: instrumenting any accepted module never panics, and a
// successful result round-trips, with probe calls and with probe bodies
// inlined (testdata/golden/inline.frag: init, carried entry, helper call).
func FuzzInstrument(f *testing.F) {
	addCorpusSeeds(f)
	forms := []struct {
		frag string
		spec Spec
	}{
		{readFile(f, "testdata/golden/probes.frag"), Spec{Entry: []string{p0}, Exit: []string{p1}, Load: []string{p0}, Store: []string{p1}, Generic: true, Atomics: true}},
		{readFile(f, "testdata/golden/inline.frag"), inlineSpec},
		{readFile(f, "testdata/golden/inline.frag"), func() Spec { // sampled by launch, 1-D entries
			s := inlineSpec
			s.BlocksPerLaunch, s.Grid1D = 256, true
			return s
		}()},
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, form := range forms {
			m, err := Parse(src)
			if err != nil {
				return
			}
			fm, err := ParseFragment(form.frag)
			if err != nil {
				t.Fatal(err)
			}
			if Link(m, fm) != nil {
				continue
			}
			rep, err := Instrument(m, form.spec)
			if err != nil {
				continue
			}
			if _, err := RoundTrip(Write(m), false); err != nil {
				t.Fatalf("instrumented output does not round-trip (inline %v, 1-D entries %v): %v", form.spec.Inline, form.spec.Grid1D, err)
			}
			// each 1-D entry reported is in the output, right after its kernel
			names := m.KernelNames()
			for _, k := range rep.Kernels {
				if k.Grid1D == "" {
					continue
				}
				i := slices.Index(names, k.Name)
				if k.Grid1D != k.Name+Grid1DSuffix || i < 0 || i+1 >= len(names) || names[i+1] != k.Grid1D {
					t.Fatalf("1-D entry %q of %s: entries %v", k.Grid1D, k.Name, names)
				}
			}
		}
	})
}

func benchFile(b *testing.B) string { return readFile(b, "testdata/corpus/nvcc_kernels_debug.ptx") }

// BenchmarkParse, BenchmarkWrite and BenchmarkInstrument measure the
// one-time cost of patching a module, on the 60 KB -G corpus file.
func BenchmarkParse(b *testing.B) {
	src := benchFile(b)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	src := benchFile(b)
	m, err := Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Write(m)
	}
}

// BenchmarkInstrument is the whole patch: parse, link a fragment, instrument
// every kernel at entry, exits, loads and stores, write.
func BenchmarkInstrument(b *testing.B) { benchInstrument(b, false) }

// BenchmarkInstrumentInline is the same with the entry and exit probe
// bodies copied into the kernels (Spec.Inline, what the collector does).
func BenchmarkInstrumentInline(b *testing.B) { benchInstrument(b, true) }

func benchInstrument(b *testing.B, inline bool) {
	src := benchFile(b)
	frag := readFile(b, "testdata/probe_count.ptx")
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		m, err := Parse(src)
		if err != nil {
			b.Fatal(err)
		}
		fm, err := ParseFragment(frag)
		if err != nil {
			b.Fatal(err)
		}
		if err := Link(m, fm); err != nil {
			b.Fatal(err)
		}
		rep, err := Instrument(m, Spec{Entry: []string{"__gpuext_probe_0"}, Exit: []string{"__gpuext_probe_0"},
			Load: []string{"__gpuext_probe_0"}, Store: []string{"__gpuext_probe_0"}, Generic: true, Atomics: true, Inline: inline})
		if err != nil || len(rep.Kernels) != 11 || (inline && rep.Kernels[0].Inlined == 0) {
			b.Fatalf("%v, %d kernels", err, len(rep.Kernels))
		}
		Write(m)
	}
}
