package jit

import (
	"encoding/binary"
	"fmt"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// Env is what one GPU thread would see: the ctx its call site built and the
// special registers the helpers read. The interpreter takes it instead of a
// GPU so tests can compute the exact results a GPU run must give.
type Env struct {
	Ctx                                    [CtxSize]byte
	BlockIdx, BlockDim, ThreadIdx, GridDim [3]uint32
	SMID, NSMID, WarpID, LaneID            uint32
	ActiveLanes                            uint32        // lanes active at the call site
	GridID                                 uint64        // %gridid: the launch
	Timer                                  func() uint64 // %globaltimer; nil: 0
	// Block is the thread block's shared memory for per-block arrays
	// (Layout.BlockSize bytes, zero when the block starts): the caller
	// keeps one per block across the calls of its threads.
	Block []byte
}

// BlockLinear is the block's linear id (x fastest).
func (e *Env) BlockLinear() uint64 {
	return uint64(e.BlockIdx[0]) + uint64(e.GridDim[0])*(uint64(e.BlockIdx[1])+uint64(e.GridDim[1])*uint64(e.BlockIdx[2]))
}

func (e *Env) threadLinear() uint64 {
	return uint64(e.ThreadIdx[0]) + uint64(e.BlockDim[0])*(uint64(e.ThreadIdx[1])+uint64(e.BlockDim[1])*uint64(e.ThreadIdx[2]))
}

func (e *Env) blockThreads() uint64 {
	return uint64(e.BlockDim[0]) * uint64(e.BlockDim[1]) * uint64(e.BlockDim[2])
}

// GlobalWarp is the block's linear id times its warps plus the warp in the block.
func (e *Env) GlobalWarp() uint64 {
	return e.BlockLinear()*((e.blockThreads()+31)/32) + e.threadLinear()/32
}

// GlobalThread is the block's linear id times its threads plus the thread in the block.
func (e *Env) GlobalThread() uint64 {
	return e.BlockLinear()*e.blockThreads() + e.threadLinear()
}

// Virtual addresses the interpreter gives the memories a program reaches.
// They never leave the program (the verifier keeps pointers inside).
const (
	vRegion = 0x4000_0000_0000
	vStack  = 0x7100_0000_0000
	vCtx    = 0x7000_0000_0000
	vBlock  = 0x7200_0000_0000
	vSpan   = 0x0100_0000_0000
)

type machine struct {
	p      *Compiled
	prog   *compiledProg
	region gpumap.Region
	env    *Env
	stack  [StackSize]byte
}

// Run interprets probe i of c for one thread (or one warp leader) on
// region. It returns r0.
func (c *Compiled) Run(i int, region []byte, env *Env) (uint64, error) {
	if i < 0 || i >= len(c.progs) {
		return 0, fmt.Errorf("no probe %d", i)
	}
	if uint64(len(region)) < c.Layout.Size {
		return 0, fmt.Errorf("region of %d bytes, the layout needs %d", len(region), c.Layout.Size)
	}
	if len(env.Block) < int(c.Layout.BlockSize) {
		return 0, fmt.Errorf("block memory of %d bytes, the per-block arrays need %d", len(env.Block), c.Layout.BlockSize)
	}
	m := &machine{p: c, prog: &c.progs[i], region: region, env: env}
	return m.run()
}

func (m *machine) mem(addr uint64, n int) ([]byte, error) {
	switch {
	case addr >= vCtx && addr < vCtx+vSpan:
		o := addr - vCtx
		if o+uint64(n) <= CtxSize {
			return m.env.Ctx[o : o+uint64(n)], nil
		}
	case addr >= vStack && addr < vStack+vSpan:
		o := addr - vStack
		if o+uint64(n) <= StackSize {
			return m.stack[o : o+uint64(n)], nil
		}
	case addr >= vRegion && addr < vRegion+vSpan:
		return m.region.Bytes(addr-vRegion, uint64(n))
	case addr >= vBlock && addr < vBlock+vSpan:
		o := addr - vBlock
		if o+uint64(n) <= uint64(len(m.env.Block)) {
			return m.env.Block[o : o+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("access of %d bytes at %#x outside ctx, stack, region and block memory", n, addr)
}

func getN(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func putN(b []byte, v uint64) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

func (m *machine) run() (uint64, error) {
	var r [11]uint64
	r[1] = vCtx
	r[10] = vStack + StackSize
	insns := m.prog.Insns
	byRaw := m.prog.byRaw
	steps := 0
	for pc := 0; ; {
		if pc < 0 || pc >= len(insns) {
			return 0, fmt.Errorf("pc %d outside the program", pc)
		}
		if steps++; steps > MaxInsnsExplored {
			return 0, fmt.Errorf("more than %d instructions run", MaxInsnsExplored)
		}
		in := insns[pc]
		fail := func(err error) (uint64, error) { return 0, fmt.Errorf("insn %d: %w", in.Raw, err) }
		switch in.class() {
		case clsALU, clsALU64:
			is32 := in.class() == clsALU
			src := uint64(in.Imm)
			if in.src() == srcX {
				src = r[in.Src]
			}
			switch {
			case in.aluOp() == aluMOV && in.Off != 0:
				r[in.Dst] = movsx(src, in.Off, is32)
			default:
				r[in.Dst] = evalALU(in.aluOp(), r[in.Dst], src, is32, in.Off == 1, in.Imm, in.src())
			}
		case clsLD:
			if in.Map != "" {
				mp := m.p.Layout.Maps[m.prog.mapIdx[in.Map]]
				if in.Src == pseudoMapFD {
					r[in.Dst] = vRegion + mp.Offset
				} else {
					off, _ := mp.ElemOffset(0, 0)
					r[in.Dst] = vRegion + off + uint64(int64(in.MapOff))
				}
			} else {
				r[in.Dst] = uint64(in.Imm)
			}
		case clsLDX:
			b, err := m.mem(r[in.Src]+uint64(int64(in.Off)), in.bytes())
			if err != nil {
				return fail(err)
			}
			v := getN(b)
			if in.mode() == modeMEMSX {
				v = movsx(v, int16(8*in.bytes()), false)
			}
			r[in.Dst] = v
		case clsST, clsSTX:
			b, err := m.mem(r[in.Dst]+uint64(int64(in.Off)), in.bytes())
			if err != nil {
				return fail(err)
			}
			v := uint64(in.Imm)
			if in.class() == clsSTX {
				v = r[in.Src]
			}
			if in.mode() == modeATOMIC {
				m.atomic(&r, in, b)
			} else {
				putN(b, v)
			}
		case clsJMP, clsJMP32:
			op := in.aluOp()
			switch {
			case in.isExit():
				return r[0], nil
			case in.isCall():
				v, err := m.call(&r, pc)
				if err != nil {
					return fail(err)
				}
				r[0] = v
			case op == jmpJA:
				off := int(in.Off)
				if in.class() == clsJMP32 {
					off = int(in.imm32())
				}
				pc = byRaw[in.Raw+1+off]
				continue
			default:
				b := uint64(in.Imm)
				if in.src() == srcX {
					b = r[in.Src]
				}
				if evalJump(op, r[in.Dst], b, in.class() == clsJMP32) {
					pc = byRaw[in.Raw+1+int(in.Off)]
					continue
				}
			}
		}
		pc++
	}
}

func (m *machine) atomic(r *[11]uint64, in Insn, b []byte) {
	old := getN(b)
	v := r[in.Src]
	mask := ^uint64(0)
	if len(b) == 4 {
		mask = 0xffffffff
	}
	switch in.Imm &^ atomFETCH {
	case atomADD:
		putN(b, old+v)
	case atomOR:
		putN(b, old|v)
	case atomAND:
		putN(b, old&v)
	case atomXOR:
		putN(b, old^v)
	case atomXCHG &^ atomFETCH:
		putN(b, v)
	case atomCMPXCHG &^ atomFETCH:
		if old == r[0]&mask {
			putN(b, v)
		}
		r[0] = old
		return
	}
	if in.Imm&atomFETCH != 0 {
		r[in.Src] = old
	}
}

// slot is the copy of a per-thread/warp/SM array this thread uses.
func (m *machine) slot(t gpumap.Type) uint64 {
	switch t {
	case gpumap.PerSMArray:
		return uint64(m.env.SMID)
	case gpumap.PerWarpArray:
		return m.env.GlobalWarp()
	case gpumap.PerThreadArray:
		return m.env.GlobalThread()
	}
	return 0
}

func (m *machine) call(r *[11]uint64, pc int) (uint64, error) {
	in := m.prog.Insns[pc]
	ci := m.prog.facts.calls[pc]
	var mp gpumap.Map
	if ci.m >= 0 {
		mp = m.p.Layout.Maps[m.prog.layoutIdx[ci.m]]
	}
	// the memory holding the map's values, and its virtual address
	rg, base := gpumap.Region(m.region), uint64(vRegion)
	if mp.Type.InBlock() {
		rg, base = gpumap.Region(m.env.Block), vBlock
	}
	key := func() ([]byte, error) {
		b, err := m.mem(r[2], int(mp.KeySize))
		return append([]byte(nil), b...), err
	}
	switch in.Imm {
	case HelperKtime, HelperGlobaltimer:
		if m.env.Timer == nil {
			return 0, nil
		}
		return m.env.Timer(), nil
	case HelperSMID:
		return uint64(m.env.SMID), nil
	case HelperWarpID:
		return uint64(m.env.WarpID), nil
	case HelperLaneID:
		return uint64(m.env.LaneID), nil
	case HelperNSMID:
		return uint64(m.env.NSMID), nil
	case HelperGlobalWarp:
		return m.env.GlobalWarp(), nil
	case HelperBlockLinear:
		return m.env.BlockLinear(), nil
	case HelperActiveLanes:
		return uint64(m.env.ActiveLanes), nil
	case HelperGridID:
		return m.env.GridID, nil
	case HelperBlockWeight:
		g := m.env.GridDim
		return uint64(ptx.SampleWeight(m.p.Layout.BlockSample, m.p.Layout.BlocksPerLaunch, uint64(g[0])*uint64(g[1])*uint64(g[2]))), nil
	case HelperBlockIdx, HelperBlockDim, HelperThreadIdx, HelperGridDim:
		d := map[int64][3]uint32{HelperBlockIdx: m.env.BlockIdx, HelperBlockDim: m.env.BlockDim,
			HelperThreadIdx: m.env.ThreadIdx, HelperGridDim: m.env.GridDim}[in.Imm]
		for a := 0; a < 3; a++ {
			b, err := m.mem(r[1+a], 8)
			if err != nil {
				return 0, err
			}
			putN(b, uint64(d[a]))
		}
		return 0, nil
	case HelperMapLookup:
		k, err := key()
		if err != nil {
			return 0, err
		}
		if mp.Type.IsArray() {
			off, ok, err := mp.ArrayLookup(rg, m.slot(mp.Type), binary.LittleEndian.Uint32(k))
			if err != nil || !ok {
				return 0, err
			}
			return base + off, nil
		}
		b, ok, _, err := mp.HashFind(rg, k, false, nil)
		if err != nil || !ok {
			return 0, err
		}
		return base + mp.HashValueOffset(b), nil
	case HelperMapUpdate:
		k, err := key()
		if err != nil {
			return 0, err
		}
		v, err := m.mem(r[3], int(mp.ValueSize))
		if err != nil {
			return 0, err
		}
		v = append([]byte(nil), v...)
		res, err := mp.Update(rg, m.slot(mp.Type), k, v, r[4])
		return uint64(res), err
	case HelperMapDelete:
		k, err := key()
		if err != nil {
			return 0, err
		}
		res, err := mp.Delete(rg, k)
		return uint64(res), err
	case HelperMapAdd:
		k, err := key()
		if err != nil {
			return 0, err
		}
		res, err := mp.Add(rg, m.slot(mp.Type), k, r[3])
		return uint64(res), err
	case HelperRingbufOutput:
		d, err := m.mem(r[2], int(ci.size))
		if err != nil {
			return 0, err
		}
		res, err := mp.RingOutputSM(rg, uint64(m.env.SMID), append([]byte(nil), d...))
		return uint64(res), err
	case HelperRingClaim:
		return mp.RingClaimSM(rg, r[2])
	case HelperRingOutputAt:
		d, err := m.mem(r[4], int(ci.size))
		if err != nil {
			return 0, err
		}
		res, err := mp.RingOutputAt(rg, r[2], r[3], append([]byte(nil), d...))
		return uint64(res), err
	}
	return 0, fmt.Errorf("helper %d", in.Imm)
}
