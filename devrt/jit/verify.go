package jit

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// The verifier walks every path of a program from its first instruction,
// like the kernel's, on an abstract state: what each register holds (an
// uninitialised value, a scalar with an unsigned range and a known power-of
// -two factor, or a pointer to the ctx, the stack or a map value with a
// constant and a bounded variable offset) and what each stack byte holds.
// A conditional jump whose outcome the ranges decide follows one edge only,
// so a loop with a constant bound is walked to its end; a path budget of
// MaxInsnsExplored instructions catches the others. It records for each
// instruction the facts code generation relies on (which kind of memory an
// access reaches, which map a helper gets), identical on every path.

// MaxInsnsExplored is the verifier's default budget of instructions
// processed over all paths (the kernel's is 1M too; Options.MaxInsns
// changes it).
const MaxInsnsExplored = 1_000_000

// StackSize is the eBPF stack of a probe, bytes.
const StackSize = 512

// CtxSize is struct gpuext_dev_ctx.
const CtxSize = 24

// VerifyError is a program the verifier rejects: the instruction index
// (of its first 8-byte slot) and the reason.
type VerifyError struct {
	Program string
	Insn    int
	Reason  string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("program %s: insn %d: %s", e.Program, e.Insn, e.Reason)
}

type kind uint8

const (
	kUninit kind = iota
	kScalar
	kCtx
	kStack
	kMapValue
	kMapValueOrNull
	kMapPtr
)

func (k kind) String() string {
	return [...]string{"uninitialised", "scalar", "ctx pointer", "stack pointer", "map value pointer", "map value or NULL", "map pointer"}[k]
}

func (k kind) isPtr() bool { return k >= kCtx }

// reg is one register of the abstract state. Scalars: [umin, umax] and
// align (log2 of a known factor, 64 for the constant 0). Pointers: a
// constant offset off plus a variable part in [umin, umax] with factor align.
type reg struct {
	k     kind
	umin  uint64
	umax  uint64
	align uint8
	off   int64
	m     int32  // map index (map pointers and values)
	id    uint32 // map value or NULL: registers that share the NULL check
}

func scalarConst(v uint64) reg {
	a := uint8(64)
	if v != 0 {
		a = uint8(bits.TrailingZeros64(v))
	}
	return reg{k: kScalar, umin: v, umax: v, align: a}
}

func scalarRange(lo, hi uint64) reg {
	if lo == hi {
		return scalarConst(lo)
	}
	return reg{k: kScalar, umin: lo, umax: hi}
}

func unknownScalar() reg { return reg{k: kScalar, umax: math.MaxUint64} }

func (r reg) isConst() bool { return r.k == kScalar && r.umin == r.umax }

// stack slot: 8 bytes; a spilled register (8-byte aligned 8-byte store of a
// register) or bytes known to be initialised scalars.
type slot struct {
	spilled bool
	r       reg
	init    uint8 // bit i: byte i holds an initialised scalar
}

type state struct {
	pc    int
	regs  [11]reg
	stack [StackSize / 8]slot
	ids   uint32
}

// memAccess is what code generation needs about one load/store/atomic.
type memAccess struct {
	k     kind
	m     int32
	align int // bytes the address is known to be a multiple of (1..8)
	// lo, hi: the lowest and highest offset into the object the access
	// starts at, over every path (loads and stores; code generation reads
	// a ctx field from its parameter when lo == hi)
	lo, hi int64
}

// callInfo is what code generation needs about one helper call.
type callInfo struct {
	m    int32        // the map argument (-1: none)
	args [5]memAccess // pointer arguments r1..r5 (k = kUninit: not a pointer)
	size int64        // ringbuf_output: the record size
}

// facts are the per-instruction results of verification.
type facts struct {
	visited  []bool
	mem      []memAccess
	calls    []callInfo
	ldMap    []int32 // LD_IMM64 of a map: its index
	callSeen []bool
	ringMax  map[int32]int64
}

type verifier struct {
	prog   *Program
	maps   []gpumap.Def
	mapIdx map[string]int32
	byRaw  map[int]int
	f      facts
	count  []int
	total  int
	budget int
}

// Verify checks p against the maps it may use and returns the facts code
// generation needs.
func verify(p *Program, maps []gpumap.Def, budget int) (*facts, error) {
	if budget <= 0 {
		budget = MaxInsnsExplored
	}
	v := &verifier{prog: p, maps: maps, mapIdx: map[string]int32{}, byRaw: map[int]int{}, budget: budget}
	for i, m := range maps {
		v.mapIdx[m.Name] = int32(i)
	}
	n := len(p.Insns)
	if n == 0 {
		return nil, &VerifyError{Program: p.Name, Reason: "empty program"}
	}
	for i, in := range p.Insns {
		v.byRaw[in.Raw] = i
	}
	v.f = facts{callSeen: make([]bool, n), visited: make([]bool, n), mem: make([]memAccess, n), calls: make([]callInfo, n), ldMap: make([]int32, n), ringMax: map[int32]int64{}}
	for i := range v.f.calls {
		v.f.calls[i].m = -1
		v.f.ldMap[i] = -1
	}
	v.count = make([]int, n)
	// Static checks first: jump targets, calls.
	for i, in := range p.Insns {
		if in.isJump() && !in.isCall() && !in.isExit() {
			if _, err := v.target(i); err != nil {
				return nil, err
			}
		}
		if in.isCall() {
			switch in.Src {
			case pseudoCall:
				return nil, v.errf(i, "bpf-to-bpf calls are not supported (make the callee static __always_inline)")
			case pseudoKfunc:
				return nil, v.errf(i, "kfunc calls are not supported on the GPU")
			}
			if in.Imm == 12 {
				return nil, v.errf(i, "tail calls are not supported")
			}
			if _, ok := helperNames[in.Imm]; !ok {
				return nil, v.errf(i, "unknown helper %d (device probes may call: see gpuext_dev_helper)", in.Imm)
			}
		}
		if in.isLdImm() && in.Map != "" {
			if _, ok := v.mapIdx[in.Map]; !ok {
				return nil, v.errf(i, "unknown map %q", in.Map)
			}
		}
	}
	var st state
	st.regs[1] = reg{k: kCtx}
	st.regs[10] = reg{k: kStack, off: StackSize, align: 64}
	work := []state{st}
	for len(work) > 0 {
		s := work[len(work)-1]
		work = work[:len(work)-1]
		for {
			if s.pc < 0 || s.pc >= n {
				return nil, v.errf(n-1, "execution falls off the end of the program")
			}
			v.total++
			v.count[s.pc]++
			if v.total > v.budget {
				return nil, v.budgetError()
			}
			v.f.visited[s.pc] = true
			next, branch, done, err := v.step(&s)
			if err != nil {
				return nil, err
			}
			if done {
				break
			}
			if branch != nil {
				work = append(work, *branch)
			}
			if next == nil {
				break
			}
			if next != &s {
				s = *next
			}
		}
	}
	return &v.f, nil
}

func (v *verifier) budgetError() error {
	best, bestN := -1, 0
	for i, in := range v.prog.Insns {
		if in.isJump() && !in.isCall() && !in.isExit() {
			t, _ := v.target(i)
			if t <= i && v.count[i] > bestN {
				best, bestN = i, v.count[i]
			}
		}
	}
	if best >= 0 {
		return v.errf(best, "loop not bounded (more than %d instructions explored)", v.budget)
	}
	return v.errf(0, "program too complex (more than %d instructions explored)", v.budget)
}

func (v *verifier) errf(i int, format string, args ...any) error {
	raw := 0
	if i >= 0 && i < len(v.prog.Insns) {
		raw = v.prog.Insns[i].Raw
	}
	return &VerifyError{Program: v.prog.Name, Insn: raw, Reason: fmt.Sprintf(format, args...)}
}

// target is the instruction index a jump at i goes to.
func (v *verifier) target(i int) (int, error) {
	in := v.prog.Insns[i]
	off := int(in.Off)
	if in.class() == clsJMP32 && in.aluOp() == jmpJA {
		off = int(in.imm32())
	}
	slots := 1
	if in.Wide {
		slots = 2
	}
	raw := in.Raw + slots + off
	t, ok := v.byRaw[raw]
	if !ok {
		return 0, v.errf(i, "jump to raw insn %d: out of range or into the middle of LD_IMM64", raw)
	}
	return t, nil
}

// step runs s.pc. next: the fall-through or taken state; branch: a second
// state to explore; done: the path ended at exit.
func (v *verifier) step(s *state) (next, branch *state, done bool, err error) {
	i := s.pc
	in := v.prog.Insns[i]
	switch in.class() {
	case clsALU, clsALU64:
		if err := v.alu(s, i, in); err != nil {
			return nil, nil, false, err
		}
	case clsLD:
		if in.Map != "" {
			m := v.mapIdx[in.Map]
			v.f.ldMap[i] = m
			if in.Src == pseudoMapFD {
				s.regs[in.Dst] = reg{k: kMapPtr, m: m}
			} else {
				d := v.maps[m]
				if !d.Type.IsArray() || d.Type != gpumap.Array {
					return nil, nil, false, v.errf(i, "direct value access into map %q (%s): only arrays", d.Name, d.Type)
				}
				s.regs[in.Dst] = reg{k: kMapValue, m: m, off: int64(in.MapOff), align: 64}
			}
		} else {
			s.regs[in.Dst] = scalarConst(uint64(in.Imm))
		}
	case clsLDX:
		if err := v.load(s, i, in); err != nil {
			return nil, nil, false, err
		}
	case clsST, clsSTX:
		if err := v.store(s, i, in); err != nil {
			return nil, nil, false, err
		}
	case clsJMP, clsJMP32:
		op := in.aluOp()
		switch {
		case in.isExit():
			r0 := s.regs[0]
			if r0.k == kUninit {
				return nil, nil, false, v.errf(i, "exit with r0 not initialised")
			}
			if r0.k != kScalar {
				return nil, nil, false, v.errf(i, "exit with a %s in r0 (a pointer must not leave the probe)", r0.k)
			}
			return nil, nil, true, nil
		case in.isCall():
			if err := v.call(s, i, in); err != nil {
				return nil, nil, false, err
			}
		case op == jmpJA:
			t, _ := v.target(i)
			s.pc = t
			return s, nil, false, nil
		default:
			return v.cond(s, i, in)
		}
	}
	s.pc++
	return s, nil, false, nil
}

func (v *verifier) readReg(s *state, i int, r uint8) (reg, error) {
	if s.regs[r].k == kUninit {
		return reg{}, v.errf(i, "r%d is not initialised", r)
	}
	return s.regs[r], nil
}

func (v *verifier) alu(s *state, i int, in Insn) error {
	is32 := in.class() == clsALU
	op := in.aluOp()
	if in.Dst == 10 {
		return v.errf(i, "r10 is read-only")
	}
	var src reg
	if op == aluEND || op == aluNEG {
		// unary
	} else if in.src() == srcX {
		var err error
		if src, err = v.readReg(s, i, in.Src); err != nil {
			return err
		}
	} else {
		c := uint64(in.Imm)
		if is32 {
			c = uint64(uint32(in.imm32()))
		}
		src = scalarConst(c)
	}
	if op == aluMOV {
		if in.Off != 0 { // movsx
			if src.k != kScalar {
				return v.errf(i, "sign-extending move of a %s", src.k)
			}
			s.regs[in.Dst] = v.signExt(src, int(in.Off), is32)
			return nil
		}
		if is32 {
			if src.k != kScalar {
				return v.errf(i, "32-bit move of a %s", src.k)
			}
			s.regs[in.Dst] = trunc32(src)
			return nil
		}
		s.regs[in.Dst] = src
		return nil
	}
	dst, err := v.readReg(s, i, in.Dst)
	if err != nil {
		return err
	}
	if dst.k.isPtr() || src.k.isPtr() {
		return v.ptrALU(s, i, in, dst, src, is32)
	}
	s.regs[in.Dst] = scalarALU(op, dst, src, is32, in.Off == 1, in.Imm, in.src())
	return nil
}

func (v *verifier) signExt(r reg, bitsN int, is32 bool) reg {
	if r.isConst() {
		x := r.umin
		var y uint64
		switch bitsN {
		case 8:
			y = uint64(int64(int8(x)))
		case 16:
			y = uint64(int64(int16(x)))
		default:
			y = uint64(int64(int32(x)))
		}
		if is32 {
			y = uint64(uint32(y))
		}
		return scalarConst(y)
	}
	lim := uint64(1)<<(bitsN-1) - 1
	if r.umax <= lim {
		return scalarRange(r.umin, r.umax)
	}
	if is32 {
		return scalarRange(0, math.MaxUint32)
	}
	return unknownScalar()
}

func trunc32(r reg) reg {
	if r.umax <= math.MaxUint32 {
		return r
	}
	if r.isConst() {
		return scalarConst(uint64(uint32(r.umin)))
	}
	a := r.align
	if a > 32 {
		a = 32
	}
	return reg{k: kScalar, umin: 0, umax: math.MaxUint32, align: a}
}

func minU8(a, b uint8) uint8 {
	if a < b {
		return a
	}
	return b
}

// scalarALU is the abstract result of a scalar operation.
func scalarALU(op uint8, a, b reg, is32, signed bool, imm int64, srcBit uint8) reg {
	if op == aluEND {
		if a.isConst() {
			return scalarConst(evalALU(op, a.umin, 0, is32, signed, imm, srcBit))
		}
		switch imm {
		case 16:
			return scalarRange(0, 0xffff)
		case 32:
			return scalarRange(0, math.MaxUint32)
		}
		return unknownScalar()
	}
	if is32 {
		a, b = trunc32(a), trunc32(b)
	}
	if a.isConst() && (b.isConst() || op == aluNEG) {
		v := evalALU(op, a.umin, b.umin, is32, signed, imm, srcBit)
		return scalarConst(v)
	}
	lim := uint64(math.MaxUint64)
	if is32 {
		lim = math.MaxUint32
	}
	full := reg{k: kScalar, umax: lim}
	var r reg
	switch op {
	case aluADD:
		hi, c := bits.Add64(a.umax, b.umax, 0)
		if c != 0 || hi > lim {
			return full
		}
		r = reg{k: kScalar, umin: a.umin + b.umin, umax: hi, align: minU8(a.align, b.align)}
	case aluSUB:
		if a.umin < b.umax {
			return full
		}
		r = reg{k: kScalar, umin: a.umin - b.umax, umax: a.umax - b.umin, align: minU8(a.align, b.align)}
	case aluMUL:
		hi, lo := bits.Mul64(a.umax, b.umax)
		if hi != 0 || lo > lim {
			r = full
		} else {
			r = reg{k: kScalar, umin: a.umin * b.umin, umax: lo}
		}
		al := uint16(a.align) + uint16(b.align)
		if al > 64 {
			al = 64
		}
		r.align = uint8(al)
		if r.align > 63 && !(r.umin == 0 && r.umax == 0) {
			r.align = 63
		}
	case aluDIV:
		if signed {
			return full
		}
		if b.isConst() && b.umin != 0 {
			r = reg{k: kScalar, umin: a.umin / b.umin, umax: a.umax / b.umin}
		} else {
			r = reg{k: kScalar, umax: a.umax}
		}
	case aluMOD:
		if signed {
			return full
		}
		if b.isConst() && b.umin != 0 {
			hi := b.umin - 1
			if a.umax < hi {
				hi = a.umax
			}
			r = reg{k: kScalar, umax: hi}
		} else {
			r = reg{k: kScalar, umax: a.umax}
		}
	case aluAND:
		hi := a.umax
		if b.umax < hi {
			hi = b.umax
		}
		r = reg{k: kScalar, umax: hi, align: a.align}
		if b.align > r.align {
			r.align = b.align
		}
		if b.isConst() {
			r.align = max(a.align, uint8(bits.TrailingZeros64(b.umin|1<<63)))
		}
	case aluOR, aluXOR:
		n := bits.Len64(a.umax | b.umax)
		hi := uint64(math.MaxUint64)
		if n < 64 {
			hi = uint64(1)<<n - 1
		}
		lo := uint64(0)
		if op == aluOR {
			lo = max(a.umin, b.umin)
		}
		r = reg{k: kScalar, umin: lo, umax: hi, align: minU8(a.align, b.align)}
	case aluLSH:
		if !b.isConst() {
			return full
		}
		sh := b.umin & 63
		if is32 {
			sh = b.umin & 31
		}
		if sh != 0 && a.umax>>(64-sh) != 0 {
			return full
		}
		r = reg{k: kScalar, umin: a.umin << sh, umax: a.umax << sh, align: uint8(min(63, uint64(a.align)+sh))}
		if r.umax > lim {
			return full
		}
	case aluRSH:
		if !b.isConst() {
			r = reg{k: kScalar, umax: a.umax}
			break
		}
		sh := b.umin & 63
		if is32 {
			sh = b.umin & 31
		}
		r = reg{k: kScalar, umin: a.umin >> sh, umax: a.umax >> sh}
	default: // NEG, ARSH, END of unknowns
		return full
	}
	if r.umax > lim {
		return full
	}
	if r.umin == r.umax {
		return scalarConst(r.umin)
	}
	return r
}

func (v *verifier) ptrALU(s *state, i int, in Insn, dst, src reg, is32 bool) error {
	op := in.aluOp()
	if is32 {
		return v.errf(i, "32-bit arithmetic on a %s", pickPtr(dst, src).k)
	}
	if dst.k.isPtr() && src.k.isPtr() {
		return v.errf(i, "arithmetic between two pointers (%s, %s)", dst.k, src.k)
	}
	p, x := dst, src
	if src.k.isPtr() {
		if op != aluADD {
			return v.errf(i, "%s of a pointer from a scalar", aluName(op))
		}
		p, x = src, dst
	}
	if p.k == kMapValueOrNull {
		return v.errf(i, "arithmetic on a map value pointer before its NULL check")
	}
	if p.k == kMapPtr {
		return v.errf(i, "arithmetic on a map pointer")
	}
	if op != aluADD && op != aluSUB {
		return v.errf(i, "%s on a %s is not allowed", aluName(op), p.k)
	}
	const lim = 1 << 29
	if x.isConst() {
		c := int64(x.umin)
		if op == aluSUB {
			c = -c
		}
		if c > lim || c < -lim {
			return v.errf(i, "pointer offset %d out of range", c)
		}
		p.off += c
		s.regs[in.Dst] = p
		return nil
	}
	if op == aluSUB {
		return v.errf(i, "subtracting a variable from a %s", p.k)
	}
	if x.umax > lim {
		return v.errf(i, "variable offset added to a %s is not bounded (max %d)", p.k, x.umax)
	}
	if p.umax == 0 && p.umin == 0 {
		p.align = x.align
	} else {
		p.align = minU8(p.align, x.align)
	}
	p.umin += x.umin
	p.umax += x.umax
	s.regs[in.Dst] = p
	return nil
}

func pickPtr(a, b reg) reg {
	if a.k.isPtr() {
		return a
	}
	return b
}

func aluName(op uint8) string {
	names := map[uint8]string{aluADD: "add", aluSUB: "sub", aluMUL: "mul", aluDIV: "div", aluOR: "or", aluAND: "and",
		aluLSH: "lsh", aluRSH: "rsh", aluNEG: "neg", aluMOD: "mod", aluXOR: "xor", aluMOV: "mov", aluARSH: "arsh", aluEND: "byte swap"}
	return names[op]
}

// access checks an access of n bytes at p+off and returns what code
// generation needs; write tells a store.
func (v *verifier) access(s *state, i int, p reg, off int64, n int, write bool, what string) (memAccess, error) {
	lo := p.off + off + int64(p.umin)
	hi := p.off + off + int64(p.umax)
	al := 8
	if p.umax != 0 || p.umin != 0 {
		al = 1 << min(3, int(p.align))
	}
	if c := p.off + off; c%8 != 0 {
		al = min(al, 1<<bits.TrailingZeros64(uint64(c)))
	}
	acc := memAccess{k: p.k, m: p.m, align: al, lo: lo, hi: hi}
	if al < n {
		return acc, v.errf(i, "%s of %d bytes at a %s%+d is not %d-byte aligned", what, n, p.k, lo, n)
	}
	switch p.k {
	case kCtx:
		if write {
			return acc, v.errf(i, "write into the ctx (struct gpuext_dev_ctx is read-only)")
		}
		if lo < 0 || hi+int64(n) > CtxSize {
			return acc, v.errf(i, "ctx read of %d bytes at offset %d outside struct gpuext_dev_ctx (%d bytes)", n, lo, CtxSize)
		}
	case kStack:
		if p.umax != p.umin {
			return acc, v.errf(i, "stack access with a variable offset")
		}
		if lo < 0 || hi+int64(n) > StackSize {
			return acc, v.errf(i, "stack %s of %d bytes at fp%+d outside the %d-byte stack", what, n, lo-StackSize, StackSize)
		}
	case kMapValue:
		d := v.maps[p.m]
		if lo < 0 || hi+int64(n) > int64(d.ValueSize) {
			return acc, v.errf(i, "map %q value %s of %d bytes at offset [%d,%d] outside value_size %d", d.Name, what, n, lo, hi, d.ValueSize)
		}
	case kMapValueOrNull:
		return acc, v.errf(i, "%s through a map value pointer that may be NULL (check it first)", what)
	case kMapPtr:
		return acc, v.errf(i, "%s through a map pointer", what)
	default:
		return acc, v.errf(i, "%s through a scalar (not a pointer)", what)
	}
	return acc, nil
}

func (v *verifier) record(i int, acc memAccess) error {
	prev := v.f.mem[i]
	if prev.k == kUninit {
		v.f.mem[i] = acc
		return nil
	}
	if prev.k != acc.k || prev.m != acc.m {
		return v.errf(i, "memory access reaches a %s on one path and a %s on another", prev.k, acc.k)
	}
	v.f.mem[i].align = min(prev.align, acc.align)
	v.f.mem[i].lo = min(prev.lo, acc.lo)
	v.f.mem[i].hi = max(prev.hi, acc.hi)
	return nil
}

func (v *verifier) load(s *state, i int, in Insn) error {
	p, err := v.readReg(s, i, in.Src)
	if err != nil {
		return err
	}
	n := in.bytes()
	acc, err := v.access(s, i, p, int64(in.Off), n, false, "read")
	if err != nil {
		return err
	}
	if err := v.record(i, acc); err != nil {
		return err
	}
	res := unknownScalar()
	if n < 8 {
		res = scalarRange(0, 1<<(8*n)-1)
	}
	if in.mode() == modeMEMSX {
		res = unknownScalar()
	}
	if p.k == kStack {
		o := int(p.off + int64(in.Off))
		r, err := v.stackRead(s, i, o, n)
		if err != nil {
			return err
		}
		if r != nil && in.mode() != modeMEMSX {
			res = *r
		}
	}
	if in.Dst == 10 {
		return v.errf(i, "r10 is read-only")
	}
	s.regs[in.Dst] = res
	return nil
}

// stackRead checks n bytes at stack offset o are initialised; for an
// 8-byte read of a spilled register it returns that register.
func (v *verifier) stackRead(s *state, i int, o, n int) (*reg, error) {
	sl := &s.stack[o/8]
	if sl.spilled {
		if o%8 == 0 && n == 8 {
			r := sl.r
			return &r, nil
		}
		if sl.r.k.isPtr() {
			return nil, v.errf(i, "partial read of a spilled %s at fp%+d", sl.r.k, o-StackSize)
		}
		return nil, nil
	}
	for b := o; b < o+n; b++ {
		sb := &s.stack[b/8]
		if sb.spilled {
			if sb.r.k.isPtr() {
				return nil, v.errf(i, "read of a spilled %s at fp%+d", sb.r.k, b-StackSize)
			}
			continue
		}
		if sb.init&(1<<(b%8)) == 0 {
			return nil, v.errf(i, "read of uninitialised stack at fp%+d", b-StackSize)
		}
	}
	return nil, nil
}

// stackWrite marks n bytes at o written with r (a spill when it is an
// aligned 8-byte write).
func stackWrite(s *state, o, n int, r reg) {
	if n == 8 && o%8 == 0 {
		s.stack[o/8] = slot{spilled: true, r: r}
		return
	}
	for b := o; b < o+n; b++ {
		sb := &s.stack[b/8]
		if sb.spilled {
			if sb.r.k.isPtr() {
				*sb = slot{}
			} else {
				*sb = slot{init: 0xff}
			}
		}
		sb.init |= 1 << (b % 8)
	}
}

func (v *verifier) store(s *state, i int, in Insn) error {
	p, err := v.readReg(s, i, in.Dst)
	if err != nil {
		return err
	}
	n := in.bytes()
	var val reg
	if in.class() == clsST {
		val = scalarConst(uint64(in.Imm))
	} else if val, err = v.readReg(s, i, in.Src); err != nil {
		return err
	}
	if in.mode() == modeATOMIC {
		return v.atomic(s, i, in, p, val)
	}
	acc, err := v.access(s, i, p, int64(in.Off), n, true, "write")
	if err != nil {
		return err
	}
	if err := v.record(i, acc); err != nil {
		return err
	}
	if val.k.isPtr() {
		if p.k != kStack || n != 8 {
			return v.errf(i, "storing a %s into %s leaks a pointer", val.k, p.k)
		}
	}
	if p.k == kStack {
		if n < 8 && val.k == kScalar {
			val = unknownScalar()
		}
		stackWrite(s, int(p.off+int64(in.Off)), n, val)
	}
	return nil
}

func (v *verifier) atomic(s *state, i int, in Insn, p, val reg) error {
	n := in.bytes()
	if p.k != kMapValue {
		if p.k == kStack {
			return v.errf(i, "atomic operation on the stack is not supported (only on map values)")
		}
		_, err := v.access(s, i, p, int64(in.Off), n, true, "atomic")
		if err == nil {
			err = v.errf(i, "atomic operation on a %s (only on map values)", p.k)
		}
		return err
	}
	acc, err := v.access(s, i, p, int64(in.Off), n, true, "atomic")
	if err != nil {
		return err
	}
	if err := v.record(i, acc); err != nil {
		return err
	}
	if val.k != kScalar {
		return v.errf(i, "atomic with a %s operand leaks a pointer", val.k)
	}
	lim := uint64(math.MaxUint64)
	if n == 4 {
		lim = math.MaxUint32
	}
	switch in.Imm {
	case atomCMPXCHG:
		if r0, err := v.readReg(s, i, 0); err != nil {
			return err
		} else if r0.k != kScalar {
			return v.errf(i, "cmpxchg with a %s in r0", r0.k)
		}
		s.regs[0] = scalarRange(0, lim)
	case atomXCHG:
		s.regs[in.Src] = scalarRange(0, lim)
	default:
		if in.Imm&atomFETCH != 0 {
			s.regs[in.Src] = scalarRange(0, lim)
		}
	}
	return nil
}

func (v *verifier) mapArg(s *state, i int, r uint8) (int32, error) {
	x, err := v.readReg(s, i, r)
	if err != nil {
		return 0, err
	}
	if x.k != kMapPtr {
		return 0, v.errf(i, "r%d must be a map pointer, is a %s", r, x.k)
	}
	return x.m, nil
}

// memArg checks a pointer argument to n readable (or writable) bytes.
func (v *verifier) memArg(s *state, i int, r uint8, n int, write bool) (memAccess, error) {
	p, err := v.readReg(s, i, r)
	if err != nil {
		return memAccess{}, err
	}
	if p.k != kStack && p.k != kMapValue {
		return memAccess{}, v.errf(i, "r%d must point to the stack or a map value, is a %s", r, p.k)
	}
	lo := p.off + int64(p.umin)
	hi := p.off + int64(p.umax)
	al := 8
	if p.umax != 0 || p.umin != 0 {
		al = 1 << min(3, int(p.align))
	}
	if p.off%8 != 0 {
		al = min(al, 1<<bits.TrailingZeros64(uint64(p.off)))
	}
	acc := memAccess{k: p.k, m: p.m, align: al, lo: lo, hi: hi}
	if p.k == kStack {
		if p.umin != p.umax {
			return acc, v.errf(i, "r%d: stack pointer with a variable offset", r)
		}
		if lo < 0 || lo+int64(n) > StackSize {
			return acc, v.errf(i, "r%d: %d bytes at fp%+d outside the stack", r, n, lo-StackSize)
		}
		if write {
			if al < 8 && n == 8 {
				return acc, v.errf(i, "r%d: 8-byte output at fp%+d is not 8-byte aligned", r, lo-StackSize)
			}
			stackWrite(s, int(lo), n, unknownScalar())
		} else {
			for b := int(lo); b < int(lo)+n; b++ {
				sl := &s.stack[b/8]
				if sl.spilled {
					if sl.r.k.isPtr() {
						return acc, v.errf(i, "r%d: the bytes at fp%+d hold a %s (pointer leak)", r, b-StackSize, sl.r.k)
					}
					continue
				}
				if sl.init&(1<<(b%8)) == 0 {
					return acc, v.errf(i, "r%d: read of uninitialised stack at fp%+d", r, b-StackSize)
				}
			}
		}
	} else {
		d := v.maps[p.m]
		if lo < 0 || hi+int64(n) > int64(d.ValueSize) {
			return acc, v.errf(i, "r%d: %d bytes at map %q value offset [%d,%d] outside value_size %d", r, n, d.Name, lo, hi, d.ValueSize)
		}
		if write && al < 8 && n == 8 {
			return acc, v.errf(i, "r%d: 8-byte output is not 8-byte aligned", r)
		}
	}
	return acc, nil
}

func (v *verifier) recordCall(i int, ci callInfo) error {
	prev := &v.f.calls[i]
	if !v.f.callSeen[i] {
		v.f.callSeen[i] = true
		*prev = ci
		return nil
	}
	if prev.m != ci.m {
		return v.errf(i, "helper gets map %d on one path and map %d on another", prev.m, ci.m)
	}
	for a := range ci.args {
		if prev.args[a].k != ci.args[a].k || prev.args[a].m != ci.args[a].m {
			return v.errf(i, "helper argument r%d is a %s on one path and a %s on another", a+1, prev.args[a].k, ci.args[a].k)
		}
		prev.args[a].align = min(prev.args[a].align, ci.args[a].align)
		prev.args[a].lo = min(prev.args[a].lo, ci.args[a].lo)
		prev.args[a].hi = max(prev.args[a].hi, ci.args[a].hi)
	}
	if prev.size != ci.size {
		return v.errf(i, "ring record size differs between paths (%d, %d)", prev.size, ci.size)
	}
	return nil
}

func (v *verifier) call(s *state, i int, in Insn) error {
	ci := callInfo{m: -1}
	ret := unknownScalar()
	id := in.Imm
	switch id {
	case HelperMapLookup, HelperMapUpdate, HelperMapDelete, HelperMapAdd:
		m, err := v.mapArg(s, i, 1)
		if err != nil {
			return err
		}
		ci.m = m
		d := v.maps[m]
		if d.Type == gpumap.Ringbuf {
			return v.errf(i, "%s on ring buffer %q", helperNames[id], d.Name)
		}
		if ci.args[1], err = v.memArg(s, i, 2, int(d.KeySize), false); err != nil {
			return err
		}
		switch id {
		case HelperMapLookup:
			s.ids++
			ret = reg{k: kMapValueOrNull, m: m, id: s.ids, align: 64}
		case HelperMapUpdate:
			if ci.args[2], err = v.memArg(s, i, 3, int(d.ValueSize), false); err != nil {
				return err
			}
			if _, err := v.readReg(s, i, 4); err != nil {
				return err
			}
			if s.regs[4].k != kScalar {
				return v.errf(i, "r4 (flags) must be a scalar")
			}
		case HelperMapDelete:
			if d.Type != gpumap.Hash {
				return v.errf(i, "map_delete_elem on %s %q (hash only)", d.Type, d.Name)
			}
		case HelperMapAdd:
			if d.ValueSize < 8 {
				return v.errf(i, "map_add on map %q with value_size %d (needs 8)", d.Name, d.ValueSize)
			}
			x, err := v.readReg(s, i, 3)
			if err != nil {
				return err
			}
			if x.k != kScalar {
				return v.errf(i, "r3 (delta) must be a scalar, is a %s", x.k)
			}
		}
		if id != HelperMapLookup {
			ret = reg{k: kScalar, umax: math.MaxUint64}
		}
	case HelperRingbufOutput, HelperRingOutputAt, HelperRingClaim:
		m, err := v.mapArg(s, i, 1)
		if err != nil {
			return err
		}
		ci.m = m
		d := v.maps[m]
		if d.Type != gpumap.Ringbuf {
			return v.errf(i, "%s on %s %q", helperNames[id], d.Type, d.Name)
		}
		if id == HelperRingClaim { // (ring, sm): an index (the scalar default)
			if x, err := v.readReg(s, i, 2); err != nil {
				return err
			} else if x.k != kScalar {
				return v.errf(i, "r2 (sm) must be a scalar")
			}
			break
		}
		// ringbuf_output (ring, data, size, flags); ring_output_at
		// (ring, sm, index, data, size)
		data, size := uint8(2), uint8(3)
		if id == HelperRingOutputAt {
			data, size = 4, 5
			for r := uint8(2); r <= 3; r++ {
				if x, err := v.readReg(s, i, r); err != nil {
					return err
				} else if x.k != kScalar {
					return v.errf(i, "r%d (%s) must be a scalar", r, map[uint8]string{2: "sm", 3: "index"}[r])
				}
			}
		}
		sz, err := v.readReg(s, i, size)
		if err != nil {
			return err
		}
		if !sz.isConst() || sz.umin == 0 || sz.umin > gpumap.MaxValue {
			return v.errf(i, "%s size must be a constant in 1..%d", helperNames[id], gpumap.MaxValue)
		}
		if d.ValueSize != 0 && sz.umin > uint64(d.ValueSize) {
			return v.errf(i, "%s of %d bytes into ring %q of %d-byte records", helperNames[id], sz.umin, d.Name, d.ValueSize)
		}
		ci.size = int64(sz.umin)
		if ci.args[data-1], err = v.memArg(s, i, data, int(sz.umin), false); err != nil {
			return err
		}
		if id == HelperRingbufOutput {
			if x, err := v.readReg(s, i, 4); err != nil {
				return err
			} else if x.k != kScalar {
				return v.errf(i, "r4 (flags) must be a scalar")
			}
		}
		if ci.size > v.f.ringMax[m] {
			v.f.ringMax[m] = ci.size
		}
		ret = scalarRange(0, math.MaxUint64)
	case HelperBlockIdx, HelperBlockDim, HelperThreadIdx, HelperGridDim:
		for a := uint8(1); a <= 3; a++ {
			acc, err := v.memArg(s, i, a, 8, true)
			if err != nil {
				return err
			}
			ci.args[a-1] = acc
		}
		ret = scalarConst(0)
	default:
		ret = scalarRange(0, scalarHelperMax[id])
	}
	if err := v.recordCall(i, ci); err != nil {
		return err
	}
	for r := 1; r <= 5; r++ {
		s.regs[r] = reg{}
	}
	s.regs[0] = ret
	return nil
}

// cond explores a conditional jump: both edges unless the abstract values
// decide it.
func (v *verifier) cond(s *state, i int, in Insn) (next, branch *state, done bool, err error) {
	t, _ := v.target(i)
	a, err := v.readReg(s, i, in.Dst)
	if err != nil {
		return nil, nil, false, err
	}
	var b reg
	if in.src() == srcX {
		if b, err = v.readReg(s, i, in.Src); err != nil {
			return nil, nil, false, err
		}
	} else {
		b = scalarConst(uint64(in.Imm))
	}
	is32 := in.class() == clsJMP32
	op := in.aluOp()

	if a.k.isPtr() || b.k.isPtr() {
		taken, fall := *s, *s
		taken.pc, fall.pc = t, i+1
		// Only a NULL check of a map value (or a known non-NULL pointer
		// against 0) is allowed.
		p, o := a, b
		if !a.k.isPtr() {
			p, o = b, a
		}
		if (op != jmpJEQ && op != jmpJNE) || is32 || in.src() == srcX && a.k.isPtr() && b.k.isPtr() || !(o.isConst() && o.umin == 0) {
			return nil, nil, false, v.errf(i, "comparison of a %s (only a NULL check of a map value is allowed)", p.k)
		}
		if p.k != kMapValueOrNull {
			// never NULL: decided
			if op == jmpJEQ {
				return &fall, nil, false, nil
			}
			return &taken, nil, false, nil
		}
		isNull, notNull := &taken, &fall
		if op == jmpJNE {
			isNull, notNull = &fall, &taken
		}
		markNull(isNull, p.id, true)
		markNull(notNull, p.id, false)
		return &fall, &taken, false, nil
	}
	if is32 {
		a, b = trunc32(a), trunc32(b)
	}
	tk, fk := refine(op, a, b, is32)
	// tk/fk: the refined (a, b) on each edge; nil: impossible edge.
	orig := s.regs
	switch {
	case tk == nil && fk == nil:
		return nil, nil, true, nil
	case fk == nil:
		setRefined(s, in, tk, is32, &orig)
		s.pc = t
		return s, nil, false, nil
	case tk == nil:
		setRefined(s, in, fk, is32, &orig)
		s.pc = i + 1
		return s, nil, false, nil
	}
	taken := *s
	setRefined(&taken, in, tk, is32, &orig)
	taken.pc = t
	setRefined(s, in, fk, is32, &orig)
	s.pc = i + 1
	return s, &taken, false, nil
}

func markNull(s *state, id uint32, null bool) {
	fix := func(r *reg) {
		if r.k == kMapValueOrNull && r.id == id {
			if null {
				*r = scalarConst(0)
			} else {
				r.k = kMapValue
			}
		}
	}
	for i := range s.regs {
		fix(&s.regs[i])
	}
	for i := range s.stack {
		if s.stack[i].spilled {
			fix(&s.stack[i].r)
		}
	}
}

type pair struct{ a, b reg }

// setRefined writes refined ranges back (64-bit compares only: a 32-bit
// compare refines only values that fit in 32 bits, which trunc32 kept).
func setRefined(s *state, in Insn, p *pair, is32 bool, orig *[11]reg) {
	if !(is32 && orig[in.Dst].umax > math.MaxUint32) {
		s.regs[in.Dst] = p.a
	}
	if in.src() == srcX && !(is32 && orig[in.Src].umax > math.MaxUint32) {
		s.regs[in.Src] = p.b
	}
}

// refine narrows [a] and [b] on the taken and fall-through edges of a
// compare; nil marks an edge no value can take.
func refine(op uint8, a, b reg, is32 bool) (taken, fall *pair) {
	signedOK := a.umax <= math.MaxInt64 && b.umax <= math.MaxInt64
	if is32 {
		signedOK = a.umax <= math.MaxInt32 && b.umax <= math.MaxInt32
	}
	switch op {
	case jmpJSGT, jmpJSGE, jmpJSLT, jmpJSLE:
		if !signedOK {
			if a.isConst() && b.isConst() {
				r := evalJump(op, a.umin, b.umin, is32)
				if r {
					return &pair{a, b}, nil
				}
				return nil, &pair{a, b}
			}
			return &pair{a, b}, &pair{a, b}
		}
		op = map[uint8]uint8{jmpJSGT: jmpJGT, jmpJSGE: jmpJGE, jmpJSLT: jmpJLT, jmpJSLE: jmpJLE}[op]
	}
	switch op {
	case jmpJEQ, jmpJNE:
		eq, ne := rangeEq(a, b), rangeNe(a, b)
		if op == jmpJEQ {
			return eq, ne
		}
		return ne, eq
	case jmpJGT:
		return rangeLt(b, a, true), rangeLe(a, b, false)
	case jmpJGE:
		return rangeLe(b, a, true), rangeLt(a, b, false)
	case jmpJLT:
		return rangeLt(a, b, false), rangeLe(b, a, true)
	case jmpJLE:
		return rangeLe(a, b, false), rangeLt(b, a, true)
	case jmpJSET:
		if a.isConst() && b.isConst() {
			if a.umin&b.umin != 0 {
				return &pair{a, b}, nil
			}
			return nil, &pair{a, b}
		}
		if b.isConst() && a.umax < b.umin&-b.umin { // every bit of b above a's range
			return nil, &pair{a, b}
		}
		return &pair{a, b}, &pair{a, b}
	}
	return &pair{a, b}, &pair{a, b}
}

func narrow(r reg, lo, hi uint64) (reg, bool) {
	lo = max(lo, r.umin)
	hi = min(hi, r.umax)
	if lo > hi {
		return r, false
	}
	al := r.align
	r2 := scalarRange(lo, hi)
	if !r2.isConst() {
		r2.align = al
	}
	return r2, true
}

// rangeLt: x < y (swap tells the pair is (y, x) in the caller's order).
func rangeLt(x, y reg, swap bool) *pair {
	if y.umax == 0 {
		return nil
	}
	nx, ok1 := narrow(x, 0, y.umax-1)
	ny, ok2 := narrow(y, x.umin+1, math.MaxUint64)
	if x.umin == math.MaxUint64 || !ok1 || !ok2 {
		return nil
	}
	if swap {
		return &pair{ny, nx}
	}
	return &pair{nx, ny}
}

// rangeLe: x <= y.
func rangeLe(x, y reg, swap bool) *pair {
	nx, ok1 := narrow(x, 0, y.umax)
	ny, ok2 := narrow(y, x.umin, math.MaxUint64)
	if !ok1 || !ok2 {
		return nil
	}
	if swap {
		return &pair{ny, nx}
	}
	return &pair{nx, ny}
}

func rangeEq(a, b reg) *pair {
	lo, hi := max(a.umin, b.umin), min(a.umax, b.umax)
	if lo > hi {
		return nil
	}
	na, _ := narrow(a, lo, hi)
	nb, _ := narrow(b, lo, hi)
	return &pair{na, nb}
}

func rangeNe(a, b reg) *pair {
	if a.isConst() && b.isConst() && a.umin == b.umin {
		return nil
	}
	na, nb := a, b
	if b.isConst() {
		if a.umin == b.umin && a.umin < a.umax {
			na, _ = narrow(a, a.umin+1, a.umax)
		} else if a.umax == b.umin && a.umin < a.umax {
			na, _ = narrow(a, a.umin, a.umax-1)
		}
	}
	return &pair{na, nb}
}
