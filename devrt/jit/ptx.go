package jit

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// PTX code generation. Each eBPF register is a .b64 PTX register (%gr0..
// %gr10); the stack is in registers (stackInRegs) or a 512-byte .local
// array; pointers hold addresses of
// the space the verifier proved they reach (stack: .local, map values:
// .global inside the region, ctx copy: generic), so every access uses the
// state space the verifier recorded for it. Loads and stores of map values
// are .volatile: other warps change them with atomics, which L2 performs,
// and a plain ld.global may keep answering from the SM's L1, which is not
// kept coherent with them. Orderings are GPU-scope (.gpu acquire/release): the region is device memory, which the host sees only
// through devrt's copies, made by a copy engine through the same L2 (a
// system-scope fence would wait on the host for nothing). The ctx
// arrives by value, as
// three .u64 parameters (see ctxParam); a ctx read at a constant offset
// takes its bytes from the parameter, and only a program that reads the
// ctx at a variable offset copies it to .local memory for r1 to point to.
// Map operations call one .func per hash or ring map (emitted once per
// fragment); array lookups are inline. The eBPF semantics the interpreter
// runs (semantics.go) are kept exactly: 32-bit operations zero-extend,
// shift counts are masked, division by zero gives 0, modulo by zero keeps
// the dividend, INT_MIN/-1 = INT_MIN.

type gen struct {
	// hashValAlign: per hash map, the alignment every insert's value
	// pointer is known to have (0: no insert passes a value)
	hashValAlign map[int]int
	b            strings.Builder
	c            *Compiled
	p            *compiledProg
	pi           int
	lbl          map[int]bool
	uniq         int
	// sregs: the current program's stack is in registers (stackInRegs)
	sregs bool
	// elected: the current program's body runs in one elected lane of
	// each warp (warp level, not laneUniform)
	elected bool
	// perThread: the current program runs for each thread (Options.
	// PerThread, or a gpu/entry_thread program): a run stands for one lane
	perThread bool
}

func (g *gen) f(format string, args ...any) {
	g.b.WriteByte('\t')
	fmt.Fprintf(&g.b, format, args...)
	g.b.WriteByte('\n')
}

func (g *gen) label(l string) { fmt.Fprintf(&g.b, "%s:\n", l) }

func (g *gen) fresh(what string) string {
	g.uniq++
	return fmt.Sprintf("$GX%d_%s%d", g.pi, what, g.uniq)
}

func insnLabel(pi, i int) string { return fmt.Sprintf("$GX%d_L%d", pi, i) }

func generate(c *Compiled) (string, error) {
	g := &gen{c: c}
	fmt.Fprintf(&g.b, "// otelcol-gpu devrt/jit fragment: %d probe(s), %s level, shared region %d bytes\n",
		len(c.progs), map[bool]string{false: "warp", true: "thread"}[c.Opts.PerThread], c.Layout.Size)
	for _, m := range c.Layout.Maps {
		fmt.Fprintf(&g.b, "// map %s: %s at %d, key %d, value %d, entries %d, slots %d, stride %d\n",
			m.Name, m.Type, m.Offset, m.KeySize, m.ValueSize, m.MaxEntries, m.Slots, m.Stride)
	}
	fmt.Fprintf(&g.b, ".visible .const .align 8 .u64 %s;\n", SharedSymbol)
	if c.Layout.BlockSize > 0 {
		fmt.Fprintf(&g.b, ".shared .align 8 .b8 %s[%d];\n", BlockSymbol, BlockPad+c.Layout.BlockSize)
		g.blockInit()
	}
	used := map[int32]bool{}
	for _, p := range c.progs {
		for i, ci := range p.facts.calls {
			if p.facts.callSeen[i] && ci.m >= 0 {
				used[ci.m] = true
			}
		}
	}
	g.hashValAlign = map[int]int{}
	for _, p := range c.progs {
		for i, ci := range p.facts.calls {
			in := p.Insns[i]
			if !p.facts.callSeen[i] || !in.isCall() || in.Imm != HelperMapUpdate || c.Layout.Maps[ci.m].Type != gpumap.Hash {
				continue
			}
			a := ci.args[2].align
			if cur, ok := g.hashValAlign[int(ci.m)]; !ok || a < cur {
				g.hashValAlign[int(ci.m)] = a
			}
		}
	}
	var ids []int
	for m := range used {
		ids = append(ids, int(m))
	}
	sort.Ints(ids)
	for _, m := range ids {
		mp := c.Layout.Maps[m]
		switch mp.Type {
		case gpumap.Hash:
			g.hashFunc(m, mp)
		}
	}
	for i := range c.progs {
		g.p, g.pi = &c.progs[i], i
		g.lbl = map[int]bool{}
		for j, in := range g.p.Insns {
			if in.isJump() && !in.isCall() && !in.isExit() {
				off := int(in.Off)
				if in.class() == clsJMP32 && in.aluOp() == jmpJA {
					off = int(in.imm32())
				}
				g.lbl[g.p.byRaw[in.Raw+1+off]] = true
			}
			_ = j
		}
		if err := g.probe(ProbeFunc(i), c.Probes[i].Returns); err != nil {
			return "", err
		}
		if c.Opts.Harness {
			if err := g.probe(RunFunc(i), true); err != nil {
				return "", err
			}
		}
	}
	return g.b.String(), nil
}

// stackInRegs tells whether p's stack can live in registers, %gs<k> for
// the 8 bytes at stack offset 8k, instead of .local memory, and lists the
// slots p's code touches: every access to it, by the program or by a
// helper, is at the same constant offset on every path (the verifier
// refuses variable offsets, not a different constant on each path), and no
// hash map update takes its value from it (the hash function copies the
// value through a generic address). The verifier refuses unaligned
// accesses, so a load or store never spans two registers. A warp-level
// probe then writes no local memory at all: one .local store per warp was
// a cost as large as a map store on short memory-bound kernels
// (bench/device/jit_ablation.sh).
func stackInRegs(p *compiledProg, c *Compiled) ([]int, bool) {
	seen := map[int]bool{}
	mark := func(acc memAccess, n int) bool {
		if acc.lo != acc.hi {
			return false
		}
		for b := acc.lo; b < acc.lo+int64(n); b++ {
			seen[int(b/8)] = true
		}
		return true
	}
	for i, in := range p.Insns {
		if !p.facts.visited[i] {
			continue
		}
		switch in.class() {
		case clsLDX, clsST, clsSTX:
			if acc := p.facts.mem[i]; acc.k == kStack && !mark(acc, in.bytes()) {
				return nil, false
			}
		case clsJMP, clsJMP32:
			if !in.isCall() || !p.facts.callSeen[i] {
				continue
			}
			ci := p.facts.calls[i]
			if in.Imm == HelperMapUpdate && c.Layout.Maps[ci.m].Type == gpumap.Hash && ci.args[2].k == kStack {
				return nil, false
			}
			for a, arg := range ci.args {
				if arg.k == kStack && !mark(arg, helperArgBytes(c, in.Imm, ci, a)) {
					return nil, false
				}
			}
		}
	}
	var out []int
	for k := range seen {
		out = append(out, k)
	}
	sort.Ints(out)
	return out, true
}

// helperArgBytes is how many bytes helper id reads or writes through its
// pointer argument r<a+1>.
func helperArgBytes(c *Compiled, id int64, ci callInfo, a int) int {
	switch id {
	case HelperBlockIdx, HelperBlockDim, HelperThreadIdx, HelperGridDim:
		return 8
	case HelperRingbufOutput, HelperRingOutputAt:
		return int(ci.size)
	}
	m := c.Layout.Maps[ci.m]
	if a == 1 {
		return int(m.KeySize)
	}
	return int(m.ValueSize)
}

// stackGet leaves in dst the n bytes at stack offset o (within one slot),
// zero-extended, or sign-extended with signed.
func (g *gen) stackGet(dst string, o int64, n int, signed bool) {
	if n == 8 {
		g.f("mov.b64 %s, %%gs%d;", dst, o/8)
		return
	}
	t := map[bool]string{false: "u64", true: "s64"}[signed]
	g.f("bfe.%s %s, %%gs%d, %d, %d;", t, dst, o/8, 8*(o%8), 8*n)
}

// stackPut stores the low n bytes of v at stack offset o (within one slot).
func (g *gen) stackPut(v string, o int64, n int) {
	if n == 8 {
		g.f("mov.b64 %%gs%d, %s;", o/8, v)
		return
	}
	g.f("bfi.b64 %%gs%d, %s, %%gs%d, %d, %d;", o/8, v, o/8, 8*(o%8), 8*n)
}

// stackPiece is the bytes of a copy from stack offset o that stay within
// its slot, at most left, and (with dstOff >= 0) naturally aligned at
// dstOff: 8, 4, 2 or 1.
func stackPiece(o int64, left int, dstOff int) int {
	w := 8
	for w > left || int(o%8)+w > 8 || (dstOff >= 0 && dstOff%w != 0) {
		w /= 2
	}
	return w
}

func usesStack(p *compiledProg) bool {
	for _, in := range p.Insns {
		if in.Dst == 10 || in.Src == 10 {
			return true
		}
	}
	return false
}

// ctxParam names the probe's parameters: __gx_c0 = site<<32 | kind, __gx_c1
// = addr, __gx_c2 = kernel_id, the three little-endian words of struct
// gpuext_dev_ctx, which devrt/ptx's call sites pass by value.
const ctxParam = "__gx_c"

// ctxLocal is the .local copy of the ctx of a program that reads it at a
// variable offset.
const ctxLocal = "__gx_ctxv"

// ctxStandIn is r1 when the ctx is not in memory: never dereferenced (every
// ctx read then has a constant offset and reads a parameter), but not NULL,
// as the verifier assumes of a ctx pointer (the interpreter's ctx address).
const ctxStandIn = vCtx

// ctxDirect tells whether insn i is a ctx read at the same constant offset
// on every path, within one parameter word: its code reads the parameter.
func ctxDirect(p *compiledProg, i int) bool {
	acc := p.facts.mem[i]
	if !p.facts.visited[i] || p.Insns[i].class() != clsLDX || acc.k != kCtx || acc.lo != acc.hi {
		return false
	}
	n := int64(p.Insns[i].bytes())
	return acc.lo >= 0 && acc.lo+n <= CtxSize && acc.lo%n == 0 && acc.lo/8 == (acc.lo+n-1)/8
}

// ctxInMemory tells whether some ctx read of p is not ctxDirect: the
// program then needs the ctx in .local memory and r1 pointing to it.
func ctxInMemory(p *compiledProg) bool {
	for i, in := range p.Insns {
		if p.facts.visited[i] && in.class() == clsLDX && p.facts.mem[i].k == kCtx && !ctxDirect(p, i) {
			return true
		}
	}
	return false
}

// uniformHelpers return the same value in every lane of a warp (and write,
// through their pointers, only the stack): they read the clock, the SM,
// the block, the grid and the warp, never the lane.
var uniformHelpers = map[int64]bool{
	HelperKtime: true, HelperGlobaltimer: true, HelperBlockIdx: true, HelperBlockDim: true,
	HelperGridDim: true, HelperSMID: true, HelperWarpID: true, HelperNSMID: true,
	HelperGlobalWarp: true, HelperBlockLinear: true, HelperActiveLanes: true, HelperGridID: true,
	HelperBlockWeight: true,
}

// laneUniform tells whether entry program p can run in every lane of a
// warp, at warp level, without electing a leader and sharing its r0: it
// touches no map, no ctx and no memory but its stack, kept in registers,
// and calls only uniformHelpers. Its inputs are then the same in every
// lane of a warp that enters the kernel together, so each lane computes
// the leader's r0 itself. (The ctx is left out: devrt/ptx's entry sites
// pass every lane the same, but the warp-level contract is the leader's
// ctx, and the GPU check's harness gives each lane its own.) Why: the shfl
// that hands the leader's r0 to the lanes waits for it, and sm_load's
// entry returns %globaltimer, whose read a warp otherwise waits for before
// the kernel's first instruction (the carried value is not used before
// the exit). stackInMem: p's stack is a .local array (stackInRegs).
func laneUniform(p *compiledProg, stackInMem bool) bool {
	if p.Site != SiteEntry || stackInMem {
		return false
	}
	for i, in := range p.Insns {
		if !p.facts.visited[i] {
			continue
		}
		switch {
		case in.Map != "":
			return false
		case in.isCall():
			if in.Src != 0 || !uniformHelpers[in.Imm] {
				return false
			}
		case in.class() == clsST || in.class() == clsSTX || in.class() == clsLDX:
			if p.facts.mem[i].k != kStack {
				return false
			}
		}
	}
	return true
}

func (g *gen) probe(name string, withRet bool) error {
	p := g.p
	stack := usesStack(p)
	var slots []int
	g.sregs = false
	if stack {
		slots, g.sregs = stackInRegs(p, g.c)
	}
	// warp: the body runs in an elected leader, whose r0 the lanes share
	g.perThread = g.c.Opts.PerThread || p.PerThread
	warp := !g.perThread && !laneUniform(p, stack && !g.sregs)
	g.elected = warp
	done := DoneLabel(g.pi)
	fmt.Fprintf(&g.b, "\n// %s: program %s (section %s)\n", name, p.Name, p.Section)
	params := fmt.Sprintf("(.param .u64 %[1]s0, .param .u64 %[1]s1, .param .u64 %[1]s2)", ctxParam)
	if withRet {
		fmt.Fprintf(&g.b, ".func (.param .b64 __gx_ret) %s%s\n{\n", name, params)
	} else {
		fmt.Fprintf(&g.b, ".func %s%s\n{\n", name, params)
	}
	g.f(".reg .b64 %%gr<11>;")
	g.f(".reg .b64 %%gt<16>;")
	g.f(".reg .b64 %%gk<8>;")
	g.f(".reg .b32 %%gw<8>;")
	g.f(".reg .b32 %%gmask, %%glead;")
	g.f(".reg .b64 %%gbase;")
	g.f(".reg .pred %%gp<4>;")
	switch {
	case g.sregs:
		g.f(".reg .b64 %%gs<%d>;", StackSize/8)
	case stack:
		g.f(".local .align 8 .b8 __gx_stk[%d];", StackSize)
	}
	inMem := ctxInMemory(p)
	if inMem {
		g.f(".local .align 8 .b8 %s[%d];", ctxLocal, CtxSize)
	}
	for r := 0; r <= 9; r++ {
		switch {
		case r != 1:
			g.f("mov.b64 %%gr%d, 0;", r)
		case !inMem:
			g.f("mov.b64 %%gr1, %#x; // ctx stand-in, never dereferenced", ctxStandIn)
		}
	}
	g.f("mov.b64 %%gbase, 0;")
	g.f("activemask.b32 %%gmask;")
	if warp {
		g.f("neg.s32 %%gw0, %%gmask;")
		g.f("and.b32 %%gw0, %%gw0, %%gmask;")
		g.f("bfind.u32 %%glead, %%gw0;")
		g.f("mov.u32 %%gw0, %%laneid;")
		g.f("setp.ne.u32 %%gp0, %%gw0, %%glead;")
		g.f("@%%gp0 bra %s;", done)
	}
	if inMem {
		// after the election: at warp level only the leader pays for it
		for w := 0; w < CtxSize/8; w++ {
			g.f("ld.param.u64 %%gt0, [%s%d];", ctxParam, w)
			g.f("st.local.u64 %s, %%gt0;", addr(ctxLocal, int64(8*w)))
		}
		g.f("mov.u64 %%gr1, %s;", ctxLocal)
		g.f("cvta.local.u64 %%gr1, %%gr1;")
	}
	switch {
	case g.sregs:
		// r10 is only ever added to and dereferenced at constant
		// offsets, which read %gs<k>: its value is never used
		g.f("mov.b64 %%gr10, %d;", StackSize)
		for _, k := range slots {
			g.f("mov.b64 %%gs%d, 0;", k)
		}
	case stack:
		g.f("mov.u64 %%gr10, __gx_stk;")
		g.f("add.s64 %%gr10, %%gr10, %d;", StackSize)
	}
	for i, in := range p.Insns {
		if g.lbl[i] {
			g.label(insnLabel(g.pi, i))
		}
		if !p.facts.visited[i] {
			continue // never reached: no code
		}
		if err := g.insn(i, in, done); err != nil {
			return err
		}
	}
	g.label(done)
	if warp {
		g.f("mov.b64 {%%gw0, %%gw1}, %%gr0;")
		g.f("shfl.sync.idx.b32 %%gw0, %%gw0, %%glead, 31, %%gmask;")
		g.f("shfl.sync.idx.b32 %%gw1, %%gw1, %%glead, 31, %%gmask;")
		g.f("mov.b64 %%gr0, {%%gw0, %%gw1};")
	}
	if withRet {
		g.f("st.param.b64 [__gx_ret], %%gr0;")
	}
	g.f("ret;")
	g.b.WriteString("}\n")
	return nil
}

// regionBase loads the region's address into %gbase where the program
// first needs a map on this path (every map pointer comes from one of these
// loads, so every use is preceded by one): a probe that returns before
// touching a map, like launch_latency for all but one thread, never reads
// it. Constant memory (devrt writes it before the module's first launch,
// as cudaMemcpyToSymbol a __constant__): ptxas reads it as an operand from
// the constant bank, where a global cost each warp a dependent load.
// No region (devrt could not make one): the probe returns 0.
func (g *gen) regionBase(done string) {
	g.f("ld.const.u64 %%gbase, [%s];", SharedSymbol)
	g.f("setp.eq.u64 %%gp0, %%gbase, 0;")
	g.f("@%%gp0 mov.b64 %%gr0, 0;")
	g.f("@%%gp0 bra %s;", done)
}

func r(n uint8) string { return fmt.Sprintf("%%gr%d", n) }

func addr(base string, off int64) string {
	if off == 0 {
		return "[" + base + "]"
	}
	return fmt.Sprintf("[%s+%d]", base, off)
}

// space is the state space of memory reached through a pointer like acc's:
// a per-block array's values are in the block's shared memory, other map
// values in the region (global memory).
func (g *gen) space(acc memAccess) string {
	switch acc.k {
	case kStack:
		return ".local"
	case kMapValue:
		if g.c.Layout.Maps[acc.m].Type.InBlock() {
			return ".shared"
		}
		return ".global"
	}
	return ""
}

// mem is the state space and qualifier of a load or store through a
// pointer like acc's: map values are read and written .volatile (at L2,
// where the atomics of other warps are, or in shared memory, where those of
// the block's other warps are), the rest as space says.
func (g *gen) mem(acc memAccess) string {
	if acc.k == kMapValue {
		return ".volatile" + g.space(acc)
	}
	return g.space(acc)
}

// src64 is the 64-bit second operand of an ALU64 or JMP instruction.
func (g *gen) src64(in Insn) string {
	if in.src() == srcX {
		return r(in.Src)
	}
	g.f("mov.b64 %%gt9, %d;", in.Imm)
	return "%gt9"
}

// src32 puts the 32-bit second operand in %gw1.
func (g *gen) src32(in Insn) string {
	if in.src() == srcX {
		g.f("cvt.u32.u64 %%gw1, %s;", r(in.Src))
	} else {
		g.f("mov.b32 %%gw1, %d;", uint32(in.imm32()))
	}
	return "%gw1"
}

func (g *gen) insn(i int, in Insn, done string) error {
	if in.Line != "" {
		fmt.Fprintf(&g.b, "\t// %d: %s\n", in.Raw, strings.ReplaceAll(in.Line, "\n", " "))
	}
	switch in.class() {
	case clsALU64:
		g.alu64(in)
	case clsALU:
		g.alu32(in)
	case clsLD:
		switch {
		case in.Map == "":
			g.f("mov.b64 %s, %d;", r(in.Dst), in.Imm)
		case in.Src == pseudoMapFD:
			g.regionBase(done)
			m := g.c.Layout.Maps[g.p.mapIdx[in.Map]]
			g.f("add.s64 %s, %%gbase, %d;", r(in.Dst), m.Offset)
		default:
			g.regionBase(done)
			m := g.c.Layout.Maps[g.p.mapIdx[in.Map]]
			off, _ := m.ElemOffset(0, 0)
			g.f("add.s64 %s, %%gbase, %d;", r(in.Dst), int64(off)+int64(in.MapOff))
		}
	case clsLDX:
		acc := g.p.facts.mem[i]
		a := addr(r(in.Src), int64(in.Off))
		n := in.bytes()
		if ctxDirect(g.p, i) {
			g.ctxLoad(in, acc.lo)
			break
		}
		if g.sregs && acc.k == kStack {
			g.stackGet(r(in.Dst), acc.lo, n, in.mode() == modeMEMSX)
			break
		}
		if n == 8 {
			g.f("ld%s.u64 %s, %s;", g.mem(acc), r(in.Dst), a)
		} else if in.mode() == modeMEMSX {
			g.f("ld%s.s%d %%gw0, %s;", g.mem(acc), 8*n, a)
			g.f("cvt.s64.s32 %s, %%gw0;", r(in.Dst))
		} else {
			g.f("ld%s.u%d %%gw0, %s;", g.mem(acc), 8*n, a)
			g.f("cvt.u64.u32 %s, %%gw0;", r(in.Dst))
		}
	case clsST, clsSTX:
		acc := g.p.facts.mem[i]
		a := addr(r(in.Dst), int64(in.Off))
		n := in.bytes()
		if in.mode() == modeATOMIC {
			g.atomic(in, a, acc)
			break
		}
		if g.sregs && acc.k == kStack {
			v := r(in.Src)
			if in.class() == clsST {
				g.f("mov.b64 %%gt0, %d;", in.Imm)
				v = "%gt0"
			}
			g.stackPut(v, acc.lo, n)
			break
		}
		var v string
		if in.class() == clsST {
			if n == 8 {
				g.f("mov.b64 %%gt0, %d;", in.Imm)
				v = "%gt0"
			} else {
				g.f("mov.b32 %%gw0, %d;", uint32(in.imm32()))
				v = "%gw0"
			}
		} else if n == 8 {
			v = r(in.Src)
		} else {
			g.f("cvt.u32.u64 %%gw0, %s;", r(in.Src))
			v = "%gw0"
		}
		g.f("st%s.u%d %s, %s;", g.mem(acc), 8*n, a, v)
	case clsJMP, clsJMP32:
		return g.jump(i, in, done)
	}
	return nil
}

// ctxLoad emits a ctx read of in.bytes() bytes at constant offset o (within
// one word) from the parameter holding that word: the bytes at o%8 of a
// little-endian word are its bits 8*(o%8) up, which bfe extracts
// (sign-extending for BPF_MEMSX).
func (g *gen) ctxLoad(in Insn, o int64) {
	d := r(in.Dst)
	g.f("ld.param.u64 %s, [%s%d];", d, ctxParam, o/8)
	if n := in.bytes(); n < 8 {
		t := "u64"
		if in.mode() == modeMEMSX {
			t = "s64"
		}
		g.f("bfe.%s %s, %s, %d, %d;", t, d, d, 8*(o%8), 8*n)
	}
}

func (g *gen) alu64(in Insn) {
	d := r(in.Dst)
	op := in.aluOp()
	switch op {
	case aluNEG:
		g.f("neg.s64 %s, %s;", d, d)
		return
	case aluEND:
		g.bswap(d, in.Imm)
		return
	case aluMOV:
		s := g.src64(in)
		if in.Off != 0 {
			sh := 64 - int(in.Off)
			g.f("shl.b64 %s, %s, %d;", d, s, sh)
			g.f("shr.s64 %s, %s, %d;", d, d, sh)
			return
		}
		g.f("mov.b64 %s, %s;", d, s)
		return
	}
	s := g.src64(in)
	signed := in.Off == 1
	switch op {
	case aluADD:
		g.f("add.s64 %s, %s, %s;", d, d, s)
	case aluSUB:
		g.f("sub.s64 %s, %s, %s;", d, d, s)
	case aluMUL:
		g.f("mul.lo.s64 %s, %s, %s;", d, d, s)
	case aluOR:
		g.f("or.b64 %s, %s, %s;", d, d, s)
	case aluAND:
		g.f("and.b64 %s, %s, %s;", d, d, s)
	case aluXOR:
		g.f("xor.b64 %s, %s, %s;", d, d, s)
	case aluLSH, aluRSH, aluARSH:
		g.f("cvt.u32.u64 %%gw1, %s;", s)
		g.f("and.b32 %%gw1, %%gw1, 63;")
		ins := map[uint8]string{aluLSH: "shl.b64", aluRSH: "shr.u64", aluARSH: "shr.s64"}[op]
		g.f("%s %s, %s, %%gw1;", ins, d, d)
	case aluDIV, aluMOD:
		g.divmod(d, s, "64", op == aluDIV, signed)
	}
}

// divmod emits d = d / s or d % s with eBPF's rules for 0 and -1.
func (g *gen) divmod(d, s, w string, div, signed bool) {
	t := "u" + w
	if signed {
		t = "s" + w
	}
	g.f("setp.eq.s%s %%gp0, %s, 0;", w, s)
	if !signed {
		if div {
			g.f("@!%%gp0 div.%s %s, %s, %s;", t, d, d, s)
			g.f("@%%gp0 mov.b%s %s, 0;", w, d)
		} else {
			g.f("@!%%gp0 rem.%s %s, %s, %s;", t, d, d, s)
		}
		return
	}
	g.f("setp.eq.s%s %%gp1, %s, -1;", w, s)
	g.f("or.pred %%gp2, %%gp0, %%gp1;")
	if div {
		g.f("@!%%gp2 div.%s %s, %s, %s;", t, d, d, s)
		g.f("@%%gp1 neg.s%s %s, %s;", w, d, d)
		g.f("@%%gp0 mov.b%s %s, 0;", w, d)
	} else {
		g.f("@!%%gp2 rem.%s %s, %s, %s;", t, d, d, s)
		g.f("@%%gp1 mov.b%s %s, 0;", w, d)
	}
}

// bswap reverses the low n bits of d (zero-extended).
func (g *gen) bswap(d string, n int64) {
	switch n {
	case 16:
		g.f("cvt.u32.u64 %%gw0, %s;", d)
		g.f("prmt.b32 %%gw0, %%gw0, 0, 0x4401;")
		g.f("cvt.u64.u32 %s, %%gw0;", d)
	case 32:
		g.f("cvt.u32.u64 %%gw0, %s;", d)
		g.f("prmt.b32 %%gw0, %%gw0, 0, 0x0123;")
		g.f("cvt.u64.u32 %s, %%gw0;", d)
	default:
		g.f("mov.b64 {%%gw0, %%gw1}, %s;", d)
		g.f("prmt.b32 %%gw0, %%gw0, 0, 0x0123;")
		g.f("prmt.b32 %%gw1, %%gw1, 0, 0x0123;")
		g.f("mov.b64 %s, {%%gw1, %%gw0};", d)
	}
}

func (g *gen) alu32(in Insn) {
	d := r(in.Dst)
	op := in.aluOp()
	switch op {
	case aluEND:
		if in.src() == srcX {
			g.bswap(d, in.Imm)
		} else if in.Imm == 16 {
			g.f("and.b64 %s, %s, 65535;", d, d)
		} else if in.Imm == 32 {
			g.f("and.b64 %s, %s, 4294967295;", d, d)
		}
		return
	case aluMOV:
		if in.Off != 0 {
			sh := 64 - int(in.Off)
			g.f("shl.b64 %s, %s, %d;", d, r(in.Src), sh)
			g.f("shr.s64 %s, %s, %d;", d, d, sh)
			g.f("and.b64 %s, %s, 4294967295;", d, d)
			return
		}
		if in.src() == srcX {
			g.f("cvt.u32.u64 %%gw0, %s;", r(in.Src))
			g.f("cvt.u64.u32 %s, %%gw0;", d)
		} else {
			g.f("mov.b64 %s, %d;", d, uint32(in.imm32()))
		}
		return
	}
	g.f("cvt.u32.u64 %%gw0, %s;", d)
	if op == aluNEG {
		g.f("neg.s32 %%gw0, %%gw0;")
	} else {
		s := g.src32(in)
		signed := in.Off == 1
		switch op {
		case aluADD:
			g.f("add.s32 %%gw0, %%gw0, %s;", s)
		case aluSUB:
			g.f("sub.s32 %%gw0, %%gw0, %s;", s)
		case aluMUL:
			g.f("mul.lo.s32 %%gw0, %%gw0, %s;", s)
		case aluOR:
			g.f("or.b32 %%gw0, %%gw0, %s;", s)
		case aluAND:
			g.f("and.b32 %%gw0, %%gw0, %s;", s)
		case aluXOR:
			g.f("xor.b32 %%gw0, %%gw0, %s;", s)
		case aluLSH, aluRSH, aluARSH:
			g.f("and.b32 %%gw1, %%gw1, 31;")
			ins := map[uint8]string{aluLSH: "shl.b32", aluRSH: "shr.u32", aluARSH: "shr.s32"}[op]
			g.f("%s %%gw0, %%gw0, %%gw1;", ins)
		case aluDIV, aluMOD:
			g.divmod("%gw0", s, "32", op == aluDIV, signed)
		}
	}
	g.f("cvt.u64.u32 %s, %%gw0;", d)
}

// atomic emits a BPF_ATOMIC instruction on the map value at a (acc). On
// the region they are relaxed, at GPU scope (PTX's default); on a
// per-block array the fetching ones are acq_rel at CTA scope, so that the
// warp whose add completes a count sees what the block's other warps
// wrote before theirs (block_sched's start), as an eBPF
// fetching atomic is ordered.
func (g *gen) atomic(in Insn, a string, acc memAccess) {
	s := r(in.Src)
	fetch := in.Imm&atomFETCH != 0
	sp := g.space(acc)
	ord := sp
	if sp == ".shared" {
		ord = ".acq_rel.cta.shared"
	}
	if in.bytes() == 8 {
		switch in.Imm {
		case atomCMPXCHG:
			g.f("atom%s.cas.b64 %%gt0, %s, %%gr0, %s;", ord, a, s)
			g.f("mov.b64 %%gr0, %%gt0;")
			return
		case atomXCHG:
			g.f("atom%s.exch.b64 %%gt0, %s, %s;", ord, a, s)
		default:
			op := map[int64]string{atomADD: "add.u64", atomOR: "or.b64", atomAND: "and.b64", atomXOR: "xor.b64"}[in.Imm&^atomFETCH]
			if !fetch {
				// nothing reads the old value: a reduction, which
				// the warp does not wait for
				g.f("red%s.%s %s, %s;", sp, op, a, s)
				return
			}
			g.f("atom%s.%s %%gt0, %s, %s;", ord, op, a, s)
		}
		if fetch {
			g.f("mov.b64 %s, %%gt0;", s)
		}
		return
	}
	g.f("cvt.u32.u64 %%gw1, %s;", s)
	switch in.Imm {
	case atomCMPXCHG:
		g.f("cvt.u32.u64 %%gw2, %%gr0;")
		g.f("atom%s.cas.b32 %%gw0, %s, %%gw2, %%gw1;", ord, a)
		g.f("cvt.u64.u32 %%gr0, %%gw0;")
		return
	case atomXCHG:
		g.f("atom%s.exch.b32 %%gw0, %s, %%gw1;", ord, a)
	default:
		op := map[int64]string{atomADD: "add.u32", atomOR: "or.b32", atomAND: "and.b32", atomXOR: "xor.b32"}[in.Imm&^atomFETCH]
		if !fetch {
			g.f("red%s.%s %s, %%gw1;", sp, op, a)
			return
		}
		g.f("atom%s.%s %%gw0, %s, %%gw1;", ord, op, a)
	}
	if fetch {
		g.f("cvt.u64.u32 %s, %%gw0;", s)
	}
}

var cmpName = map[uint8]string{
	jmpJEQ: "eq.u", jmpJNE: "ne.u", jmpJGT: "gt.u", jmpJGE: "ge.u", jmpJLT: "lt.u", jmpJLE: "le.u",
	jmpJSGT: "gt.s", jmpJSGE: "ge.s", jmpJSLT: "lt.s", jmpJSLE: "le.s",
}

func (g *gen) jump(i int, in Insn, done string) error {
	op := in.aluOp()
	switch {
	case in.isExit():
		g.f("bra %s;", done)
		return nil
	case in.isCall():
		return g.call(i, in)
	case op == jmpJA:
		off := int(in.Off)
		if in.class() == clsJMP32 {
			off = int(in.imm32())
		}
		g.f("bra %s;", insnLabel(g.pi, g.p.byRaw[in.Raw+1+off]))
		return nil
	}
	ti := g.p.byRaw[in.Raw+1+int(in.Off)]
	target := insnLabel(g.pi, ti)
	vis := g.p.facts.visited
	if !vis[ti] {
		return nil // never taken: fall through
	}
	if i+1 >= len(vis) || !vis[i+1] {
		g.f("bra %s;", target) // always taken
		return nil
	}
	d := r(in.Dst)
	if in.class() == clsJMP32 {
		g.f("cvt.u32.u64 %%gw0, %s;", d)
		s := g.src32(in)
		if op == jmpJSET {
			g.f("and.b32 %%gw0, %%gw0, %s;", s)
			g.f("setp.ne.u32 %%gp0, %%gw0, 0;")
		} else {
			g.f("setp.%s32 %%gp0, %%gw0, %s;", cmpName[op], s)
		}
	} else {
		s := g.src64(in)
		if op == jmpJSET {
			g.f("and.b64 %%gt0, %s, %s;", d, s)
			g.f("setp.ne.u64 %%gp0, %%gt0, 0;")
		} else {
			g.f("setp.%s64 %%gp0, %s, %s;", cmpName[op], d, s)
		}
	}
	g.f("@%%gp0 bra %s;", target)
	return nil
}

// loadKey loads n bytes at reg (space of acc) into %gk0.. (zero-padded words).
func (g *gen) loadKey(acc memAccess, reg string, n int) {
	for j := 0; 8*j < n; j++ {
		lo, hi := 8*j, min(8*j+8, n)
		if g.sregs && acc.k == kStack {
			g.f("mov.b64 %%gk%d, 0;", j)
			for o := lo; o < hi; {
				w := stackPiece(acc.lo+int64(o), hi-o, -1)
				g.stackGet("%gt0", acc.lo+int64(o), w, false)
				if o != lo {
					g.f("shl.b64 %%gt0, %%gt0, %d;", 8*(o-lo))
				}
				g.f("or.b64 %%gk%d, %%gk%d, %%gt0;", j, j)
				o += w
			}
			continue
		}
		if hi-lo == 8 && acc.align >= 8 {
			g.f("ld%s.u64 %%gk%d, %s;", g.mem(acc), j, addr(reg, int64(lo)))
			continue
		}
		g.f("mov.b64 %%gk%d, 0;", j)
		for o := lo; o < hi; {
			w := 4
			for w > acc.align || w > hi-o || o%w != 0 {
				w /= 2
			}
			g.f("ld%s.u%d %%gw0, %s;", g.mem(acc), 8*w, addr(reg, int64(o)))
			g.f("cvt.u64.u32 %%gt0, %%gw0;")
			if o != lo {
				g.f("shl.b64 %%gt0, %%gt0, %d;", 8*(o-lo))
			}
			g.f("or.b64 %%gk%d, %%gk%d, %%gt0;", j, j)
			o += w
		}
	}
}

// copyBytes copies n bytes from src (acc) to the 8-aligned address dst+doff
// in state space dsp (".global", ".shared").
func (g *gen) copyBytes(acc memAccess, src, dst, dsp string, doff, n int) {
	g.copyPieces(acc, src, dst, dsp, doff, n, false, nil)
}

// stackPayload reports whether a ring record's payload (acc) is the
// program's stack in registers: it cannot change under the writer, so its
// hash can be taken before the record's slot is known.
func (g *gen) stackPayload(acc memAccess) bool { return g.sregs && acc.k == kStack }

// hashRecord sets %gw6 and %gw7 to the sums of a ring record's n-byte
// payload's terms at src (acc), its length's included, short of seq's
// (gpumap.RecCheck): the low halves of its 8-byte words in %gw6, the high
// ones in %gw7, two chains of independent multiply-adds. With dst it also
// copies the payload to the 16-aligned slot dst+RecHeaderSize, adding
// each word as it goes (a word copied in pieces is assembled in %gt10);
// without (dst "") it only reads, ahead of the slot's index. %gw4 and
// %gw5 hold a word's halves.
func (g *gen) hashRecord(acc memAccess, src, dst string, n int) {
	g.f("mov.b32 %%gw6, %d;", uint32(n)*gpumap.RecKey(0))
	g.f("mov.b32 %%gw7, 0;")
	fold := func(o, w int) { // the piece at payload offset o of w bytes is in %gt0
		word := "%gt0"
		switch {
		case w == 8:
		case o%8 == 0:
			g.f("mov.b64 %%gt10, %%gt0;")
		default:
			g.f("shl.b64 %%gt0, %%gt0, %d;", 8*(o%8))
			g.f("or.b64 %%gt10, %%gt10, %%gt0;")
		}
		if w < 8 {
			word = "%gt10"
		}
		if end := (o+w)%8 == 0 || o+w == n; end { // pieces never cross a word
			i := uint32(o / 8)
			g.f("mov.b64 {%%gw4, %%gw5}, %s;", word)
			g.f("mad.lo.u32 %%gw6, %%gw4, %d, %%gw6;", gpumap.RecKey(3+2*i))
			g.f("mad.lo.u32 %%gw7, %%gw5, %d, %%gw7;", gpumap.RecKey(4+2*i))
		}
	}
	g.copyPieces(acc, src, dst, ".global", gpumap.RecHeaderSize, n, true, fold)
}

// copyPieces is copyBytes; with rec (a ring record's payload, in a
// 16-aligned slot) word pairs on the stack are stored 16 bytes at a time,
// each piece, in %gt0, is also passed to fold, and with dst "" nothing is
// stored.
func (g *gen) copyPieces(acc memAccess, src, dst, dsp string, doff, n int, rec bool, fold func(o, w int)) {
	stack := g.sregs && acc.k == kStack
	store := func(format string, a ...any) {
		if dst != "" {
			g.f(format, a...)
		}
	}
	if fold == nil {
		fold = func(int, int) {}
	}
	for o := 0; o < n; {
		if rec && stack && o%16 == 0 && o+16 <= n && (acc.lo+int64(o))%8 == 0 {
			g.stackGet("%gt0", acc.lo+int64(o), 8, false)
			g.stackGet("%gt12", acc.lo+int64(o)+8, 8, false)
			store("st%s.v2.u64 %s, {%%gt0, %%gt12};", dsp, addr(dst, int64(doff+o)))
			fold(o, 8)
			g.f("mov.b64 %%gt0, %%gt12;")
			fold(o+8, 8)
			o += 16
			continue
		}
		var w int
		if stack {
			w = stackPiece(acc.lo+int64(o), n-o, doff+o)
			g.stackGet("%gt0", acc.lo+int64(o), w, false)
		} else {
			w = 8
			for w > acc.align || w > n-o || o%w != 0 {
				w /= 2
			}
			if w == 8 {
				g.f("ld%s.u64 %%gt0, %s;", g.mem(acc), addr(src, int64(o)))
			} else {
				g.f("ld%s.u%d %%gw0, %s;", g.mem(acc), 8*w, addr(src, int64(o)))
				if rec {
					g.f("cvt.u64.u32 %%gt0, %%gw0;")
				}
			}
		}
		switch {
		case w == 8:
			store("st%s.u64 %s, %%gt0;", dsp, addr(dst, int64(doff+o)))
		case stack || rec:
			store("cvt.u32.u64 %%gw0, %%gt0;")
			fallthrough
		default:
			store("st%s.u%d %s, %%gw0;", dsp, 8*w, addr(dst, int64(doff+o)))
		}
		fold(o, w)
		o += w
	}
}

// copyGeneric copies n bytes from the generic address src (align-byte
// aligned) to the global address dst+doff, inside a hash function.
func (g *gen) copyGeneric(src, dst string, doff, n, align int) {
	for o := 0; o < n; {
		w := 8
		for w > align || w > n-o || o%w != 0 {
			w /= 2
		}
		if w == 8 {
			g.f("ld.u64 %%ht, %s;", addr(src, int64(o)))
			g.f("st.global.u64 %s, %%ht;", addr(dst, int64(doff+o)))
		} else {
			g.f("ld.u%d %%hs, %s;", 8*w, addr(src, int64(o)))
			g.f("st.global.u%d %s, %%hs;", 8*w, addr(dst, int64(doff+o)))
		}
		o += w
	}
}

// dimReg loads special register sreg (e.g. "%ctaid.x") zero-extended into dst.
func (g *gen) dimReg(dst, sreg string) {
	g.f("mov.u32 %%gw3, %s;", sreg)
	g.f("cvt.u64.u32 %s, %%gw3;", dst)
}

// linear computes the block's linear id (%gt4), threads per block (%gt5)
// and the thread's linear index in the block (%gt6).
func (g *gen) linear() {
	g.linearOf("%gt4", "%ctaid", "%nctaid")
	g.linearOf("%gt6", "%tid", "%ntid")
	g.dimReg("%gt5", "%ntid.x")
	g.dimReg("%gt7", "%ntid.y")
	g.f("mul.lo.u64 %%gt5, %%gt5, %%gt7;")
	g.dimReg("%gt7", "%ntid.z")
	g.f("mul.lo.u64 %%gt5, %%gt5, %%gt7;")
}

// linearOf leaves (idx.z * dim.y + idx.y) * dim.x + idx.x of the special
// registers idx and dim (%ctaid/%nctaid, %tid/%ntid) in dst (%gt7: scratch).
func (g *gen) linearOf(dst, idx, dim string) {
	g.dimReg(dst, idx+".z")
	for _, a := range []string{"y", "x"} {
		g.dimReg("%gt7", dim+"."+a)
		g.f("mul.lo.u64 %s, %s, %%gt7;", dst, dst)
		g.dimReg("%gt7", idx+"."+a)
		g.f("add.s64 %s, %s, %%gt7;", dst, dst)
	}
}

// globalWarp leaves the global warp id in dst.
func (g *gen) globalWarp(dst string) {
	g.linear()
	g.f("add.s64 %%gt5, %%gt5, 31;")
	g.f("shr.u64 %%gt5, %%gt5, 5;")
	g.f("shr.u64 %%gt6, %%gt6, 5;")
	g.f("mul.lo.u64 %%gt4, %%gt4, %%gt5;")
	g.f("add.s64 %s, %%gt4, %%gt6;", dst)
}

// arraySlot leaves the copy index of an array map in %gt2.
func (g *gen) arraySlot(t gpumap.Type) {
	switch t {
	case gpumap.PerSMArray:
		g.dimReg("%gt2", "%smid")
	case gpumap.PerWarpArray:
		g.globalWarp("%gt2")
	case gpumap.PerThreadArray:
		g.linear()
		g.f("mul.lo.u64 %%gt4, %%gt4, %%gt5;")
		g.f("add.s64 %%gt2, %%gt4, %%gt6;")
	default:
		g.f("mov.b64 %%gt2, 0;")
	}
}

// arrayElem leaves in %gt3 the address of element %gk0 (low 32 bits) of
// this thread's copy of m, or 0 (a copy beyond the slots counts a drop).
// Where elem32 allows, the copy and the element are indexed in 32-bit
// registers with one widening multiply for the address; an index out of
// range is computed all the same (it may wrap) and discarded with it.
func (g *gen) arrayElem(m gpumap.Map) {
	w, slot, key := "u64", "%gt2", "%gt1"
	if elem32(m) {
		w, slot, key = "u32", "%gw3", "%gw2"
		if m.Type == gpumap.PerSMArray {
			g.f("mov.u32 %%gw3, %%smid;")
		} else {
			g.f("mov.u32 %%gw3, 0;")
		}
		g.f("cvt.u32.u64 %%gw2, %%gk0;")
	} else {
		g.arraySlot(m.Type)
		g.f("and.b64 %%gt1, %%gk0, 4294967295;")
	}
	g.f("setp.ge.%s %%gp1, %s, %d;", w, key, m.MaxEntries)
	g.f("setp.ge.%s %%gp0, %s, %d;", w, slot, m.Slots)
	g.f("@%%gp0 red.global.add.u64 [%%gbase+%d], 1;", m.Offset+gpumap.OffDrops)
	g.f("or.pred %%gp0, %%gp0, %%gp1;")
	if w == "u32" {
		g.f("mad.lo.u32 %%gw3, %%gw3, %d, %%gw2;", m.MaxEntries)
		g.f("mul.wide.u32 %%gt3, %%gw3, %d;", m.Stride)
	} else {
		g.f("mul.lo.u64 %%gt3, %%gt2, %d;", m.MaxEntries)
		g.f("add.s64 %%gt3, %%gt3, %%gt1;")
		g.f("mul.lo.u64 %%gt3, %%gt3, %d;", m.Stride)
	}
	g.f("add.s64 %%gt3, %%gt3, %%gbase;")
	g.f("add.s64 %%gt3, %%gt3, %d;", m.DataOffset())
	g.f("@%%gp0 mov.b64 %%gt3, 0;")
}

// elem32 says whether arrayElem can index m in 32 bits: one copy, or one
// per SM (%smid is 32 bits), and every element's index below 2^32. Every
// warp that updates a per-SM count looks its element up; 64-bit index
// arithmetic costs it several instructions more, and on a kernel whose
// warps do little else each shows (devrt/jit/README.md, Benchmark).
func elem32(m gpumap.Map) bool {
	return (m.Type == gpumap.Array || m.Type == gpumap.PerSMArray) &&
		uint64(m.Slots)*uint64(m.MaxEntries) <= 1<<32
}

// blockElem leaves in %gt3 the shared-memory address of element %gk0 (low
// 32 bits) of per-block array m, or 0 when the key is out of range. The
// area starts BlockPad bytes into BlockSymbol, so no element is at
// address 0, which a probe would take for NULL.
func (g *gen) blockElem(m gpumap.Map) {
	g.f("and.b64 %%gt1, %%gk0, 4294967295;")
	g.f("setp.ge.u64 %%gp1, %%gt1, %d;", m.MaxEntries)
	g.f("mul.lo.u64 %%gt3, %%gt1, %d;", m.Stride)
	g.f("mov.u64 %%gt2, %s;", BlockSymbol)
	g.f("add.s64 %%gt3, %%gt3, %%gt2;")
	g.f("add.s64 %%gt3, %%gt3, %d;", BlockPad+m.BlockOffset)
	g.f("@%%gp1 mov.b64 %%gt3, 0;")
}

// blockInit emits BlockInitFunc: every thread of the block zeroes its
// share of the per-block area's 8-byte words. The call site (devrt/ptx at
// kernel entry, the check harness) follows it with bar.sync 0, so no
// probe of the block runs before the area is zero.
func (g *gen) blockInit() {
	words := g.c.Layout.BlockSize / 8
	fmt.Fprintf(&g.b, "\n// %s: zeroes the %d bytes of per-block arrays of this block\n", BlockInitFunc, g.c.Layout.BlockSize)
	fmt.Fprintf(&g.b, ".func %s()\n{\n", BlockInitFunc)
	g.f(".reg .b32 %%gi<4>;")
	g.f(".reg .b64 %%gd<3>;")
	g.f(".reg .pred %%gq;")
	g.f("mov.u32 %%gi0, %%tid.z;")
	g.f("mov.u32 %%gi1, %%ntid.y;")
	g.f("mov.u32 %%gi2, %%tid.y;")
	g.f("mad.lo.u32 %%gi0, %%gi0, %%gi1, %%gi2;")
	g.f("mov.u32 %%gi1, %%ntid.x;")
	g.f("mov.u32 %%gi2, %%tid.x;")
	g.f("mad.lo.u32 %%gi0, %%gi0, %%gi1, %%gi2;")
	g.f("mov.u32 %%gi2, %%ntid.y;")
	g.f("mul.lo.u32 %%gi1, %%gi1, %%gi2;")
	g.f("mov.u32 %%gi2, %%ntid.z;")
	g.f("mul.lo.u32 %%gi1, %%gi1, %%gi2;") // threads per block
	g.f("mov.u64 %%gd0, %s;", BlockSymbol)
	g.f("add.s64 %%gd0, %%gd0, %d;", BlockPad)
	g.label("$GXB_LOOP")
	g.f("setp.ge.u32 %%gq, %%gi0, %d;", words)
	g.f("@%%gq bra $GXB_DONE;")
	g.f("mul.wide.u32 %%gd1, %%gi0, 8;")
	g.f("add.s64 %%gd1, %%gd1, %%gd0;")
	g.f("st.shared.u64 [%%gd1], 0;")
	g.f("add.u32 %%gi0, %%gi0, %%gi1;")
	g.f("bra $GXB_LOOP;")
	g.label("$GXB_DONE")
	g.f("ret;")
	g.b.WriteString("}\n")
}

// blockWeight leaves in %gr0 the blocks a sampled block stands for
// (ptx.SampleWeight): a constant, or by launch 2^s of the launch's blocks
// as devrt/ptx's sampling code computes s.
func (g *gen) blockWeight() {
	l := g.c.Layout
	if l.BlocksPerLaunch == 0 {
		g.f("mov.b64 %%gr0, %d;", max(l.BlockSample, 1))
		return
	}
	// s = 32 - clz(blocks - 1) - log2 perLaunch, clamped to 0..16, in 32
	// bits as devrt/ptx's sampling code counts: ny * nz is below 2^32,
	// blocks - 1 saturated at 2^32 - 1 when nx * ny * nz passes 2^32
	g.f("mov.u32 %%gw3, %%nctaid.y;")
	g.f("mov.u32 %%gw4, %%nctaid.z;")
	g.f("mul.lo.u32 %%gw3, %%gw3, %%gw4;")
	g.f("mov.u32 %%gw4, %%nctaid.x;")
	g.f("mul.hi.u32 %%gw5, %%gw4, %%gw3;")
	g.f("mad.lo.u32 %%gw3, %%gw4, %%gw3, 0xFFFFFFFF;")
	g.f("set.ne.u32.u32 %%gw5, %%gw5, 0;")
	g.f("or.b32 %%gw3, %%gw3, %%gw5;")
	g.f("clz.b32 %%gw3, %%gw3;")
	g.f("sub.s32 %%gw3, %d, %%gw3;", 32-bits.TrailingZeros32(l.BlocksPerLaunch))
	g.f("max.s32 %%gw3, %%gw3, 0;")
	g.f("min.s32 %%gw3, %%gw3, %d;", ptx.MaxLaunchShift)
	g.f("mov.b64 %%gr0, 1;")
	g.f("shl.b64 %%gr0, %%gr0, %%gw3;")
}

func hashFuncName(m int) string { return fmt.Sprintf("__gpuext_hash_%d", m) }

// hashCall leaves in %gt3 the bucket address of key %gk.. or 0; with
// insert, bit 0 of %gt1 tells the key was inserted by this call, with the
// value at the generic address val (a register, or "0" for zeros).
func (g *gen) hashCall(mi int, m gpumap.Map, insert bool, val string) {
	words := int(gpumap.Round8(m.KeySize) / 8)
	g.f("{")
	var ps []string
	g.f(".param .b64 __gx_p0;")
	g.f("st.param.b64 [__gx_p0], %%gbase;")
	ps = append(ps, "__gx_p0")
	for j := 0; j < words; j++ {
		g.f(".param .b64 __gx_p%d;", j+1)
		g.f("st.param.b64 [__gx_p%d], %%gk%d;", j+1, j)
		ps = append(ps, fmt.Sprintf("__gx_p%d", j+1))
	}
	g.f(".param .b32 __gx_pi;")
	g.f("st.param.b32 [__gx_pi], %d;", map[bool]int{false: 0, true: 1}[insert])
	ps = append(ps, "__gx_pi")
	g.f(".param .b64 __gx_pv;")
	g.f("st.param.b64 [__gx_pv], %s;", val)
	ps = append(ps, "__gx_pv")
	g.f(".param .b64 __gx_pr;")
	g.f("call (__gx_pr), %s, (%s);", hashFuncName(mi), strings.Join(ps, ", "))
	g.f("ld.param.b64 %%gt3, [__gx_pr];")
	g.f("}")
	if insert {
		g.f("and.b64 %%gt1, %%gt3, 1;")
		g.f("and.b64 %%gt3, %%gt3, -8;")
	}
}

func (g *gen) call(i int, in Insn) error {
	ci := g.p.facts.calls[i]
	var m gpumap.Map
	mi := int(ci.m)
	if ci.m >= 0 {
		m = g.c.Layout.Maps[mi]
	}
	end := g.fresh("E")
	switch in.Imm {
	case HelperKtime, HelperGlobaltimer:
		g.f("mov.u64 %%gr0, %%globaltimer;")
	case HelperSMID:
		g.dimReg("%gr0", "%smid")
	case HelperWarpID:
		g.dimReg("%gr0", "%warpid")
	case HelperLaneID:
		g.dimReg("%gr0", "%laneid")
	case HelperNSMID:
		g.dimReg("%gr0", "%nsmid")
	case HelperGridID:
		g.f("mov.u64 %%gr0, %%gridid;")
	case HelperBlockWeight:
		g.blockWeight()
	case HelperActiveLanes:
		if g.perThread {
			g.f("mov.b64 %%gr0, 1;")
		} else {
			g.f("popc.b32 %%gw3, %%gmask;")
			g.f("cvt.u64.u32 %%gr0, %%gw3;")
		}
	case HelperGlobalWarp:
		g.globalWarp("%gr0")
	case HelperBlockLinear:
		g.linear()
		g.f("mov.b64 %%gr0, %%gt4;")
	case HelperBlockIdx, HelperBlockDim, HelperThreadIdx, HelperGridDim:
		sreg := dim3Helpers[in.Imm]
		for a, c := range []string{"x", "y", "z"} {
			g.dimReg("%gt0", "%"+sreg+"."+c)
			if g.sregs && ci.args[a].k == kStack {
				g.stackPut("%gt0", ci.args[a].lo, 8)
				continue
			}
			g.f("st%s.u64 [%s], %%gt0;", g.mem(ci.args[a]), r(uint8(a+1)))
		}
		g.f("mov.b64 %%gr0, 0;")
	case HelperMapLookup:
		g.loadKey(ci.args[1], "%gr2", int(m.KeySize))
		if m.Type.InBlock() {
			g.blockElem(m)
			g.f("mov.b64 %%gr0, %%gt3;")
		} else if m.Type.IsArray() {
			g.arrayElem(m)
			g.f("mov.b64 %%gr0, %%gt3;")
		} else {
			g.hashCall(mi, m, false, "0")
			g.f("setp.eq.u64 %%gp0, %%gt3, 0;")
			g.f("add.s64 %%gr0, %%gt3, %d;", gpumap.BucketHeaderSize+gpumap.Round8(m.KeySize))
			g.f("@%%gp0 mov.b64 %%gr0, 0;")
		}
	case HelperMapUpdate:
		g.loadKey(ci.args[1], "%gr2", int(m.KeySize))
		g.f("mov.b64 %%gr0, %d;", -gpumap.EINVAL)
		g.f("setp.gt.u64 %%gp0, %%gr4, %d;", gpumap.Exist)
		g.f("@%%gp0 bra %s;", end)
		dsp := ".global"
		if m.Type.IsArray() {
			g.f("mov.b64 %%gr0, %d;", -gpumap.EEXIST)
			g.f("setp.eq.u64 %%gp0, %%gr4, %d;", gpumap.NoExist)
			g.f("@%%gp0 bra %s;", end)
			if m.Type.InBlock() {
				g.blockElem(m)
				dsp = ".shared"
			} else {
				g.arrayElem(m)
			}
			g.f("mov.b64 %%gr0, %d;", -gpumap.E2BIG)
			g.f("setp.eq.u64 %%gp0, %%gt3, 0;")
			g.f("@%%gp0 bra %s;", end)
		} else {
			have, cp := g.fresh("H"), g.fresh("C")
			g.hashCall(mi, m, false, "0")
			g.f("setp.ne.u64 %%gp0, %%gt3, 0;")
			g.f("@%%gp0 bra %s;", have)
			g.f("mov.b64 %%gr0, %d;", -gpumap.ENOENT)
			g.f("setp.eq.u64 %%gp0, %%gr4, %d;", gpumap.Exist)
			g.f("@%%gp0 bra %s;", end)
			g.f("cvta%s.u64 %%gt8, %%gr3;", g.space(ci.args[2]))
			g.hashCall(mi, m, true, "%gt8")
			g.f("mov.b64 %%gr0, %d;", -gpumap.E2BIG)
			g.f("setp.eq.u64 %%gp0, %%gt3, 0;")
			g.f("@%%gp0 bra %s;", end)
			// inserted with its value: done
			g.f("mov.b64 %%gr0, 0;")
			g.f("setp.ne.u64 %%gp0, %%gt1, 0;")
			g.f("@%%gp0 bra %s;", end)
			// another lane inserted it between the two looks
			g.f("bra %s;", have)
			g.label(have)
			g.f("mov.b64 %%gr0, %d;", -gpumap.EEXIST)
			g.f("setp.eq.u64 %%gp0, %%gr4, %d;", gpumap.NoExist)
			g.f("@%%gp0 bra %s;", end)
			g.label(cp)
			g.f("add.s64 %%gt3, %%gt3, %d;", gpumap.BucketHeaderSize+gpumap.Round8(m.KeySize))
		}
		g.copyBytes(ci.args[2], "%gr3", "%gt3", dsp, 0, int(m.ValueSize))
		g.f("mov.b64 %%gr0, 0;")
	case HelperMapDelete:
		g.loadKey(ci.args[1], "%gr2", int(m.KeySize))
		g.hashCall(mi, m, false, "0")
		g.f("mov.b64 %%gr0, %d;", -gpumap.ENOENT)
		g.f("setp.eq.u64 %%gp0, %%gt3, 0;")
		g.f("@%%gp0 bra %s;", end)
		g.f("st.release.gpu.global.u32 [%%gt3], %d;", gpumap.StateDeleted)
		g.f("red.global.add.u64 [%%gbase+%d], -1;", m.Offset+gpumap.OffCount)
		g.f("mov.b64 %%gr0, 0;")
	case HelperMapAdd:
		g.loadKey(ci.args[1], "%gr2", int(m.KeySize))
		red := "red.global"
		if m.Type.InBlock() {
			g.blockElem(m)
			red = "red.shared"
		} else if m.Type.IsArray() {
			g.arrayElem(m)
		} else {
			g.hashCall(mi, m, true, "0")
			g.f("setp.eq.u64 %%gp0, %%gt3, 0;")
			g.f("add.s64 %%gt3, %%gt3, %d;", gpumap.BucketHeaderSize+gpumap.Round8(m.KeySize))
			g.f("@%%gp0 mov.b64 %%gt3, 0;")
		}
		g.f("mov.b64 %%gr0, %d;", -gpumap.E2BIG)
		g.f("setp.eq.u64 %%gp0, %%gt3, 0;")
		g.f("@%%gp0 bra %s;", end)
		g.f("%s.add.u64 [%%gt3], %%gr3;", red)
		g.f("mov.b64 %%gr0, 0;")
	case HelperRingClaim:
		g.ringClaim(m, "%gr2")
	case HelperRingbufOutput, HelperRingOutputAt:
		// ringbuf_output (ring, data, size, flags); ring_output_at (ring,
		// sm, index, data, size): the index one ring_claim took on SM sm.
		data, src := ci.args[1], "%gr2"
		if in.Imm == HelperRingOutputAt {
			data, src = ci.args[3], "%gr4"
		}
		// A payload in registers is hashed while the index's atomic is in
		// flight: only seq's multiply waits for it. A payload in memory
		// may change under the writer: it is hashed as it is copied.
		early := g.stackPayload(data)
		hash := func() {
			if early {
				g.hashRecord(data, src, "", int(ci.size))
			}
		}
		shard := "%smid"
		if in.Imm == HelperRingOutputAt {
			// index ~0: no claim (another lane of the claiming warp's)
			g.f("mov.b64 %%gr0, %d;", -gpumap.ENOENT)
			g.f("setp.eq.u64 %%gp0, %%gr3, -1;")
			g.f("@%%gp0 bra %s;", end)
			hash()
			g.f("add.s64 %%gt1, %%gr3, 1;")
			shard = "%gr2"
		} else {
			g.ringReserve(m, "%gt1", hash)
		}
		// %gt1: record index + 1 in the shard; its slot: the shard's
		// slots + (index % shard slots) * stride
		g.f("add.s64 %%gt2, %%gt1, -1;")
		if n := m.ShardSlots(); n&(n-1) == 0 {
			// ptxas makes rem.u64 a call of its 64-bit division
			// (about 50 instructions, two conversions through
			// floating point), even by a constant power of two.
			g.f("and.b64 %%gt2, %%gt2, %d;", n-1)
		} else {
			g.f("rem.u64 %%gt2, %%gt2, %d;", n)
		}
		if m.Shards > 1 {
			if shard == "%smid" {
				g.f("mov.u32 %%gw4, %%smid;")
			} else {
				g.f("cvt.u32.u64 %%gw4, %s;", shard)
			}
			g.f("and.b32 %%gw4, %%gw4, %d;", m.Shards-1)
			g.f("mul.wide.u32 %%gt6, %%gw4, %d;", m.ShardSlots())
			g.f("add.s64 %%gt2, %%gt2, %%gt6;")
		}
		g.f("mul.lo.u64 %%gt2, %%gt2, %d;", m.Stride)
		g.f("add.s64 %%gt2, %%gt2, %%gbase;")
		g.f("add.s64 %%gt2, %%gt2, %d;", m.ShardSlotOffset(0, 0))
		// The record, then its header: plain stores, no claim and no
		// commit (each an atomic the warp waited for: block_sched 1.72x
		// -> 1.44x on vecadd 16M without them, H100). The reader takes
		// the record when seq and the check of what it reads agree
		// (gpumap.RecCheck); a stale writer can only cost records.
		if early {
			g.copyPieces(data, src, "%gt2", ".global", gpumap.RecHeaderSize, int(ci.size), true, nil)
		} else {
			g.hashRecord(data, src, "%gt2", int(ci.size))
		}
		g.f("shl.b64 %%gt5, %%gt1, 1;") // seq: its two terms
		g.f("mov.b64 {%%gw4, %%gw5}, %%gt5;")
		g.f("mad.lo.u32 %%gw6, %%gw4, %d, %%gw6;", gpumap.RecKey(1))
		g.f("mad.lo.u32 %%gw7, %%gw5, %d, %%gw7;", gpumap.RecKey(2))
		g.f("add.u32 %%gw6, %%gw6, %%gw7;")
		g.f("mov.b32 %%gw4, %d;", ci.size)
		g.f("mov.b64 %%gt11, {%%gw4, %%gw6};") // len | check << 32
		g.f("st.global.v2.u64 [%%gt2+%d], {%%gt5, %%gt11};", gpumap.RecSeq)
		g.f("mov.b64 %%gr0, 0;")
	default:
		return fmt.Errorf("program %s: insn %d: no code for helper %d", g.p.Name, in.Raw, in.Imm)
	}
	g.label(end)
	return nil
}

// hashFunc emits the lookup/insert function of hash map mi (gpumap.HashFind on the GPU).
func (g *gen) hashFunc(mi int, m gpumap.Map) {
	words := int(gpumap.Round8(m.KeySize) / 8)
	vwords := int(gpumap.Round8(m.ValueSize) / 8)
	n := min(uint64(m.Slots), gpumap.MaxProbes)
	l := func(s string) string { return fmt.Sprintf("$GXH%d_%s", mi, s) }
	fmt.Fprintf(&g.b, "\n// %s: find (and insert) a key of hash map %s\n", hashFuncName(mi), m.Name)
	ps := []string{".param .b64 __gx_base"}
	for j := 0; j < words; j++ {
		ps = append(ps, fmt.Sprintf(".param .b64 __gx_k%d", j))
	}
	ps = append(ps, ".param .b32 __gx_ins", ".param .b64 __gx_val")
	fmt.Fprintf(&g.b, ".func (.param .b64 __gx_ret) %s(%s)\n{\n", hashFuncName(mi), strings.Join(ps, ", "))
	g.f(".reg .b64 %%hk<%d>;", words)
	g.f(".reg .b64 %%hb, %%hh, %%ht, %%hi, %%hd, %%hf, %%hx, %%hv;")
	g.f(".reg .b32 %%hs, %%hins, %%hspin, %%htry, %%hold;")
	g.f(".reg .pred %%hp, %%hq;")
	g.f("ld.param.b64 %%hb, [__gx_base];")
	for j := 0; j < words; j++ {
		g.f("ld.param.b64 %%hk%d, [__gx_k%d];", j, j)
	}
	g.f("ld.param.b32 %%hins, [__gx_ins];")
	g.f("ld.param.b64 %%hv, [__gx_val];")
	g.f("mov.b64 %%hh, %d;", int64(-3750763034362895579))
	for j := 0; j < words; j++ {
		g.f("xor.b64 %%hh, %%hh, %%hk%d;", j)
		g.f("mul.lo.u64 %%hh, %%hh, 1099511628211;")
	}
	g.f("shr.u64 %%ht, %%hh, 33;")
	g.f("xor.b64 %%hh, %%hh, %%ht;")
	g.f("mul.lo.u64 %%hh, %%hh, %d;", int64(-49064778989728563))
	g.f("shr.u64 %%ht, %%hh, 33;")
	g.f("xor.b64 %%hh, %%hh, %%ht;")
	g.f("add.s64 %%hd, %%hb, %d;", m.DataOffset())
	g.f("mov.u32 %%htry, 0;")
	g.label(l("RETRY"))
	g.f("mov.b64 %%hf, 0;")
	g.f("mov.b64 %%hi, 0;")
	g.label(l("LOOP"))
	g.f("setp.ge.u64 %%hp, %%hi, %d;", n)
	g.f("@%%hp bra %s;", l("END"))
	g.f("add.s64 %%ht, %%hh, %%hi;")
	g.f("and.b64 %%ht, %%ht, %d;", m.Slots-1)
	g.f("mul.lo.u64 %%ht, %%ht, %d;", m.Stride)
	g.f("add.s64 %%hx, %%hd, %%ht;")
	g.f("mov.u32 %%hspin, 0;")
	g.label(l("STATE"))
	g.f("ld.acquire.gpu.global.u32 %%hs, [%%hx];")
	g.f("setp.ne.u32 %%hp, %%hs, %d;", gpumap.StateBusy)
	g.f("@%%hp bra %s;", l("NOTBUSY"))
	g.f("add.u32 %%hspin, %%hspin, 1;")
	g.f("setp.lt.u32 %%hp, %%hspin, 1000;")
	g.f("@%%hp bra %s;", l("STATE"))
	g.f("bra %s;", l("NEXT"))
	g.label(l("NOTBUSY"))
	g.f("setp.ne.u32 %%hp, %%hs, %d;", gpumap.StateFull)
	g.f("@%%hp bra %s;", l("NOTFULL"))
	for j := 0; j < words; j++ {
		g.f("ld.volatile.global.u64 %%ht, [%%hx+%d];", gpumap.BucketHeaderSize+8*j)
		g.f("setp.ne.u64 %%hp, %%ht, %%hk%d;", j)
		g.f("@%%hp bra %s;", l("NEXT"))
	}
	g.f("st.param.b64 [__gx_ret], %%hx;")
	g.f("ret;")
	g.label(l("NOTFULL"))
	g.f("setp.eq.u64 %%hq, %%hf, 0;")
	g.f("setp.eq.u32 %%hp, %%hs, %d;", gpumap.StateDeleted)
	g.f("@%%hp bra %s;", l("TOMB"))
	g.f("setp.ne.u32 %%hp, %%hs, %d;", gpumap.StateEmpty)
	g.f("@%%hp bra %s;", l("NEXT"))
	g.f("@%%hq mov.b64 %%hf, %%hx;")
	g.f("bra %s;", l("END"))
	g.label(l("TOMB"))
	g.f("@%%hq mov.b64 %%hf, %%hx;")
	g.label(l("NEXT"))
	g.f("add.s64 %%hi, %%hi, 1;")
	g.f("bra %s;", l("LOOP"))
	g.label(l("END"))
	g.f("setp.eq.u32 %%hp, %%hins, 0;")
	g.f("@%%hp bra %s;", l("NONE"))
	g.f("setp.eq.u64 %%hp, %%hf, 0;")
	g.f("@%%hp bra %s;", l("FULL"))
	g.f("ld.volatile.global.u32 %%hs, [%%hf];")
	g.f("setp.eq.u32 %%hp, %%hs, %d;", gpumap.StateEmpty)
	g.f("setp.eq.u32 %%hq, %%hs, %d;", gpumap.StateDeleted)
	g.f("or.pred %%hp, %%hp, %%hq;")
	g.f("@!%%hp bra %s;", l("AGAIN"))
	g.f("atom.global.cas.b32 %%hold, [%%hf], %%hs, %d;", gpumap.StateBusy)
	g.f("setp.ne.u32 %%hp, %%hold, %%hs;")
	g.f("@%%hp bra %s;", l("AGAIN"))
	for j := 0; j < words; j++ {
		g.f("st.global.u64 [%%hf+%d], %%hk%d;", gpumap.BucketHeaderSize+8*j, j)
	}
	g.f("mov.b64 %%ht, 0;")
	for j := 0; j < vwords; j++ {
		g.f("st.global.u64 [%%hf+%d], %%ht;", gpumap.BucketHeaderSize+8*words+8*j)
	}
	if al := g.hashValAlign[mi]; al > 0 {
		// the value, before the key becomes visible
		g.f("setp.eq.u64 %%hp, %%hv, 0;")
		g.f("@%%hp bra %s;", l("PUBLISH"))
		g.copyGeneric("%hv", "%hf", gpumap.BucketHeaderSize+8*words, int(m.ValueSize), al)
		g.label(l("PUBLISH"))
	}
	g.f("st.release.gpu.global.u32 [%%hf], %d;", gpumap.StateFull)
	g.f("red.global.add.u64 [%%hb+%d], 1;", m.Offset+gpumap.OffCount)
	g.f("or.b64 %%hf, %%hf, 1;") // bit 0: inserted by this call
	g.f("st.param.b64 [__gx_ret], %%hf;")
	g.f("ret;")
	g.label(l("AGAIN"))
	g.f("add.u32 %%htry, %%htry, 1;")
	g.f("setp.lt.u32 %%hp, %%htry, 8;")
	g.f("@%%hp bra %s;", l("RETRY"))
	g.label(l("FULL"))
	g.f("red.global.add.u64 [%%hb+%d], 1;", m.Offset+gpumap.OffDrops)
	g.label(l("NONE"))
	g.f("mov.b64 %%ht, 0;")
	g.f("st.param.b64 [__gx_ret], %%ht;")
	g.f("ret;")
	g.b.WriteString("}\n")
}

// ringClaim leaves in %gr0 the next record index of the shard of SM sm (a
// register) of ring m (ring_claim) for the lowest calling lane of the
// warp, ~0 (no claim) for the others: its atom.add's result is read by
// nothing here, so the warp does not wait for it until the index is
// used. A block's
// thread 0 claims its record at entry (gpu/entry_thread: no election, no
// shfl of r0) and the block's last warp writes it at exit
// (ring_output_at), the atomic's latency hidden behind the block's work:
// where the index is taken at exit, the last warp waits for it before it
// can store, which on a short kernel's blocks is most of block_sched's
// cost (devrt/jit/README.md). One lane claims, its add predicated on its
// lane id: where ptxas cannot tell that one lane adds, it combines the
// lanes' adds into one and hands each its index with a shfl of the result
// (VOTEU, ATOMG, SHFL.IDX in the sm_90 SASS), and lanes taking turns in a
// loop merge their results with a move: either waits for the atomic right
// there.
func (g *gen) ringClaim(m gpumap.Map, sm string) {
	g.f("{")
	g.f(".reg .b64 %%xb;")
	g.f(".reg .b32 %%xm, %%xl;")
	g.f(".reg .pred %%xq;")
	g.f("mov.b64 %%xb, %%gbase;")
	if m.Shards > 1 {
		g.f("cvt.u32.u64 %%gw4, %s;", sm)
		g.f("and.b32 %%gw4, %%gw4, %d;", m.Shards-1)
		g.f("mul.wide.u32 %%gt6, %%gw4, %d;", gpumap.ShardHeadStride)
		g.f("add.s64 %%xb, %%xb, %%gt6;")
	}
	g.f("add.s64 %%xb, %%xb, %d;", m.HeadOffset(0))
	g.f("activemask.b32 %%xm;")
	g.f("neg.s32 %%xl, %%xm;")
	g.f("and.b32 %%xl, %%xl, %%xm;")
	g.f("bfind.u32 %%xl, %%xl;")
	g.f("mov.u32 %%xm, %%laneid;")
	g.f("setp.eq.u32 %%xq, %%xm, %%xl;")
	g.f("mov.b64 %%gr0, -1;")
	g.f("@%%xq atom.global.add.u64 %%gr0, [%%xb], 1;")
	g.f("}")
}

// ringReserve emits, in a scope of its own, the reservation of a record of
// ring m: out gets the record index + 1 (never 0). Per thread, lanes that
// reserve together take one atom.add on head, made by the lowest, and each
// lane takes base + its rank; at warp level the leader, alone in the body,
// adds 1. Wait-free: the ring overwrites
// (gpumap.RingOutput). between emits what the lanes do while the atomic is
// in flight; nothing of it may read out.
func (g *gen) ringReserve(m gpumap.Map, out string, between func()) {
	g.f("{")
	g.f(".reg .b64 %%xb, %%xd, %%xk, %%xbase;")
	g.f(".reg .b32 %%xm, %%xn, %%xr, %%xl, %%xlead, %%xlo, %%xhi;")
	g.f(".reg .pred %%xq;")
	g.f("mov.b64 %%xb, %%gbase;")
	head := m.HeadOffset(0)
	if m.Shards > 1 {
		// This SM's shard: its head line (the lanes of a warp share an SM).
		g.f(".reg .b32 %%xs;")
		g.f(".reg .b64 %%xh;")
		g.f("mov.u32 %%xs, %%smid;")
		g.f("and.b32 %%xs, %%xs, %d;", m.Shards-1)
		g.f("mul.wide.u32 %%xh, %%xs, %d;", gpumap.ShardHeadStride)
		g.f("add.s64 %%xb, %%xb, %%xh;")
	}
	g.f("add.s64 %%xb, %%xb, %d;", head)
	if g.elected {
		// Warp level: the body runs in the warp's leader alone, so it
		// takes one index, with no ranking of lanes and no broadcast
		// of the base (two shfl the record's stores waited for).
		g.f("atom.global.add.u64 %%xbase, [%%xb], 1;")
		between()
		g.f("add.s64 %s, %%xbase, 1;", out)
		g.f("}")
		return
	}
	g.f("activemask.b32 %%xm;")
	g.f("popc.b32 %%xn, %%xm;")
	g.f("mov.u32 %%xl, %%lanemask_lt;")
	g.f("and.b32 %%xl, %%xl, %%xm;")
	g.f("popc.b32 %%xr, %%xl;") // rank among the callers
	g.f("neg.s32 %%xl, %%xm;")
	g.f("and.b32 %%xl, %%xl, %%xm;")
	g.f("bfind.u32 %%xlead, %%xl;")
	g.f("mov.u32 %%xl, %%laneid;")
	g.f("setp.eq.u32 %%xq, %%xl, %%xlead;")
	g.f("cvt.u64.u32 %%xd, %%xn;")
	g.f("mov.b64 %%xbase, 0;")
	g.f("@%%xq atom.global.add.u64 %%xbase, [%%xb], %%xd;")
	between()
	g.f("mov.b64 {%%xlo, %%xhi}, %%xbase;")
	g.f("shfl.sync.idx.b32 %%xlo, %%xlo, %%xlead, 31, %%xm;")
	g.f("shfl.sync.idx.b32 %%xhi, %%xhi, %%xlead, 31, %%xm;")
	g.f("mov.b64 %%xbase, {%%xlo, %%xhi};")
	g.f("cvt.u64.u32 %%xk, %%xr;")
	g.f("add.s64 %%xk, %%xk, %%xbase;")
	g.f("add.s64 %s, %%xk, 1;", out)
	g.f("}")
}
