package ptx

import (
	"fmt"
	"hash/fnv"
	"path"
	"slices"
	"strconv"
	"strings"
)

// SiteKind is where a probe runs; the values are enum gpuext_dev_site of
// bpf/include/gpuext_abi.h (the kind field of struct gpuext_dev_ctx).
type SiteKind uint32

// Site kinds.
const (
	SiteEntry SiteKind = 1 // kernel entry, once per thread before its first instruction
	SiteExit  SiteKind = 2 // before every ret/exit of the kernel
	SiteLoad  SiteKind = 3 // before a load (ctx.addr = generic address)
	SiteStore SiteKind = 4 // before a store or, with Spec.Atomics, an atom/red
)

func (k SiteKind) String() string {
	switch k {
	case SiteEntry:
		return "entry"
	case SiteExit:
		return "exit"
	case SiteLoad:
		return "load"
	case SiteStore:
		return "store"
	}
	return "SiteKind(" + strconv.Itoa(int(k)) + ")"
}

// Names of the rewriter. The register prefix and reservedNames are
// reserved: a kernel already using them is refused.
const (
	RegPrefix = "%gx_" // registers the rewriter declares: %gx_rd<1>
	CtxSize   = 24     // sizeof(struct gpuext_dev_ctx)
	ctxReg    = "%gx_rd0"
	// CtxVar and ArgVar are the names of the earlier calling convention
	// (the ctx built in a kernel-scope .local array, its address passed
	// in one .param): no longer added, still refused, so a kernel patched
	// that way is not patched again.
	CtxVar = "__gpuext_ctx"
	ArgVar = "__gpuext_arg"
)

// argVars are the three .param arguments of each call, declared in the
// call's own scope: site<<32 | kind, addr, kernel_id.
var argVars = [3]string{"__gpuext_arg0", "__gpuext_arg1", "__gpuext_arg2"}

// retVar receives a carried entry probe's return value (Probe.Carry), in
// the call's scope; carryReg keeps it, %gx_e<N>, for the exits.
const (
	retVar   = "__gpuext_ret"
	carryReg = RegPrefix + "e"
)

// reservedNames are the variable names the rewriter refuses in a module
// or a kernel.
var reservedNames = []string{CtxVar, ArgVar, argVars[0], argVars[1], argVars[2], retVar}

// DefaultMinMaxNReg is the smallest .maxnreg a kernel may declare and still
// be instrumented (Spec.MinMaxNReg overrides it). A probe call follows the
// ABI: the callee's registers come out of the kernel's per-thread budget, so
// under a tight cap ptxas would spill the kernel's own values to local
// memory and change its performance far beyond the probe's cost.
const DefaultMinMaxNReg = 32

// Spec selects kernels and the probe functions to call at each kind of site.
// Probes are .func definitions of m (normally added by Link) with exactly three
// parameters, each `.param .u64` or `.param .b64` (the ctx fields: site<<32 |
// kind, addr, kernel_id), and no return value, except an entry probe that
// some exit probe's Carry names: it returns one .param .b64 (or .u64).
type Spec struct {
	// Kernels are mangled kernel names or path.Match globs ("*", "_Z4axpy*");
	// empty selects every kernel.
	Kernels []string
	// Select, if set, must accept a kernel's name too (the caller's own
	// selection, a predicate: no pattern per name).
	Select func(name string) bool
	// Probe functions called, in order, at each kind of site of every
	// selected kernel. A kind with none is not instrumented.
	Entry, Exit, Load, Store []string
	// Probes attach probe functions to sites of some kernels only (an eBPF
	// program's SEC("gpu/entry/<glob>")); they are called after the
	// Entry/Exit/Load/Store ones of the same kind, in order. A kernel
	// that Kernels selects but no probe applies to is left alone.
	Probes []Probe
	// Generic also instruments ld/st without a state space (generic
	// addresses, which may point to global, shared or local memory);
	// otherwise only ld.global/ldu.global/st.global are sites.
	Generic bool
	// Atomics also makes atom/red (on the same spaces) store sites.
	Atomics bool
	// MinMaxNReg overrides DefaultMinMaxNReg when positive.
	MinMaxNReg int
	// BlockInit names a .func without parameters or return value that
	// every thread of each instrumented kernel calls at entry, followed by
	// bar.sync 0, before any entry probe: it readies the block's shared
	// memory the probes use (devrt/jit's per-block arrays). Every thread
	// of a block starts at the entry, so the barrier cannot wait for a
	// thread that never comes.
	BlockInit string
	// Inline copies the bodies of the entry and exit probes (and of
	// BlockInit) into each kernel at their sites instead of calling them
	// (see inline.go for why and when a function is called all the same:
	// KernelReport.NotInlined says). A copy's labels are renamed
	// <label>_i<k>, k counting the kernel's copies (another suffix if the
	// kernel has that name). Load and store sites always call.
	Inline bool
	// BlockSample runs the probes (and BlockInit) in 1 of BlockSample
	// thread blocks of each kernel, picked by a hash of the block's index
	// (sample.go; block 0 always): the others run a copy of the original
	// code (KernelReport.SampleCopy) or, in kernels too large to copy,
	// branch around every site. 0 or 1: every block. At most
	// MaxBlockSample.
	BlockSample uint32
	// BlocksPerLaunch, instead of BlockSample (0: not), samples each
	// launch by its own size: a launch of b blocks runs the probes in 1
	// of 2^s, the least s (at most MaxLaunchShift) with b / 2^s <=
	// BlocksPerLaunch, a power of two (LaunchShift; the same hash).
	// Small grids then run them in every block, large ones in a few
	// hundred (sample.go says why).
	BlocksPerLaunch uint32
	// Grid1D, with BlocksPerLaunch, also adds for each kernel of at most
	// MaxGrid1D instructions instrumented in the copy form
	// (KernelReport.SampleCopy) a second entry named <kernel>__gx1d
	// (Grid1DSuffix): the same kernel for launches of 1-D grids (nctaid.y
	// = nctaid.z = 1), whose sampling test hashes %ctaid.x alone and takes
	// the launch's size from %nctaid.x: the blocks the kernel's own test
	// picks in such a grid, by a shorter chain that every block waits for
	// (sample.go). devrt launches it for 1-D grids only
	// (KernelReport.Grid1D); launched with another grid it would sample
	// the wrong blocks.
	Grid1D bool
	// grid1D: the code being written is the 1-D entry's.
	grid1D bool
}

// sampling tells whether some blocks do not run the probes.
func (s Spec) sampling() bool { return s.BlockSample > 1 || s.BlocksPerLaunch > 0 }

// Probe attaches one probe function to one kind of site.
type Probe struct {
	Func    string
	Kind    SiteKind
	Kernels []string // names or globs; empty: every kernel Spec.Kernels selects
	// Carry (exit probes) names an entry probe of Probes: in each kernel
	// both apply to, the entry call's return value is kept in a register
	// (%gx_e<N>) and passed as this probe's second ctx word (entry_ret);
	// elsewhere that word is 0.
	Carry string
	// FirstBlock (entry probes) runs the probe in block (0, 0, 0) of each
	// launch only: the site tests the block index (uniform in a block)
	// and the other blocks branch around the probe, so a probe of the
	// launch's start costs their warps that test, not its body. It cannot
	// be carried.
	FirstBlock bool
}

// Site is one instrumented place in a kernel.
type Site struct {
	Index uint32   // ctx.site
	Kind  SiteKind // ctx.kind
	Pos   Pos      // the instrumented instruction (entry: the kernel header)
	Instr string   // the instrumented instruction as PTX ("" for entry)
}

// KernelReport says what Instrument did to one kernel.
type KernelReport struct {
	Name  string
	ID    uint64 // ctx.kernel_id: FNV-1a 64 of Name
	Entry int    // sites by kind
	Exit  int
	Load  int
	Store int
	Sites []Site
	// RegsAdded counts the registers declared, by type (".b64": 1).
	RegsAdded map[string]int
	// LocalBytes is the .local memory added per thread: 0 since the ctx
	// fields are passed as .param values.
	LocalBytes int
	// BlockInit: the kernel runs Spec.BlockInit and waits at bar.sync 0
	// at entry.
	BlockInit bool
	// Inlined counts the function bodies copied into the kernel
	// (Spec.Inline); NotInlined says, per function, why the kernel calls
	// it instead ("probe: reason").
	Inlined    int      `json:",omitempty"`
	NotInlined []string `json:",omitempty"`
	// SampleCopy (Spec.BlockSample): the blocks not sampled run a copy of
	// the original code; false: they branch around every site (sample.go).
	SampleCopy bool `json:",omitempty"`
	// Grid1D (Spec.Grid1D) names the kernel's entry for 1-D grids, "" if
	// none was added (not sampled by launch, not in the copy form, over
	// MaxGrid1D instructions, the name taken, or instrumenting it failed
	// as the kernel's own did not).
	Grid1D string `json:",omitempty"`
}

// Refusal names a selected kernel that was left unchanged, and why.
type Refusal struct {
	Kernel string
	Reason string
}

// Report is the result of Instrument.
type Report struct {
	Kernels   []KernelReport
	Refused   []Refusal
	Unmatched []string // exact names in Spec.Kernels or a Probe's Kernels that selected no kernel with a probe
}

// KernelID is the kernel_id the rewriter stores in ctx: FNV-1a 64 of the
// kernel's (mangled) name.
func KernelID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// probe is a validated probe function.
type probe struct {
	name       string
	paramTypes [3]string
	ret        string // the return .param's type, "" for none
	carry      string // Probe.Carry
	firstBlock bool   // Probe.FirstBlock
	index      int    // position in m.Items
}

// Instrument inserts probe calls into the kernels of m that spec selects:
// at entry after the declarations, before every ret/exit (with the exit's
// guard, so `@%p ret;` becomes guarded calls then `@%p ret;`; a label on the
// exit now labels the first inserted statement), and before global (and
// optionally generic) loads and stores. Each site passes the ctx fields as
// three .param values (site<<32 | kind, addr, kernel_id): nothing goes
// through memory.
//
// A kernel that cannot be instrumented safely is left unchanged and listed
// in Report.Refused with the reason. An error means the spec itself is
// unusable (a probe missing or of the wrong signature, a bad pattern, a
// 32-bit module, reserved names at module scope); m is then unchanged.
func Instrument(m *Module, spec Spec) (Report, error) {
	var rep Report
	if m.AddressSize != 64 {
		return rep, fmt.Errorf("ptx: instrument: only .address_size 64 modules are supported (this one has %d)", m.AddressSize)
	}
	type attached struct {
		probe
		kind    SiteKind
		kernels []string
	}
	var all []attached
	for _, k := range []struct {
		kind  SiteKind
		names []string
	}{{SiteEntry, spec.Entry}, {SiteExit, spec.Exit}, {SiteLoad, spec.Load}, {SiteStore, spec.Store}} {
		for _, n := range k.names {
			all = append(all, attached{probe: probe{name: n}, kind: k.kind})
		}
	}
	for _, p := range spec.Probes {
		if p.Kind < SiteEntry || p.Kind > SiteStore {
			return rep, fmt.Errorf("ptx: instrument: probe %s has no site kind (%d)", p.Func, p.Kind)
		}
		if p.FirstBlock && p.Kind != SiteEntry {
			return rep, fmt.Errorf("ptx: instrument: probe %s runs in the first block only but attaches at %s sites; only entry probes can", p.Func, p.Kind)
		}
		all = append(all, attached{probe: probe{name: p.Func, carry: p.Carry, firstBlock: p.FirstBlock}, kind: p.Kind, kernels: p.Kernels})
	}
	returns := map[string]bool{}
	for _, a := range all {
		if a.carry == "" {
			continue
		}
		if a.kind != SiteExit {
			return rep, fmt.Errorf("ptx: instrument: probe %s carries %s but is a %s probe; only exit probes carry", a.name, a.carry, a.kind)
		}
		if !slices.ContainsFunc(all, func(e attached) bool { return e.name == a.carry && e.kind == SiteEntry }) {
			return rep, fmt.Errorf("ptx: instrument: probe %s carries %s, which is not an entry probe of the spec", a.name, a.carry)
		}
		if slices.ContainsFunc(all, func(e attached) bool { return e.name == a.carry && e.firstBlock }) {
			return rep, fmt.Errorf("ptx: instrument: probe %s carries %s, which runs in the first block only", a.name, a.carry)
		}
		returns[a.carry] = true
	}
	if len(all) == 0 {
		return rep, fmt.Errorf("ptx: instrument: the spec names no probe function")
	}
	patterns := append([]string(nil), spec.Kernels...)
	for _, a := range all {
		patterns = append(patterns, a.kernels...)
	}
	for _, pat := range patterns {
		if _, err := path.Match(pat, ""); err != nil {
			return rep, fmt.Errorf("ptx: instrument: kernel pattern %q: %v", pat, err)
		}
	}
	for _, n := range reservedNames {
		if it, _ := m.Lookup(n); it != nil {
			return rep, fmt.Errorf("ptx: instrument: the module defines %s, a name the rewriter reserves", n)
		}
	}
	for i := range all {
		p, err := checkProbe(m, all[i].name, returns[all[i].name])
		if err != nil {
			return rep, err
		}
		p.carry = all[i].carry
		p.firstBlock = all[i].firstBlock
		all[i].probe = p
	}
	initIdx := -1
	if err := CheckSampling(spec.BlockSample, spec.BlocksPerLaunch); err != nil {
		return rep, fmt.Errorf("ptx: instrument: %w", err)
	}
	if spec.BlockInit != "" {
		it, idx := m.Lookup(spec.BlockInit)
		f, ok := it.(*Function)
		switch {
		case it == nil:
			return rep, fmt.Errorf("ptx: instrument: block init function %s is not in the module (Link its fragment first)", spec.BlockInit)
		case !ok || f.Entry || f.Body == nil:
			return rep, fmt.Errorf("ptx: instrument: block init %s is not a defined .func", spec.BlockInit)
		case len(f.Params) != 0 || len(f.Returns) != 0:
			return rep, fmt.Errorf("ptx: instrument: block init %s must take no parameters and return nothing", spec.BlockInit)
		}
		initIdx = idx
	}
	// the functions that may be copied into kernels, and why the others
	// may not
	var inl map[string]*inlineFunc
	var inlWhy map[string]string
	if spec.Inline {
		inl, inlWhy = map[string]*inlineFunc{}, map[string]string{}
		names := []string{spec.BlockInit}
		for _, a := range all {
			if a.kind == SiteEntry || a.kind == SiteExit {
				names = append(names, a.name)
			}
		}
		for _, n := range names {
			if n == "" || inl[n] != nil || inlWhy[n] != "" {
				continue
			}
			it, _ := m.Lookup(n)
			if fn, why := prepareInline(it.(*Function)); fn != nil {
				inl[n] = fn
			} else {
				inlWhy[n] = why
			}
		}
	}
	minNReg := spec.MinMaxNReg
	if minNReg <= 0 {
		minNReg = DefaultMinMaxNReg
	}
	matched := map[string]bool{}
	var twins []*Function // Spec.Grid1D: each after its kernel
	for i, it := range m.Items {
		f, ok := it.(*Function)
		if !ok || !f.Entry || !selected(spec.Kernels, f.Name) || (spec.Select != nil && !spec.Select(f.Name)) {
			continue
		}
		// the probes attached to this kernel, by kind, in spec order
		probes := map[SiteKind][]probe{}
		lastProbe := initIdx
		for _, a := range all {
			if selected(a.kernels, f.Name) {
				probes[a.kind] = append(probes[a.kind], a.probe)
				lastProbe = max(lastProbe, a.index)
			}
		}
		if len(probes) == 0 {
			continue
		}
		matched[f.Name] = true
		if f.Body == nil || f.Linkage == ".extern" {
			if f.Body == nil && hasDefinition(m, f.Name) {
				continue // a declaration ahead of the definition
			}
			rep.Refused = append(rep.Refused, Refusal{f.Name, "declared .extern or without a body: nothing to instrument here"})
			continue
		}
		if i < lastProbe {
			rep.Refused = append(rep.Refused, Refusal{f.Name, "a probe function is defined after the kernel (Link the fragment first)"})
			continue
		}
		kr, body, err := instrumentKernel(m, f, spec, probes, minNReg, inl, inlWhy)
		if err != nil {
			rep.Refused = append(rep.Refused, Refusal{f.Name, err.Error()})
			continue
		}
		if tw := grid1DTwin(m, f, spec, kr, probes, minNReg, inl, inlWhy); tw != nil {
			kr.Grid1D = tw.Name
			twins = append(twins, tw)
		}
		f.Body = body
		rep.Kernels = append(rep.Kernels, kr)
	}
	for _, tw := range twins { // after its kernel's definition
		idx := slices.IndexFunc(m.Items, func(it Item) bool {
			f, ok := it.(*Function)
			return ok && f.Entry && f.Body != nil && f.Name+Grid1DSuffix == tw.Name
		})
		m.Items = slices.Insert(m.Items, idx+1, Item(tw))
	}
	seen := map[string]bool{}
	for _, pat := range patterns {
		if !strings.ContainsAny(pat, "*?[\\") && !matched[pat] && !seen[pat] {
			seen[pat] = true
			rep.Unmatched = append(rep.Unmatched, pat)
		}
	}
	return rep, nil
}

// Grid1DSuffix ends the name of a kernel's entry for 1-D grids
// (Spec.Grid1D); GPUEXT_INJ_GRID1D_SUFFIX in bpf/include/gpuext_abi.h.
const Grid1DSuffix = "__gx1d"

// MaxGrid1D is the most instructions a kernel may have for an entry for
// 1-D grids (Spec.Grid1D). The entry is the whole instrumented kernel and
// its copy again, which the driver compiles twice more (ptxas on an H100:
// a Triton GEMM of 800 instructions patched with the shipped probes, 349
// ms without it, 811 with it); the test it shortens counts where blocks
// last microseconds, which the small kernels' do (elementwise kernels, a
// softmax: 25-170 instructions), a GEMM's rarely. A variable so that
// tests can change it.
var MaxGrid1D = 512

// grid1DTwin is f's entry for 1-D grids (Spec.Grid1D), instrumented as kr
// was (the same sites, ids and kernel id), or nil: not asked for, not
// sampled by launch in the copy form, or its name already in m. It shares
// f's parameters, directives and original statements, which no later
// step changes.
func grid1DTwin(m *Module, f *Function, spec Spec, kr KernelReport, probes map[SiteKind][]probe, minNReg int,
	inl map[string]*inlineFunc, inlWhy map[string]string) *Function {
	if !spec.Grid1D || spec.BlocksPerLaunch == 0 || !kr.SampleCopy || instructions(f) > MaxGrid1D {
		return nil
	}
	if it, _ := m.Lookup(f.Name + Grid1DSuffix); it != nil {
		return nil
	}
	spec.grid1D = true
	_, body, err := instrumentKernel(m, f, spec, probes, minNReg, inl, inlWhy)
	if err != nil { // it would have failed the kernel itself
		return nil
	}
	tw := *f
	tw.Name, tw.Body = f.Name+Grid1DSuffix, body
	return &tw
}

func hasDefinition(m *Module, name string) bool {
	it, _ := m.Lookup(name)
	f, ok := it.(*Function)
	return ok && f.Body != nil
}

func selected(patterns []string, name string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// checkProbe validates that name is a .func definition of m with the probe
// signature (three .u64/.b64 .params; one .u64/.b64 return value if
// returns, else none).
func checkProbe(m *Module, name string, returns bool) (probe, error) {
	it, idx := m.Lookup(name)
	f, ok := it.(*Function)
	switch {
	case it == nil:
		return probe{}, fmt.Errorf("ptx: instrument: probe function %s is not in the module (Link its fragment first)", name)
	case !ok || f.Entry:
		return probe{}, fmt.Errorf("ptx: instrument: probe %s is not a .func", name)
	case f.Body == nil:
		return probe{}, fmt.Errorf("ptx: instrument: probe %s is declared but not defined", name)
	case !returns && len(f.Returns) != 0:
		return probe{}, fmt.Errorf("ptx: instrument: probe %s returns a value; probes return nothing unless an exit probe carries it", name)
	case returns && (len(f.Returns) != 1 || f.Returns[0].Space != ".param" || (f.Returns[0].Type != ".u64" && f.Returns[0].Type != ".b64") ||
		f.Returns[0].Vector != "" || len(f.Returns[0].Dims) != 0):
		return probe{}, fmt.Errorf("ptx: instrument: probe %s is carried to exits: it must return one .param .b64 (or .u64)", name)
	case len(f.Params) != 3:
		return probe{}, fmt.Errorf("ptx: instrument: probe %s takes %d parameters; probes take three (.param .u64 kind_site, .param .u64 addr, .param .u64 kernel_id)", name, len(f.Params))
	}
	var types [3]string
	for i, p := range f.Params {
		if p.Space != ".param" || (p.Type != ".u64" && p.Type != ".b64") || p.Vector != "" || len(p.Dims) != 0 {
			return probe{}, fmt.Errorf("ptx: instrument: probe %s's parameter %d must be .param .u64 (or .b64), not %s%s %s", name, i+1, p.Space, p.Vector, p.Type)
		}
		types[i] = p.Type
	}
	// a prototype ahead of the definition is enough for calls after it
	for i, it := range m.Items {
		if g, ok := it.(*Function); ok && g.Name == name && i < idx {
			idx = i
			break
		}
	}
	p := probe{name: name, paramTypes: types, index: idx}
	if returns {
		p.ret = f.Returns[0].Type
	}
	return p, nil
}

// kernelRewriter rewrites one kernel body.
type kernelRewriter struct {
	m        *Module
	f        *Function
	spec     Spec
	probes   map[SiteKind][]probe
	carried  map[string]string      // entry probe -> its %gx_e<N>, in this kernel
	inline   map[string]*inlineFunc // functions copied at this kernel's entry and exit sites
	labels   map[string]bool        // the kernel's labels and those of the copies
	id       uint64
	rep      KernelReport
	scopes   []regScope
	nextSite uint32
	// copyLabel labels the copy of the original code that blocks not
	// sampled run (Spec.BlockSample, copy form); "" otherwise.
	copyLabel string
}

// regScope maps register names declared in one scope to their types.
type regScope struct {
	exact map[string]string
	param map[string]paramRegs // prefix of %r<N> declarations
}

type paramRegs struct {
	typ   string
	count int
}

func instrumentKernel(m *Module, f *Function, spec Spec, probes map[SiteKind][]probe, minNReg int, inl map[string]*inlineFunc, inlWhy map[string]string) (KernelReport, *Block, error) {
	if args, ok := f.PerfValue(".maxnreg"); ok && len(args) == 1 {
		if n, ok := ParseInt(args[0]); !ok || n < uint64(minNReg) {
			return KernelReport{}, nil, fmt.Errorf(".maxnreg %s is below %d, too few registers for a probe call", args[0], minNReg)
		}
	}
	var reason string
	Walk(f.Body, func(s Stmt, _ *Block, _ int) bool {
		if reason != "" {
			return false
		}
		switch s := s.(type) {
		case *Instruction:
			if s.Opcode == "setmaxnreg" {
				reason = fmt.Sprintf("setmaxnreg at %s: the kernel hands registers back at run time, a probe call could not rely on them", s.Pos)
			}
		case *RegDecl:
			for _, n := range s.Names {
				if strings.HasPrefix(n.Name, RegPrefix) {
					reason = fmt.Sprintf("register %s at %s uses the reserved prefix %s (already instrumented?)", n.Name, s.Pos, RegPrefix)
				}
			}
		case *Var:
			if slices.Contains(reservedNames, s.Name) {
				reason = fmt.Sprintf("%s at %s is a reserved name (already instrumented?)", s.Name, s.Pos)
			}
		}
		return true
	})
	if reason != "" {
		return KernelReport{}, nil, fmt.Errorf("%s", reason)
	}
	r := &kernelRewriter{m: m, f: f, spec: spec, probes: probes, id: KernelID(f.Name), carried: map[string]string{}}
	for _, x := range probes[SiteExit] {
		if x.carry == "" || r.carried[x.carry] != "" {
			continue
		}
		if slices.ContainsFunc(probes[SiteEntry], func(e probe) bool { return e.name == x.carry }) {
			r.carried[x.carry] = fmt.Sprintf("%s%d", carryReg, len(r.carried))
		}
	}
	r.rep = KernelReport{Name: f.Name, ID: r.id}
	if spec.Inline {
		r.chooseInline(inl, inlWhy)
	}
	if spec.sampling() && copyable(f) {
		r.copyLabel = r.uniqueLabel("$GXS_ORIG")
		r.rep.SampleCopy = true
	}
	body, err := r.block(f.Body, true)
	if err != nil {
		return KernelReport{}, nil, err
	}
	if r.copyLabel != "" {
		body.Stmts = append(body.Stmts, r.originalCopy()...)
	}
	decls := []Stmt{&RegDecl{Type: ".b64", Names: []RegName{{Name: RegPrefix + "rd", Count: 1}}}}
	if len(r.carried) > 0 {
		decls = append(decls, &RegDecl{Type: ".b64", Names: []RegName{{Name: carryReg, Count: len(r.carried)}}})
	}
	if spec.sampling() {
		decls = append(decls, sampleDecls(spec)...)
	}
	r.rep.RegsAdded = map[string]int{}
	for _, d := range decls {
		rd := d.(*RegDecl)
		for _, n := range rd.Names {
			r.rep.RegsAdded[rd.Type] += max(n.Count, 1) // %r<n>, or one %r
		}
	}
	body.Stmts = append(decls, body.Stmts...)
	return r.rep, body, nil
}

// block returns a rewritten copy of b (statements are shared, slices new).
func (r *kernelRewriter) block(b *Block, top bool) (*Block, error) {
	r.scopes = append(r.scopes, regScope{exact: map[string]string{}, param: map[string]paramRegs{}})
	defer func() { r.scopes = r.scopes[:len(r.scopes)-1] }()
	out := &Block{Pos: b.Pos, Stmts: make([]Stmt, 0, len(b.Stmts))}
	entryDone := !top || (len(r.probes[SiteEntry]) == 0 && r.spec.BlockInit == "" && !r.spec.sampling())
	for _, s := range b.Stmts {
		switch s.(type) {
		case *RegDecl, *Var, *Pragma: // entry-scope pragmas stay ahead of the code
		default:
			if !entryDone {
				out.Stmts = append(out.Stmts, r.entry()...)
				entryDone = true
			}
		}
		switch s := s.(type) {
		case *RegDecl:
			r.declare(s)
		case *Block:
			nb, err := r.block(s, false)
			if err != nil {
				return nil, err
			}
			out.Stmts = append(out.Stmts, nb)
			continue
		case *Instruction:
			code, err := r.instruction(s)
			if err != nil {
				return nil, err
			}
			out.Stmts = append(out.Stmts, code...)
		}
		out.Stmts = append(out.Stmts, s)
	}
	if !entryDone { // a body of declarations only
		out.Stmts = append(out.Stmts, r.entry()...)
	}
	return out, nil
}

// entry is the code at the kernel's entry: with block sampling, whether
// the block is sampled, and a branch of blocks that are not to the copy
// of the original code or around the rest; the block init and its barrier, then the entry site (if entry
// probes apply).
func (r *kernelRewriter) entry() []Stmt {
	if r.spec.sampling() {
		return append(r.samplePrologue(), r.sampled(r.entrySites())...)
	}
	return r.entrySites()
}

// entrySites is the block init and the entry site.
func (r *kernelRewriter) entrySites() []Stmt {
	var out []Stmt
	if r.spec.BlockInit != "" {
		r.rep.BlockInit = true
		if fn := r.inline[r.spec.BlockInit]; fn != nil {
			out = append(out, r.inlined(fn, nil, nil, "")...)
		} else {
			out = append(out, mkIns("call", nil, name(r.spec.BlockInit)))
		}
		out = append(out, mkIns("bar", []string{".sync"}, immU(0)))
	}
	if len(r.probes[SiteEntry]) > 0 {
		out = append(out, r.site(SiteEntry, nil, nil, r.f.Pos, "")...)
	}
	return out
}

func (r *kernelRewriter) declare(d *RegDecl) {
	sc := r.scopes[len(r.scopes)-1]
	for _, n := range d.Names {
		if n.Count > 0 {
			sc.param[n.Name] = paramRegs{typ: d.Type, count: n.Count}
		} else {
			sc.exact[n.Name] = d.Type
		}
		if d.Vector != "" { // a vector register is not an address
			sc.exact[n.Name] = d.Vector + d.Type
			delete(sc.param, n.Name)
		}
	}
}

// regType returns the declared type of register name in the scopes visible
// here ("" if undeclared).
func (r *kernelRewriter) regType(name string) string {
	prefix := strings.TrimRight(name, "0123456789")
	idx, err := strconv.Atoi(name[len(prefix):])
	for i := len(r.scopes) - 1; i >= 0; i-- {
		if t, ok := r.scopes[i].exact[name]; ok {
			return t
		}
		if p, ok := r.scopes[i].param[prefix]; ok && err == nil && idx < p.count && strconv.Itoa(idx) == name[len(prefix):] {
			return p.typ
		}
	}
	return ""
}

// instruction returns the code to insert before in.
func (r *kernelRewriter) instruction(in *Instruction) ([]Stmt, error) {
	if in.IsExit() {
		if len(r.probes[SiteExit]) == 0 {
			return nil, nil
		}
		return r.sampled(r.site(SiteExit, in.Guard, nil, in.Pos, WriteStmt(in))), nil
	}
	acc, addr := in.Access()
	kind := SiteKind(0)
	switch acc {
	case AccessLoad:
		kind = SiteLoad
	case AccessStore:
		kind = SiteStore
	case AccessAtomic:
		if r.spec.Atomics {
			kind = SiteStore
		}
	}
	if kind == 0 || len(r.probes[kind]) == 0 {
		return nil, nil
	}
	space := in.StateSpace()
	if space != ".global" && !(space == "" && r.spec.Generic) {
		return nil, nil
	}
	addrCode, err := r.address(in, addr, space == ".global")
	if err != nil {
		return nil, err
	}
	return r.sampled(r.site(kind, in.Guard, addrCode, in.Pos, WriteStmt(in))), nil
}

// address returns code that leaves the generic address of addr in ctxReg.
func (r *kernelRewriter) address(in *Instruction, addr *Address, global bool) ([]*Instruction, error) {
	fail := func(why string) error {
		return fmt.Errorf("cannot compute the address of %s at %s: %s", WriteExpr(addr), in.Pos, why)
	}
	if len(addr.Elems) != 1 {
		return nil, fail("not a plain [base+offset] operand")
	}
	base, off := addr.Elems[0], int64(0)
	if b, ok := base.(*Binary); ok && (b.Op == "+" || b.Op == "-") {
		v, ok := intValue(b.Y)
		if !ok {
			return nil, fail("the offset is not an integer")
		}
		if b.Op == "-" {
			v = -v
		}
		base, off = b.X, v
	}
	var code []*Instruction
	switch b := base.(type) {
	case *Name:
		t := r.regType(b.Text)
		switch {
		case t != "" || strings.HasPrefix(b.Text, "%"):
			switch t {
			case ".b64", ".u64", ".s64":
				code = append(code, mkIns("mov", []string{".b64"}, name(ctxReg), name(b.Text)))
			case ".b32", ".u32", ".s32":
				// ptxas: "32-Bit ABI (--machine 32 or 32-Bit addressing) is
				// not supported on sm_90 or higher architectures"
				return nil, fail("register " + b.Text + " is a 32-bit address in a 64-bit module")
			case "":
				return nil, fail("register " + b.Text + " is not declared")
			default:
				return nil, fail("register " + b.Text + " has type " + t)
			}
		default:
			it, _ := r.m.Lookup(b.Text)
			v, ok := it.(*Var)
			if !ok || !global || v.Space != ".global" {
				return nil, fail(b.Text + " is not a .global variable of the module")
			}
			code = append(code, mkIns("mov", []string{".u64"}, name(ctxReg), name(b.Text)))
		}
	case *IntLit:
		v, ok := ParseInt(b.Text)
		if !ok {
			return nil, fail("bad address literal")
		}
		code = append(code, mkIns("mov", []string{".u64"}, name(ctxReg), immU(v)))
	default:
		return nil, fail("unsupported address form")
	}
	if off != 0 {
		code = append(code, mkIns("add", []string{".s64"}, name(ctxReg), name(ctxReg), immS(off)))
	}
	if global {
		code = append(code, mkIns("cvta", []string{".global", ".u64"}, name(ctxReg), name(ctxReg)))
	}
	return code, nil
}

// intValue evaluates an integer literal or its negation.
func intValue(e Expr) (int64, bool) {
	switch e := e.(type) {
	case *IntLit:
		v, ok := ParseInt(e.Text)
		return int64(v), ok
	case *Unary:
		if e.Op == "-" {
			v, ok := intValue(e.X)
			return -v, ok
		}
	}
	return 0, false
}

// site builds the code of one site: the address (load/store sites, under
// guard g, into ctxReg), then per probe a scope that stores the three ctx
// fields into its .param arguments and calls the probe under g. addr nil:
// ctx.addr is 0.
func (r *kernelRewriter) site(kind SiteKind, g *Guard, addr []*Instruction, pos Pos, instr string) []Stmt {
	idx := r.nextSite
	r.nextSite++
	r.rep.Sites = append(r.rep.Sites, Site{Index: idx, Kind: kind, Pos: pos, Instr: instr})
	switch kind {
	case SiteEntry:
		r.rep.Entry++
	case SiteExit:
		r.rep.Exit++
	case SiteLoad:
		r.rep.Load++
	case SiteStore:
		r.rep.Store++
	}
	var out []Stmt
	for _, in := range addr {
		in.Guard = copyGuard(g)
		out = append(out, in)
	}
	// struct gpuext_dev_ctx { u32 kind; u32 site; u64 addr; u64 kernel_id; }
	// as three u64 words (little-endian: the first is site<<32 | kind);
	// fresh nodes for every call, the tree shares none
	field := func(i int) Expr {
		switch {
		case i == 0:
			return &IntLit{Text: fmt.Sprintf("0x%08X%08X", idx, uint32(kind))}
		case i == 2:
			return &IntLit{Text: fmt.Sprintf("0x%016X", r.id)}
		case addr != nil:
			return name(ctxReg)
		}
		return immU(0)
	}
	for _, p := range r.probes[kind] {
		if p.firstBlock {
			out = append(out, r.firstBlockOnly(r.probeAt(p, kind, g, field))...)
			continue
		}
		out = append(out, r.probeAt(p, kind, g, field)...)
	}
	return out
}

// firstBlockOnly wraps the code of a probe of the first block only: the
// block's index ORed (uniform in a block: the branch never diverges) and
// a branch of every other block around code.
func (r *kernelRewriter) firstBlockOnly(code []Stmt) []Stmt {
	skip := r.uniqueLabel("$GXF_SKIP")
	b := func(i int) Expr { return name(firstBlockReg + strconv.Itoa(i)) }
	mov := func(d Expr, s string) Stmt { return mkIns("mov", []string{".u32"}, d, name(s)) }
	or := func(d, a, c Expr) Stmt { return mkIns("or", []string{".b32"}, d, a, c) }
	stmts := []Stmt{
		&RegDecl{Type: ".b32", Names: []RegName{{Name: firstBlockReg, Count: 2}}},
		&RegDecl{Type: ".pred", Names: []RegName{{Name: firstBlockPred}}},
		mov(b(0), "%ctaid.x"), mov(b(1), "%ctaid.y"), or(b(0), b(0), b(1)),
		mov(b(1), "%ctaid.z"), or(b(0), b(0), b(1)),
		mkIns("setp", []string{".ne", ".u32"}, name(firstBlockPred), b(0), immU(0)),
		&Instruction{Guard: &Guard{Reg: firstBlockPred}, Opcode: "bra", Modifiers: []string{".uni"}, Operands: []Expr{name(skip)}},
	}
	stmts = append(stmts, code...)
	return []Stmt{&Block{Stmts: append(stmts, &Label{Name: skip})}}
}

// Registers of a first-block probe's test (declared in its block).
const (
	firstBlockReg  = RegPrefix + "f"  // .b32 %gx_f<2>
	firstBlockPred = RegPrefix + "fp" // .pred
)

// probeAt is the code of probe p at a site of kind: its body inlined, or a
// call.
func (r *kernelRewriter) probeAt(p probe, kind SiteKind, g *Guard, field func(int) Expr) []Stmt {
	if fn := r.inline[p.name]; fn != nil && (kind == SiteEntry || kind == SiteExit) {
		arg := field
		if reg := r.carried[p.carry]; p.carry != "" && reg != "" {
			arg = func(i int) Expr {
				if i == 1 {
					return name(reg) // the exit's ctx->entry_ret
				}
				return field(i)
			}
		}
		return r.inlined(fn, arg, g, r.carried[p.name])
	}
	var stmts []Stmt
	args := make([]Expr, 3)
	for i, a := range argVars {
		stmts = append(stmts, &Var{Space: ".param", Type: p.paramTypes[i], Name: a})
		args[i] = name(a)
	}
	// ptxas refuses a predicated st.param ("Illegal to predicate
	// instruction 'st.param'"); storing into our own .params is
	// harmless, so only the call carries the guard.
	for i, a := range argVars {
		v := field(i)
		if reg := r.carried[p.carry]; i == 1 && p.carry != "" && reg != "" {
			v = name(reg) // the exit's ctx->entry_ret
		}
		stmts = append(stmts, mkIns("st", []string{".param", p.paramTypes[i]}, &Address{Elems: []Expr{name(a)}}, v))
	}
	call := mkIns("call", nil, name(p.name), &Paren{Elems: args})
	if p.ret != "" {
		stmts = append(stmts, &Var{Space: ".param", Type: p.ret, Name: retVar})
		call.Operands = append([]Expr{&Paren{Elems: []Expr{name(retVar)}}}, call.Operands...)
	}
	call.Guard = copyGuard(g)
	stmts = append(stmts, call)
	if reg := r.carried[p.name]; reg != "" {
		// the entry site is never guarded: every thread sets it
		stmts = append(stmts, mkIns("ld", []string{".param", ".b64"}, name(reg), &Address{Elems: []Expr{name(retVar)}}))
	}
	return []Stmt{&Block{Stmts: stmts}}
}

func copyGuard(g *Guard) *Guard {
	if g == nil {
		return nil
	}
	c := *g
	return &c
}

func mkIns(op string, mods []string, ops ...Expr) *Instruction {
	return &Instruction{Opcode: op, Modifiers: mods, Operands: ops}
}

func name(s string) *Name { return &Name{Text: s} }

func immU(v uint64) Expr { return &IntLit{Text: strconv.FormatUint(v, 10)} }

func immS(v int64) Expr {
	if v < 0 {
		return &Unary{Op: "-", X: &IntLit{Text: strconv.FormatUint(uint64(-v), 10)}}
	}
	return &IntLit{Text: strconv.FormatInt(v, 10)}
}
