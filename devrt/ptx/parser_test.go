package ptx

import (
	"strings"
	"testing"
)

const testHeader = ".version 8.7\n.target sm_90\n.address_size 64\n"

// bodyOf parses stmts as the body of a kernel and returns its statements.
func bodyOf(t *testing.T, stmts string) []Stmt {
	t.Helper()
	m, err := Parse(testHeader + ".visible .entry k()\n{\n" + stmts + "\n}\n")
	if err != nil {
		t.Fatalf("parse %q: %v", stmts, err)
	}
	return m.Items[0].(*Function).Body.Stmts
}

func n(s string) *Name        { return &Name{Text: s} }
func i(s string) *IntLit      { return &IntLit{Text: s} }
func addr(e ...Expr) *Address { return &Address{Elems: e} }

func TestParseStatements(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Stmt
	}{
		{"parameterized registers", ".reg .b32 %r<25>;",
			[]Stmt{&RegDecl{Type: ".b32", Names: []RegName{{"%r", 25}}}}},
		{"register list without %", ".reg .f16 low, high;",
			[]Stmt{&RegDecl{Type: ".f16", Names: []RegName{{"low", 0}, {"high", 0}}}}},
		{"vector registers", ".reg .v2 .b32 %v<2>, %w;",
			[]Stmt{&RegDecl{Vector: ".v2", Type: ".b32", Names: []RegName{{"%v", 2}, {"%w", 0}}}}},
		{"negated guard and modifier", "@!%p1 bra.uni $L__BB0_1;",
			[]Stmt{&Instruction{Guard: &Guard{Neg: true, Reg: "%p1"}, Opcode: "bra", Modifiers: []string{".uni"}, Operands: []Expr{n("$L__BB0_1")}}}},
		{"named predicate guard", "@p ret;",
			[]Stmt{&Instruction{Guard: &Guard{Reg: "p"}, Opcode: "ret"}}},
		{"label then instruction", "$L__BB1_2:\n\tret;",
			[]Stmt{&Label{Name: "$L__BB1_2"}, &Instruction{Opcode: "ret"}}},
		{"label on the same line", "done: exit;",
			[]Stmt{&Label{Name: "done"}, &Instruction{Opcode: "exit"}}},
		{"vector load with spaced address", "@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];",
			[]Stmt{&Instruction{Guard: &Guard{Reg: "%p1"}, Opcode: "ld", Modifiers: []string{".global", ".v4", ".b32"}, Operands: []Expr{
				&Vector{Elems: []Expr{n("%r1"), n("%r2"), n("%r3"), n("%r4")}},
				addr(&Binary{Op: "+", X: n("%rd1"), Y: i("0")})}}}},
		{"store with negative offset", "st.global.f32 [%rd1+-4], %f1;",
			[]Stmt{&Instruction{Opcode: "st", Modifiers: []string{".global", ".f32"}, Operands: []Expr{
				addr(&Binary{Op: "+", X: n("%rd1"), Y: &Unary{Op: "-", X: i("4")}}), n("%f1")}}}},
		{"two destinations", "shfl.sync.down.b32 %r11|%p2, %r6, %r9, %r8, %r10;",
			[]Stmt{&Instruction{Opcode: "shfl", Modifiers: []string{".sync", ".down", ".b32"}, Operands: []Expr{
				&Binary{Op: "|", X: n("%r11"), Y: n("%p2")}, n("%r6"), n("%r9"), n("%r8"), n("%r10")}}}},
		{"float and negative immediates", "mov.f32 %f1, 0f3F800000; mov.f64 %fd1, 0d3FF0000000000000; add.s32 %r1, %r2, -1; mov.u64 %rd1, 0x10U;",
			[]Stmt{
				&Instruction{Opcode: "mov", Modifiers: []string{".f32"}, Operands: []Expr{n("%f1"), &FloatLit{Text: "0f3F800000"}}},
				&Instruction{Opcode: "mov", Modifiers: []string{".f64"}, Operands: []Expr{n("%fd1"), &FloatLit{Text: "0d3FF0000000000000"}}},
				&Instruction{Opcode: "add", Modifiers: []string{".s32"}, Operands: []Expr{n("%r1"), n("%r2"), &Unary{Op: "-", X: i("1")}}},
				&Instruction{Opcode: "mov", Modifiers: []string{".u64"}, Operands: []Expr{n("%rd1"), i("0x10U")}}}},
		{"special registers", "mov.u32 %r1, %ctaid.x; mov.u64 %rd1, %globaltimer;",
			[]Stmt{
				&Instruction{Opcode: "mov", Modifiers: []string{".u32"}, Operands: []Expr{n("%r1"), n("%ctaid.x")}},
				&Instruction{Opcode: "mov", Modifiers: []string{".u64"}, Operands: []Expr{n("%rd1"), n("%globaltimer")}}}},
		{"call with return and arguments", "call.uni (retval0), \n_Z4polyfi, \n(\nparam0, \nparam1\n);",
			[]Stmt{&Instruction{Opcode: "call", Modifiers: []string{".uni"}, Operands: []Expr{
				&Paren{Elems: []Expr{n("retval0")}}, n("_Z4polyfi"), &Paren{Elems: []Expr{n("param0"), n("param1")}}}}}},
		{"indirect call through a prototype", "prot: .callprototype (.param .b32 _) _ (.param .b32 _, .param .b64 _);\ncall (%r1), %rd1, (%r2), prot;",
			[]Stmt{
				&Label{Name: "prot"},
				&CallPrototype{ReturnsParen: true, Returns: []*Var{{Space: ".param", Type: ".b32", Name: "_"}},
					Params: []*Var{{Space: ".param", Type: ".b32", Name: "_"}, {Space: ".param", Type: ".b64", Name: "_"}}},
				&Instruction{Opcode: "call", Operands: []Expr{&Paren{Elems: []Expr{n("%r1")}}, n("%rd1"), &Paren{Elems: []Expr{n("%r2")}}, n("prot")}}}},
		{"call scope with params", "{ // callseq 0, 0\n.reg .b32 temp_param_reg;\n.param .b32 param0;\nst.param.f32 [param0+0], %f1;\n}",
			[]Stmt{&Block{Stmts: []Stmt{
				&RegDecl{Type: ".b32", Names: []RegName{{"temp_param_reg", 0}}},
				&Var{Space: ".param", Type: ".b32", Name: "param0"},
				&Instruction{Opcode: "st", Modifiers: []string{".param", ".f32"}, Operands: []Expr{addr(&Binary{Op: "+", X: n("param0"), Y: i("0")}), n("%f1")}}}}}},
		{"inline asm scope", "{.reg .f16 low,high;\n  mov.b32 {low,high},%r6;\n  cvt.f32.f16 %f2, high;}",
			[]Stmt{&Block{Stmts: []Stmt{
				&RegDecl{Type: ".f16", Names: []RegName{{"low", 0}, {"high", 0}}},
				&Instruction{Opcode: "mov", Modifiers: []string{".b32"}, Operands: []Expr{&Vector{Elems: []Expr{n("low"), n("high")}}, n("%r6")}},
				&Instruction{Opcode: "cvt", Modifiers: []string{".f32", ".f16"}, Operands: []Expr{n("%f2"), n("high")}}}}}},
		{"loc with inlining", ".loc\t2 440 9, function_name $L__info_string0, inlined_at 1 17 2\nret;",
			[]Stmt{
				&Loc{Args: []Expr{i("2"), i("440"), i("9")}, Extra: []LocAttr{
					{Name: "function_name", Values: []Expr{n("$L__info_string0")}},
					{Name: "inlined_at", Values: []Expr{i("1"), i("17"), i("2")}}}},
				&Instruction{Opcode: "ret"}}},
		{"plain loc then instruction", ".loc 1 7 0\nmov.u32 %r1, 0;",
			[]Stmt{
				&Loc{Args: []Expr{i("1"), i("7"), i("0")}},
				&Instruction{Opcode: "mov", Modifiers: []string{".u32"}, Operands: []Expr{n("%r1"), i("0")}}}},
		{"pragma", `.pragma "nounroll";`, []Stmt{&Pragma{Strings: []string{`"nounroll"`}}}},
		{"local and shared declarations", ".local .align 16 .b8 __local_depot9[64];\n.shared .align 4 .b8 buf[128];\n.extern .shared .align 16 .b8 dyn[];",
			[]Stmt{
				&Var{Space: ".local", Align: "16", Type: ".b8", Name: "__local_depot9", Dims: []string{"64"}},
				&Var{Space: ".shared", Align: "4", Type: ".b8", Name: "buf", Dims: []string{"128"}},
				&Var{Linkage: ".extern", Space: ".shared", Align: "16", Type: ".b8", Name: "dyn", Dims: []string{""}}}},
		{"scoped modifiers and sink", "mbarrier.arrive.shared::cta.b64 _, [%r1]; ld.global.L1::evict_last.b32 %r2, [%rd1];",
			[]Stmt{
				&Instruction{Opcode: "mbarrier", Modifiers: []string{".arrive", ".shared::cta", ".b64"}, Operands: []Expr{n("_"), addr(n("%r1"))}},
				&Instruction{Opcode: "ld", Modifiers: []string{".global", ".L1::evict_last", ".b32"}, Operands: []Expr{n("%r2"), addr(n("%rd1"))}}}},
		{"texture with numeric modifier", "tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex0, {%f5, %f6}];",
			[]Stmt{&Instruction{Opcode: "tex", Modifiers: []string{".2d", ".v4", ".f32", ".f32"}, Operands: []Expr{
				&Vector{Elems: []Expr{n("%f1"), n("%f2"), n("%f3"), n("%f4")}},
				addr(n("tex0"), &Vector{Elems: []Expr{n("%f5"), n("%f6")}})}}}},
		{"operators", "mov.u32 %r1, (1<<4)|2 % 3;",
			[]Stmt{&Instruction{Opcode: "mov", Modifiers: []string{".u32"}, Operands: []Expr{n("%r1"),
				&Binary{Op: "|", X: &Paren{Elems: []Expr{&Binary{Op: "<<", X: i("1"), Y: i("4")}}}, Y: &Binary{Op: "%", X: i("2"), Y: i("3")}}}}}},
		{"branch table", "ts: .branchtargets $L1, $L2;\nbrx.idx %r1, ts;\nct: .calltargets f, g;",
			[]Stmt{
				&Label{Name: "ts"}, &Targets{Directive: ".branchtargets", Names: []string{"$L1", "$L2"}},
				&Instruction{Opcode: "brx", Modifiers: []string{".idx"}, Operands: []Expr{n("%r1"), n("ts")}},
				&Label{Name: "ct"}, &Targets{Directive: ".calltargets", Names: []string{"f", "g"}}}},
		{"cache modifiers with digits", "ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];",
			[]Stmt{&Instruction{Opcode: "ld", Modifiers: []string{".global", ".nc", ".L1::no_allocate", ".L2::256B", ".v4", ".u32"}, Operands: []Expr{
				&Vector{Elems: []Expr{n("%r1"), n("%r2"), n("%r3"), n("%r4")}}, addr(n("%rd1"))}}}},
		{"opcode without operands", "wgmma.fence.sync.aligned;",
			[]Stmt{&Instruction{Opcode: "wgmma", Modifiers: []string{".fence", ".sync", ".aligned"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bodyOf(t, tt.src)
			if !Equal(got, tt.want) {
				t.Errorf("parse %q:\n got  %s\n want %s", tt.src, stmtsText(got), stmtsText(tt.want))
			}
			// and the statements print back to the same tokens
			var b strings.Builder
			for _, s := range got {
				b.WriteString(WriteStmt(s) + "\n")
			}
			if err := CompareTokens(tt.src, b.String()); err != nil {
				t.Errorf("written %q: %v", b.String(), err)
			}
		})
	}
}

func stmtsText(ss []Stmt) string {
	var out []string
	for _, s := range ss {
		out = append(out, WriteStmt(s))
	}
	return strings.Join(out, " ⏎ ")
}

func TestParseModule(t *testing.T) {
	src := testHeader + `
.file	1 "/work/k.cu", 1700000000, 1234
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.visible .global .align 4 .u32 dev_counter;
.global .align 1 .b8 $str[3] = {104, 105, 0};
.global .u64 gp = generic(dev_counter)+4;
.extern .shared .align 16 .b8 global_smem[];
.weak .func _Z1fv
.noreturn
{
	exit;
}
.alias _Z1gv, _Z1fv;
.pragma "nounroll";
.visible .entry k(
	.param .u64 .ptr .global .align 1 k_param_0,
	.param .align 8 .b8 k_param_1[16]
)
.maxntid 256, 1, 1
.minnctapersm 2
.maxnreg 64
.explicitcluster
.reqnctapercluster 2, 1, 1
{
	ret;
}
	.section	.debug_info
	{
$L__info_string0:
.b32 .debug_loc+131
.b8 95,90,0
.b64 dev_counter
	}
	.section	.debug_macinfo	{	}
`
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	want := &Module{Version: "8.7", Target: []string{"sm_90"}, AddressSize: 64, Items: []Item{
		&File{Index: "1", Name: `"/work/k.cu"`, Extra: []string{"1700000000", "1234"}},
		&Function{Linkage: ".extern", Name: "vprintf", ReturnsParen: true,
			Returns: []*Var{{Space: ".param", Type: ".b32", Name: "func_retval0"}},
			Params:  []*Var{{Space: ".param", Type: ".b64", Name: "vprintf_param_0"}, {Space: ".param", Type: ".b64", Name: "vprintf_param_1"}}},
		&Var{Linkage: ".visible", Space: ".global", Align: "4", Type: ".u32", Name: "dev_counter"},
		&Var{Space: ".global", Align: "1", Type: ".b8", Name: "$str", Dims: []string{"3"}, Init: &Vector{Elems: []Expr{i("104"), i("105"), i("0")}}},
		&Var{Space: ".global", Type: ".u64", Name: "gp", Init: &Binary{Op: "+", X: &Call{Fn: "generic", Args: []Expr{n("dev_counter")}}, Y: i("4")}},
		&Var{Linkage: ".extern", Space: ".shared", Align: "16", Type: ".b8", Name: "global_smem", Dims: []string{""}},
		&Function{Linkage: ".weak", Name: "_Z1fv", NoParams: true, Perf: []*PerfDirective{{Name: ".noreturn"}},
			Body: &Block{Stmts: []Stmt{&Instruction{Opcode: "exit"}}}},
		&Alias{Name: "_Z1gv", Aliasee: "_Z1fv"},
		&Pragma{Strings: []string{`"nounroll"`}},
		&Function{Linkage: ".visible", Entry: true, Name: "k",
			Params: []*Var{
				{Space: ".param", Type: ".u64", Ptr: true, PtrSpace: ".global", PtrAlign: "1", Name: "k_param_0"},
				{Space: ".param", Align: "8", Type: ".b8", Name: "k_param_1", Dims: []string{"16"}}},
			Perf: []*PerfDirective{
				{Name: ".maxntid", Args: []string{"256", "1", "1"}}, {Name: ".minnctapersm", Args: []string{"2"}},
				{Name: ".maxnreg", Args: []string{"64"}}, {Name: ".explicitcluster"},
				{Name: ".reqnctapercluster", Args: []string{"2", "1", "1"}}},
			Body: &Block{Stmts: []Stmt{&Instruction{Opcode: "ret"}}}},
		&Section{Name: ".debug_info", Lines: []SectionLine{
			{Label: "$L__info_string0"},
			{Type: ".b32", Values: []Expr{&Binary{Op: "+", X: n(".debug_loc"), Y: i("131")}}},
			{Type: ".b8", Values: []Expr{i("95"), i("90"), i("0")}},
			{Type: ".b64", Values: []Expr{n("dev_counter")}}}},
		&Section{Name: ".debug_macinfo"},
	}}
	if !Equal(m, want) {
		t.Errorf("module differs:\n got:\n%s\nwant:\n%s", Write(m), Write(want))
	}
	if _, err := RoundTrip(src, false); err != nil {
		t.Error(err)
	}
	if got := m.KernelNames(); len(got) != 1 || got[0] != "k" {
		t.Errorf("KernelNames = %v, want [k]", got)
	}
	k := m.Items[9].(*Function)
	if k.Pos != (Pos{23, 1}) || k.Body.Pos != (Pos{32, 1}) {
		t.Errorf("positions: kernel at %s, body at %s; want 23:1 and 32:1", k.Pos, k.Body.Pos)
	}
	if args, ok := k.PerfValue(".maxnreg"); !ok || len(args) != 1 || args[0] != "64" {
		t.Errorf("PerfValue(.maxnreg) = %v %v", args, ok)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no header", ".entry k() { ret; }", "ptx:1:1: a PTX module starts with .version, found directive \".entry\""},
		{"bad address size", ".version 8.0\n.target sm_90\n.address_size 48\n", "ptx:3:15: .address_size must be 32 or 64, not 48"},
		{"unclosed scope", testHeader + ".entry k()\n{\n\tret;\n", "ptx:7:1: scope opened at 5:1 is not closed"},
		{"missing semicolon", testHeader + ".entry k()\n{\n\tret\n}\n", "ptx:7:1: missing ';' after ret"},
		{"zero register count", testHeader + ".entry k()\n{\n.reg .b32 %r<0>;\n}", "ptx:6:14: register count must be a positive decimal integer below 1<<24, not 0"},
		{"unknown register type", testHeader + ".entry k()\n{\n.reg .b33 %r;\n}", "ptx:6:6: expected a register type (.b32, .pred, ...), found directive \".b33\""},
		{"short float literal", testHeader + ".entry k()\n{\nmov.f32 %f1, 0f3F80;\n}", "ptx:6:14: float literal needs 8 hex digits"},
		{"stray character", testHeader + ".entry k()\n{\nmov.u32 %r1, #1;\n}", "ptx:6:14: unexpected '#'"},
		{"control byte", testHeader + "\x01", "ptx:4:1: unexpected byte 0x01"},
		{"unterminated string", testHeader + ".pragma \"abc\n;", "ptx:4:9: unterminated string"},
		{"unterminated comment", testHeader + "/* abc", "ptx:4:1: unterminated /* comment"},
		{"unknown header directive", testHeader + ".entry k()\n.maxwarps 4\n{ ret; }", "ptx:5:1: unexpected .maxwarps in the header of k"},
		{"instruction at module level", testHeader + "ret;", "ptx:4:1: expected a directive at module level, found identifier \"ret\""},
		{"empty vector", testHeader + ".entry k()\n{\nmov.b32 {}, %r1;\n}", "ptx:6:10: empty {}"},
		{"bad section data", testHeader + ".section .debug_info {\n.b33 1\n}", "ptx:5:1: expected a label or .b8/.b16/.b32/.b64 data in section .debug_info, found directive \".b33\""},
		{"deep nesting", testHeader + ".entry k()\n" + strings.Repeat("{", 300), "nesting deeper than 200"},
		{"deep expression", testHeader + ".entry k()\n{\nmov.u32 %r1, " + strings.Repeat("-", 1000) + "1;\n}", "nesting deeper than 200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.src)
			if err == nil {
				t.Fatalf("no error; parsed %d items", len(m.Items))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestParseFragment(t *testing.T) {
	frag := readFile(t, "testdata/probe_count.ptx")
	m, err := ParseFragment(frag)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Items) != 2 || m.Version != "" {
		t.Fatalf("fragment: %d items, version %q; want 2 items, no version", len(m.Items), m.Version)
	}
	if _, err := RoundTrip(frag, true); err != nil {
		t.Error(err)
	}
	if _, err := ParseFragment(testHeader); err == nil || !strings.Contains(err.Error(), "ptx:1:1: a fragment has no .version directive") {
		t.Errorf("fragment with a header: err %v", err)
	}
	if _, err := Parse(frag); err == nil {
		t.Error("Parse accepted a fragment without .version")
	}
}

func TestLex(t *testing.T) {
	toks, err := LexWithComments("ld.global.v4.b32 {%r1}, [%rd1+0x10]; // c\n%tid.x 1.5 .1d 0b101 017 4U \"s\\\"t\" /* x */")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, tk.Kind.String()+":"+tk.Text)
	}
	want := []string{"identifier:ld", "directive:.global", "directive:.v4", "directive:.b32", "punctuation:{", "register:%r1",
		"punctuation:}", "punctuation:,", "punctuation:[", "register:%rd1", "punctuation:+", "integer:0x10", "punctuation:]",
		"punctuation:;", "comment:// c", "register:%tid.x", "float:1.5", "directive:.1d", "integer:0b101", "integer:017",
		"integer:4U", `string:"s\"t"`, "comment:/* x */", "EOF:"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tokens:\n got  %v\n want %v", got, want)
	}
	if toks[15].Pos != (Pos{2, 1}) {
		t.Errorf("%%tid.x at %s, want 2:1", toks[15].Pos)
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		text string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"0x1F", 31, true}, {"0X10U", 16, true}, {"017", 15, true},
		{"0b101", 5, true}, {"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false}, {"0x", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseInt(tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}
