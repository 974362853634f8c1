package ptx

import (
	"strconv"
	"strings"
)

// Functions returns every .entry and .func of m, in order.
func (m *Module) Functions() []*Function {
	var out []*Function
	for _, it := range m.Items {
		if f, ok := it.(*Function); ok {
			out = append(out, f)
		}
	}
	return out
}

// Kernels returns the .entry functions of m (declarations included; a
// declaration has a nil Body).
func (m *Module) Kernels() []*Function {
	var out []*Function
	for _, f := range m.Functions() {
		if f.Entry {
			out = append(out, f)
		}
	}
	return out
}

// KernelNames returns the (mangled) names of the kernels m defines.
func (m *Module) KernelNames() []string {
	var out []string
	for _, f := range m.Kernels() {
		if f.Body != nil {
			out = append(out, f.Name)
		}
	}
	return out
}

// Lookup returns the module-level function, variable or alias named name,
// and its index in m.Items; nil and -1 when there is none. With several
// items of one name (a declaration, then the definition) it returns the
// definition when there is one.
func (m *Module) Lookup(name string) (Item, int) {
	var found Item
	at := -1
	for i, it := range m.Items {
		if itemName(it) != name {
			continue
		}
		if f, ok := it.(*Function); ok && f.Body == nil && found != nil {
			continue
		}
		found, at = it, i
		if f, ok := it.(*Function); !ok || f.Body != nil {
			return found, at
		}
	}
	return found, at
}

// itemName is the symbol an item declares ("" for none).
func itemName(it Item) string {
	switch it := it.(type) {
	case *Function:
		return it.Name
	case *Var:
		return it.Name
	case *Alias:
		return it.Name
	}
	return ""
}

// Walk calls fn for every statement of b and of its nested scopes, in
// source order, depth-first; fn gets the enclosing block and the
// statement's index in it. Returning false from fn skips a Block's contents.
func Walk(b *Block, fn func(s Stmt, parent *Block, index int) bool) {
	if b == nil {
		return
	}
	for i, s := range b.Stmts {
		descend := fn(s, b, i)
		if nb, ok := s.(*Block); ok && descend {
			Walk(nb, fn)
		}
	}
}

// Instructions returns every instruction of f's body, nested scopes included.
func (f *Function) Instructions() []*Instruction {
	var out []*Instruction
	Walk(f.Body, func(s Stmt, _ *Block, _ int) bool {
		if in, ok := s.(*Instruction); ok {
			out = append(out, in)
		}
		return true
	})
	return out
}

// Labels returns the names of the labels in f's body, in order.
func (f *Function) Labels() []string {
	var out []string
	Walk(f.Body, func(s Stmt, _ *Block, _ int) bool {
		if l, ok := s.(*Label); ok {
			out = append(out, l.Name)
		}
		return true
	})
	return out
}

// RegDecls returns the register declarations of f, every scope included.
func (f *Function) RegDecls() []*RegDecl {
	var out []*RegDecl
	Walk(f.Body, func(s Stmt, _ *Block, _ int) bool {
		if d, ok := s.(*RegDecl); ok {
			out = append(out, d)
		}
		return true
	})
	return out
}

// RegisterCounts sums f's declared registers by type (".b32": 25 for
// `.reg .b32 %r<25>;`), vector declarations counted under ".v4.b32" and so on.
func (f *Function) RegisterCounts() map[string]int {
	out := map[string]int{}
	for _, d := range f.RegDecls() {
		t := d.Vector + d.Type
		for _, n := range d.Names {
			if n.Count > 0 {
				out[t] += n.Count
			} else {
				out[t]++
			}
		}
	}
	return out
}

// PerfValue returns the arguments of performance directive name (".maxnreg")
// in f's header, and whether it is present.
func (f *Function) PerfValue(name string) ([]string, bool) {
	for _, d := range f.Perf {
		if d.Name == name {
			return d.Args, true
		}
	}
	return nil, false
}

// IsExit reports whether in ends the thread: ret or exit.
func (in *Instruction) IsExit() bool { return in.Opcode == "ret" || in.Opcode == "exit" }

// spaceModifiers are the state-space modifiers of memory instructions.
var spaceModifiers = []string{".global", ".shared", ".local", ".const", ".param", ".tex"}

// StateSpace returns the state space a memory instruction names (".global",
// ".shared", ".local", ".const", ".param", ".tex", without ::suffixes), or ""
// when it names none (a generic address).
func (in *Instruction) StateSpace() string {
	for _, m := range in.Modifiers {
		base, _, _ := strings.Cut(m, "::")
		for _, s := range spaceModifiers {
			if base == s {
				return s
			}
		}
	}
	return ""
}

// CallTarget returns the function a call instruction calls directly, or "".
func (in *Instruction) CallTarget() string {
	if in.Opcode != "call" {
		return ""
	}
	for _, op := range in.Operands {
		if n, ok := op.(*Name); ok {
			return n.Text
		}
	}
	return ""
}

// Access classifies a memory instruction.
type Access uint8

// Memory access kinds.
const (
	AccessNone   Access = iota
	AccessLoad          // ld, ldu
	AccessStore         // st
	AccessAtomic        // atom, red (reads and writes)
)

func (a Access) String() string {
	return [...]string{"none", "load", "store", "atomic"}[a]
}

// MemAccess is a load, store or atomic on global or generic memory.
type MemAccess struct {
	Instr   *Instruction
	Access  Access
	Generic bool     // no state space: the address is generic
	Addr    *Address // the memory operand
}

// Access classifies in: the kind of memory access and its address operand
// (nil when in is not a memory access).
func (in *Instruction) Access() (Access, *Address) {
	var a Access
	switch in.Opcode {
	case "ld", "ldu":
		a = AccessLoad
	case "st":
		a = AccessStore
	case "atom", "red":
		a = AccessAtomic
	default:
		return AccessNone, nil
	}
	for _, op := range in.Operands {
		if ad, ok := op.(*Address); ok {
			return a, ad
		}
	}
	return AccessNone, nil
}

// MemAccesses returns the loads and stores of f on global memory and on
// generic addresses (which may be global), marking the generic ones; with
// atomics it includes atom and red.
func (f *Function) MemAccesses(atomics bool) []MemAccess {
	var out []MemAccess
	for _, in := range f.Instructions() {
		a, addr := in.Access()
		if a == AccessNone || a == AccessAtomic && !atomics {
			continue
		}
		switch in.StateSpace() {
		case ".global":
			out = append(out, MemAccess{Instr: in, Access: a, Addr: addr})
		case "":
			out = append(out, MemAccess{Instr: in, Access: a, Generic: true, Addr: addr})
		}
	}
	return out
}

// Exits returns f's ret and exit instructions (guarded ones included).
func (f *Function) Exits() []*Instruction {
	var out []*Instruction
	for _, in := range f.Instructions() {
		if in.IsExit() {
			out = append(out, in)
		}
	}
	return out
}

// ParseInt returns the value of an integer literal as written in PTX
// (decimal, 0x hex, 0 octal, 0b binary, optional U suffix), as the 64-bit
// pattern PTX gives it.
func ParseInt(text string) (uint64, bool) {
	s := strings.TrimSuffix(text, "U")
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case len(s) > 2 && (s[:2] == "0b" || s[:2] == "0B"):
		base, s = 2, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	v, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// Variables sorts the variables m defines at module scope. own are those
// the program can reach by name from the host (.global and .const, not
// .extern: CUDA's __device__ and __constant__ variables, which it reads and
// writes with cuModuleGetGlobal, cudaMemcpyToSymbol and the like) and
// which a second module loaded from m's PTX would hold copies of: a
// patched twin must own them (devrtinject.Result.Vars). unsupported are
// those a twin cannot take over at all, each with what it is: __managed__
// variables (the runtime maps the original's into the host's address
// space) and texture, surface and sampler references (bound by the host to
// the original's symbols). Names the compiler and libdevice make are
// neither: a leading '$' (nvcc's printf format strings) or "__cudart_"
// (libdevice's constant tables, such as __cudart_i2opi_f, which sinf and
// cosf bring in): nothing outside the module names them. Other reserved
// names count: nvcc names a file-static __device__ variable
// __nv_static_..., which the program still writes through the runtime.
// In source order, once each.
func (m *Module) Variables() (own, unsupported []string) {
	seen := map[string]bool{}
	for _, it := range m.Items {
		v, ok := it.(*Var)
		if !ok || v.Linkage == ".extern" || seen[v.Name] || strings.HasPrefix(v.Name, "$") || strings.HasPrefix(v.Name, "__cudart_") {
			continue
		}
		switch {
		case v.Space == ".tex" || refKinds[v.Type] != "":
			unsupported = append(unsupported, v.Name+" (a "+refKinds[v.Type]+refKinds[v.Space]+" reference)")
		case v.Space != ".global" && v.Space != ".const":
			continue
		case managed(v):
			unsupported = append(unsupported, v.Name+" (a managed variable)")
		default:
			own = append(own, v.Name)
		}
		seen[v.Name] = true
	}
	return own, unsupported
}

// refKinds names the opaque reference types (and .tex, the old texture
// state space).
var refKinds = map[string]string{".texref": "texture", ".surfref": "surface", ".samplerref": "sampler", ".tex": "texture"}

// managed tells whether v is declared .attribute(.managed).
func managed(v *Var) bool {
	for _, a := range v.Attrs {
		if n, ok := a.(*Name); ok && n.Text == ".managed" {
			return true
		}
	}
	return false
}
