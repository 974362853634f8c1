package jit

import (
	"fmt"
	"reflect"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
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
}

// Probe is one compiled probe function.
type Probe struct {
	Index   int
	Name    string // the program's name
	Section string
	Site    Site
	Kernel  string // kernel name or glob
	Func    string // __gpuext_probe_<Index>
}

// Compiled is a probe set: the PTX fragment, where its functions attach and
// the layout of the shared region they use.
type Compiled struct {
	// PTX is the fragment: .global declarations and .func definitions only
	// (no .version/.target), for the rewriter to link into a module.
	PTX    string
	Probes []Probe
	Layout gpumap.Layout
	Opts   Options
	progs  []compiledProg
}

type compiledProg struct {
	Program
	facts     *facts
	mapIdx    map[string]int32
	layoutIdx []int
	byRaw     map[int]int
}

// SharedSymbol is the module global through which probes find the region.
const SharedSymbol = "__gpuext_shared"

// ProbeFunc is the name of probe i's function.
func ProbeFunc(i int) string { return fmt.Sprintf("__gpuext_probe_%d", i) }

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
	for _, o := range objs {
		for _, p := range o.Programs {
			p := p
			f, err := verify(&p, defs, opt.MaxInsns)
			if err != nil {
				return nil, err
			}
			for m, n := range f.ringMax {
				ringMax[m] = max(ringMax[m], n)
			}
			cp := compiledProg{Program: p, facts: f, mapIdx: index, byRaw: map[int]int{}}
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
		stride := gpumap.RecHeaderSize + gpumap.Round8(vs)
		slots := b / stride
		if slots == 0 {
			return nil, fmt.Errorf("ring %q of %d bytes cannot hold one %d-byte record", name, b, vs)
		}
		defs[j].ValueSize, defs[j].MaxEntries = vs, slots
	}
	lay, err := gpumap.NewLayout(defs)
	if err != nil {
		return nil, err
	}
	c.Layout = lay
	for i := range c.progs {
		c.progs[i].layoutIdx = make([]int, len(defs))
		for j := range defs {
			c.progs[i].layoutIdx[j] = j
		}
		p := c.progs[i]
		c.Probes = append(c.Probes, Probe{Index: i, Name: p.Name, Section: p.Section, Site: p.Site, Kernel: p.Kernel, Func: ProbeFunc(i)})
	}
	ptx, err := generate(c)
	if err != nil {
		return nil, err
	}
	c.PTX = ptx
	return c, nil
}
