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
	"sort"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

// Patcher instruments modules with one compiled probe set.
type Patcher struct {
	probes  *jit.Compiled
	version uint64
}

var _ devrtinject.Patcher = (*Patcher)(nil)

// New makes a Patcher of a compiled probe set. Its version is a digest of
// the fragment and the probes' sites and kernels, so a changed probe set is
// never served from the cache of an old one.
func New(c *jit.Compiled) *Patcher {
	h := sha256.New()
	h.Write([]byte(c.PTX))
	for _, p := range c.Probes {
		fmt.Fprintf(h, "\x00%s\x00%d\x00%s", p.Func, p.Site, p.Kernel)
	}
	return &Patcher{probes: c, version: binary.LittleEndian.Uint64(h.Sum(nil))}
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
	// Group the kernels by the probes that apply to them: one Instrument
	// call per group, with the group's exact names.
	groups := map[string]*ptx.Spec{}
	for _, k := range mod.KernelNames() {
		var spec ptx.Spec
		for _, pr := range p.probes.Probes {
			if !(jit.Program{Kernel: pr.Kernel}).MatchKernel(k) {
				continue
			}
			switch pr.Site {
			case jit.SiteEntry:
				spec.Entry = append(spec.Entry, pr.Func)
			case jit.SiteExit:
				spec.Exit = append(spec.Exit, pr.Func)
			case jit.SiteLoad:
				spec.Load = append(spec.Load, pr.Func)
			case jit.SiteStore:
				spec.Store = append(spec.Store, pr.Func)
			}
		}
		if len(spec.Entry)+len(spec.Exit)+len(spec.Load)+len(spec.Store) == 0 {
			continue
		}
		key := strings.Join([]string{strings.Join(spec.Entry, ","), strings.Join(spec.Exit, ","),
			strings.Join(spec.Load, ","), strings.Join(spec.Store, ",")}, ";")
		if g, ok := groups[key]; ok {
			g.Kernels = append(g.Kernels, k)
			continue
		}
		spec.Kernels = []string{k}
		groups[key] = &spec
	}
	if len(groups) == 0 {
		return devrtinject.Result{Status: devrtinject.StatusUnchanged, Reason: "no probe applies to its kernels"}, nil
	}
	frag, err := ptx.ParseFragment(p.probes.PTX)
	if err != nil {
		return devrtinject.Result{}, fmt.Errorf("probe fragment: %w", err)
	}
	if err := ptx.Link(mod, frag); err != nil {
		return rejected("cannot link the probes: %v", err), nil
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var patched []string
	var refused []string
	for _, k := range keys {
		rep, err := ptx.Instrument(mod, *groups[k])
		if err != nil {
			return rejected("cannot instrument: %v", err), nil
		}
		for _, kr := range rep.Kernels {
			patched = append(patched, kr.Name)
		}
		for _, r := range rep.Refused {
			refused = append(refused, r.Kernel+": "+r.Reason)
		}
	}
	if len(patched) == 0 {
		return rejected("every kernel refused: %s", strings.Join(refused, "; ")), nil
	}
	sort.Strings(patched)
	res := devrtinject.Result{
		Status:     devrtinject.StatusPatched,
		PTX:        []byte(ptx.Write(mod)),
		Kernels:    patched,
		SharedSize: p.probes.Layout.Size,
	}
	if len(refused) > 0 {
		res.Reason = "not instrumented: " + strings.Join(refused, "; ")
	}
	return res, nil
}

func rejected(format string, args ...any) devrtinject.Result {
	return devrtinject.Result{Status: devrtinject.StatusRejected, Reason: fmt.Sprintf(format, args...)}
}
