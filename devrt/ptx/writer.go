package ptx

import (
	"strings"
)

// Write prints m as PTX text. Parsing the result gives back an equal Module,
// and its token stream equals that of the text m was parsed from.
func Write(m *Module) string {
	var w writer
	w.module(m)
	return w.b.String()
}

// WriteStmt prints one statement as it appears in a body (no indentation,
// no newline): handy for reports and error messages.
func WriteStmt(s Stmt) string {
	var w writer
	w.stmt(s, 0)
	return strings.TrimSpace(w.b.String())
}

// WriteExpr prints one operand or initializer expression.
func WriteExpr(e Expr) string {
	var w writer
	w.expr(e)
	return w.b.String()
}

type writer struct {
	b strings.Builder
}

func (w *writer) s(parts ...string) {
	for _, p := range parts {
		w.b.WriteString(p)
	}
}

func (w *writer) indent(depth int) {
	for i := 0; i < depth; i++ {
		w.b.WriteByte('\t')
	}
}

func (w *writer) module(m *Module) {
	if m.Version != "" {
		w.s(".version ", m.Version, "\n")
	}
	if len(m.Target) > 0 {
		w.s(".target ", strings.Join(m.Target, ", "), "\n")
	}
	if m.AddressSize != 0 {
		if m.AddressSize == 32 {
			w.s(".address_size 32\n")
		} else {
			w.s(".address_size 64\n")
		}
	}
	for _, it := range m.Items {
		w.s("\n")
		w.item(it)
	}
}

func (w *writer) item(it Item) {
	switch it := it.(type) {
	case *Function:
		w.function(it)
	case *Var:
		w.variable(it)
		w.s(";\n")
	case *File:
		w.s(".file ", it.Index, " ", it.Name)
		for _, e := range it.Extra {
			w.s(", ", e)
		}
		w.s("\n")
	case *Section:
		w.s(".section ", it.Name, "\n{\n")
		for _, l := range it.Lines {
			if l.Label != "" {
				w.s(l.Label, ":\n")
				continue
			}
			w.s(l.Type, " ")
			w.exprs(l.Values, ",")
			w.s("\n")
		}
		w.s("}\n")
	case *Pragma:
		w.pragma(it)
		w.s("\n")
	case *Alias:
		w.s(".alias ", it.Name, ", ", it.Aliasee, ";\n")
	}
}

func (w *writer) pragma(p *Pragma) {
	w.s(".pragma ", strings.Join(p.Strings, ", "), ";")
}

func (w *writer) function(f *Function) {
	if f.Linkage != "" {
		w.s(f.Linkage, " ")
	}
	if f.Entry {
		w.s(".entry ")
	} else {
		w.s(".func ")
		if f.Attrs != nil {
			w.s(".attribute(")
			w.exprs(f.Attrs, ", ")
			w.s(") ")
		}
		if f.ReturnsParen {
			w.params(f.Returns, false)
			w.s(" ")
		}
	}
	w.s(f.Name)
	if !f.NoParams {
		w.params(f.Params, f.Body != nil)
	}
	w.s("\n")
	for _, d := range f.Perf {
		w.s(d.Name)
		if len(d.Args) > 0 {
			w.s(" ", strings.Join(d.Args, ", "))
		}
		if d.Name == ".pragma" {
			w.s(";")
		}
		w.s("\n")
	}
	if f.Body == nil {
		w.s(";\n")
		return
	}
	w.blockLines(f.Body, 0)
}

func (w *writer) params(ps []*Var, multiline bool) {
	if len(ps) == 0 {
		w.s("()")
		return
	}
	if !multiline {
		w.s("(")
		for i, p := range ps {
			if i > 0 {
				w.s(", ")
			}
			w.variable(p)
		}
		w.s(")")
		return
	}
	w.s("(\n")
	for i, p := range ps {
		w.s("\t")
		w.variable(p)
		if i < len(ps)-1 {
			w.s(",")
		}
		w.s("\n")
	}
	w.s(")")
}

func (w *writer) variable(v *Var) {
	if v.Linkage != "" {
		w.s(v.Linkage, " ")
	}
	w.s(v.Space)
	if v.Attrs != nil {
		w.s(" .attribute(")
		w.exprs(v.Attrs, ", ")
		w.s(")")
	}
	if v.Align != "" {
		w.s(" .align ", v.Align)
	}
	if v.Vector != "" {
		w.s(" ", v.Vector)
	}
	w.s(" ", v.Type)
	if v.Ptr {
		w.s(" .ptr")
		if v.PtrSpace != "" {
			w.s(" ", v.PtrSpace)
		}
		if v.PtrAlign != "" {
			w.s(" .align ", v.PtrAlign)
		}
	}
	w.s(" ", v.Name)
	for _, d := range v.Dims {
		w.s("[", d, "]")
	}
	if v.Init != nil {
		w.s(" = ")
		w.expr(v.Init)
	}
}

// blockLines prints a scope: '{' and '}' at depth, statements one deeper.
func (w *writer) blockLines(b *Block, depth int) {
	w.indent(depth)
	w.s("{\n")
	for _, st := range b.Stmts {
		w.stmt(st, depth+1)
	}
	w.indent(depth)
	w.s("}\n")
}

func (w *writer) stmt(st Stmt, depth int) {
	switch st := st.(type) {
	case *Block:
		w.blockLines(st, depth)
		return
	case *Label:
		w.s(st.Name, ":\n")
		return
	}
	w.indent(depth)
	switch st := st.(type) {
	case *Instruction:
		w.instruction(st)
	case *RegDecl:
		w.s(".reg")
		if st.Vector != "" {
			w.s(" ", st.Vector)
		}
		w.s(" ", st.Type, " ")
		for i, n := range st.Names {
			if i > 0 {
				w.s(", ")
			}
			w.s(n.Name)
			if n.Count > 0 {
				w.s("<", itoa(n.Count), ">")
			}
		}
		w.s(";")
	case *Var:
		w.variable(st)
		w.s(";")
	case *Loc:
		w.s(".loc\t")
		w.exprs(st.Args, " ")
		for _, a := range st.Extra {
			w.s(", ", a.Name, " ")
			w.exprs(a.Values, " ")
		}
	case *Pragma:
		w.pragma(st)
	case *Targets:
		w.s(st.Directive, " ", strings.Join(st.Names, ", "), ";")
	case *CallPrototype:
		w.s(".callprototype ")
		if st.ReturnsParen {
			w.params(st.Returns, false)
			w.s(" ")
		}
		w.s("_ ")
		w.params(st.Params, false)
		if st.NoReturn {
			w.s(" .noreturn")
		}
		w.s(";")
	}
	w.s("\n")
}

func (w *writer) instruction(in *Instruction) {
	if in.Guard != nil {
		w.s("@")
		if in.Guard.Neg {
			w.s("!")
		}
		w.s(in.Guard.Reg, " ")
	}
	w.s(in.Opcode)
	for _, m := range in.Modifiers {
		w.s(m)
	}
	if len(in.Operands) > 0 {
		w.s(" \t")
		w.exprs(in.Operands, ", ")
	}
	w.s(";")
}

func (w *writer) exprs(es []Expr, sep string) {
	for i, e := range es {
		if i > 0 {
			w.s(sep)
		}
		w.expr(e)
	}
}

func (w *writer) expr(e Expr) {
	switch e := e.(type) {
	case *Name:
		w.s(e.Text)
	case *IntLit:
		w.s(e.Text)
	case *FloatLit:
		w.s(e.Text)
	case *StrLit:
		w.s(e.Text)
	case *Unary:
		w.s(e.Op)
		w.expr(e.X)
	case *Binary:
		w.expr(e.X)
		if e.Op == "%" {
			w.s(" % ")
		} else {
			w.s(e.Op)
		}
		w.expr(e.Y)
	case *Address:
		w.s("[")
		w.exprs(e.Elems, ", ")
		w.s("]")
	case *Vector:
		w.s("{")
		w.exprs(e.Elems, ", ")
		w.s("}")
	case *Paren:
		w.s("(")
		w.exprs(e.Elems, ", ")
		w.s(")")
	case *Call:
		w.s(e.Fn, "(")
		w.exprs(e.Args, ", ")
		w.s(")")
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var buf [20]byte
	i := len(buf)
	for n > 0 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}
