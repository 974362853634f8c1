package ptx

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// guardsForm makes Instrument use the guards form of block sampling (a
// branch around every site) for the rest of the test, as it does for
// kernels over MaxSampleCopy instructions.
func guardsForm(t *testing.T) {
	old := MaxSampleCopy
	MaxSampleCopy = -1
	t.Cleanup(func() { MaxSampleCopy = old })
}

// TestInstrumentBlockSampleGolden pins the guards form of guarded_exits
// sampled: the block's sample predicate computed first, then a branch
// around the entry site and around each exit site (before its guarded ret
// or exit, which every block still runs).
func TestInstrumentBlockSampleGolden(t *testing.T) {
	guardsForm(t)
	m := linked(t, readFile(t, "testdata/golden/guarded_exits.in.ptx"))
	rep, err := Instrument(m, Spec{Entry: []string{p0}, Exit: []string{p1}, BlockSample: 16})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 1 || len(rep.Refused) != 0 {
		t.Fatalf("kernels %+v, refused %v", rep.Kernels, rep.Refused)
	}
	k := rep.Kernels[0]
	if got := siteSummary(k.Sites); got != "0:entry@8 1:exit@20 2:exit@23 3:exit@28 4:exit@33" {
		t.Errorf("sites %q", got)
	}
	if k.RegsAdded[".b64"] != 1 || k.RegsAdded[".pred"] != 1 || k.RegsAdded[".b32"] != 3 || len(k.RegsAdded) != 3 {
		t.Errorf("regs added %v", k.RegsAdded)
	}
	checkGolden(t, m, "guarded_exits_sampled.out.ptx")
}

// TestInstrumentBlockSampleCopyGolden pins the copy form of guarded_exits
// sampled: the sample predicate, the branch of blocks not sampled to
// $GXS_ORIG, the instrumented code with no branch around its sites, then
// the original code with its labels renamed.
func TestInstrumentBlockSampleCopyGolden(t *testing.T) {
	m := linked(t, readFile(t, "testdata/golden/guarded_exits.in.ptx"))
	rep, err := Instrument(m, Spec{Entry: []string{p0}, Exit: []string{p1}, BlockSample: 16})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 1 || !rep.Kernels[0].SampleCopy {
		t.Fatalf("report %+v", rep)
	}
	checkGolden(t, m, "guarded_exits_sampled_copy.out.ptx")
}

// TestInstrumentBlockSampleForms: in the guards form with a block init
// and with exit probes only; in the copy form; and with 1 in 1 (no
// sampling code at all).
func TestInstrumentBlockSampleForms(t *testing.T) {
	const init = ".func gx_init()\n{\nret;\n}\n"
	src := testHeader + init + `.visible .entry k(.param .u64 a)
{
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [a];
	ret;
}
`
	pred := []string{
		"mov.u32 %gx_r0, %ctaid.z;", "mov.u32 %gx_r1, %nctaid.y;", "mov.u32 %gx_r2, %ctaid.y;",
		"mad.lo.u32 %gx_r0, %gx_r0, %gx_r1, %gx_r2;", "mov.u32 %gx_r1, %nctaid.x;", "mov.u32 %gx_r2, %ctaid.x;",
		"mad.lo.u32 %gx_r0, %gx_r0, %gx_r1, %gx_r2;", "mul.lo.u32 %gx_r0, %gx_r0, 0x9E3779B9;",
	}
	with := func(tail ...string) []string { return append(append([]string(nil), pred...), tail...) }
	kid := func(typ string) string { return "st.param." + typ + " [__gpuext_arg2], 0xAF63E64C8601FD8A;" }
	const call0 = "call __gpuext_probe_0, (__gpuext_arg0, __gpuext_arg1, __gpuext_arg2);"
	const call1 = "call __gpuext_probe_1, (__gpuext_arg0, __gpuext_arg1, __gpuext_arg2);"
	for _, tt := range []struct {
		name string
		spec Spec
		want []string // the kernel's statements, its declarations left out
	}{
		{"init, entry and exit", Spec{Entry: []string{p0}, Exit: []string{p1}, BlockInit: "gx_init", BlockSample: 4}, with(
			"setp.lt.u32 %gx_s, %gx_r0, 0x40000000;", "@!%gx_s bra.uni $GXS_SKIP;", "call gx_init;", "bar.sync 0;",
			"{", "st.param.u64 [__gpuext_arg0], 0x0000000000000001;", "st.param.u64 [__gpuext_arg1], 0;", kid("u64"), call0, "}",
			"$GXS_SKIP:", "ld.param.u64 %rd1, [a];",
			"@!%gx_s bra.uni $GXS_SKIP_0;", "{", "st.param.b64 [__gpuext_arg0], 0x0000000100000002;", "st.param.u64 [__gpuext_arg1], 0;", kid("b64"), call1, "}",
			"$GXS_SKIP_0:", "ret;")},
		{"exit only, 1 in 3", Spec{Exit: []string{p1}, BlockSample: 3}, with(
			"setp.lt.u32 %gx_s, %gx_r0, 0x55555556;", "ld.param.u64 %rd1, [a];",
			"@!%gx_s bra.uni $GXS_SKIP;", "{", "st.param.b64 [__gpuext_arg0], 0x0000000000000002;", "st.param.u64 [__gpuext_arg1], 0;", kid("b64"), call1, "}",
			"$GXS_SKIP:", "ret;")},
		{"copy form", Spec{Exit: []string{p1}, BlockSample: 3}, with(
			"setp.lt.u32 %gx_s, %gx_r0, 0x55555556;", "@!%gx_s bra.uni $GXS_ORIG;", "ld.param.u64 %rd1, [a];",
			"{", "st.param.b64 [__gpuext_arg0], 0x0000000000000002;", "st.param.u64 [__gpuext_arg1], 0;", kid("b64"), call1, "}",
			"ret;", "$GXS_ORIG:", "ld.param.u64 %rd1, [a];", "ret;")},
		{"by launch", Spec{Exit: []string{p1}, BlocksPerLaunch: 256}, with(
			"mov.u32 %gx_r1, %nctaid.y;", "mov.u32 %gx_r2, %nctaid.z;", "mul.lo.u32 %gx_r1, %gx_r1, %gx_r2;",
			"mov.u32 %gx_r2, %nctaid.x;", "mul.hi.u32 %gx_r3, %gx_r2, %gx_r1;", "mad.lo.u32 %gx_r1, %gx_r2, %gx_r1, 0xFFFFFFFF;",
			"set.ne.u32.u32 %gx_r3, %gx_r3, 0;", "or.b32 %gx_r1, %gx_r1, %gx_r3;", "clz.b32 %gx_r1, %gx_r1;",
			"add.u32 %gx_r1, %gx_r1, 8;", "max.u32 %gx_r1, %gx_r1, 16;",
			"shr.b32 %gx_r0, %gx_r0, %gx_r1;", "setp.eq.u32 %gx_s, %gx_r0, 0;", "ld.param.u64 %rd1, [a];",
			"@!%gx_s bra.uni $GXS_SKIP;", "{", "st.param.b64 [__gpuext_arg0], 0x0000000000000002;", "st.param.u64 [__gpuext_arg1], 0;", kid("b64"), call1, "}",
			"$GXS_SKIP:", "ret;")},
		{"1 in 1", Spec{Exit: []string{p1}, BlockSample: 1}, []string{
			"ld.param.u64 %rd1, [a];", "{", "st.param.b64 [__gpuext_arg0], 0x0000000000000002;", "st.param.u64 [__gpuext_arg1], 0;", kid("b64"), call1, "}", "ret;"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "copy form" {
				guardsForm(t)
			}
			m, rep := instrumentOne(t, src, tt.spec)
			if got, want := rep.Kernels[0].SampleCopy, tt.name == "copy form"; got != want {
				t.Errorf("SampleCopy %v, want %v", got, want)
			}
			got := kernelCode(t, m, "k")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("kernel\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if _, err := RoundTrip(Write(m), false); err != nil {
				t.Fatalf("does not round-trip: %v", err)
			}
		})
	}
}

// TestInstrumentGrid1D: with Spec.Grid1D a kernel sampled by launch in
// the copy form gets a second entry, <kernel>__gx1d, right after it: the
// same header, sites and copy, its test the 1-D grid's; none in the
// guards form, at a fixed rate, without Grid1D, over MaxGrid1D
// instructions or when the name is taken.
func TestInstrumentGrid1D(t *testing.T) {
	const kernel = `.visible .entry k(.param .u64 a, .param .u32 n)
.maxntid 256, 1, 1
{
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [a];
	ret;
}
`
	const other = ".visible .entry k__gx1d(.param .u64 a)\n{\n\tret;\n}\n"
	const tail = ".visible .entry after()\n{\n\tret;\n}\n"
	test1 := []string{
		"mov.u32 %gx_r0, %ctaid.x;", "mul.lo.u32 %gx_r0, %gx_r0, 0x9E3779B9;", "mov.u32 %gx_r1, %nctaid.x;",
		"sub.u32 %gx_r1, %gx_r1, 1;", "clz.b32 %gx_r1, %gx_r1;", "add.u32 %gx_r1, %gx_r1, 8;", "max.u32 %gx_r1, %gx_r1, 16;",
		"shr.b32 %gx_r0, %gx_r0, %gx_r1;", "setp.eq.u32 %gx_s, %gx_r0, 0;",
	}
	for _, tt := range []struct {
		name   string
		src    string
		spec   Spec
		guards bool
		twin   bool
	}{
		{"by launch, copy form", kernel + tail, Spec{Exit: []string{p1}, BlocksPerLaunch: 256, Grid1D: true, Kernels: []string{"k"}}, false, true},
		{"entry and exit, 1 a launch", kernel, Spec{Entry: []string{p0}, Exit: []string{p1}, BlocksPerLaunch: 1, Grid1D: true}, false, true},
		{"without Grid1D", kernel, Spec{Exit: []string{p1}, BlocksPerLaunch: 256}, false, false},
		{"guards form", kernel, Spec{Exit: []string{p1}, BlocksPerLaunch: 256, Grid1D: true}, true, false},
		{"fixed rate", kernel, Spec{Exit: []string{p1}, BlockSample: 16, Grid1D: true}, false, false},
		{"every block", kernel, Spec{Exit: []string{p1}, Grid1D: true}, false, false},
		{"name taken", kernel + other, Spec{Exit: []string{p1}, BlocksPerLaunch: 256, Grid1D: true, Kernels: []string{"k"}}, false, false},
		{"over MaxGrid1D", kernel, Spec{Exit: []string{p1}, BlocksPerLaunch: 256, Grid1D: true}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.guards {
				guardsForm(t)
			}
			if tt.name == "over MaxGrid1D" { // k has 2 instructions
				old := MaxGrid1D
				MaxGrid1D = 1
				t.Cleanup(func() { MaxGrid1D = old })
			}
			m, rep := instrumentOne(t, testHeader+tt.src, tt.spec)
			want := ""
			if tt.twin {
				want = "k" + Grid1DSuffix
			}
			if got := rep.Kernels[0].Grid1D; got != want {
				t.Fatalf("Grid1D %q, want %q", got, want)
			}
			var entries []string
			for _, it := range m.Items {
				if f, ok := it.(*Function); ok && f.Entry {
					entries = append(entries, f.Name)
				}
			}
			wantEntries := map[string][]string{
				"by launch, copy form": {"k", "k__gx1d", "after"}, "name taken": {"k", "k__gx1d"},
			}[tt.name]
			if wantEntries == nil {
				wantEntries = []string{"k"}
				if tt.twin {
					wantEntries = append(wantEntries, "k__gx1d")
				}
			}
			if !slices.Equal(entries, wantEntries) {
				t.Fatalf("entries %v, want %v", entries, wantEntries)
			}
			if _, err := RoundTrip(Write(m), false); err != nil {
				t.Fatalf("does not round-trip: %v", err)
			}
			if !tt.twin {
				return
			}
			it, _ := m.Lookup("k__gx1d")
			tw := it.(*Function)
			// the header of the source's kernel, but the name
			src, err := Parse(testHeader + tt.src)
			if err != nil {
				t.Fatal(err)
			}
			it, _ = src.Lookup("k")
			hk, htw := *it.(*Function), *tw
			hk.Body, htw.Body, hk.Name = nil, nil, "k__gx1d"
			if a, b := Write(&Module{Version: m.Version, Target: m.Target, AddressSize: 64, Items: []Item{&hk}}),
				Write(&Module{Version: m.Version, Target: m.Target, AddressSize: 64, Items: []Item{&htw}}); a != b || !strings.Contains(b, ".maxntid 256, 1, 1") {
				t.Fatalf("header\n%s\nwant\n%s", b, a)
			}
			// the code but the test: the kernel's, then its sampling
			// test replaced by the 1-D grid's
			got, gen := kernelCode(t, m, "k__gx1d"), kernelCode(t, m, "k")
			at := slices.Index(gen, "setp.eq.u32 %gx_s, %gx_r0, 0;")
			if at < 0 || gen[0] != "mov.u32 %gx_r0, %ctaid.z;" {
				t.Fatalf("kernel's test not found:\n%s", strings.Join(gen, "\n"))
			}
			test := slices.Clone(test1)
			test[5] = fmt.Sprintf("add.u32 %%gx_r1, %%gx_r1, %d;", bits.TrailingZeros32(tt.spec.BlocksPerLaunch))
			wantCode := append(test, gen[at+1:]...)
			if strings.Join(got, "\n") != strings.Join(wantCode, "\n") {
				t.Fatalf("1-D entry\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantCode, "\n"))
			}
		})
	}
}

// instrumentOne instruments src, linked with the golden probes, with spec
// and fails t unless exactly one kernel was instrumented.
func instrumentOne(t *testing.T, src string, spec Spec) (*Module, Report) {
	t.Helper()
	m := linked(t, src)
	rep, err := Instrument(m, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 1 {
		t.Fatalf("kernels %+v, refused %v", rep.Kernels, rep.Refused)
	}
	return m, rep
}

// kernelCode is the statements of kernel name, one per line, spaces
// normalised; declarations (.reg, .param) left out.
func kernelCode(t *testing.T, m *Module, name string) []string {
	t.Helper()
	it, _ := m.Lookup(name)
	f, ok := it.(*Function)
	if !ok {
		t.Fatalf("no kernel %s", name)
	}
	var out []string
	for _, line := range strings.Split(WriteStmt(f.Body), "\n") {
		l := strings.Join(strings.Fields(line), " ")
		if l == "" || strings.HasPrefix(l, ".reg") || strings.HasPrefix(l, ".param") {
			continue
		}
		out = append(out, l)
	}
	if len(out) >= 2 && out[0] == "{" && out[len(out)-1] == "}" {
		out = out[1 : len(out)-1]
	}
	return out
}

// TestInstrumentBlockSampleInline: inlineSpec's init, carried entry
// probe, exits and load site, sampled: the inlined copies keep their
// labels, the sampling branches get theirs, all distinct (the kernel's own
// label named like the first sampling label is left alone), and every
// site, the called load probe's included, is branched around.
func TestInstrumentBlockSampleInline(t *testing.T) {
	guardsForm(t)
	src := strings.Replace(readFile(t, "testdata/golden/inline.in.ptx"), "$done_i1:\n", "$done_i1:\n$GXS_SKIP:\n", 1)
	m := linkedWith(t, src, "testdata/golden/inline.frag")
	spec := inlineSpec
	spec.BlockSample = 8
	rep, err := Instrument(m, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 1 || len(rep.Refused) != 0 || rep.Kernels[0].Inlined != 4 {
		t.Fatalf("report %+v", rep)
	}
	it, _ := m.Lookup("k")
	f := it.(*Function)
	seen := map[string]bool{}
	for _, l := range f.Labels() {
		if seen[l] {
			t.Errorf("label %s twice", l)
		}
		seen[l] = true
	}
	branches := 0
	for _, in := range f.Instructions() {
		if in.Opcode == "bra" && in.Guard != nil && in.Guard.Reg == sampleReg {
			branches++
		}
	}
	if branches != 4 { // the entry, two exits, the load
		t.Errorf("%d sampling branches, want 4", branches)
	}
	checkGolden(t, m, "inline_sampled.out.ptx")
}

// TestBlockSampleCodeMatchesBlockSampled runs the inserted PTX (its few
// instruction forms, interpreted here) on random grids and blocks and
// checks it decides as BlockSampled does.
func TestBlockSampleCodeMatchesBlockSampled(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []uint32{2, 3, 16, 100, MaxBlockSample} {
		code := sampleCode(Spec{BlockSample: n})
		for range 2000 {
			sreg := map[string]uint32{
				"%nctaid.x": 1 + rng.Uint32N(1<<31-1), "%nctaid.y": 1 + rng.Uint32N(65535), "%nctaid.z": 1 + rng.Uint32N(65535),
			}
			if rng.IntN(2) == 0 { // small grids too
				sreg["%nctaid.x"], sreg["%nctaid.y"], sreg["%nctaid.z"] = 1+rng.Uint32N(300), 1+rng.Uint32N(4), 1+rng.Uint32N(4)
			}
			sreg["%ctaid.x"], sreg["%ctaid.y"], sreg["%ctaid.z"] = rng.Uint32N(sreg["%nctaid.x"]), rng.Uint32N(sreg["%nctaid.y"]), rng.Uint32N(sreg["%nctaid.z"])
			linear := sreg["%ctaid.x"] + sreg["%nctaid.x"]*(sreg["%ctaid.y"]+sreg["%nctaid.y"]*sreg["%ctaid.z"])
			got, _ := runSampleCode(t, code, sreg)
			if want := BlockSampled(linear, n); got != want {
				t.Fatalf("1 in %d, block %v: code says %v, BlockSampled %v", n, sreg, got, want)
			}
		}
	}
}

// TestLaunchSampleCodeMatchesLaunchSampled runs the code of sampling by
// launch on random grids (their blocks past 2^32 too) and blocks, and on
// grids of exactly perLaunch * 2^s blocks and one more, and checks it
// decides as LaunchSampled does.
func TestLaunchSampleCodeMatchesLaunchSampled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, per := range []uint32{1, 2, 256, 1 << 12, MaxBlocksPerLaunch} {
		code := sampleCode(Spec{BlocksPerLaunch: per})
		check := func(sreg map[string]uint32) {
			sreg["%ctaid.x"], sreg["%ctaid.y"], sreg["%ctaid.z"] = rng.Uint32N(sreg["%nctaid.x"]), rng.Uint32N(sreg["%nctaid.y"]), rng.Uint32N(sreg["%nctaid.z"])
			linear := sreg["%ctaid.x"] + sreg["%nctaid.x"]*(sreg["%ctaid.y"]+sreg["%nctaid.y"]*sreg["%ctaid.z"])
			blocks := uint64(sreg["%nctaid.x"]) * uint64(sreg["%nctaid.y"]) * uint64(sreg["%nctaid.z"])
			got, regs := runSampleCode(t, code, sreg)
			if want := LaunchSampled(linear, blocks, per); got != want {
				t.Fatalf("%d per launch, block %v: code says %v, LaunchSampled %v", per, sreg, got, want)
			}
			// the shift itself, which a random block rarely tells apart
			if got, want := min(regs["%gx_r1"], 32), uint64(32-LaunchShift(blocks, per)); got != want {
				t.Fatalf("%d per launch, grid %v: shift %d, want %d", per, sreg, got, want)
			}
		}
		for range 2000 {
			sreg := map[string]uint32{
				"%nctaid.x": 1 + rng.Uint32N(1<<31-1), "%nctaid.y": 1 + rng.Uint32N(65535), "%nctaid.z": 1 + rng.Uint32N(65535),
			}
			if rng.IntN(2) == 0 {
				sreg["%nctaid.x"], sreg["%nctaid.y"], sreg["%nctaid.z"] = 1+rng.Uint32N(5000), 1+rng.Uint32N(4), 1+rng.Uint32N(4)
			}
			check(sreg)
		}
		for s := range uint32(20) {
			if b := uint64(per) << s; b < 1<<31 {
				for _, x := range []uint32{uint32(b), uint32(b) + 1} {
					for range 20 {
						check(map[string]uint32{"%nctaid.x": x, "%nctaid.y": 1, "%nctaid.z": 1})
					}
				}
			}
		}
		// The 1-D grid's entry (Spec.Grid1D): the same blocks and shift
		// in any 1-D grid, from 1 block to 2^32 - 1, the boundaries of
		// every shift included, without reading %ctaid.y, .z or
		// %nctaid.y, .z (left out of its registers, read as 0 they would
		// fail it).
		code1 := sampleCode(Spec{BlocksPerLaunch: per, grid1D: true})
		check1 := func(nx uint32) {
			x := rng.Uint32N(nx)
			got, regs := runSampleCode(t, code1, map[string]uint32{"%nctaid.x": nx, "%ctaid.x": x})
			if want := LaunchSampled(x, uint64(nx), per); got != want {
				t.Fatalf("1-D, %d per launch, block %d of %d: code says %v, LaunchSampled %v", per, x, nx, got, want)
			}
			if got, want := min(regs["%gx_r1"], 32), uint64(32-LaunchShift(uint64(nx), per)); got != want {
				t.Fatalf("1-D, %d per launch, %d blocks: shift %d, want %d", per, nx, got, want)
			}
		}
		for _, nx := range []uint32{1, 2, 3, 1<<32 - 1, 1 << 31, 1<<31 + 1} {
			check1(nx)
		}
		for s := range uint32(33) {
			if b := uint64(per) << s; b < 1<<32 {
				for _, nx := range []uint32{uint32(b) - 1, uint32(b), uint32(b) + 1} {
					if nx > 0 {
						check1(nx)
					}
				}
			}
		}
		for range 2000 {
			check1(1 + rng.Uint32N(1<<32-1))
		}
	}
}

// TestLaunchShift: the rate of a launch by its blocks, exact at the
// boundaries; a power-of-two BlockSample and the launch's shift pick the
// same blocks; SampleWeight.
func TestLaunchShift(t *testing.T) {
	for _, tt := range []struct {
		blocks uint64
		per    uint32
		want   uint32
	}{
		{1, 256, 0}, {256, 256, 0}, {257, 256, 1}, {512, 256, 1}, {513, 256, 2}, {65536, 256, 8},
		{16384, 256, 6}, {4096, 256, 4}, {132, 256, 0}, {1 << 40, 256, MaxLaunchShift}, {1 << 24, 256, 16},
		{1<<24 + 1, 256, MaxLaunchShift}, {5, 1, 3}, {100, 0, 0}, {1 << 16, MaxBlocksPerLaunch, 0},
		{1<<16 + 1, MaxBlocksPerLaunch, 1}, {1 << 40, MaxBlocksPerLaunch, MaxLaunchShift}, {1<<32 + 1, 1 << 15, MaxLaunchShift},
	} {
		if got := LaunchShift(tt.blocks, tt.per); got != tt.want {
			t.Errorf("LaunchShift(%d, %d) = %d, want %d", tt.blocks, tt.per, got, tt.want)
		}
	}
	for s := range uint32(MaxLaunchShift + 1) {
		blocks := uint64(256) << s
		for i := range uint32(1 << 16) {
			if LaunchSampled(i, blocks, 256) != BlockSampled(i, 1<<s) {
				t.Fatalf("shift %d, block %d: LaunchSampled and BlockSampled differ", s, i)
			}
		}
		if w := SampleWeight(0, 256, blocks); w != 1<<s {
			t.Errorf("weight of %d blocks at 256 a launch: %d", blocks, w)
		}
	}
	for i := range uint32(4096) { // Sampled: the one or the other
		if Sampled(i, 16, 0, 4096) != BlockSampled(i, 16) || Sampled(i, 0, 256, 4096) != LaunchSampled(i, 4096, 256) {
			t.Fatalf("block %d: Sampled differs", i)
		}
	}
	for _, tt := range []struct{ n, per, want uint32 }{{0, 0, 1}, {1, 0, 1}, {7, 0, 7}, {0, 256, 4}} {
		if w := SampleWeight(tt.n, tt.per, 1024); w != tt.want {
			t.Errorf("SampleWeight(%d, %d, 1024) = %d, want %d", tt.n, tt.per, w, tt.want)
		}
	}
}

// runSampleCode interprets sampleCode's instructions: the predicate it
// leaves, and its registers.
func runSampleCode(t *testing.T, code []Stmt, sreg map[string]uint32) (bool, map[string]uint64) {
	t.Helper()
	regs := map[string]uint64{}
	val := func(e Expr) uint64 {
		switch e := e.(type) {
		case *Name:
			if v, ok := sreg[e.Text]; ok {
				return uint64(v)
			}
			return regs[e.Text]
		case *IntLit:
			v, ok := ParseInt(e.Text)
			if !ok {
				t.Fatalf("literal %s", e.Text)
			}
			return uint64(v)
		}
		t.Fatalf("operand %T", e)
		return 0
	}
	u32 := func(e Expr) uint32 { return uint32(val(e)) }
	var pred *bool
	for _, s := range code {
		in := s.(*Instruction)
		op := in.Operands
		d := op[0].(*Name).Text
		switch in.Opcode + strings.Join(in.Modifiers, "") {
		case "mov.u32":
			regs[d] = uint64(u32(op[1]))
		case "mad.lo.u32":
			regs[d] = uint64(u32(op[1])*u32(op[2]) + u32(op[3]))
		case "mul.lo.u32":
			regs[d] = uint64(u32(op[1]) * u32(op[2]))
		case "mul.hi.u32":
			regs[d] = uint64(u32(op[1])) * uint64(u32(op[2])) >> 32
		case "set.ne.u32.u32":
			var v uint64
			if u32(op[1]) != u32(op[2]) {
				v = 0xFFFFFFFF
			}
			regs[d] = v
		case "or.b32":
			regs[d] = uint64(u32(op[1]) | u32(op[2]))
		case "clz.b32":
			regs[d] = uint64(bits.LeadingZeros32(u32(op[1])))
		case "add.u32":
			regs[d] = uint64(u32(op[1]) + u32(op[2]))
		case "sub.u32":
			regs[d] = uint64(u32(op[1]) - u32(op[2]))
		case "max.u32":
			regs[d] = uint64(max(u32(op[1]), u32(op[2])))
		case "shr.b32": // PTX clamps the shift at 32
			regs[d] = uint64(u32(op[1]) >> min(u32(op[2]), 32))
		case "setp.lt.u32":
			b := u32(op[1]) < u32(op[2])
			pred = &b
		case "setp.eq.u32":
			b := u32(op[1]) == u32(op[2])
			pred = &b
		default:
			t.Fatalf("unexpected %s", WriteStmt(in))
		}
	}
	if pred == nil {
		t.Fatal("no predicate set")
	}
	return *pred, regs
}

// TestBlockSampled: the share of blocks sampled is 1/n to within 1%, block
// 0 always is, no gap between sampled blocks exceeds 3n, and with blocks
// dealt round-robin to 132 SMs (an H100's), every SM gets sampled blocks
// within 4n waves, which i % n == 0 would not give (gcd(16, 132) = 4: a
// quarter of the SMs).
func TestBlockSampled(t *testing.T) {
	for _, n := range []uint32{1, 2, 3, 7, 16, 32, 100, 1000} {
		t.Run(strconv.Itoa(int(n)), func(t *testing.T) {
			const blocks = 1 << 20
			count, last, maxGap := 0, -1, 0
			for i := range uint32(blocks) {
				if BlockSampled(i, n) {
					count++
					maxGap = max(maxGap, int(i)-last)
					last = int(i)
				}
			}
			if !BlockSampled(0, n) {
				t.Error("block 0 not sampled")
			}
			want := float64(blocks) / float64(n)
			if d := float64(count)/want - 1; d > 0.01 || d < -0.01 {
				t.Errorf("%d sampled, want %.0f", count, want)
			}
			if maxGap > 3*int(n) {
				t.Errorf("gap of %d blocks", maxGap)
			}
			const sms = 132
			covered := map[uint32]bool{}
			for i := range uint32(sms * 4 * n) {
				if BlockSampled(i, n) {
					covered[i%sms] = true
				}
			}
			if n <= 32 && len(covered) != sms {
				t.Errorf("%d of %d SMs get sampled blocks", len(covered), sms)
			}
		})
	}
}

func TestInstrumentBlockSampleLimit(t *testing.T) {
	for _, tt := range []struct {
		spec Spec
		err  string
	}{
		{Spec{BlockSample: MaxBlockSample + 1}, "ptx: instrument: block sample 1 in 65537: at most 1 in 65536"},
		{Spec{BlocksPerLaunch: 100}, "ptx: instrument: blocks per launch 100: want a power of two up to 65536"},
		{Spec{BlocksPerLaunch: 1 << 17}, "ptx: instrument: blocks per launch 131072: want a power of two up to 65536"},
		{Spec{BlockSample: 4, BlocksPerLaunch: 256}, "ptx: instrument: block sample 1 in 4 and 256 blocks per launch: one or the other"},
	} {
		m := linked(t, testHeader+".visible .entry k()\n{\nret;\n}\n")
		tt.spec.Exit = []string{p0}
		_, err := Instrument(m, tt.spec)
		if err == nil || err.Error() != tt.err {
			t.Errorf("%+v: err %v, want %s", tt.spec, err, tt.err)
		}
	}
}

// TestBlockSampleCopyIsTheOriginal: in the copy form, what follows
// $GXS_ORIG in every kernel of every corpus file is the kernel's original
// code, statement for statement, labels renamed <label>_gxo and the
// function-scope declarations not repeated; the module round-trips, and
// each label is defined once.
func TestBlockSampleCopyIsTheOriginal(t *testing.T) {
	decl := func(l string) bool {
		for _, p := range []string{".shared", ".local", ".global", ".const", ".pragma"} {
			if strings.HasPrefix(l, p) {
				return true
			}
		}
		return false
	}
	code := func(m *Module, k string) []string {
		var out []string
		for _, l := range kernelCode(t, m, k) {
			if !decl(l) {
				out = append(out, l)
			}
		}
		return out
	}
	kernels := 0
	for _, f := range corpusFiles(t) {
		src := readFile(t, f)
		m := linked(t, src)
		orig, _ := Parse(src)
		rep, err := Instrument(m, Spec{Entry: []string{p0}, Exit: []string{p1}, Load: []string{p0}, BlockSample: 16})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := RoundTrip(Write(m), false); err != nil {
			t.Fatalf("%s: instrumented output: %v", f, err)
		}
		for _, k := range rep.Kernels {
			if !k.SampleCopy {
				t.Errorf("%s %s: guards form", f, k.Name)
				continue
			}
			kernels++
			got := code(m, k.Name)
			at := slices.Index(got, "$GXS_ORIG:")
			if at < 0 {
				t.Fatalf("%s %s: no $GXS_ORIG", f, k.Name)
			}
			if got[at-1] != "ret;" {
				t.Errorf("%s %s: %q before the copy, want ret;", f, k.Name, got[at-1])
			}
			tail := strings.ReplaceAll(strings.Join(got[at+1:], "\n"), "_gxo", "")
			if want := strings.Join(code(orig, k.Name), "\n"); tail != want {
				t.Errorf("%s %s: the copy is not the original:\n%s\nwant\n%s", f, k.Name, tail, want)
			}
			it, _ := m.Lookup(k.Name)
			seen := map[string]bool{}
			for _, l := range it.(*Function).Labels() {
				if seen[l] {
					t.Errorf("%s %s: label %s twice", f, k.Name, l)
				}
				seen[l] = true
			}
			for _, in := range it.(*Function).Instructions() {
				if in.Guard != nil && in.Guard.Reg == sampleReg && in.Operands[0].(*Name).Text != "$GXS_ORIG" {
					t.Errorf("%s %s: a sampling branch to %v in the copy form", f, k.Name, in.Operands[0])
				}
			}
		}
	}
	if kernels < 10 {
		t.Errorf("%d kernels in the copy form", kernels)
	}
}

// TestBlockSampleCopyWhen: the copy form needs a kernel of at most
// MaxSampleCopy instructions and no variable but .param in an inner scope
// (copied, it would be allocated twice); otherwise the guards form.
func TestBlockSampleCopyWhen(t *testing.T) {
	const plain = `.visible .entry k(.param .u64 a)
{
	.reg .b64 %rd<2>;
	.shared .align 4 .b8 top[16];
	ld.param.u64 %rd1, [a];
	{
		.reg .b32 %x;
		.param .b64 p;
		mov.u32 %x, 1;
	}
	ret;
}
`
	inner := strings.Replace(plain, ".reg .b32 %x;", ".reg .b32 %x;\n\t\t.shared .b32 s;", 1)
	for _, tt := range []struct {
		name, src string
		max       int
		copy      bool
	}{
		{"plain", plain, 4096, true},
		{"at the limit", plain, 3, true},
		{"over the limit", plain, 2, false},
		{"inner .shared", inner, 4096, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := MaxSampleCopy
			MaxSampleCopy = tt.max
			defer func() { MaxSampleCopy = old }()
			m, rep := instrumentOne(t, testHeader+tt.src, Spec{Exit: []string{p1}, BlockSample: 4})
			if rep.Kernels[0].SampleCopy != tt.copy {
				t.Errorf("SampleCopy %v, want %v", rep.Kernels[0].SampleCopy, tt.copy)
			}
			out := Write(m)
			if got := strings.Contains(out, "$GXS_ORIG"); got != tt.copy {
				t.Errorf("copy in the output %v:\n%s", got, out)
			}
			if got := strings.Contains(out, "$GXS_SKIP"); got == tt.copy {
				t.Errorf("guards in the output %v:\n%s", got, out)
			}
			if n := strings.Count(out, ".shared .align 4 .b8 top[16];"); n != 1 {
				t.Errorf("top-level .shared declared %d times", n)
			}
		})
	}
}

// TestInstrumentFirstBlock: an entry probe of the first block only is
// wrapped in a test of the block's index and a uniform branch around it
// (the other probes at the site unchanged); an exit probe cannot be one,
// nor can one be carried.
func TestInstrumentFirstBlock(t *testing.T) {
	src := testHeader + `.visible .entry k(.param .u64 a)
{
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [a];
	ret;
}
`
	call := func(p, typ string) []string { // the golden probes' first and third .params: .u64 (probe 0), .b64 (1)
		return []string{"{", "st.param." + typ + " [__gpuext_arg0], 0x0000000000000001;", "st.param.u64 [__gpuext_arg1], 0;",
			"st.param." + typ + " [__gpuext_arg2], 0xAF63E64C8601FD8A;", "call " + p + ", (__gpuext_arg0, __gpuext_arg1, __gpuext_arg2);", "}"}
	}
	test := []string{"{", "mov.u32 %gx_f0, %ctaid.x;", "mov.u32 %gx_f1, %ctaid.y;", "or.b32 %gx_f0, %gx_f0, %gx_f1;",
		"mov.u32 %gx_f1, %ctaid.z;", "or.b32 %gx_f0, %gx_f0, %gx_f1;", "setp.ne.u32 %gx_fp, %gx_f0, 0;", "@%gx_fp bra.uni $GXF_SKIP;"}
	var want []string
	want = append(want, test...)
	want = append(want, call(p0, "u64")...)
	want = append(want, "$GXF_SKIP:", "}")
	want = append(want, call(p1, "b64")...)
	want = append(want, "ld.param.u64 %rd1, [a];", "ret;")
	m, _ := instrumentOne(t, src, Spec{Probes: []Probe{{Func: p0, Kind: SiteEntry, FirstBlock: true}, {Func: p1, Kind: SiteEntry}}})
	got := kernelCode(t, m, "k")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kernel\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := RoundTrip(Write(m), false); err != nil {
		t.Fatalf("does not round-trip: %v", err)
	}

	for _, tt := range []struct {
		spec Spec
		err  string
	}{
		{Spec{Probes: []Probe{{Func: p0, Kind: SiteExit, FirstBlock: true}}},
			"ptx: instrument: probe __gpuext_probe_0 runs in the first block only but attaches at exit sites; only entry probes can"},
		{Spec{Probes: []Probe{{Func: p0, Kind: SiteEntry, FirstBlock: true}, {Func: p1, Kind: SiteExit, Carry: p0}}},
			"ptx: instrument: probe __gpuext_probe_1 carries __gpuext_probe_0, which runs in the first block only"},
	} {
		_, err := Instrument(linked(t, src), tt.spec)
		if err == nil || err.Error() != tt.err {
			t.Errorf("err %v, want %s", err, tt.err)
		}
	}
}

// TestBlocksSampled: the closed form counts what BlockSampled picks, for
// rates a probe can be given (fixed n, powers of two by launch) against
// the loop: 14 rates up to 2^20 blocks, sampling by launch to 2^22, and 1
// in 1 and 1 in 3 at MaxCountedBlocks.
func TestBlocksSampled(t *testing.T) {
	rates := []uint32{0, 1, 2, 3, 4, 7, 8, 16, 100, 256, 1000, 4096, 65535, 1 << 16}
	sizes := []uint64{1, 2, 3, 7, 64, 100, 255, 256, 257, 1000, 4096, 65537, 1 << 20}
	for _, n := range rates {
		var want uint64
		i := uint64(0)
		for _, b := range sizes {
			for ; i < b; i++ {
				if BlockSampled(uint32(i), n) {
					want++
				}
			}
			if got := BlocksSampled(b, n); got != want {
				t.Fatalf("1 in %d of %d: %d, want %d", n, b, got, want)
			}
		}
	}
	// by launch: LaunchSampled's count at its weight
	for _, b := range []uint64{300, 5000, 70000, 1 << 22} {
		for _, per := range []uint32{1, 16, 256, 1 << 16} {
			var want uint64
			for i := range uint32(b) {
				if LaunchSampled(i, b, per) {
					want++
				}
			}
			if got := BlocksSampled(b, SampleWeight(0, per, b)); got != want {
				t.Fatalf("%d blocks, %d a launch: %d, want %d", b, per, got, want)
			}
		}
	}
	// the largest: every block, and a third (the hash's gaps are within
	// a block or two of even)
	if got := BlocksSampled(MaxCountedBlocks, 1); got != MaxCountedBlocks {
		t.Errorf("every block of %d: %d", MaxCountedBlocks, got)
	}
	var want uint64
	for i := range uint32(MaxCountedBlocks) {
		if BlockSampled(i, 3) {
			want++
		}
	}
	if got := BlocksSampled(MaxCountedBlocks, 3); got != want {
		t.Errorf("1 in 3 of %d: %d, want %d", MaxCountedBlocks, got, want)
	}
}
