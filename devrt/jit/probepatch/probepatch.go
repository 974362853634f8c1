// Package probepatch is the Patcher the injection server
// (internal/devrtinject) asks when a process loads a GPU module: it links a
// probe set compiled by devrt/jit into the module's PTX and has devrt/ptx
// call each probe at the sites and in the kernels its section names, so
// devrt can load the patched twin. It exists so that the compiler, the
// rewriter and the server stay independent of each other.
package probepatch

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

// Patcher instruments modules with one compiled probe set.
type Patcher struct {
	probes  *jit.Compiled
	opts    Options
	version uint64
	init    []devrtinject.InitRange // the maps' headers
}

var _ devrtinject.Patcher = (*Patcher)(nil)

// Options change how a Patcher rewrites kernels.
type Options struct {
	// Calls has each site call the probe functions instead of getting a
	// copy of their bodies (ptx.Spec.Inline): the form before inlining,
	// kept for comparison (jitcheck bench -calls).
	Calls bool
	// NoGrid1D leaves out the kernels' entries for 1-D grids (ptx.Spec.
	// Grid1D: with sampling by launch, a kernel in the copy form gets a
	// second entry, <kernel>__gx1d, whose sampling test is shorter, which
	// devrt launches for 1-D grids), for comparison.
	NoGrid1D bool
	// Select, if set, limits the kernels instrumented to those it
	// accepts (the receiver's include/exclude): the others are left as
	// they are, which matters in a module whose twin owns its variables,
	// where they run in the twin too. It is not part of Version: a caller
	// that sets it versions its own selection.
	Select func(kernel string) bool
}

// New makes a Patcher of a compiled probe set. Its version is a digest of
// the fragment, the probes' sites and kernels, the block sampling
// (c.Opts.BlockSample: the probes run in 1 of that many thread blocks;
// c.Opts.BlocksPerLaunch: by launch; jit.Compile compiles the probes'
// weights for it and puts it in c.Layout's headers) and the options, so a
// changed probe set is never served from the cache of an old one.
func New(c *jit.Compiled, opts Options) *Patcher {
	h := sha256.New()
	h.Write([]byte(c.PTX))
	fmt.Fprintf(h, "\x00%s\x00%t\x00%d\x00%d\x00%t", c.BlockInit, opts.Calls, max(c.Opts.BlockSample, 1), c.Opts.BlocksPerLaunch, opts.NoGrid1D)
	for _, p := range c.Probes {
		fmt.Fprintf(h, "\x00%s\x00%d\x00%s\x00%s\x00%t", p.Func, p.Site, p.Kernel, p.Carry, p.FirstBlock)
	}
	p := &Patcher{probes: c, opts: opts, version: binary.LittleEndian.Uint64(h.Sum(nil))}
	for _, m := range c.Layout.Maps {
		p.init = append(p.init, devrtinject.InitRange{Offset: m.Offset, Data: m.HeaderBytes()})
	}
	return p
}

// Version identifies the probe set.
func (p *Patcher) Version() uint64 { return p.version }

// Patch instruments m: each kernel gets the probes whose kernel glob
// matches its name, at their sites. A module no probe applies to is
// UNCHANGED; one the rewriter cannot use (its PTX does not parse, a name
// collides with the fragment) or whose every selected kernel it refuses is
// REJECTED with the reason. Kernels it refuses while patching others keep
// their original code (the launch is not redirected).
func (p *Patcher) Patch(ctx context.Context, m *devrtinject.Module) (devrtinject.Result, error) {
	if err := ctx.Err(); err != nil {
		return devrtinject.Result{}, err
	}
	mod, err := ptx.Parse(string(m.PTX))
	if err != nil {
		return rejected("PTX does not parse: %v", err), nil
	}
	// One pass: each probe at its own sites of the kernels its section's
	// glob selects (the ABI's site kinds are jit's and ptx's alike).
	// the sampling the probes were compiled for (their weights are in the
	// fragment; the layout's headers say the same)
	spec := ptx.Spec{BlockInit: p.probes.BlockInit, Inline: !p.opts.Calls,
		BlockSample: p.probes.Opts.BlockSample, BlocksPerLaunch: p.probes.Opts.BlocksPerLaunch, Grid1D: !p.opts.NoGrid1D}
	for _, pr := range p.probes.Probes {
		spec.Probes = append(spec.Probes, ptx.Probe{Func: pr.Func, Kind: ptx.SiteKind(pr.Site), Kernels: []string{pr.Kernel},
			Carry: pr.Carry, FirstBlock: pr.FirstBlock})
	}
	all, selected := mod.KernelNames(), mod.KernelNames()
	if p.opts.Select != nil {
		selected = slices.DeleteFunc(selected, func(k string) bool { return !p.opts.Select(k) })
		spec.Select = p.opts.Select
	}
	if !anyKernelMatches(selected, p.probes.Probes) {
		why := "no probe applies to its kernels"
		if len(selected) < len(all) && anyKernelMatches(all, p.probes.Probes) {
			why = ReasonNoneSelected
		}
		return devrtinject.Result{Status: devrtinject.StatusUnchanged, Reason: why}, nil
	}
	// before Link: the fragment's own globals are not the program's
	vars, unsupported := mod.Variables()
	if len(unsupported) > 0 {
		return rejected("the module declares %s, which a patched copy cannot take over", strings.Join(unsupported, ", ")), nil
	}
	frag, err := ptx.ParseFragment(p.probes.PTX)
	if err != nil {
		return devrtinject.Result{}, fmt.Errorf("probe fragment: %w", err)
	}
	if err := ptx.Link(mod, frag); err != nil {
		return rejected("cannot link the probes: %v", err), nil
	}
	rep, err := ptx.Instrument(mod, spec)
	if err != nil {
		return rejected("cannot instrument: %v", err), nil
	}
	var patched, refused []string
	for _, kr := range rep.Kernels {
		patched = append(patched, kr.Name)
	}
	for _, r := range rep.Refused {
		refused = append(refused, r.Kernel+": "+r.Reason)
	}
	if len(patched) == 0 {
		return rejected("every kernel refused: %s", strings.Join(refused, "; ")), nil
	}
	sort.Strings(patched)
	if len(vars) > 0 {
		if err := addPlainCopies(mod, m.PTX, patched); err != nil {
			return rejected("cannot copy its kernels: %v", err), nil
		}
	}
	res := devrtinject.Result{
		Status:     devrtinject.StatusPatched,
		PTX:        []byte(ptx.Write(mod)),
		Kernels:    patched,
		SharedSize: p.probes.Layout.Size,
		Init:       p.init,
		Vars:       vars,
	}
	var why []string
	if len(refused) > 0 {
		why = append(why, "not instrumented: "+strings.Join(refused, "; "))
	}
	if len(vars) > 0 {
		// the twin owns the variables: every kernel runs there, the
		// ones no probe instruments as they were, and each patched one
		// has its plain copy there too (what devrt falls back to)
		res.Kernels = slices.Sorted(slices.Values(all))
		why = append(why, "the patched module owns its variables ("+strings.Join(vars, ", ")+"): all its kernels run there")
	}
	// the kernels a probe would have instrumented that Select left out
	if n := countMatching(all, p.probes.Probes) - countMatching(selected, p.probes.Probes); n > 0 {
		why = append(why, fmt.Sprintf("excluded: %d kernels", n))
	}
	res.Reason = strings.Join(why, "; ")
	return res, nil
}

// addPlainCopies appends to mod, for each kernel of patched, that kernel
// as src (the program's module) has it, named with devrtinject.PlainSuffix:
// where the twin owns the module's variables, devrt runs it instead of a
// patched kernel whose launch the twin refuses (the original would not see
// the variables the program wrote). A kernel whose copy's name mod has
// already gets none.
func addPlainCopies(mod *ptx.Module, src []byte, patched []string) error {
	orig, err := ptx.Parse(string(src))
	if err != nil { // parsed once already
		return fmt.Errorf("the module again: %w", err)
	}
	for _, k := range patched {
		name := k + devrtinject.PlainSuffix
		if it, _ := mod.Lookup(name); it != nil {
			continue
		}
		it, _ := orig.Lookup(k)
		f, ok := it.(*ptx.Function)
		if !ok || !f.Entry || f.Body == nil {
			return fmt.Errorf("kernel %s: not in the module as loaded", k)
		}
		f.Name = name
		mod.Items = append(mod.Items, f)
	}
	return nil
}

// ReasonNoneSelected is the reason of an UNCHANGED answer when probes
// apply to kernels of the module but Options.Select accepts none of them.
const ReasonNoneSelected = "no kernel selected"

func rejected(format string, args ...any) devrtinject.Result {
	return devrtinject.Result{Status: devrtinject.StatusRejected, Reason: fmt.Sprintf(format, args...)}
}

// countMatching counts the kernels some probe's kernel glob selects.
func countMatching(kernels []string, probes []jit.Probe) int {
	n := 0
	for _, k := range kernels {
		if anyKernelMatches([]string{k}, probes) {
			n++
		}
	}
	return n
}

// anyKernelMatches tells whether some probe's kernel glob selects one of
// the module's kernels.
func anyKernelMatches(kernels []string, probes []jit.Probe) bool {
	for _, k := range kernels {
		for _, pr := range probes {
			if (jit.Program{Kernel: pr.Kernel}).MatchKernel(k) {
				return true
			}
		}
	}
	return false
}

// Sites counts, per kernel of a patched module, the sites that run each
// probe function: calls of it and copies of its body (each has one
// jit.DoneLabel, renamed by the rewriter).
func Sites(src []byte, probes []jit.Probe) (map[string]map[string]int, error) {
	m, err := ptx.Parse(string(src))
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for _, k := range m.Kernels() {
		if k.Body == nil {
			continue
		}
		c := map[string]int{}
		for _, in := range k.Instructions() {
			for _, pr := range probes {
				if in.CallTarget() == pr.Func {
					c[pr.Func]++
				}
			}
		}
		for _, l := range k.Labels() {
			for _, pr := range probes {
				if rest, ok := strings.CutPrefix(l, jit.DoneLabel(pr.Index)+"_i"); ok && rest != "" && strings.Trim(rest, "0123456789_") == "" {
					c[pr.Func]++
				}
			}
		}
		out[k.Name] = c
	}
	return out, nil
}
