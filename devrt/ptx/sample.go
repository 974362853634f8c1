package ptx

import (
	"fmt"
	"strconv"
)

// Block sampling (Spec.BlockSample): on a short memory-bound kernel every
// memory instruction a probe adds to a warp costs about as much as one of
// the kernel's own, so probes that touch memory in every warp cost it
// 15-80% (devrt/jit/README.md). Running them in 1 of n thread blocks
// divides that by n; the readers scale their counts by n
// (struct gpuext_gpumap_hdr.block_sample).
//
// Which blocks: those whose linear index i (x + nx*(y + ny*z)) times the
// 32-bit golden ratio, mod 2^32, is below ceil(2^32/n). Consecutive blocks
// are spread evenly (a Fibonacci hash: the gaps between sampled indices
// take at most three values, all close to n), so the sampled blocks land
// on every SM, unlike i % n == 0 with n and the SM count sharing a factor;
// block 0, the launch's first, is always sampled. The decision is the
// same in every thread of a block, so the branch around a site never
// diverges within a warp, and a BlockInit barrier skipped is skipped by
// the whole block.
//
// What blocks not sampled run: a copy of the kernel's original code (the
// "copy" form), when the kernel has at most MaxSampleCopy instructions and
// no .shared/.local/.global/.const variable in an inner scope (a second
// copy would allocate it twice). The entry branches to the copy, so those
// blocks run the original code as compiled before, plus the sampling
// code, and nothing a probe does can reach them. With a branch around
// each site instead, ptxas makes a warp's threads reconverge where paths
// meet at an exit site (BSSY/BSYNC in the SASS of nvcc's early_exits),
// where the original let each thread EXIT on its own; measured on the
// H100, that cost about a point at 1 in 16 (devrt/jit/README.md).
// Otherwise (the "guards" form, larger kernels, whose code twice over
// would crowd the instruction cache) every site is wrapped in a branch
// that blocks not sampled take around it.

// MaxBlockSample bounds Spec.BlockSample.
const MaxBlockSample = 1 << 16

// sampleMul is the multiplier of the block hash: 2^32 / golden ratio.
const sampleMul = 0x9E3779B9

// sampleLimit is the hash bound of 1 in n blocks.
func sampleLimit(n uint32) uint64 { return (1<<32 + uint64(n) - 1) / uint64(n) }

// BlockSampled tells whether the block of linear index i runs the probes
// when 1 in n blocks does: what the code Instrument inserts computes.
func BlockSampled(i, n uint32) bool {
	return n <= 1 || uint64(i*sampleMul) < sampleLimit(n)
}

// Registers of the sampling code.
const (
	sampleReg  = RegPrefix + "s" // .pred: this block runs the probes
	sampleTemp = RegPrefix + "r" // .b32 %gx_r<3>, at entry only
)

// sampleDecls declares the registers of the sampling code.
func sampleDecls() []Stmt {
	return []Stmt{
		&RegDecl{Type: ".pred", Names: []RegName{{Name: sampleReg}}},
		&RegDecl{Type: ".b32", Names: []RegName{{Name: sampleTemp, Count: 3}}},
	}
}

// sampleCode computes sampleReg for 1 in n blocks.
func sampleCode(n uint32) []Stmt {
	r := func(i int) Expr { return name(sampleTemp + strconv.Itoa(i)) }
	sreg := func(s string) Expr { return name(s) }
	mad := func(d, a, b, c Expr) Stmt { return mkIns("mad", []string{".lo", ".u32"}, d, a, b, c) }
	mov := func(d Expr, s string) Stmt { return mkIns("mov", []string{".u32"}, d, sreg(s)) }
	return []Stmt{
		mov(r(0), "%ctaid.z"),
		mov(r(1), "%nctaid.y"),
		mov(r(2), "%ctaid.y"),
		mad(r(0), r(0), r(1), r(2)), // z*ny + y
		mov(r(1), "%nctaid.x"),
		mov(r(2), "%ctaid.x"),
		mad(r(0), r(0), r(1), r(2)), // (z*ny + y)*nx + x
		mkIns("mul", []string{".lo", ".u32"}, r(0), r(0), &IntLit{Text: fmt.Sprintf("0x%08X", sampleMul)}),
		mkIns("setp", []string{".lt", ".u32"}, name(sampleReg), r(0), &IntLit{Text: fmt.Sprintf("0x%08X", sampleLimit(n))}),
	}
}

// sampled wraps the code of one site (or the entry's) in a branch that
// blocks not sampled take around it (the guards form; in the copy form
// those blocks never reach a site).
func (r *kernelRewriter) sampled(code []Stmt) []Stmt {
	if r.spec.BlockSample <= 1 || r.copyLabel != "" || len(code) == 0 {
		return code
	}
	skip := r.uniqueLabel("$GXS_SKIP")
	out := make([]Stmt, 0, len(code)+2)
	out = append(out, &Instruction{Guard: &Guard{Neg: true, Reg: sampleReg}, Opcode: "bra", Modifiers: []string{".uni"}, Operands: []Expr{name(skip)}})
	out = append(out, code...)
	return append(out, &Label{Name: skip})
}

// uniqueLabel returns a label named base, or base_<k>, that the kernel and
// the code inserted so far do not use.
func (r *kernelRewriter) uniqueLabel(base string) string {
	if r.labels == nil {
		r.labels = map[string]bool{}
		for _, l := range r.f.Labels() {
			r.labels[l] = true
		}
	}
	n := base
	for i := 0; r.labels[n]; i++ {
		n = fmt.Sprintf("%s_%d", base, i)
	}
	r.labels[n] = true
	return n
}

// MaxSampleCopy is the most instructions a kernel may have for the copy
// form of block sampling; a variable so that tests can make the guards
// form.
var MaxSampleCopy = 4096

// copyable tells whether f's original code can be copied for the blocks
// not sampled: small enough, and no variable but .param (a call's) in an
// inner scope.
func copyable(f *Function) bool {
	n, ok := 0, true
	Walk(f.Body, func(s Stmt, parent *Block, _ int) bool {
		switch s := s.(type) {
		case *Instruction:
			n++
		case *Var:
			if parent != f.Body && s.Space != ".param" {
				ok = false
			}
		}
		return ok
	})
	return ok && n <= MaxSampleCopy
}

// samplePrologue is the entry's sampling code: whether the block is
// sampled and, in the copy form, the branch of the others to the copy.
func (r *kernelRewriter) samplePrologue() []Stmt {
	code := sampleCode(r.spec.BlockSample)
	if r.copyLabel != "" {
		code = append(code, &Instruction{Guard: &Guard{Neg: true, Reg: sampleReg}, Opcode: "bra", Modifiers: []string{".uni"}, Operands: []Expr{name(r.copyLabel)}})
	}
	return code
}

// originalCopy is what the copy form appends to the instrumented body: a
// ret unless the body ends in a ret, exit or bra (the instrumented code
// must never run on into the copy), then r.copyLabel and the kernel's
// original code with its labels renamed <label>_gxo (another suffix if
// taken). The function-scope declarations
// are not repeated: both copies use them. Statements that never change
// (.loc, declarations of inner scopes, prototypes) are shared.
func (r *kernelRewriter) originalCopy() []Stmt {
	rename := map[string]string{}
	for _, l := range r.f.Labels() {
		rename[l] = r.uniqueLabel(l + "_gxo")
	}
	var out []Stmt
	if !endsFlow(r.f.Body) {
		out = append(out, mkIns("ret", nil))
	}
	out = append(out, &Label{Name: r.copyLabel})
	var copyBlock func(b *Block, top bool) []Stmt
	copyBlock = func(b *Block, top bool) []Stmt {
		var out []Stmt
		for _, s := range b.Stmts {
			switch s := s.(type) {
			case *RegDecl, *Var, *Pragma:
				if !top {
					out = append(out, s)
				}
			case *Block:
				out = append(out, &Block{Pos: s.Pos, Stmts: copyBlock(s, false)})
			case *Label:
				out = append(out, &Label{Pos: s.Pos, Name: rename[s.Name]})
			case *Instruction:
				out = append(out, copyInstruction(s, rename))
			case *Targets:
				t := &Targets{Pos: s.Pos, Directive: s.Directive, Names: make([]string, len(s.Names))}
				for i, n := range s.Names {
					if m, ok := rename[n]; ok {
						n = m
					}
					t.Names[i] = n
				}
				out = append(out, t)
			default:
				out = append(out, s)
			}
		}
		return out
	}
	return append(out, copyBlock(r.f.Body, true)...)
}

// endsFlow tells whether b's last statement is an unguarded ret, exit or
// bra: nothing runs on past it.
func endsFlow(b *Block) bool {
	if len(b.Stmts) == 0 {
		return false
	}
	in, ok := b.Stmts[len(b.Stmts)-1].(*Instruction)
	return ok && in.Guard == nil && (in.Opcode == "ret" || in.Opcode == "exit" || in.Opcode == "bra")
}
