package ptx

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.out.ptx")

const p0, p1 = "__gpuext_probe_0", "__gpuext_probe_1"

// linked parses src and links the golden probes fragment into it.
func linked(t *testing.T, src string) *Module {
	t.Helper()
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	frag, err := ParseFragment(readFile(t, "testdata/golden/probes.frag"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Link(m, frag); err != nil {
		t.Fatal(err)
	}
	return m
}

// siteSummary renders sites as "index:kind@line".
func siteSummary(sites []Site) string {
	var out []string
	for _, s := range sites {
		out = append(out, fmt.Sprintf("%d:%s@%d", s.Index, s.Kind, s.Pos.Line))
	}
	return strings.Join(out, " ")
}

func TestInstrumentGolden(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		kernels []string // instrumented kernels
		counts  [][4]int // entry, exit, load, store per kernel
		sites   []string // siteSummary per kernel
	}{
		{"entry_exit", Spec{Entry: []string{p0}, Exit: []string{p0}},
			[]string{"vec_add"}, [][4]int{{1, 1, 0, 0}}, []string{"0:entry@6 1:exit@36"}},
		{"guarded_exits", Spec{Entry: []string{p0}, Exit: []string{p1}},
			[]string{"exits"}, [][4]int{{1, 4, 0, 0}}, []string{"0:entry@8 1:exit@20 2:exit@23 3:exit@28 4:exit@33"}},
		{"memory", Spec{Load: []string{p0}, Store: []string{p1}, Generic: true, Atomics: true},
			[]string{"mem"}, [][4]int{{0, 0, 4, 5}},
			[]string{"0:load@22 1:store@23 2:load@24 3:store@25 4:load@26 5:store@27 6:store@28 7:load@36 8:store@41"}},
		{"select", Spec{Kernels: []string{"k_a*"}, Entry: []string{p0, p1}, Exit: []string{p1}},
			[]string{"k_a1"}, [][4]int{{1, 1, 0, 0}}, []string{"0:entry@6 1:exit@8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join("testdata/golden", tt.name+".in.ptx")
			m := linked(t, readFile(t, in))
			rep, err := Instrument(m, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Refused) != 0 || len(rep.Unmatched) != 0 {
				t.Fatalf("refused %v, unmatched %v", rep.Refused, rep.Unmatched)
			}
			if len(rep.Kernels) != len(tt.kernels) {
				t.Fatalf("instrumented %d kernels, want %d", len(rep.Kernels), len(tt.kernels))
			}
			for i, k := range rep.Kernels {
				got := [4]int{k.Entry, k.Exit, k.Load, k.Store}
				if k.Name != tt.kernels[i] || got != tt.counts[i] {
					t.Errorf("kernel %s counts %v, want %s %v", k.Name, got, tt.kernels[i], tt.counts[i])
				}
				if s := siteSummary(k.Sites); s != tt.sites[i] {
					t.Errorf("kernel %s sites %q, want %q", k.Name, s, tt.sites[i])
				}
				if k.ID != KernelID(k.Name) || k.LocalBytes != 0 || len(k.RegsAdded) != 1 || k.RegsAdded[".b64"] != 1 {
					t.Errorf("kernel %s: id %x, local %d, regs %v", k.Name, k.ID, k.LocalBytes, k.RegsAdded)
				}
			}
			checkGolden(t, m, tt.name+".out.ptx")
		})
	}
}

// checkGolden checks that m's PTX round-trips and equals
// testdata/golden/<name> (rewritten with -update).
func checkGolden(t *testing.T, m *Module, name string) {
	t.Helper()
	out := Write(m)
	if _, err := RoundTrip(out, false); err != nil {
		t.Fatalf("instrumented PTX does not round-trip: %v", err)
	}
	golden := filepath.Join("testdata/golden", name)
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := readFile(t, golden); out != want {
		t.Errorf("output differs from %s (run go test -update and review):\n%s", golden, out)
	}
}

// TestInstrumentSiteCode pins the code of two guarded load sites exactly:
// the address under the guard, the three .params (typed as the probe
// declares them) stored unguarded, the call guarded; no .local ctx.
func TestInstrumentSiteCode(t *testing.T) {
	m := linked(t, testHeader+".visible .entry k(.param .u64 k_p)\n{\n.reg .pred %p<2>;\n.reg .b64 %rd<4>;\n"+
		"@!%p1 ld.global.u64 %rd1, [%rd2+-8];\n@!%p1 ld.global.u64 %rd3, [%rd2];\n}\n")
	if _, err := Instrument(m, Spec{Load: []string{p1}}); err != nil {
		t.Fatal(err)
	}
	k, _ := m.Lookup("k")
	got := stmtsText(k.(*Function).Body.Stmts)
	id := fmt.Sprintf("0x%016X", KernelID("k"))
	call := func(site string) string {
		return "{\n\t.param .b64 __gpuext_arg0;\n\t.param .u64 __gpuext_arg1;\n\t.param .b64 __gpuext_arg2;" +
			"\n\tst.param.b64 \t[__gpuext_arg0], " + site + ";\n\tst.param.u64 \t[__gpuext_arg1], %gx_rd0;" +
			"\n\tst.param.b64 \t[__gpuext_arg2], " + id + ";\n\t@!%p1 call \t__gpuext_probe_1, (__gpuext_arg0, __gpuext_arg1, __gpuext_arg2);\n}"
	}
	want := strings.Join([]string{
		".reg .b64 %gx_rd<1>;",
		".reg .pred %p<2>;",
		".reg .b64 %rd<4>;",
		"@!%p1 mov.b64 \t%gx_rd0, %rd2;",
		"@!%p1 add.s64 \t%gx_rd0, %gx_rd0, -8;",
		"@!%p1 cvta.global.u64 \t%gx_rd0, %gx_rd0;",
		call("0x0000000000000003"),
		"@!%p1 ld.global.u64 \t%rd1, [%rd2+-8];",
		"@!%p1 mov.b64 \t%gx_rd0, %rd2;",
		"@!%p1 cvta.global.u64 \t%gx_rd0, %gx_rd0;",
		call("0x0000000100000003"),
		"@!%p1 ld.global.u64 \t%rd3, [%rd2];",
	}, " ⏎ ")
	if got != want {
		t.Errorf("site code:\n got  %s\n want %s", got, want)
	}
}

func TestInstrumentRefusals(t *testing.T) {
	tests := []struct {
		name, body, perf, reason string
	}{
		{"maxnreg too low", "ret;", ".maxnreg 16\n", ".maxnreg 16 is below 32, too few registers for a probe call"},
		{"setmaxnreg", ".reg .b32 %r<2>;\nsetmaxnreg.inc.sync.aligned.u32 240;\nret;", "",
			"setmaxnreg at 7:1: the kernel hands registers back at run time, a probe call could not rely on them"},
		{"reserved register", ".reg .b64 %gx_rd<1>;\nret;", "", "register %gx_rd at 6:1 uses the reserved prefix %gx_ (already instrumented?)"},
		{"reserved variable", ".local .b8 __gpuext_ctx[24];\nret;", "", "__gpuext_ctx at 6:1 is a reserved name (already instrumented?)"},
		{"reserved argument", "{\n.param .u64 __gpuext_arg2;\nret;\n}", "", "__gpuext_arg2 at 7:1 is a reserved name (already instrumented?)"},
		{"undeclared address register", "ld.global.u32 %r1, [%rdx];\nret;", "",
			"cannot compute the address of [%rdx] at 6:1: register %rdx is not declared"},
		{"predicate as address", ".reg .pred %p<2>;\nld.global.u32 %r1, [%p1];\nret;", "",
			"cannot compute the address of [%p1] at 7:1: register %p1 has type .pred"},
		{"32-bit address register", ".reg .b32 %r<3>;\nst.global.u32 [%r1], %r2;\nret;", "",
			"cannot compute the address of [%r1] at 7:1: register %r1 is a 32-bit address in a 64-bit module"},
		{"non-integer offset", ".reg .b64 %rd<3>;\nld.global.u32 %r1, [%rd1+%rd2];\nret;", "",
			"cannot compute the address of [%rd1+%rd2] at 7:1: the offset is not an integer"},
		{"symbol outside global space", ".shared .b8 sbuf[4];\nld.u32 %r1, [sbuf];\nret;", "",
			"cannot compute the address of [sbuf] at 7:1: sbuf is not a .global variable of the module"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := testHeader + ".visible .entry k()\n" + tt.perf + "{\n" + tt.body + "\n}\n"
			if tt.perf != "" {
				src = testHeader + ".visible .entry k()\n" + tt.perf + "{\n" + tt.body + "\n}\n"
			}
			m := linked(t, src)
			before := Write(m)
			rep, err := Instrument(m, Spec{Entry: []string{p0}, Exit: []string{p0}, Load: []string{p0}, Store: []string{p0}, Generic: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Kernels) != 0 || len(rep.Refused) != 1 || rep.Refused[0].Kernel != "k" || rep.Refused[0].Reason != tt.reason {
				t.Fatalf("report %+v, want k refused: %q", rep, tt.reason)
			}
			if Write(m) != before {
				t.Error("a refused kernel was changed")
			}
		})
	}
}

func TestInstrumentRefusalPositions(t *testing.T) {
	// the .maxnreg case above has the directive in the header: check the
	// line numbers used by the other cases start at the body's first line
	m := linked(t, testHeader+".visible .entry k()\n{\nret;\n}\n")
	if k, _ := m.Lookup("k"); k.(*Function).Body.Stmts[0].(*Instruction).Pos != (Pos{6, 1}) {
		t.Fatal("body statements do not start on line 6")
	}
}

func TestInstrumentSpecErrors(t *testing.T) {
	base := testHeader + ".visible .entry k()\n{\nret;\n}\n"
	tests := []struct {
		name string
		src  string
		link bool
		spec Spec
		want string
	}{
		{"no probes", base, true, Spec{}, "ptx: instrument: the spec names no probe function"},
		{"missing probe", base, false, Spec{Entry: []string{p0}}, "ptx: instrument: probe function __gpuext_probe_0 is not in the module (Link its fragment first)"},
		{"probe is a kernel", base, true, Spec{Entry: []string{"k"}}, "ptx: instrument: probe k is not a .func"},
		{"probe with a return value", base + ".func (.param .b32 r) bad(.param .u64 c)\n{\nret;\n}\n", true, Spec{Exit: []string{"bad"}},
			"ptx: instrument: probe bad returns a value; probes return nothing unless an exit probe carries it"},
		{"carried probe without a return value", base, true, Spec{Probes: []Probe{{Func: p0, Kind: SiteEntry}, {Func: p1, Kind: SiteExit, Carry: p0}}},
			"ptx: instrument: probe __gpuext_probe_0 is carried to exits: it must return one .param .b64 (or .u64)"},
		{"carried probe returning 32 bits", base + ".func (.param .b32 r) e(.param .u64 a, .param .u64 b, .param .u64 c)\n{\nret;\n}\n", true,
			Spec{Probes: []Probe{{Func: "e", Kind: SiteEntry}, {Func: p1, Kind: SiteExit, Carry: "e"}}},
			"ptx: instrument: probe e is carried to exits: it must return one .param .b64 (or .u64)"},
		{"carry by an entry probe", base, true, Spec{Probes: []Probe{{Func: p0, Kind: SiteEntry, Carry: p1}, {Func: p1, Kind: SiteEntry}}},
			"ptx: instrument: probe __gpuext_probe_0 carries __gpuext_probe_1 but is a entry probe; only exit probes carry"},
		{"carry of no entry probe", base, true, Spec{Probes: []Probe{{Func: p0, Kind: SiteExit, Carry: p1}}},
			"ptx: instrument: probe __gpuext_probe_0 carries __gpuext_probe_1, which is not an entry probe of the spec"},
		{"probe with two params", base + ".func bad(.param .u64 c, .param .u64 d)\n{\nret;\n}\n", true, Spec{Exit: []string{"bad"}},
			"ptx: instrument: probe bad takes 2 parameters; probes take three (.param .u64 kind_site, .param .u64 addr, .param .u64 kernel_id)"},
		{"probe of the one-pointer convention", base + ".func bad(.param .u64 ctx)\n{\nret;\n}\n", true, Spec{Exit: []string{"bad"}},
			"ptx: instrument: probe bad takes 1 parameters; probes take three (.param .u64 kind_site, .param .u64 addr, .param .u64 kernel_id)"},
		{"probe with a 32-bit param", base + ".func bad(.param .u64 a, .param .u32 c, .param .u64 k)\n{\nret;\n}\n", true, Spec{Exit: []string{"bad"}},
			"ptx: instrument: probe bad's parameter 2 must be .param .u64 (or .b64), not .param .u32"},
		{"probe with an array param", base + ".func bad(.param .u64 a, .param .u64 c, .param .b64 k[2])\n{\nret;\n}\n", true, Spec{Exit: []string{"bad"}},
			"ptx: instrument: probe bad's parameter 3 must be .param .u64 (or .b64), not .param .b64"},
		{"declared probe", base + ".func bad(.param .u64 c);\n", true, Spec{Exit: []string{"bad"}},
			"ptx: instrument: probe bad is declared but not defined"},
		{"bad glob", base, true, Spec{Kernels: []string{"k["}, Entry: []string{p0}}, "ptx: instrument: kernel pattern \"k[\": syntax error in pattern"},
		{"32-bit module", ".version 8.7\n.target sm_90\n.address_size 32\n.visible .entry k()\n{\nret;\n}\n", false, Spec{Entry: []string{p0}},
			"ptx: instrument: only .address_size 64 modules are supported (this one has 32)"},
		{"reserved module name", base + ".global .b8 __gpuext_ctx[24];\n", true, Spec{Entry: []string{p0}},
			"ptx: instrument: the module defines __gpuext_ctx, a name the rewriter reserves"},
		{"reserved argument name", base + ".global .u64 __gpuext_arg1;\n", true, Spec{Entry: []string{p0}},
			"ptx: instrument: the module defines __gpuext_arg1, a name the rewriter reserves"},
		{"missing block init", base, true, Spec{Exit: []string{p0}, BlockInit: "init"},
			"ptx: instrument: block init function init is not in the module (Link its fragment first)"},
		{"block init is a kernel", base, true, Spec{Exit: []string{p0}, BlockInit: "k"},
			"ptx: instrument: block init k is not a defined .func"},
		{"block init with a parameter", base + ".func init(.param .u64 a)\n{\nret;\n}\n", true, Spec{Exit: []string{p0}, BlockInit: "init"},
			"ptx: instrument: block init init must take no parameters and return nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m *Module
			if tt.link {
				m = linked(t, tt.src)
			} else {
				var err error
				if m, err = Parse(tt.src); err != nil {
					t.Fatal(err)
				}
			}
			before := Write(m)
			_, err := Instrument(m, tt.spec)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if Write(m) != before {
				t.Error("module changed by a failed Instrument")
			}
		})
	}
}

func TestInstrumentSelection(t *testing.T) {
	src := testHeader + ".extern .entry ext();\n.visible .entry k1()\n{\nret;\n}\n.visible .entry k2()\n{\nret;\n}\n"
	m := linked(t, src)
	rep, err := Instrument(m, Spec{Kernels: []string{"k2", "ext", "missing", "k9*"}, Exit: []string{p0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 1 || rep.Kernels[0].Name != "k2" {
		t.Errorf("instrumented %+v, want k2 only", rep.Kernels)
	}
	if len(rep.Refused) != 1 || rep.Refused[0] != (Refusal{"ext", "declared .extern or without a body: nothing to instrument here"}) {
		t.Errorf("refused %+v", rep.Refused)
	}
	if len(rep.Unmatched) != 1 || rep.Unmatched[0] != "missing" {
		t.Errorf("unmatched %v, want [missing]", rep.Unmatched)
	}
	// instrumenting again refuses: the kernel now uses the reserved names
	rep, err = Instrument(m, Spec{Kernels: []string{"k2"}, Exit: []string{p0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 0 || len(rep.Refused) != 1 || !strings.Contains(rep.Refused[0].Reason, "already instrumented") {
		t.Errorf("second pass: %+v", rep)
	}
	// a probe defined after the kernel cannot be called from it
	m2, err := Parse(src + ".func late(.param .u64 c0, .param .u64 c1, .param .b64 c2)\n{\nret;\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	rep, err = Instrument(m2, Spec{Kernels: []string{"k1"}, Exit: []string{"late"}})
	if err != nil || len(rep.Refused) != 1 || rep.Refused[0].Reason != "a probe function is defined after the kernel (Link the fragment first)" {
		t.Errorf("late probe: %+v %v", rep, err)
	}
	// a prototype ahead of the kernel is enough
	m3, err := Parse(testHeader + ".func late(.param .u64 c0, .param .u64 c1, .param .b64 c2);\n" + strings.TrimPrefix(src, testHeader) + ".func late(.param .u64 c0, .param .u64 c1, .param .b64 c2)\n{\nret;\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	rep, err = Instrument(m3, Spec{Kernels: []string{"k1"}, Exit: []string{"late"}})
	if err != nil || len(rep.Kernels) != 1 || len(rep.Refused) != 0 {
		t.Errorf("declared probe: %+v %v", rep, err)
	}
}

// TestInstrumentCorpus instruments every kernel of every corpus file at
// entry, exits, loads and stores (generic and atomics too): the result must
// round-trip, every site the analysis finds must be instrumented, and a few
// kernels have exactly known counts.
func TestInstrumentCorpus(t *testing.T) {
	exact := map[string][4]int{
		"nvcc_kernels.ptx/vec_add":                     {1, 1, 2, 1},
		"nvcc_kernels.ptx/early_exits":                 {1, 1, 1, 2},
		"nvcc_kernels.ptx/histogram":                   {1, 1, 1, 1},
		"nvcc_kernels.ptx/globals_use":                 {1, 1, 0, 2},
		"nvcc_kernels_debug.ptx/half_vec4":             {1, 1, 6, 6},
		"triton_add.ptx/add_kernel":                    {1, 1, 4, 2},
		"triton_softmax.ptx/softmax_kernel":            {1, 1, 8, 8},
		"triton_matmul.ptx/matmul_kernel":              {1, 1, 0, 16},
		"nvcc_kernels_rdc.ptx/_Z4axpyIdEvT_PKS0_PS0_i": {1, 1, 2, 1},
	}
	seen := 0
	for _, f := range corpusFiles(t) {
		src := readFile(t, f)
		m := linked(t, src)
		orig, _ := Parse(src)
		rep, err := Instrument(m, Spec{Entry: []string{p0}, Exit: []string{p0}, Load: []string{p0}, Store: []string{p1}, Generic: true, Atomics: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(rep.Refused) != 0 || len(rep.Kernels) != len(orig.KernelNames()) {
			t.Fatalf("%s: instrumented %d of %d kernels, refused %v", f, len(rep.Kernels), len(orig.KernelNames()), rep.Refused)
		}
		if _, err := RoundTrip(Write(m), false); err != nil {
			t.Fatalf("%s: instrumented output: %v", f, err)
		}
		for _, k := range rep.Kernels {
			it, _ := orig.Lookup(k.Name)
			of := it.(*Function)
			loads, stores := 0, 0
			for _, a := range of.MemAccesses(true) {
				if a.Access == AccessLoad {
					loads++
				} else {
					stores++
				}
			}
			got := [4]int{k.Entry, k.Exit, k.Load, k.Store}
			if want := [4]int{1, len(of.Exits()), loads, stores}; got != want {
				t.Errorf("%s %s: sites %v, analysis finds %v", f, k.Name, got, want)
			}
			if want, ok := exact[filepath.Base(f)+"/"+k.Name]; ok {
				seen++
				if got != want {
					t.Errorf("%s %s: sites %v, want %v", f, k.Name, got, want)
				}
			}
			if len(k.Sites) != k.Entry+k.Exit+k.Load+k.Store {
				t.Errorf("%s %s: %d sites listed", f, k.Name, len(k.Sites))
			}
		}
	}
	if seen != len(exact) {
		t.Errorf("checked %d exact kernels, want %d", seen, len(exact))
	}
}

func TestLink(t *testing.T) {
	m, err := Parse(testHeader + ".file 1 \"k.cu\"\n.global .u32 g;\n.visible .entry k()\n{\nret;\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	frag, _ := ParseFragment(readFile(t, "testdata/golden/probes.frag"))
	if err := Link(m, frag); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range m.Items {
		names = append(names, fmt.Sprintf("%T:%s", it, itemName(it)))
	}
	want := "*ptx.File: *ptx.Var:__gpuext_shared *ptx.Function:__gpuext_probe_0 *ptx.Function:__gpuext_probe_1 *ptx.Var:g *ptx.Function:k"
	if strings.Join(names, " ") != want {
		t.Errorf("items %v\nwant %s", names, want)
	}
	// linking the same fragment again collides
	if err := Link(m, frag); err == nil || err.Error() != "ptx: link: fragment symbol __gpuext_shared (fragment 2:1) is already defined by the module at 2:1" {
		t.Errorf("second link: %v", err)
	}
	bad := []struct{ frag, want string }{
		{".visible .entry e()\n{\nret;\n}\n", "ptx: link: fragment e at 1:1: only .func definitions and .global, .const or .shared variables may be linked"},
		{".extern .func f(.param .u64 c);\n", "ptx: link: fragment f at 1:1: only .func definitions and .global, .const or .shared variables may be linked"},
		{".extern .shared .b8 s[];\n", "ptx: link: fragment variable s at 1:1 is in .extern.shared: only .global, .const and .shared definitions may be linked"},
		{".extern .const .u64 c;\n", "ptx: link: fragment variable c at 1:1 is in .extern.const: only .global, .const and .shared definitions may be linked"},
		{".file 1 \"x\"\n", "ptx: link: fragment item *ptx.File at 1:1: only .func definitions and .global, .const or .shared variables may be linked"},
		{".global .u32 k;\n", "ptx: link: fragment symbol k (fragment 1:1) is already defined by the module at 6:1"},
		{".global .u32 x;\n.global .u32 x;\n", "ptx: link: fragment defines x twice (2:1)"},
	}
	for _, b := range bad {
		m, _ := Parse(testHeader + "\n\n.visible .entry k()\n{\nret;\n}\n")
		f, err := ParseFragment(b.frag)
		if err != nil {
			t.Fatal(err)
		}
		n := len(m.Items)
		if err := Link(m, f); err == nil || err.Error() != b.want {
			t.Errorf("link %q: %v, want %q", b.frag, err, b.want)
		}
		if len(m.Items) != n {
			t.Errorf("link %q changed the module", b.frag)
		}
	}
}

// TestLinkDynamicShared: a fragment's .shared arrays beside a module's
// dynamic shared memory are linked 1,024-aligned and padded to multiples
// of 1,024 bytes (the module's dynamic memory stays on its 1,024-byte
// boundary); without dynamic memory, as written.
func TestLinkDynamicShared(t *testing.T) {
	const frag = ".shared .align 8 .b8 __gpuext_block[24];\n.shared .b8 big[1030];\n.shared .align 2048 .b8 exact[1024];\n.global .u32 g;\n"
	const asWritten = ".shared .align 8 .b8 __gpuext_block[24];\n.shared .b8 big[1030];\n.shared .align 2048 .b8 exact[1024];"
	const padded = ".shared .align 1024 .b8 __gpuext_block[1024];\n.shared .align 1024 .b8 big[2048];\n.shared .align 2048 .b8 exact[1024];"
	tests := []struct {
		name, module string
		want         string // the fragment's .shared declarations as linked
	}{
		{"none", ".visible .entry k()\n{\nret;\n}\n", asWritten},
		{"module extern (Triton)", ".extern .shared .align 16 .b8 global_smem[];\n.visible .entry k()\n{\nret;\n}\n", padded},
		{"extern in a kernel", ".visible .entry k()\n{\n.extern .shared .align 16 .b8 s[];\nret;\n}\n", padded},
		{"static shared only", ".shared .align 4 .b8 buf[128];\n.visible .entry k()\n{\nret;\n}\n", asWritten},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(testHeader + tt.module)
			if err != nil {
				t.Fatal(err)
			}
			f, err := ParseFragment(frag)
			if err != nil {
				t.Fatal(err)
			}
			before := Write(f)
			if err := Link(m, f); err != nil {
				t.Fatal(err)
			}
			out := strings.ReplaceAll(Write(m), "\n\n", "\n")
			if !strings.Contains(out, "\n"+tt.want+"\n.global .u32 g;\n") {
				t.Errorf("linked:\n%s\nwant the fragment's arrays as\n%s", out, tt.want)
			}
			if Write(f) != before {
				t.Errorf("the fragment changed:\n%s", Write(f))
			}
		})
	}
	// Anything but a byte array of known size cannot be padded.
	for _, bad := range []string{".shared .align 8 .u64 s[3];\n", ".shared .align 8 .b8 s;\n", ".shared .align 4 .b8 s[2][4];\n"} {
		m, err := Parse(testHeader + ".extern .shared .align 16 .b8 dyn[];\n.visible .entry k()\n{\nret;\n}\n")
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFragment(".global .u32 g;\n" + bad)
		if err != nil {
			t.Fatal(err)
		}
		before := Write(m)
		want := "ptx: link: fragment variable s at 2:1: beside dynamic shared memory a fragment's .shared variable must be a byte array of known size"
		if err := Link(m, f); err == nil || err.Error() != want {
			t.Errorf("link %q: %v, want %q", bad, err, want)
		}
		if Write(m) != before {
			t.Errorf("link %q changed the module", bad)
		}
	}
}

func TestKernelID(t *testing.T) {
	// FNV-1a 64 computed by hand: offset basis, xor byte, multiply by prime
	h := uint64(14695981039346656037)
	for _, c := range []byte("vec_add") {
		h ^= uint64(c)
		h *= 1099511628211
	}
	if KernelID("vec_add") != h || h != 0x082A2BD2B16BDCAD {
		t.Errorf("KernelID(vec_add) = %#x, by hand %#x", KernelID("vec_add"), h)
	}
}

func TestAnalysis(t *testing.T) {
	m, err := Parse(readFile(t, "testdata/corpus/nvcc_kernels.ptx"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"vec_add", "block_reduce", "imbalanced", "early_exits", "_Z4axpyIfEvT_PKS0_PS0_i", "_Z4axpyIdEvT_PKS0_PS0_i",
		"half_vec4", "histogram", "local_array", "say_hello", "globals_use"}
	if got := m.KernelNames(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("KernelNames = %v", got)
	}
	it, _ := m.Lookup("block_reduce")
	f := it.(*Function)
	regs := f.RegisterCounts()
	if len(regs) != 4 || regs[".pred"] != 16 || regs[".f32"] != 30 || regs[".b32"] != 49 || regs[".b64"] != 7 {
		t.Errorf("block_reduce registers %v", regs)
	}
	if l := f.Labels(); strings.Join(l, " ") != "$L__BB2_2 $L__BB2_4 $L__BB2_7 $L__BB2_9" {
		t.Errorf("labels %v", l)
	}
	acc := f.MemAccesses(true)
	if len(acc) != 2 || acc[0].Access != AccessLoad || acc[1].Access != AccessAtomic || acc[0].Generic || WriteExpr(acc[1].Addr) != "[%rd6]" {
		t.Errorf("block_reduce accesses %+v", acc)
	}
	if len(f.MemAccesses(false)) != 1 {
		t.Errorf("without atomics: %d accesses, want 1", len(f.MemAccesses(false)))
	}
	it, _ = m.Lookup("early_exits")
	calls := 0
	for _, in := range it.(*Function).Instructions() {
		if in.CallTarget() == "_Z4polyfi" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("early_exits calls _Z4polyfi %d times, want 1", calls)
	}
	it, idx := m.Lookup("vprintf")
	if it == nil || idx != 0 || it.(*Function).Body != nil {
		t.Errorf("Lookup(vprintf) = %v, %d", it, idx)
	}
	dbg, _ := Parse(readFile(t, "testdata/corpus/nvcc_kernels_debug.ptx"))
	it, _ = dbg.Lookup("__iAtomicAdd") // declared first, defined later: the definition wins
	if it == nil || it.(*Function).Body == nil {
		t.Error("Lookup(__iAtomicAdd) did not return the definition")
	}
	gen := 0
	for _, k := range dbg.Kernels() {
		for _, a := range k.MemAccesses(false) {
			if a.Generic {
				gen++
			}
		}
	}
	if gen == 0 {
		t.Error("the -G corpus file has generic accesses, none found")
	}
}

// TestInstrumentProbes: probes attached to some kernels only, as eBPF
// programs with kernel globs in their section names are.
func TestInstrumentProbes(t *testing.T) {
	src := testHeader + ".visible .entry k_a1()\n{\nret;\n}\n.visible .entry k_b()\n{\nret;\n}\n.visible .entry k_c()\n{\nret;\n}\n"
	m := linked(t, src)
	rep, err := Instrument(m, Spec{Probes: []Probe{
		{Func: p0, Kind: SiteEntry, Kernels: []string{"k_a*"}},
		{Func: p1, Kind: SiteExit, Kernels: []string{"k_b"}},
		{Func: p1, Kind: SiteEntry, Kernels: []string{"k_b", "nope"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range rep.Kernels {
		got = append(got, fmt.Sprintf("%s:%s", k.Name, siteSummary(k.Sites)))
	}
	if want := "k_a1:0:entry@4 k_b:0:entry@8 1:exit@10"; strings.Join(got, " ") != want {
		t.Errorf("instrumented %q, want %q", strings.Join(got, " "), want)
	}
	if len(rep.Unmatched) != 1 || rep.Unmatched[0] != "nope" || len(rep.Refused) != 0 {
		t.Errorf("unmatched %v, refused %v", rep.Unmatched, rep.Refused)
	}
	calls := map[string][]string{}
	for _, name := range []string{"k_a1", "k_b", "k_c"} {
		it, _ := m.Lookup(name)
		for _, in := range it.(*Function).Instructions() {
			if c := in.CallTarget(); c != "" {
				calls[name] = append(calls[name], c)
			}
		}
	}
	if strings.Join(calls["k_a1"], ",") != p0 || strings.Join(calls["k_b"], ",") != p1+","+p1 || len(calls["k_c"]) != 0 {
		t.Errorf("calls %v", calls)
	}
	if _, err := Instrument(linked(t, src), Spec{Probes: []Probe{{Func: p0}}}); err == nil || err.Error() != "ptx: instrument: probe __gpuext_probe_0 has no site kind (0)" {
		t.Errorf("probe without kind: %v", err)
	}
	if _, err := Instrument(linked(t, src), Spec{Probes: []Probe{{Func: p0, Kind: SiteExit, Kernels: []string{"["}}}}); err == nil ||
		err.Error() != "ptx: instrument: kernel pattern \"[\": syntax error in pattern" {
		t.Errorf("bad probe glob: %v", err)
	}
}

// TestInstrumentEntryPlacement: the entry site goes after the leading
// declarations and entry-scope pragmas, before the first label or code.
// TestInstrumentBlockInit: with Spec.BlockInit every instrumented kernel
// calls it, then waits at bar.sync 0, first thing, before the entry site;
// a kernel with exit probes only gets it too; an init defined after a
// kernel is refused there like a late probe.
func TestInstrumentBlockInit(t *testing.T) {
	const init = ".func gx_init()\n{\nret;\n}\n"
	src := testHeader + init + `.visible .entry k(.param .u64 a)
{
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [a];
	ret;
}
`
	for _, tt := range []struct {
		name string
		spec Spec
		want []string // the kernel's first instructions
	}{
		{"entry and exit", Spec{Entry: []string{p0}, Exit: []string{p1}, BlockInit: "gx_init"},
			[]string{"call gx_init;", "bar.sync 0;", "st.param.u64 [__gpuext_arg0], 0x0000000000000001;"}},
		{"exit only", Spec{Exit: []string{p1}, BlockInit: "gx_init"},
			[]string{"call gx_init;", "bar.sync 0;", "ld.param.u64 %rd1, [a];"}},
		{"no init", Spec{Entry: []string{p0}},
			[]string{"st.param.u64 [__gpuext_arg0], 0x0000000000000001;"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, rep := instrumentOne(t, src, tt.spec)
			if got, want := rep.Kernels[0].BlockInit, tt.spec.BlockInit != ""; got != want {
				t.Errorf("BlockInit %v, want %v", got, want)
			}
			it, _ := m.Lookup("k")
			var got []string
			for _, in := range it.(*Function).Instructions() {
				got = append(got, strings.Join(strings.Fields(WriteStmt(in)), " "))
			}
			if len(got) < len(tt.want) || strings.Join(got[:len(tt.want)], "|") != strings.Join(tt.want, "|") {
				t.Errorf("kernel starts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	late := testHeader + ".visible .entry k()\n{\nret;\n}\n" + init
	m := linked(t, late)
	rep, err := Instrument(m, Spec{Exit: []string{p0}, BlockInit: "gx_init"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 0 || len(rep.Refused) != 1 || !strings.Contains(rep.Refused[0].Reason, "defined after the kernel") {
		t.Errorf("init after the kernel: kernels %v, refused %v", rep.Kernels, rep.Refused)
	}
}

func TestInstrumentEntryPlacement(t *testing.T) {
	m := linked(t, testHeader+".visible .entry k()\n{\n.reg .b32 %r<2>;\n.pragma \"nounroll\";\n.shared .b8 s[4];\n$L0:\nret;\n}\n")
	if _, err := Instrument(m, Spec{Entry: []string{p0}}); err != nil {
		t.Fatal(err)
	}
	it, _ := m.Lookup("k")
	var kinds []string
	for _, s := range it.(*Function).Body.Stmts {
		kinds = append(kinds, strings.TrimPrefix(fmt.Sprintf("%T", s), "*ptx."))
	}
	want := "RegDecl RegDecl Pragma Var Block Label Instruction" // the entry site is one call scope
	if strings.Join(kinds, " ") != want {
		t.Errorf("body %s\nwant %s", strings.Join(kinds, " "), want)
	}
}

// TestInstrumentCarry: an entry probe's return value reaches the exit
// probe that carries it as the second ctx word, through one register; an
// exit probe in a kernel the entry probe does not apply to gets 0.
func TestInstrumentCarry(t *testing.T) {
	src := testHeader + `.func (.param .b64 r) e(.param .u64 a, .param .u64 b, .param .u64 c)
{
	st.param.b64 [r], 5;
	ret;
}
.func x(.param .u64 a, .param .u64 b, .param .u64 c)
{
	ret;
}
.visible .entry k(.param .u32 n)
{
	.reg .pred %p;
	.reg .b32 %r;
	ld.param.u32 %r, [n];
	setp.eq.u32 %p, %r, 0;
	@%p ret;
	ret;
}
.visible .entry other()
{
	ret;
}
`
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Instrument(m, Spec{Probes: []Probe{
		{Func: "e", Kind: SiteEntry, Kernels: []string{"k"}},
		{Func: "x", Kind: SiteExit, Carry: "e"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 2 || rep.Kernels[0].RegsAdded[".b64"] != 2 || rep.Kernels[1].RegsAdded[".b64"] != 1 {
		t.Fatalf("kernels %+v", rep.Kernels)
	}
	out := Write(m)
	k := out[strings.Index(out, ".visible .entry k"):strings.Index(out, ".visible .entry other")]
	for _, want := range []string{
		"\t.reg .b64 %gx_e<1>;\n",
		"\t\tcall \t(__gpuext_ret), e, (__gpuext_arg0, __gpuext_arg1, __gpuext_arg2);\n\t\tld.param.b64 \t%gx_e0, [__gpuext_ret];\n",
	} {
		if !strings.Contains(k, want) {
			t.Errorf("kernel k lacks %q:\n%s", want, k)
		}
	}
	if n := strings.Count(k, "st.param.u64 \t[__gpuext_arg1], %gx_e0;"); n != 2 {
		t.Errorf("%d exit calls pass %%gx_e0, want 2:\n%s", n, k)
	}
	o := out[strings.Index(out, ".visible .entry other"):]
	if strings.Contains(o, "%gx_e") || !strings.Contains(o, "st.param.u64 \t[__gpuext_arg1], 0;") {
		t.Errorf("kernel other:\n%s", o)
	}
}
