package jit

import (
	"fmt"
	"math/bits"
	"reflect"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// Options change how probes are compiled.
type Options struct {
	// PerThread runs the probe body in every active lane. By default
	// (warp level) the lowest active lane runs it and its r0 is shared with
	// the others through shfl.sync.
	PerThread bool
	// Harness also emits __gpuext_run_<N>: the same probe returning r0
	// (.param .b64), which jitcheck's test kernels call.
	Harness bool
	// MaxInsns is the verifier's budget of explored instructions
	// (0: MaxInsnsExplored).
	MaxInsns int
	// BlockSample and BlocksPerLaunch are the block sampling the probes
	// will be patched in with (devrt/ptx's Spec fields of the same names;
	// the Layout carries them): the block weight helper returns the
	// weight it gives a sampled block.
	BlockSample, BlocksPerLaunch uint32
}

// Probe is one compiled probe function.
type Probe struct {
	Index   int
	Name    string // the program's name
	Section string
	Site    Site
	Kernel  string // kernel name or glob
	Func    string // __gpuext_probe_<Index>
	// Carry (an exit probe) is the Func of the entry probe whose return
	// value the call sites pass as ctx->entry_ret; Returns (an entry
	// probe) says some exit probe carries its value, so its function
	// returns r0 (.param .b64).
	Carry   string
	Returns bool
	// FirstBlock (entry) runs in block (0, 0, 0) only (Program.FirstBlock).
	FirstBlock bool
	// PerThread (entry) runs in every thread even at warp level
	// (Program.PerThread).
	PerThread bool
}

// Compiled is a probe set: the PTX fragment, where its functions attach and
// the layout of the shared region they use.
type Compiled struct {
	// PTX is the fragment: .global declarations and .func definitions only
	// (no .version/.target), for the rewriter to link into a module.
	PTX    string
	Probes []Probe
	Layout gpumap.Layout
	// BlockInit is BlockInitFunc when the probes use per-block arrays
	// (Layout.BlockSize > 0): every thread of an instrumented kernel must
	// call it at entry, then bar.sync 0, before any probe (devrt/ptx's
	// Spec.BlockInit does). "" otherwise.
	BlockInit string
	Opts      Options
	progs     []compiledProg
}

type compiledProg struct {
	Program
	obj       int // index of its object in Compile's objs
	facts     *facts
	mapIdx    map[string]int32
	layoutIdx []int
	byRaw     map[int]int
}

// SharedSymbol is the module global through which probes find the region.
const SharedSymbol = "__gpuext_shared"

// BlockSymbol is the fragment's .shared array of the per-block arrays'
// values; they start BlockPad bytes into it.
const BlockSymbol = "__gpuext_block"

// BlockPad keeps every per-block element off shared address 0 (NULL).
const BlockPad = 8

// BlockInitFunc zeroes the per-block arrays of the calling thread's block
// (.func with no parameters).
const BlockInitFunc = "__gpuext_block_init"

// ProbeFunc is the name of probe i's function.
func ProbeFunc(i int) string { return fmt.Sprintf("__gpuext_probe_%d", i) }

// DoneLabel is the label every path of probe i's body reaches before it
// returns: one per body, so each copy devrt/ptx inlines has one (renamed
// DoneLabel(i)+"_i<copy>").
func DoneLabel(i int) string { return fmt.Sprintf("$GX%d_DONE", i) }

// RunFunc is the name of probe i's harness function (Options.Harness).
func RunFunc(i int) string { return fmt.Sprintf("__gpuext_run_%d", i) }

// Compile verifies every program of objs and compiles them into one
// fragment. Maps of the same name in several objects are one map when their
// definitions are equal, an error otherwise.
func Compile(objs []*Object, opt Options) (*Compiled, error) {
	var defs []gpumap.Def
	index := map[string]int32{}
	ringBytes := map[string]uint32{}
	for _, o := range objs {
		for _, d := range o.Maps {
			if j, ok := index[d.Name]; ok {
				if !reflect.DeepEqual(defs[j], d) {
					return nil, fmt.Errorf("map %q declared differently in two objects", d.Name)
				}
				continue
			}
			index[d.Name] = int32(len(defs))
			defs = append(defs, d)
			if b, ok := o.ringBytes[d.Name]; ok {
				ringBytes[d.Name] = b
			}
		}
	}
	c := &Compiled{Opts: opt}
	ringMax := map[int32]int64{}
	for oi, o := range objs {
		for _, p := range o.Programs {
			p := p
			f, err := verify(&p, defs, opt.MaxInsns)
			if err != nil {
				return nil, err
			}
			for m, n := range f.ringMax {
				ringMax[m] = max(ringMax[m], n)
			}
			cp := compiledProg{Program: p, obj: oi, facts: f, mapIdx: index, byRaw: map[int]int{}}
			for i, in := range p.Insns {
				cp.byRaw[in.Raw] = i
			}
			c.progs = append(c.progs, cp)
		}
	}
	for name, b := range ringBytes {
		j := index[name]
		vs := uint32(ringMax[j])
		if vs == 0 {
			vs = 8
		}
		stride := gpumap.RingStride(vs)
		slots := b / stride
		if slots == 0 {
			return nil, fmt.Errorf("ring %q of %d bytes cannot hold one %d-byte record", name, b, vs)
		}
		// A power of two: a record's slot is then its index masked
		// (ringbuf_output in ptx.go), not a 64-bit division.
		slots = 1 << (bits.Len32(slots) - 1)
		defs[j].ValueSize, defs[j].MaxEntries = vs, slots
	}
	if err := ptx.CheckSampling(opt.BlockSample, opt.BlocksPerLaunch); err != nil {
		return nil, err
	}
	lay, err := gpumap.NewLayout(defs)
	if err != nil {
		return nil, err
	}
	c.Layout = lay.WithSampling(opt.BlockSample, opt.BlocksPerLaunch)
	if lay.BlockSize > 0 {
		c.BlockInit = BlockInitFunc
	}
	for i := range c.progs {
		c.progs[i].layoutIdx = make([]int, len(defs))
		for j := range defs {
			c.progs[i].layoutIdx[j] = j
		}
		p := c.progs[i]
		c.Probes = append(c.Probes, Probe{Index: i, Name: p.Name, Section: p.Section, Site: p.Site, Kernel: p.Kernel,
			FirstBlock: p.FirstBlock, PerThread: p.PerThread, Func: ProbeFunc(i)})
	}
	for i := range c.progs {
		if e := carriedEntry(c.progs, i); e >= 0 {
			c.Probes[i].Carry = c.Probes[e].Func
			c.Probes[e].Returns = true
		}
	}
	code, err := generate(c)
	if err != nil {
		return nil, err
	}
	c.PTX = code
	return c, nil
}

// carriedEntry is the entry program whose return value exit program i
// gets as ctx->entry_ret, or -1: the first entry program of the same
// object for the same kernels, when i reads that ctx word, but for entries
// of block 0 only (they run in no other block; with only such an entry,
// the exit reads entry_ret 0). A value kept in
// a register from entry to exit spares the probe a store at entry and a
// dependent load at exit in every warp (sm_load, warp_occupancy), at the
// price of one 64-bit register live through the kernel.
func carriedEntry(progs []compiledProg, i int) int {
	p := progs[i]
	if p.Site != SiteExit || !readsCtxWord(&p, 1) {
		return -1
	}
	for j, e := range progs {
		// (an entry of block 0 only runs nowhere else: nothing to carry)
		if e.obj == p.obj && e.Site == SiteEntry && !e.FirstBlock && e.Kernel == p.Kernel {
			return j
		}
	}
	return -1
}

// readsCtxWord tells whether some ctx read of p may touch word w (bytes
// 8w..8w+7) of struct gpuext_dev_ctx.
func readsCtxWord(p *compiledProg, w int64) bool {
	for i, in := range p.Insns {
		acc := p.facts.mem[i]
		if !p.facts.visited[i] || in.class() != clsLDX || acc.k != kCtx {
			continue
		}
		if acc.lo < 8*w+8 && acc.hi+int64(in.bytes()) > 8*w {
			return true
		}
	}
	return false
}
