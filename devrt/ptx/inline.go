package ptx

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Inlining (Spec.Inline): a probe body copied into the kernel at its site
// instead of called. ptxas keeps a .func call as a real call (CALL.REL.NOINC
// in SASS): the kernel's live values move to the ABI's registers around
// it and nothing is scheduled across it, which on a short memory-bound
// kernel costs more than an empty probe body. Inlined, the body is one more
// basic block of the kernel: ptxas drops what it does not need (the empty
// probe's shuffles) and schedules the rest with the kernel's own code.
//
// A copy is a nested scope holding the function's register declarations,
// its labels renamed for the copy, its parameter reads replaced by the
// site's values, its return-value store by a move into the carried
// register and its rets by a branch past the copy. A function whose body
// does anything else with its parameters, declares memory (.local,
// .shared), ends a thread (exit), or branches indirectly is called as
// before, and so is one whose names the kernel already uses.

// MaxInlineExits is the most exit sites at which a kernel gets copies of
// its exit probes: past it, every exit calls them, so that a kernel with
// many returns does not grow by a probe body per return.
const MaxInlineExits = 16

// inlineFunc is a .func checked for inlining.
type inlineFunc struct {
	f      *Function
	params map[string]int // parameter name -> position
	ret    string         // the return parameter's name, "" for none
	names  []RegName      // every register and variable it declares (Count > 0: a %r<N> family)
	labels []string
}

// prepareInline checks that f's body can be copied into a kernel; the
// reason is "" when it can.
func prepareInline(f *Function) (*inlineFunc, string) {
	fn := &inlineFunc{f: f, params: map[string]int{}}
	for i, p := range f.Params {
		fn.params[p.Name] = i
	}
	if len(f.Returns) == 1 {
		fn.ret = f.Returns[0].Name
	}
	if slices.ContainsFunc(f.Perf, func(d *PerfDirective) bool { return d.Name != ".pragma" }) {
		return nil, "has performance directives"
	}
	why := ""
	var walk func(b *Block, top bool)
	walk = func(b *Block, top bool) {
		for _, s := range b.Stmts {
			if why != "" {
				return
			}
			switch s := s.(type) {
			case *Block:
				walk(s, false)
			case *RegDecl:
				fn.names = append(fn.names, s.Names...)
			case *Var:
				if top || s.Space != ".param" {
					why = fmt.Sprintf("declares %s %s (only registers, and .params of nested calls, are copied)", s.Space, s.Name)
				}
				fn.names = append(fn.names, RegName{Name: s.Name})
			case *Label:
				fn.labels = append(fn.labels, s.Name)
			case *CallPrototype, *Targets:
				why = "branches or calls indirectly"
			case *Instruction:
				why = fn.checkInstruction(s)
			}
		}
	}
	walk(f.Body, true)
	for _, n := range fn.names {
		if strings.HasPrefix(n.Name, RegPrefix) || slices.Contains(reservedNames, n.Name) {
			why = "declares " + n.Name + ", a name the rewriter reserves"
		}
	}
	if why != "" {
		return nil, why
	}
	return fn, ""
}

// checkInstruction returns why in cannot be copied ("" if it can): the
// parameters may only be read whole by ld.param, the return value only
// stored whole by st.param.
func (fn *inlineFunc) checkInstruction(in *Instruction) string {
	if in.Opcode == "exit" {
		return "ends the thread (exit)"
	}
	if in.Opcode == "brx" {
		return "branches indirectly"
	}
	if p, ok := fn.paramAccess(in); ok {
		switch {
		case in.Opcode == "ld" && fn.isParam(p) && is64(in):
			return ""
		case in.Opcode == "st" && p == fn.ret && is64(in):
			return ""
		}
		return fmt.Sprintf("uses its parameter %s in %s", p, WriteStmt(in))
	}
	used := ""
	for _, op := range in.Operands {
		walkExpr(op, func(e Expr) {
			if n, ok := e.(*Name); ok && (n.Text == fn.ret || fn.isParam(n.Text)) {
				used = n.Text
			}
		})
	}
	if used != "" {
		return fmt.Sprintf("uses its parameter %s in %s", used, WriteStmt(in))
	}
	return ""
}

// is64 tells whether in moves a whole 64-bit value (.u64, .b64, .s64).
func is64(in *Instruction) bool {
	return slices.ContainsFunc(in.Modifiers, func(m string) bool { return m == ".u64" || m == ".b64" || m == ".s64" })
}

func (fn *inlineFunc) isParam(name string) bool {
	_, ok := fn.params[name]
	return ok
}

// paramAccess tells whether in is an ld.param or st.param of one of the
// function's own parameters, addressed as a plain [name]; it returns the
// name.
func (fn *inlineFunc) paramAccess(in *Instruction) (string, bool) {
	if (in.Opcode != "ld" && in.Opcode != "st") || in.StateSpace() != ".param" {
		return "", false
	}
	i := 1
	if in.Opcode == "st" {
		i = 0
	}
	if len(in.Operands) != 2 {
		return "", false
	}
	a, ok := in.Operands[i].(*Address)
	if !ok || len(a.Elems) != 1 {
		return "", false
	}
	n, ok := a.Elems[0].(*Name)
	if !ok || (!fn.isParam(n.Text) && n.Text != fn.ret) {
		return "", false
	}
	return n.Text, true
}

// collides tells whether a name fn declares is also declared by the
// kernel (names: its registers, variables and parameters), or could be:
// a %r<N> family against a name or family sharing its prefix. The copy's
// scope would shadow the kernel's name, which the copy never uses, but
// not every PTX consumer is known to accept shadowing.
func (fn *inlineFunc) collides(names []RegName) string {
	for _, a := range fn.names {
		for _, b := range names {
			if regOverlap(a, b) {
				return a.Name
			}
		}
	}
	return ""
}

func regOverlap(a, b RegName) bool {
	switch {
	case a.Count == 0 && b.Count == 0:
		return a.Name == b.Name
	case a.Count > 0 && b.Count > 0:
		return strings.HasPrefix(a.Name, b.Name) || strings.HasPrefix(b.Name, a.Name)
	case a.Count > 0:
		a, b = b, a
	}
	// a is a name, b a family
	rest, ok := strings.CutPrefix(a.Name, b.Name)
	if !ok || rest == "" {
		return ok
	}
	_, err := strconv.ParseUint(rest, 10, 64)
	return err == nil
}

// declaredNames lists every register, variable and parameter f declares.
func declaredNames(f *Function) []RegName {
	var out []RegName
	for _, p := range f.Params {
		out = append(out, RegName{Name: p.Name})
	}
	Walk(f.Body, func(s Stmt, _ *Block, _ int) bool {
		switch s := s.(type) {
		case *RegDecl:
			out = append(out, s.Names...)
		case *Var:
			out = append(out, RegName{Name: s.Name})
		}
		return true
	})
	return out
}

// copier makes one copy of a function's body: arg(i) is parameter i's
// value (a fresh expression per use), retReg receives the return value (""
// drops it), rename gives each label its copy's name, and a ret becomes a
// branch to end; used records whether one did (the caller then adds the
// label after the scope).
type copier struct {
	fn     *inlineFunc
	arg    func(i int) Expr
	retReg string
	rename map[string]string
	end    string
	used   bool
}

// block copies b (top: the function's body).
func (c *copier) block(b *Block, top bool) *Block {
	out := &Block{Pos: b.Pos}
	for i, s := range b.Stmts {
		switch s := s.(type) {
		case *Block:
			out.Stmts = append(out.Stmts, c.block(s, false))
		case *Label:
			out.Stmts = append(out.Stmts, &Label{Pos: s.Pos, Name: c.rename[s.Name]})
		case *Instruction:
			// the final ret falls through to the end, unless a label
			// would then close the scope: it labels a branch instead
			last := top && i == len(b.Stmts)-1
			if last && i > 0 {
				_, labelled := b.Stmts[i-1].(*Label)
				last = !labelled
			}
			if in := c.instruction(s, last); in != nil {
				out.Stmts = append(out.Stmts, in)
			}
		default: // declarations, .loc, .pragma: shared, never changed
			out.Stmts = append(out.Stmts, s)
		}
	}
	return out
}

// instruction copies in; nil when the copy drops it.
func (c *copier) instruction(in *Instruction, last bool) *Instruction {
	var out *Instruction
	if p, ok := c.fn.paramAccess(in); ok {
		switch {
		case p != c.fn.ret:
			out = mkIns("mov", []string{".b64"}, copyExpr(in.Operands[0], nil), c.arg(c.fn.params[p]))
		case c.retReg == "":
			return nil
		default:
			out = mkIns("mov", []string{".b64"}, name(c.retReg), copyExpr(in.Operands[1], nil))
		}
	} else if in.Opcode == "ret" {
		if last && in.Guard == nil {
			return nil // falls through to the end
		}
		c.used = true
		out = mkIns("bra", nil, name(c.end))
	} else {
		return copyInstruction(in, c.rename)
	}
	out.Guard = copyGuard(in.Guard)
	return out
}

// copyInstruction copies in deeply, renaming the Names in rename.
func copyInstruction(in *Instruction, rename map[string]string) *Instruction {
	out := &Instruction{Pos: in.Pos, Guard: copyGuard(in.Guard), Opcode: in.Opcode, Modifiers: slices.Clone(in.Modifiers)}
	for _, op := range in.Operands {
		out.Operands = append(out.Operands, copyExpr(op, rename))
	}
	return out
}

// copyExpr copies e deeply, renaming the Names in rename.
func copyExpr(e Expr, rename map[string]string) Expr {
	list := func(es []Expr) []Expr {
		out := make([]Expr, len(es))
		for i, x := range es {
			out[i] = copyExpr(x, rename)
		}
		return out
	}
	switch e := e.(type) {
	case *Name:
		if n, ok := rename[e.Text]; ok {
			return name(n)
		}
		return name(e.Text)
	case *IntLit:
		return &IntLit{Text: e.Text}
	case *FloatLit:
		return &FloatLit{Text: e.Text}
	case *StrLit:
		return &StrLit{Text: e.Text}
	case *Unary:
		return &Unary{Op: e.Op, X: copyExpr(e.X, rename)}
	case *Binary:
		return &Binary{Op: e.Op, X: copyExpr(e.X, rename), Y: copyExpr(e.Y, rename)}
	case *Address:
		return &Address{Elems: list(e.Elems)}
	case *Vector:
		return &Vector{Elems: list(e.Elems)}
	case *Paren:
		return &Paren{Elems: list(e.Elems)}
	case *Call:
		return &Call{Fn: e.Fn, Args: list(e.Args)}
	}
	return e
}

// walkExprs is walkExpr over each of xs.
func walkExprs(xs []Expr, fn func(Expr)) {
	for _, x := range xs {
		walkExpr(x, fn)
	}
}

// walkExpr calls fn for e and every expression inside it.
func walkExpr(e Expr, fn func(Expr)) {
	fn(e)
	switch e := e.(type) {
	case *Unary:
		walkExpr(e.X, fn)
	case *Binary:
		walkExpr(e.X, fn)
		walkExpr(e.Y, fn)
	case *Address:
		walkExprs(e.Elems, fn)
	case *Vector:
		walkExprs(e.Elems, fn)
	case *Paren:
		walkExprs(e.Elems, fn)
	case *Call:
		walkExprs(e.Args, fn)
	}
}

// chooseInline picks the functions this kernel gets copies of: those that
// can be inlined, whose names the kernel does not use, and, for exit
// probes, only while the kernel has at most MaxInlineExits exits.
func (r *kernelRewriter) chooseInline(inl map[string]*inlineFunc, inlWhy map[string]string) {
	r.inline = map[string]*inlineFunc{}
	r.labels = map[string]bool{}
	for _, l := range r.f.Labels() {
		r.labels[l] = true
	}
	kernelNames := declaredNames(r.f)
	exits := len(r.f.Exits())
	var why []string
	decided := map[string]bool{}
	consider := func(fname string, kind SiteKind) {
		if decided[fname] {
			return
		}
		decided[fname] = true
		fn := inl[fname]
		switch {
		case fn == nil:
			why = append(why, fname+": "+inlWhy[fname])
		case kind == SiteExit && exits > MaxInlineExits:
			why = append(why, fmt.Sprintf("%s: the kernel has %d exits (copies at most %d)", fname, exits, MaxInlineExits))
		default:
			if n := fn.collides(kernelNames); n != "" {
				why = append(why, fname+": the kernel also declares "+n)
			} else {
				r.inline[fname] = fn
			}
		}
	}
	if r.spec.BlockInit != "" {
		consider(r.spec.BlockInit, SiteEntry)
	}
	for _, kind := range []SiteKind{SiteEntry, SiteExit} {
		for _, p := range r.probes[kind] {
			consider(p.name, kind)
		}
	}
	r.rep.NotInlined = why
}

// inlined is the code of one copy of fn at a site: under guard g (the
// exit's), a scope with fn's body, then the label its rets branch to.
func (r *kernelRewriter) inlined(fn *inlineFunc, arg func(i int) Expr, g *Guard, retReg string) []Stmt {
	k := r.rep.Inlined // numbers the kernel's copies
	r.rep.Inlined++
	unique := func(base string) string {
		n := base
		for i := 0; r.labels[n]; i++ {
			n = fmt.Sprintf("%s_%d", base, i)
		}
		r.labels[n] = true
		return n
	}
	rename := map[string]string{}
	for _, l := range fn.labels {
		rename[l] = unique(fmt.Sprintf("%s_i%d", l, k))
	}
	c := &copier{fn: fn, arg: arg, retReg: retReg, rename: rename, end: unique(fmt.Sprintf("$GXI%d_END", k))}
	body := c.block(fn.f.Body, true)
	var out []Stmt
	if g != nil {
		out = append(out, &Instruction{Guard: &Guard{Neg: !g.Neg, Reg: g.Reg}, Opcode: "bra", Operands: []Expr{name(c.end)}})
		c.used = true
	}
	out = append(out, body)
	if c.used {
		out = append(out, &Label{Name: c.end})
	}
	return out
}
