package ptx

import (
	"fmt"
	"strings"
)

// maxDepth bounds nesting of scopes and expressions so that hostile input
// cannot exhaust the stack.
const maxDepth = 200

// Parse parses a complete PTX module, which must start with .version.
func Parse(src string) (*Module, error) { return parse(src, false) }

// ParseFragment parses a fragment: module items without the
// .version/.target/.address_size header (what devrt/jit emits).
func ParseFragment(src string) (*Module, error) { return parse(src, true) }

type parser struct {
	toks  []Token
	i     int
	depth int
}

// bail carries a syntax error out of the recursive descent; parse recovers
// it. Only *Error values travel this way, so a real bug still panics in tests.
type bail struct{ err *Error }

func parse(src string, fragment bool) (m *Module, err error) {
	toks, err := Lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bail)
			if !ok {
				panic(r)
			}
			m, err = nil, b.err
		}
	}()
	m = &Module{}
	if !fragment {
		p.header(m)
	}
	for p.peek().Kind != EOF {
		t := p.peek()
		if fragment && (t.Text == ".version" || t.Text == ".target" || t.Text == ".address_size") && t.Kind == Directive {
			p.failAt(t, "a fragment has no %s directive", t.Text)
		}
		m.Items = append(m.Items, p.item())
	}
	return m, nil
}

func (p *parser) peek() Token { return p.toks[p.i] }

func (p *parser) peekN(n int) Token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() Token {
	t := p.toks[p.i]
	if t.Kind != EOF {
		p.i++
	}
	return t
}

func (p *parser) failAt(t Token, format string, args ...any) {
	panic(bail{&Error{Pos: t.Pos, Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) is(kind Kind, text string) bool {
	t := p.peek()
	return t.Kind == kind && t.Text == text
}

func (p *parser) isPunct(s string) bool { return p.is(Punct, s) }

func (p *parser) accept(kind Kind, text string) bool {
	if p.is(kind, text) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectPunct(s string, what string) Token {
	t := p.peek()
	if t.Kind != Punct || t.Text != s {
		p.failAt(t, "expected %q %s, found %s", s, what, t)
	}
	return p.next()
}

func (p *parser) expectKind(k Kind, what string) Token {
	t := p.peek()
	if t.Kind != k {
		p.failAt(t, "expected %s, found %s", what, t)
	}
	return p.next()
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.failAt(p.peek(), "nesting deeper than %d", maxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// header parses .version, .target and .address_size, in that order.
func (p *parser) header(m *Module) {
	t := p.peek()
	if !p.accept(Directive, ".version") {
		p.failAt(t, "a PTX module starts with .version, found %s", t)
	}
	v := p.expectKind(Float, "version number (like 8.7)")
	m.Version = v.Text
	t = p.peek()
	if !p.accept(Directive, ".target") {
		p.failAt(t, "expected .target after .version, found %s", t)
	}
	for {
		m.Target = append(m.Target, p.expectKind(Ident, "target name (like sm_90)").Text)
		if !p.accept(Punct, ",") {
			break
		}
	}
	if p.accept(Directive, ".address_size") {
		t := p.expectKind(Int, "address size")
		switch t.Text {
		case "32":
			m.AddressSize = 32
		case "64":
			m.AddressSize = 64
		default:
			p.failAt(t, ".address_size must be 32 or 64, not %s", t.Text)
		}
	}
}

var linkages = map[string]bool{".extern": true, ".visible": true, ".weak": true, ".common": true}

// stateSpaces are the spaces a variable may be declared in.
var stateSpaces = map[string]bool{
	".global": true, ".const": true, ".shared": true, ".local": true,
	".param": true, ".tex": true, ".reg": true,
}

func (p *parser) item() Item {
	t := p.peek()
	if t.Kind != Directive {
		p.failAt(t, "expected a directive at module level, found %s", t)
	}
	switch t.Text {
	case ".file":
		return p.file()
	case ".section":
		return p.section()
	case ".pragma":
		return p.pragma()
	case ".alias":
		p.next()
		a := &Alias{Pos: t.Pos}
		a.Name = p.expectKind(Ident, "alias name").Text
		p.expectPunct(",", "in .alias")
		a.Aliasee = p.expectKind(Ident, "aliased function").Text
		p.expectPunct(";", "after .alias")
		return a
	case ".entry", ".func":
		return p.function("")
	}
	if linkages[t.Text] {
		p.next()
		n := p.peek()
		if n.Kind == Directive && (n.Text == ".entry" || n.Text == ".func") {
			f := p.function(t.Text)
			f.Pos = t.Pos
			return f
		}
		v := p.variable(t.Text, false)
		v.Pos = t.Pos
		p.expectPunct(";", "after a variable declaration")
		return v
	}
	if stateSpaces[t.Text] && t.Text != ".reg" && t.Text != ".param" && t.Text != ".local" {
		v := p.variable("", false)
		p.expectPunct(";", "after a variable declaration")
		return v
	}
	p.failAt(t, "unexpected %s at module level", t.Text)
	return nil
}

func (p *parser) file() *File {
	t := p.next()
	f := &File{Pos: t.Pos}
	f.Index = p.expectKind(Int, "file index").Text
	f.Name = p.expectKind(String, "file name").Text
	for p.isPunct(",") && p.peek().Pos.Line == t.Pos.Line {
		p.next()
		f.Extra = append(f.Extra, p.expectKind(Int, "timestamp or size").Text)
	}
	return f
}

func (p *parser) pragma() *Pragma {
	t := p.next()
	pr := &Pragma{Pos: t.Pos}
	for {
		pr.Strings = append(pr.Strings, p.expectKind(String, "pragma string").Text)
		if !p.accept(Punct, ",") {
			break
		}
	}
	p.expectPunct(";", "after .pragma")
	return pr
}

var sectionData = map[string]bool{".b8": true, ".b16": true, ".b32": true, ".b64": true}

func (p *parser) section() *Section {
	t := p.next()
	s := &Section{Pos: t.Pos}
	s.Name = p.expectKind(Directive, "section name (like .debug_info)").Text
	p.expectPunct("{", "to open the section")
	for !p.isPunct("}") {
		n := p.peek()
		switch {
		case n.Kind == Ident && p.peekN(1).Kind == Punct && p.peekN(1).Text == ":":
			p.i += 2
			s.Lines = append(s.Lines, SectionLine{Label: n.Text})
		case n.Kind == Directive && sectionData[n.Text]:
			p.next()
			line := SectionLine{Type: n.Text}
			for {
				line.Values = append(line.Values, p.expr())
				if !p.accept(Punct, ",") {
					break
				}
			}
			s.Lines = append(s.Lines, line)
		default:
			p.failAt(n, "expected a label or .b8/.b16/.b32/.b64 data in section %s, found %s", s.Name, n)
		}
	}
	p.next()
	return s
}

// knownTypes are the fundamental and opaque PTX types a declaration may use.
var knownTypes = map[string]bool{}

func init() {
	for _, t := range strings.Fields(".b8 .b16 .b32 .b64 .b128 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 " +
		".f16 .f16x2 .f32 .f64 .bf16 .bf16x2 .tf32 .e4m3 .e5m2 .e4m3x2 .e5m2x2 .e2m1x2 .e2m3x2 .e3m2x2 .ue8m0x2 " +
		".pred .texref .samplerref .surfref") {
		knownTypes[t] = true
	}
}

var vectorPrefixes = map[string]bool{".v2": true, ".v4": true, ".v8": true}

// variable parses `space [.attribute(..)] [.align N] [.vN] type [.ptr [space] [.align N]] name [dims] [= init]`
// (without the trailing ';'). The linkage has been consumed.
func (p *parser) variable(linkage string, param bool) *Var {
	t := p.next()
	v := &Var{Pos: t.Pos, Linkage: linkage, Space: t.Text}
	if !stateSpaces[t.Text] {
		p.failAt(t, "expected a state space (.global, .shared, .param, ...), found %s", t)
	}
	if p.is(Directive, ".attribute") {
		p.next()
		v.Attrs = p.parenList("attribute").Elems
	}
	if p.accept(Directive, ".align") {
		v.Align = p.expectKind(Int, "alignment").Text
	}
	if n := p.peek(); n.Kind == Directive && vectorPrefixes[n.Text] {
		v.Vector = p.next().Text
	}
	ty := p.peek()
	if ty.Kind != Directive || !knownTypes[ty.Text] {
		p.failAt(ty, "expected a type (.b32, .f32, .u64, ...), found %s", ty)
	}
	v.Type = p.next().Text
	if p.accept(Directive, ".ptr") {
		v.Ptr = true
		if n := p.peek(); n.Kind == Directive && stateSpaces[n.Text] {
			v.PtrSpace = p.next().Text
		}
		if p.accept(Directive, ".align") {
			v.PtrAlign = p.expectKind(Int, "alignment").Text
		}
	}
	v.Name = p.expectKind(Ident, "a name").Text
	for p.isPunct("[") {
		p.next()
		if p.accept(Punct, "]") {
			v.Dims = append(v.Dims, "")
			continue
		}
		v.Dims = append(v.Dims, p.expectKind(Int, "array size").Text)
		p.expectPunct("]", "after the array size")
	}
	if !param && p.accept(Punct, "=") {
		v.Init = p.expr()
	}
	return v
}

// paramList parses `( [param {, param}] )`.
func (p *parser) paramList(what string) []*Var {
	p.expectPunct("(", "to open "+what)
	var out []*Var
	if p.accept(Punct, ")") {
		return out
	}
	for {
		t := p.peek()
		if !p.is(Directive, ".param") && !p.is(Directive, ".reg") {
			p.failAt(t, "expected .param or .reg in %s, found %s", what, t)
		}
		out = append(out, p.variable("", true))
		if p.accept(Punct, ")") {
			return out
		}
		p.expectPunct(",", "between parameters")
	}
}

var perfDirectives = map[string]bool{
	".maxnreg": true, ".maxntid": true, ".reqntid": true, ".minnctapersm": true, ".maxnctapersm": true,
	".maxclusterrank": true, ".reqnctapercluster": true, ".explicitcluster": true, ".noreturn": true,
	".blocksareclusters": true, ".abi_preserve": true, ".abi_preserve_control": true, ".pragma": true,
}

func (p *parser) function(linkage string) *Function {
	t := p.next()
	f := &Function{Pos: t.Pos, Linkage: linkage, Entry: t.Text == ".entry"}
	if !f.Entry {
		if p.is(Directive, ".attribute") {
			p.next()
			f.Attrs = p.parenList("attribute").Elems
		}
		if p.isPunct("(") {
			f.Returns = p.paramList("the return parameters")
			f.ReturnsParen = true
		}
	}
	f.Name = p.expectKind(Ident, "the function name").Text
	if p.isPunct("(") {
		f.Params = p.paramList("the parameters")
	} else {
		f.NoParams = true
	}
	for {
		n := p.peek()
		if n.Kind != Directive {
			break
		}
		if !perfDirectives[n.Text] {
			p.failAt(n, "unexpected %s in the header of %s", n.Text, f.Name)
		}
		p.next()
		d := &PerfDirective{Pos: n.Pos, Name: n.Text}
		if n.Text == ".pragma" {
			for {
				d.Args = append(d.Args, p.expectKind(String, "pragma string").Text)
				if !p.accept(Punct, ",") {
					break
				}
			}
			p.expectPunct(";", "after .pragma")
		} else if p.peek().Kind == Int {
			for {
				d.Args = append(d.Args, p.expectKind(Int, "an integer argument of "+n.Text).Text)
				if !p.accept(Punct, ",") {
					break
				}
			}
		}
		f.Perf = append(f.Perf, d)
	}
	if p.accept(Punct, ";") {
		return f
	}
	if !p.isPunct("{") {
		p.failAt(p.peek(), "expected the body '{' or ';' after the header of %s, found %s", f.Name, p.peek())
	}
	f.Body = p.block()
	return f
}

// block parses `{ stmts }`.
func (p *parser) block() *Block {
	p.enter()
	defer p.leave()
	t := p.expectPunct("{", "to open a scope")
	b := &Block{Pos: t.Pos}
	for !p.isPunct("}") {
		if p.peek().Kind == EOF {
			p.failAt(p.peek(), "scope opened at %s is not closed", t.Pos)
		}
		b.Stmts = append(b.Stmts, p.stmt())
	}
	p.next()
	return b
}

func (p *parser) stmt() Stmt {
	t := p.peek()
	switch t.Kind {
	case Punct:
		switch t.Text {
		case "{":
			return p.block()
		case "@":
			return p.instruction()
		}
	case Ident:
		if n := p.peekN(1); n.Kind == Punct && n.Text == ":" {
			p.i += 2
			return &Label{Pos: t.Pos, Name: t.Text}
		}
		return p.instruction()
	case Directive:
		switch t.Text {
		case ".reg":
			return p.regDecl()
		case ".loc":
			return p.loc()
		case ".pragma":
			return p.pragma()
		case ".callprototype":
			return p.callPrototype()
		case ".branchtargets", ".calltargets":
			p.next()
			tg := &Targets{Pos: t.Pos, Directive: t.Text}
			for {
				tg.Names = append(tg.Names, p.expectKind(Ident, "a label or function name in "+t.Text).Text)
				if !p.accept(Punct, ",") {
					break
				}
			}
			p.expectPunct(";", "after "+t.Text)
			return tg
		}
		if stateSpaces[t.Text] {
			v := p.variable("", false)
			p.expectPunct(";", "after a variable declaration")
			return v
		}
		if linkages[t.Text] && p.peekN(1).Kind == Directive && stateSpaces[p.peekN(1).Text] {
			p.next()
			v := p.variable(t.Text, false)
			v.Pos = t.Pos
			p.expectPunct(";", "after a variable declaration")
			return v
		}
		p.failAt(t, "unexpected directive %s in a function body", t.Text)
	}
	p.failAt(t, "expected an instruction, label, declaration or scope, found %s", t)
	return nil
}

func (p *parser) regDecl() *RegDecl {
	t := p.next()
	d := &RegDecl{Pos: t.Pos}
	if n := p.peek(); n.Kind == Directive && vectorPrefixes[n.Text] {
		d.Vector = p.next().Text
	}
	ty := p.peek()
	if ty.Kind != Directive || !knownTypes[ty.Text] {
		p.failAt(ty, "expected a register type (.b32, .pred, ...), found %s", ty)
	}
	d.Type = p.next().Text
	for {
		n := p.peek()
		if n.Kind != Reg && n.Kind != Ident {
			p.failAt(n, "expected a register name, found %s", n)
		}
		p.next()
		rn := RegName{Name: n.Text}
		if p.accept(Punct, "<") {
			c := p.expectKind(Int, "register count")
			cnt, ok := parseSmallInt(c.Text)
			if !ok || cnt <= 0 {
				p.failAt(c, "register count must be a positive decimal integer below 1<<24, not %s", c.Text)
			}
			rn.Count = cnt
			p.expectPunct(">", "after the register count")
		}
		d.Names = append(d.Names, rn)
		if !p.accept(Punct, ",") {
			break
		}
	}
	p.expectPunct(";", "after .reg")
	return d
}

// parseSmallInt parses a plain decimal integer below 1<<24.
func parseSmallInt(s string) (int, bool) {
	if s == "" || len(s) > 8 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n < 1<<24
}

func (p *parser) loc() *Loc {
	t := p.next()
	l := &Loc{Pos: t.Pos}
	for i := 0; i < 3; i++ {
		l.Args = append(l.Args, &IntLit{Text: p.expectKind(Int, "file, line and column of .loc").Text})
	}
	for p.isPunct(",") && p.peek().Pos.Line == t.Pos.Line {
		p.next()
		a := LocAttr{Name: p.expectKind(Ident, "a .loc attribute name").Text}
		for {
			n := p.peek()
			if n.Pos.Line != t.Pos.Line || (n.Kind != Int && n.Kind != Ident) {
				break
			}
			a.Values = append(a.Values, p.primary())
		}
		if len(a.Values) == 0 {
			p.failAt(p.peek(), ".loc attribute %s needs a value", a.Name)
		}
		l.Extra = append(l.Extra, a)
	}
	return l
}

func (p *parser) callPrototype() *CallPrototype {
	t := p.next()
	c := &CallPrototype{Pos: t.Pos}
	if p.isPunct("(") {
		c.Returns = p.paramList("the prototype's return parameters")
		c.ReturnsParen = true
	}
	n := p.expectKind(Ident, "'_' in .callprototype")
	if n.Text != "_" {
		p.failAt(n, "a .callprototype names no function: expected '_', found %q", n.Text)
	}
	c.Params = p.paramList("the prototype's parameters")
	if p.accept(Directive, ".noreturn") {
		c.NoReturn = true
	}
	p.expectPunct(";", "after .callprototype")
	return c
}

func (p *parser) instruction() *Instruction {
	in := &Instruction{Pos: p.peek().Pos}
	if p.accept(Punct, "@") {
		g := &Guard{}
		if p.accept(Punct, "!") {
			g.Neg = true
		}
		r := p.peek()
		if r.Kind != Reg && r.Kind != Ident {
			p.failAt(r, "expected a predicate register after '@', found %s", r)
		}
		g.Reg = p.next().Text
		in.Guard = g
	}
	op := p.expectKind(Ident, "an opcode")
	in.Opcode = op.Text
	for p.peek().Kind == Directive {
		in.Modifiers = append(in.Modifiers, p.next().Text)
	}
	if p.accept(Punct, ";") {
		return in
	}
	if t := p.peek(); t.Kind == EOF || t.Kind == Punct && t.Text == "}" {
		p.failAt(t, "missing ';' after %s", in.Opcode)
	}
	for {
		in.Operands = append(in.Operands, p.expr())
		if p.accept(Punct, ";") {
			return in
		}
		if !p.isPunct(",") {
			p.failAt(p.peek(), "expected ',' or ';' after an operand of %s, found %s", in.Opcode, p.peek())
		}
		p.next()
	}
}

// Binary operator precedence, loosest first.
var binLevels = [][]string{{"|"}, {"^"}, {"&"}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"}}

func (p *parser) expr() Expr {
	p.enter()
	defer p.leave()
	return p.binary(0)
}

// binOp returns the operator at the cursor if it is one of ops.
func (p *parser) binOp(ops []string) string {
	t := p.peek()
	if t.Kind != Punct {
		return ""
	}
	for _, op := range ops {
		switch {
		case len(op) == 1 && t.Text == op:
			return op
		case len(op) == 2 && t.Text == op[:1]:
			n := p.peekN(1)
			if n.Kind == Punct && n.Text == op[1:] {
				return op
			}
		}
	}
	return ""
}

func (p *parser) binary(level int) Expr {
	if level == len(binLevels) {
		return p.unary()
	}
	x := p.binary(level + 1)
	for {
		op := p.binOp(binLevels[level])
		if op == "" {
			return x
		}
		p.i += len(op)
		p.enter()
		y := p.binary(level + 1)
		p.leave()
		x = &Binary{Op: op, X: x, Y: y}
	}
}

func (p *parser) unary() Expr {
	t := p.peek()
	if t.Kind == Punct && (t.Text == "-" || t.Text == "!" || t.Text == "~") {
		p.next()
		p.enter()
		defer p.leave()
		return &Unary{Op: t.Text, X: p.unary()}
	}
	return p.primary()
}

func (p *parser) primary() Expr {
	t := p.peek()
	switch t.Kind {
	case Reg, Directive:
		p.next()
		return &Name{Text: t.Text}
	case Ident:
		p.next()
		if p.isPunct("(") {
			return &Call{Fn: t.Text, Args: p.parenList("arguments").Elems}
		}
		return &Name{Text: t.Text}
	case Int:
		p.next()
		return &IntLit{Text: t.Text}
	case Float:
		p.next()
		return &FloatLit{Text: t.Text}
	case String:
		p.next()
		return &StrLit{Text: t.Text}
	case Punct:
		switch t.Text {
		case "[":
			return &Address{Elems: p.list("[", "]", false)}
		case "{":
			return &Vector{Elems: p.list("{", "}", false)}
		case "(":
			return p.parenList("a list")
		}
	}
	p.failAt(t, "expected an operand, found %s", t)
	return nil
}

func (p *parser) parenList(what string) *Paren {
	if !p.isPunct("(") {
		p.failAt(p.peek(), "expected '(' to open %s, found %s", what, p.peek())
	}
	return &Paren{Elems: p.list("(", ")", true)}
}

// list parses open expr {, expr} close; empty lists only where allowed.
func (p *parser) list(open, close string, allowEmpty bool) []Expr {
	p.enter()
	defer p.leave()
	t := p.expectPunct(open, "")
	if p.isPunct(close) {
		if !allowEmpty {
			p.failAt(p.peek(), "empty %s%s", open, close)
		}
		p.next()
		return []Expr{}
	}
	var out []Expr
	for {
		out = append(out, p.expr())
		if p.accept(Punct, close) {
			return out
		}
		if !p.isPunct(",") {
			p.failAt(p.peek(), "expected ',' or %q in the list opened at %s, found %s", close, t.Pos, p.peek())
		}
		p.next()
	}
}
