package ptx

import (
	"fmt"
	"math/bits"
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

// Sampling by launch (Spec.BlocksPerLaunch): one rate for every kernel
// either spares the kernels that need it least or starves the small grids
// (a GEMM of 132 blocks at 1 in 16 leaves 8). What a probe costs a kernel
// grows with the blocks it runs in, and a launch's blocks are only known
// on the GPU; so each block computes its launch's rate from %nctaid: a
// launch of b blocks runs the probes in 1 of 2^s, the least s with b / 2^s
// at most BlocksPerLaunch (s at most MaxLaunchShift): about half of
// BlocksPerLaunch to BlocksPerLaunch blocks of each launch larger than that
// (the hash rounds: 128 to 262 at 256), up to BlocksPerLaunch * 2^16
// blocks (beyond, 1 in 2^16), every block of the others. The same hash
// picks them (a power of two n = 2^s picks the blocks whose hash is below
// 2^(32-s), as BlockSample n does), and the probes weigh what they count
// by 2^s (devrt/jit's block weight helper), so one map can hold launches
// sampled at different rates.

// MaxBlockSample bounds Spec.BlockSample.
const MaxBlockSample = 1 << 16

// MaxLaunchShift bounds the rate of sampling by launch: 1 in 2^16 blocks.
const MaxLaunchShift = 16

// MaxBlocksPerLaunch bounds Spec.BlocksPerLaunch: up to 2^16, a launch of
// more than 2^32 blocks is sampled at 1 in 2^MaxLaunchShift whether its
// blocks are counted exactly or saturated at 2^32 - 1, which lets the
// sampling code count them in 32 bits.
const MaxBlocksPerLaunch = 1 << 16

// CheckSampling checks a block sampling: n (BlockSample) at most
// MaxBlockSample; perLaunch (BlocksPerLaunch) 0 or a power of two up to
// MaxBlocksPerLaunch, and not with n > 1.
func CheckSampling(n, perLaunch uint32) error {
	switch {
	case n > MaxBlockSample:
		return fmt.Errorf("block sample 1 in %d: at most 1 in %d", n, MaxBlockSample)
	case perLaunch&(perLaunch-1) != 0 || perLaunch > MaxBlocksPerLaunch:
		return fmt.Errorf("blocks per launch %d: want a power of two up to %d", perLaunch, MaxBlocksPerLaunch)
	case perLaunch > 0 && n > 1:
		return fmt.Errorf("block sample 1 in %d and %d blocks per launch: one or the other", n, perLaunch)
	}
	return nil
}

// LaunchShift is s of a launch of blocks blocks sampled by launch
// (perLaunch > 0): it runs the probes in 1 of 2^s blocks. 0 for
// perLaunch 0.
func LaunchShift(blocks uint64, perLaunch uint32) uint32 {
	if perLaunch == 0 || blocks <= uint64(perLaunch) {
		return 0
	}
	// ceil(log2 blocks) - log2 perLaunch, as the GPU computes it
	s := uint32(bits.Len64(blocks-1)) - uint32(bits.TrailingZeros32(perLaunch))
	return min(s, MaxLaunchShift)
}

// LaunchSampled tells whether block i of a launch of blocks blocks runs the
// probes when sampled by launch: what the code Instrument inserts computes.
func LaunchSampled(i uint32, blocks uint64, perLaunch uint32) bool {
	return i*sampleMul>>(32-LaunchShift(blocks, perLaunch)) == 0 // Go: a shift by 32 gives 0
}

// Sampled tells whether block i of a launch of blocks blocks runs the
// probes under a sampling of BlockSample n or BlocksPerLaunch perLaunch
// (CheckSampling: one or the other): LaunchSampled or BlockSampled.
func Sampled(i, n, perLaunch uint32, blocks uint64) bool {
	if perLaunch > 0 {
		return LaunchSampled(i, blocks, perLaunch)
	}
	return BlockSampled(i, n)
}

// SampleWeight is the blocks a sampled block stands for: n of BlockSample,
// 2^LaunchShift of BlocksPerLaunch, else 1.
func SampleWeight(n, perLaunch uint32, blocks uint64) uint32 {
	if perLaunch > 0 {
		return 1 << LaunchShift(blocks, perLaunch)
	}
	return max(n, 1)
}

// sampleMul is the multiplier of the block hash: 2^32 / golden ratio.
const sampleMul = 0x9E3779B9

// sampleLimit is the hash bound of 1 in n blocks.
func sampleLimit(n uint32) uint64 { return (1<<32 + uint64(n) - 1) / uint64(n) }

// BlockSampled tells whether the block of linear index i runs the probes
// when 1 in n blocks does: what the code Instrument inserts computes.
func BlockSampled(i, n uint32) bool {
	return n <= 1 || uint64(i*sampleMul) < sampleLimit(n)
}

// MaxCountedBlocks bounds BlocksSampled's launches: its sums stay in 64
// bits.
const MaxCountedBlocks = 1 << 26

// BlocksSampled is how many blocks of a launch of blocks blocks run the
// probes when 1 in n does (BlockSampled; sampling by launch is the same at
// n = SampleWeight): sums of floors, in a few dozen steps (a Euclid-like
// reduction of 2^32), not a loop over the blocks, so a reader can count
// any record's launch. blocks at most MaxCountedBlocks.
func BlocksSampled(blocks uint64, n uint32) uint64 {
	if n <= 1 {
		return blocks
	}
	// i*sampleMul mod 2^32 < L for L = sampleLimit(n) exactly when
	// floor((i*sampleMul + 2^32 - L) / 2^32) - floor(i*sampleMul / 2^32)
	// is 0 (it is 0 or 1)
	const m = 1 << 32
	return blocks - (floorSum(blocks, m, sampleMul, m-sampleLimit(n)) - floorSum(blocks, m, sampleMul, 0))
}

// floorSum is the sum over i < n of floor((a*i + b) / m), by the
// Euclid-like reduction (a and b below m; m*(n+1) within 64 bits).
func floorSum(n, m, a, b uint64) uint64 {
	var s uint64
	for {
		if a >= m {
			s += n * (n - 1) / 2 * (a / m)
			a %= m
		}
		if b >= m {
			s += n * (b / m)
			b %= m
		}
		y := a*n + b
		if y < m {
			return s
		}
		n, b, m, a = y/m, y%m, a, m
	}
}

// Registers of the sampling code.
const (
	sampleReg  = RegPrefix + "s" // .pred: this block runs the probes
	sampleTemp = RegPrefix + "r" // .b32 %gx_r<3> (by launch %gx_r<4>), at entry only
)

// sampleDecls declares the registers of the sampling code.
func sampleDecls(spec Spec) []Stmt {
	n := 3
	if spec.BlocksPerLaunch > 0 {
		n = 4
	}
	return []Stmt{
		&RegDecl{Type: ".pred", Names: []RegName{{Name: sampleReg}}},
		&RegDecl{Type: ".b32", Names: []RegName{{Name: sampleTemp, Count: n}}},
	}
}

// sampleCode computes sampleReg: for 1 in spec.BlockSample blocks, or by
// launch (LaunchShift, LaunchSampled).
func sampleCode(spec Spec) []Stmt {
	r := func(i int) Expr { return name(sampleTemp + strconv.Itoa(i)) }
	lit := func(v uint64) Expr { return &IntLit{Text: strconv.FormatUint(v, 10)} }
	sreg := func(s string) Expr { return name(s) }
	mad := func(d, a, b, c Expr) Stmt { return mkIns("mad", []string{".lo", ".u32"}, d, a, b, c) }
	mov := func(d Expr, s string) Stmt { return mkIns("mov", []string{".u32"}, d, sreg(s)) }
	k := uint64(bits.TrailingZeros32(spec.BlocksPerLaunch))
	if spec.BlocksPerLaunch > 0 && spec.grid1D {
		// A 1-D grid's entry (Spec.Grid1D): the linear index is %ctaid.x
		// and the blocks %nctaid.x, so neither %ctaid.y and .z (S2UR
		// reads every block waits for) nor the product and its
		// saturation; the shift as below, clz(nctaid.x - 1) + log2
		// perLaunch, at least 32 - MaxLaunchShift. H100, earlyexits,
		// the empty probe: 1.029-1.035 with the general test, 1.006-1.014
		// with this one (devrt/jit/README.md, 2026-11-27).
		return []Stmt{
			mov(r(0), "%ctaid.x"),
			mkIns("mul", []string{".lo", ".u32"}, r(0), r(0), &IntLit{Text: fmt.Sprintf("0x%08X", sampleMul)}),
			mov(r(1), "%nctaid.x"),
			mkIns("sub", []string{".u32"}, r(1), r(1), lit(1)),
			mkIns("clz", []string{".b32"}, r(1), r(1)),
			mkIns("add", []string{".u32"}, r(1), r(1), lit(k)),
			mkIns("max", []string{".u32"}, r(1), r(1), lit(32-MaxLaunchShift)),
			mkIns("shr", []string{".b32"}, r(0), r(0), r(1)),
			mkIns("setp", []string{".eq", ".u32"}, name(sampleReg), r(0), lit(0)),
		}
	}
	code := []Stmt{
		mov(r(0), "%ctaid.z"),
		mov(r(1), "%nctaid.y"),
		mov(r(2), "%ctaid.y"),
		mad(r(0), r(0), r(1), r(2)), // z*ny + y
		mov(r(1), "%nctaid.x"),
		mov(r(2), "%ctaid.x"),
		mad(r(0), r(0), r(1), r(2)), // (z*ny + y)*nx + x
		mkIns("mul", []string{".lo", ".u32"}, r(0), r(0), &IntLit{Text: fmt.Sprintf("0x%08X", sampleMul)}),
	}
	if spec.BlocksPerLaunch == 0 {
		return append(code, mkIns("setp", []string{".lt", ".u32"}, name(sampleReg), r(0), &IntLit{Text: fmt.Sprintf("0x%08X", sampleLimit(spec.BlockSample))}))
	}
	// The hash shifted right by 32 - s = clz(blocks - 1) + log2 perLaunch,
	// at least 32 - MaxLaunchShift (a shift past 32 gives 0: s < 0, every
	// block), in 32 bits: ny * nz is below 2^32, and blocks - 1 = nx * ny
	// * nz - 1 is saturated to 2^32 - 1 when the product passes 2^32 (its
	// high word not 0), which gives 1 in 2^16 as the exact count would
	// (perLaunch <= 2^16). The 64-bit product and clz it replaces were
	// twice the instructions (ptxas expands clz.b64 into six) on the path
	// every block waits for (devrt/jit/README.md, 2026-11-27).
	return append(code,
		mov(r(1), "%nctaid.y"),
		mov(r(2), "%nctaid.z"),
		mkIns("mul", []string{".lo", ".u32"}, r(1), r(1), r(2)), // ny * nz
		mov(r(2), "%nctaid.x"),
		mkIns("mul", []string{".hi", ".u32"}, r(3), r(2), r(1)),
		mad(r(1), r(2), r(1), &IntLit{Text: "0xFFFFFFFF"}), // blocks - 1, low word
		mkIns("set", []string{".ne", ".u32", ".u32"}, r(3), r(3), lit(0)),
		mkIns("or", []string{".b32"}, r(1), r(1), r(3)), // saturated
		mkIns("clz", []string{".b32"}, r(1), r(1)),
		mkIns("add", []string{".u32"}, r(1), r(1), lit(k)),
		mkIns("max", []string{".u32"}, r(1), r(1), lit(32-MaxLaunchShift)),
		mkIns("shr", []string{".b32"}, r(0), r(0), r(1)),
		mkIns("setp", []string{".eq", ".u32"}, name(sampleReg), r(0), lit(0)),
	)
}

// sampled wraps the code of one site (or the entry's) in a branch that
// blocks not sampled take around it (the guards form; in the copy form
// those blocks never reach a site).
func (r *kernelRewriter) sampled(code []Stmt) []Stmt {
	if !r.spec.sampling() || r.copyLabel != "" || len(code) == 0 {
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
	ok := true
	Walk(f.Body, func(s Stmt, parent *Block, _ int) bool {
		if v, isVar := s.(*Var); isVar && parent != f.Body && v.Space != ".param" {
			ok = false
		}
		return ok
	})
	return ok && instructions(f) <= MaxSampleCopy
}

// instructions counts f's instructions.
func instructions(f *Function) int {
	n := 0
	Walk(f.Body, func(s Stmt, _ *Block, _ int) bool {
		if _, ok := s.(*Instruction); ok {
			n++
		}
		return true
	})
	return n
}

// samplePrologue is the entry's sampling code: whether the block is
// sampled and, in the copy form, the branch of the others to the copy.
func (r *kernelRewriter) samplePrologue() []Stmt {
	code := sampleCode(r.spec)
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
