package ptx

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// linkedWith parses src and links fragment file frag into it.
func linkedWith(t *testing.T, src, frag string) *Module {
	t.Helper()
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFragment(readFile(t, frag))
	if err != nil {
		t.Fatal(err)
	}
	if err := Link(m, f); err != nil {
		t.Fatal(err)
	}
	return m
}

// inlineSpec is the spec of the inlining golden test: every kind of
// function testdata/golden/inline.frag has.
var inlineSpec = Spec{
	BlockInit: "blk_init",
	Inline:    true,
	Probes: []Probe{
		{Func: "p_entry", Kind: SiteEntry},
		{Func: "p_exit", Kind: SiteExit, Carry: "p_entry"},
		{Func: "p_local", Kind: SiteExit},
		{Func: "p_local", Kind: SiteLoad},
	},
}

func TestInlineGolden(t *testing.T) {
	m := linkedWith(t, readFile(t, "testdata/golden/inline.in.ptx"), "testdata/golden/inline.frag")
	rep, err := Instrument(m, inlineSpec)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 1 || len(rep.Refused) != 0 {
		t.Fatalf("report %+v", rep)
	}
	k := rep.Kernels[0]
	// the init, the entry, p_exit at both exits; p_local called at both
	// exits and the load
	wantWhy := []string{"p_local: declares .local stk (only registers, and .params of nested calls, are copied)"}
	if k.Inlined != 4 || !slices.Equal(k.NotInlined, wantWhy) || k.Entry != 1 || k.Exit != 2 || k.Load != 1 || !k.BlockInit {
		t.Errorf("kernel report: inlined %d, not inlined %q, sites %d/%d/%d, init %v", k.Inlined, k.NotInlined, k.Entry, k.Exit, k.Load, k.BlockInit)
	}
	checkGolden(t, m, "inline.out.ptx")
	// the kernel's own label kept its name, the copy's got another
	kf, _ := m.Lookup("k")
	labels := kf.(*Function).Labels()
	want := []string{"$skip_i0", "$GXI0_END", "$done_i1_0", "$GXI2_END", "$done_i1"}
	if !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
}

// TestInlineSiteCode pins one copy exactly: the parameter reads become
// moves of the site's values, the return value a move into the carried
// register, the final ret disappears, a guarded exit branches past it.
func TestInlineSiteCode(t *testing.T) {
	frag := ".visible .global .align 8 .u64 __gpuext_shared;\n" +
		".func (.param .b64 r) pe(.param .u64 a, .param .u64 b, .param .u64 c)\n{\n.reg .b64 %q<2>;\n" +
		"ld.param.u64 %q0, [a];\nld.param.b64 %q1, [c];\nadd.s64 %q0, %q0, %q1;\nst.param.b64 [r], %q0;\nret;\n}\n" +
		".func px(.param .u64 a, .param .u64 b, .param .u64 c)\n{\n.reg .b64 %w<2>;\n" +
		"ld.param.u64 %w0, [b];\nld.global.u64 %w1, [__gpuext_shared];\nst.global.u64 [%w1], %w0;\nret;\n}\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte(frag), 0o644); err != nil {
		t.Fatal(err)
	}
	m := linkedWith(t, testHeader+".visible .entry k()\n{\n.reg .pred %p<2>;\n@!%p1 ret;\n}\n", filepath.Join(dir, "f"))
	rep, err := Instrument(m, Spec{Inline: true, Probes: []Probe{{Func: "pe", Kind: SiteEntry}, {Func: "px", Kind: SiteExit, Carry: "pe"}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kernels[0].Inlined != 2 || rep.Kernels[0].NotInlined != nil {
		t.Fatalf("report %+v", rep.Kernels[0])
	}
	k, _ := m.Lookup("k")
	got := stmtsText(k.(*Function).Body.Stmts)
	want := strings.Join([]string{
		".reg .b64 %gx_rd<1>;",
		".reg .b64 %gx_e<1>;",
		".reg .pred %p<2>;",
		"{\n\t.reg .b64 %q<2>;\n\tmov.b64 \t%q0, 0x0000000000000001;\n\tmov.b64 \t%q1, " + fmt.Sprintf("0x%016X", KernelID("k")) +
			";\n\tadd.s64 \t%q0, %q0, %q1;\n\tmov.b64 \t%gx_e0, %q0;\n}",
		"@%p1 bra \t$GXI1_END;",
		"{\n\t.reg .b64 %w<2>;\n\tmov.b64 \t%w0, %gx_e0;\n\tld.global.u64 \t%w1, [__gpuext_shared];\n\tst.global.u64 \t[%w1], %w0;\n}",
		"$GXI1_END:",
		"@!%p1 ret;",
	}, " ⏎ ")
	if got != want {
		t.Errorf("kernel body:\n%s\nwant:\n%s", got, want)
	}
}

func TestPrepareInlineRefusals(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"ok", ".reg .b64 %a;\nld.param.u64 %a, [x];\nret;", ""},
		{"exit", "exit;", "ends the thread (exit)"},
		{"indirect", ".reg .b32 %i;\nbrx.idx %i, ts;", "branches indirectly"},
		{"targets", "ts: .branchtargets L0;\nL0: ret;", "branches or calls indirectly"},
		{"local", ".local .b8 s[8];\nret;", "declares .local s (only registers, and .params of nested calls, are copied)"},
		{"shared", "{\n.shared .b8 s[8];\n}\nret;", "declares .shared s (only registers, and .params of nested calls, are copied)"},
		{"param address", ".reg .b64 %a;\nmov.u64 %a, x;", "uses its parameter x in mov.u64 \t%a, x;"},
		{"narrow read", ".reg .b32 %a;\nld.param.u32 %a, [x];", "uses its parameter x in ld.param.u32 \t%a, [x];"},
		{"offset read", ".reg .b32 %a;\nld.param.u32 %a, [x+4];", "uses its parameter x in ld.param.u32 \t%a, [x+4];"},
		{"store to param", "st.param.u64 [x], 0;", "uses its parameter x in st.param.u64 \t[x], 0;"},
		{"reserved register", ".reg .b64 %gx_rd<2>;", "declares %gx_rd, a name the rewriter reserves"},
		{"reserved var", "{\n.param .b64 __gpuext_arg0;\n}", "declares __gpuext_arg0, a name the rewriter reserves"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(testHeader + ".func f(.param .u64 x)\n{\n" + tt.body + "\n}\n")
			if err != nil {
				t.Fatal(err)
			}
			it, _ := m.Lookup("f")
			fn, why := prepareInline(it.(*Function))
			if why != tt.want || (fn == nil) != (tt.want != "") {
				t.Errorf("why %q, want %q", why, tt.want)
			}
		})
	}
	m, _ := Parse(testHeader + ".func f(.param .u64 x)\n.maxnreg 32\n{\nret;\n}\n")
	if it, _ := m.Lookup("f"); it != nil {
		if _, why := prepareInline(it.(*Function)); why != "has performance directives" {
			t.Errorf(".maxnreg: why %q", why)
		}
	}
}

func TestRegOverlap(t *testing.T) {
	tests := []struct {
		a, b RegName
		want bool
	}{
		{RegName{Name: "%r1"}, RegName{Name: "%r1"}, true},
		{RegName{Name: "%r1"}, RegName{Name: "%r2"}, false},
		{RegName{Name: "%r", Count: 4}, RegName{Name: "%r9"}, true}, // any index: conservative
		{RegName{Name: "%r9"}, RegName{Name: "%r", Count: 4}, true},
		{RegName{Name: "%r", Count: 4}, RegName{Name: "%r"}, true},
		{RegName{Name: "%rd1"}, RegName{Name: "%r", Count: 4}, false},
		{RegName{Name: "%r", Count: 4}, RegName{Name: "%rd", Count: 4}, true}, // %r10 vs %rd? no, but %r<N> and %r1<N> might: conservative
		{RegName{Name: "%gr", Count: 11}, RegName{Name: "%r", Count: 30}, false},
		{RegName{Name: "%gmask"}, RegName{Name: "%g", Count: 3}, false},
		{RegName{Name: "%g12"}, RegName{Name: "%g", Count: 3}, true},
	}
	for _, tt := range tests {
		if got := regOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("regOverlap(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestInlineFallback: a kernel that declares a probe's register names, or
// has more exits than MaxInlineExits, calls the probe instead, and says
// why.
func TestInlineFallback(t *testing.T) {
	exits := strings.Repeat("@%p1 ret;\n", MaxInlineExits)
	tests := []struct {
		name, kernel string
		inlined      int
		why          []string
	}{
		{"collision", ".reg .b64 %x<2>;\nret;", 2, []string{"p_exit: the kernel also declares %x"}},
		{"within exits", ".reg .pred %p<2>;\n" + exits[:len(exits)-len("@%p1 ret;\n")] + "ret;", 2 + MaxInlineExits, nil},
		{"too many exits", ".reg .pred %p<2>;\n" + exits + "ret;", 2, []string{"p_exit: the kernel has 17 exits (copies at most 16)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := linkedWith(t, testHeader+".visible .entry k()\n{\n"+tt.kernel+"\n}\n", "testdata/golden/inline.frag")
			spec := inlineSpec
			spec.Probes = spec.Probes[:2]
			rep, err := Instrument(m, spec)
			if err != nil {
				t.Fatal(err)
			}
			k := rep.Kernels[0]
			if k.Inlined != tt.inlined || !slices.Equal(k.NotInlined, tt.why) {
				t.Errorf("inlined %d, why %q; want %d, %q", k.Inlined, k.NotInlined, tt.inlined, tt.why)
			}
			calls := 0
			for _, in := range k2f(m).Instructions() {
				if in.Opcode == "call" && in.CallTarget() == "p_exit" {
					calls++
				}
			}
			if want := k.Exit - (tt.inlined - 2); calls != want {
				t.Errorf("%d calls of p_exit, want %d", calls, want)
			}
		})
	}
}

func k2f(m *Module) *Function {
	it, _ := m.Lookup("k")
	return it.(*Function)
}
