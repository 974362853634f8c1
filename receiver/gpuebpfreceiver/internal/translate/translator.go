package translate

import (
	"sort"

	"github.com/ianlancetaylor/demangle"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
)

// HistogramConfig enables one histogram metric and sets its bounds.
type HistogramConfig = histogram.Config

// Config is what the translator needs from the receiver's configuration.
type Config struct {
	Spans       bool
	SpanClasses []string // empty: all
	// Histograms, by metric.
	CallDuration HistogramConfig
	GridSize     HistogramConfig
	BlockSize    HistogramConfig
	// GPU execution of sampled work (devrt's GPU execution records).
	KernelExecution  HistogramConfig
	KernelQueueDelay HistogramConfig
	CopyExecution    HistogramConfig
	Metrics          metadata.MetricsBuilderConfig
	HostName         string
	// Buckets on per-process state; zero picks the default.
	MaxProcesses        int // default 16384
	MaxNamesPerProcess  int // default 65536
	MaxAllocsPerProcess int // default 1 << 20
}

// Resolver tells who a process is (procattr.Resolver in production).
type Resolver interface {
	Resolve(pid int) (procattr.Process, error)
	Forget(pid int)
	// Alive reports whether the process still runs; start, when not zero,
	// is the start time it was known by (a different one: pid reused).
	Alive(pid int, start uint64) bool
}

// Cgroups attributes a cgroup id to a container and pod
// (procattr.CgroupIndex in production), for processes gone from /proc.
type Cgroups interface {
	Attribute(id uint64) (procattr.Cgroup, bool)
}

// Symbolizer names a code address in a process (runtime launch stubs)
// without blocking: done is false while the answer is being worked out, and
// the question is asked again on a later launch. symtab.Symbolizer.
type Symbolizer interface {
	Lookup(pid uint32, addr uint64) (name string, done bool)
}

// Hooks connect the translator to the probe side. All are optional.
type Hooks struct {
	// Select decides whether a newly seen process is traced.
	Select func(procattr.Process) bool
	// Skipped is called once for a process Select rejected, so the kernel
	// can stop reporting it.
	Skipped func(pid uint32)
	// Released is called when a process's state is dropped: exited is true
	// when the process ended, false when it called execve (the pid lives
	// on with a new program).
	Released func(pid uint32, exited bool)
	// Seen is called when a traced process makes its first call: its CUDA
	// runtime, if it has one, is loaded by now and can be probed.
	Seen func(pid uint32)
	// Cgroups, when set, attributes processes that exited before /proc
	// could be read.
	Cgroups Cgroups
	// Holding, when set, tells whether a source still holds records of
	// process pid not yet handed over (devrt's last drain of an exited
	// process comes after its exit): its state is kept until it does not.
	Holding func(pid uint32) bool
	// Launched, when set, gets each devrt launch call whose kernel name is
	// known: the process, the mangled name, the device ordinal devrt named
	// (-1: none) and the call's start (CLOCK_MONOTONIC ns). Executed gets
	// devrt's GPU timing of such a launch: the call's start and the work's
	// start and end on the host clock. The device probes pair them with
	// what ran inside the kernels, per GPU.
	Launched func(pid uint32, kernel string, dev int32, start uint64)
	Executed func(pid uint32, kernel string, dev int32, callStart, gpuStart, gpuEnd uint64)
}

// SelfStats are the receiver's own counters that the translator does not
// see: kernel-side losses and attachment state, and devrt's rings.
type SelfStats struct {
	RingFull, InflightFull, Unmatched uint64
	Probes                            int64
	// Devrt is reported when Devrt.Enabled.
	Devrt DevrtStats
}

// DevrtStats are devrt's own counters, summed over every ring read since
// the start (rings already removed included), and its rings now.
type DevrtStats struct {
	Enabled bool
	// Records the producers dropped (gpuext_ring_hdr.drops).
	Full, Disabled, Timing uint64
	// Corrupt is the records left unread in rings abandoned as corrupt or
	// retired behind a record their writer never finished, and those of
	// rings whose process can no longer be named (its pid reused).
	Corrupt uint64
	// Rings read now, by the state devrt reports.
	Active, DisabledRings, Closed int64
	// Ring files given up: failed validation, corrupt, stale.
	Invalid, Abandoned, Stale uint64
}

// Translator turns events into pdata. See the package comment.
type Translator struct {
	cfg       Config
	res       Resolver
	sym       Symbolizer
	hooks     Hooks
	spanClass [8]bool
	mb        *metadata.MetricsBuilder
	hostRes   pcommon.Resource
	clock     *Clock
	ids       idSource
	procs     map[uint32]*process
	retired   []*process        // replaced by execve: emitted once more, then dropped
	execComm  map[uint32]string // comm of recent execs, for short-lived processes
	// Exited processes whose comm is dropped at the next emission but one:
	// devrt's last records of a process are drained after its exit.
	exitedComm, exitedCommPrev []uint32
	demangled                  map[string]string
	demangledBytes             int
	start                      pcommon.Timestamp
	traces                     ptrace.Traces
	nspans                     int
	gen                        uint64                     // span batch generation
	threads                    map[threadKey]*threadSpans // recent spans per thread, this batch
	waiting                    []*process                 // devrt processes with GPU execution records waiting for their call
	nwaiting                   int
	// Per source, indexed by sourceIndex.
	received   [3]uint64
	decodeErrs [3]uint64
	procLimit  [3]uint64
}

// sourceIndex is the index of counters per source: devrt's records (the
// receiver marks every record read from a ring as devrt's) or the uprobes'.
func sourceIndex(s ev.Source) int {
	if s == ev.SourceDevrt {
		return int(ev.SourceDevrt)
	}
	return int(ev.SourceUprobe)
}

// New returns a translator. res and sym may be nil (no attribution beyond
// the pid; no symbolization).
func New(cfg Config, set receiver.Settings, res Resolver, sym Symbolizer, hooks Hooks) *Translator {
	if cfg.MaxProcesses <= 0 {
		cfg.MaxProcesses = 16384
	}
	if cfg.MaxNamesPerProcess <= 0 {
		cfg.MaxNamesPerProcess = 65536
	}
	if cfg.MaxAllocsPerProcess <= 0 {
		cfg.MaxAllocsPerProcess = 1 << 20
	}
	t := &Translator{
		cfg: cfg, res: res, sym: sym, hooks: hooks,
		clock:     NewClock(),
		ids:       newIDSource(),
		procs:     map[uint32]*process{},
		execComm:  map[uint32]string{},
		threads:   map[threadKey]*threadSpans{},
		demangled: map[string]string{},
		traces:    ptrace.NewTraces(),
	}
	for _, c := range cfg.SpanClasses {
		t.spanClass[ev.ClassByName(c)] = true
	}
	if len(cfg.SpanClasses) == 0 {
		for i := range t.spanClass {
			t.spanClass[i] = true
		}
	}
	t.start = pcommon.NewTimestampFromTime(t.clock.Now())
	t.mb = metadata.NewMetricsBuilder(cfg.Metrics, set, metadata.WithStartTime(t.start))
	rb := t.mb.NewResourceBuilder()
	rb.SetHostName(cfg.HostName)
	t.hostRes = rb.Emit()
	return t
}

// process is the state kept per traced process.
type process struct {
	pid       uint32
	skip      bool
	procStart uint64            // start time in /proc (clock ticks), 0 if never read
	start     pcommon.Timestamp // first seen: start of its cumulative metrics
	resource  pcommon.Resource

	names    map[uint64]string // function/kernel/stub handle → mangled name
	kernelOf map[uint64]uint64 // function handle → kernel handle
	allocs   map[uint64]allocation

	okCalls   [ev.APIMax]uint64
	errCalls  map[callKey]uint64
	unknown   [ev.APIMax]uint64 // calls reported at entry only: result unknown
	launches  [ev.APIMax]uint64
	durations [ev.APIMax]*histogram.Histogram
	grids     [ev.APIMax]*histogram.Histogram
	blocks    [ev.APIMax]*histogram.Histogram
	exec      *execState // devrt processes only
	copied    [ev.DirDefault + 1]uint64
	set       uint64
	allocated [ev.MemPool + 1]uint64
	freed     [ev.MemPool + 1]uint64
	outstand  [ev.MemPool + 1]int64
	untracked uint64 // allocations not remembered (table full)
	namesFull uint64

	spans    ptrace.SpanSlice
	spansGen uint64
}

type allocation struct {
	bytes uint64
	kind  ev.MemKind
}

type callKey struct {
	api    ev.API
	result int32
}

// DecodeError counts a record of the uprobes that could not be decoded.
func (t *Translator) DecodeError() { t.DecodeErrorFrom(ev.SourceUprobe) }

// DecodeErrorFrom counts a record of source src that could not be decoded.
func (t *Translator) DecodeErrorFrom(src ev.Source) {
	i := sourceIndex(src)
	t.decodeErrs[i]++
	t.received[i]++
}

// Track starts the state of process pid now, while it can be read from
// /proc (and runs the selection rules), before its first record: devrt's
// records of a short-lived process may all be drained after it exited.
func (t *Translator) Track(pid uint32) {
	if _, ok := t.procs[pid]; !ok {
		if t.process(&ev.Event{PID: pid}) == nil {
			t.procLimit[sourceIndex(ev.SourceDevrt)]++
		}
	}
}

// Skipping reports whether the selection rules exclude process pid (as
// far as the translator has seen it).
func (t *Translator) Skipping(pid uint32) bool {
	p, ok := t.procs[pid]
	return ok && p.skip
}

// Processes is the number of processes with state.
func (t *Translator) Processes() int { return len(t.procs) }

// PendingSpans is the number of spans waiting in the current batch.
func (t *Translator) PendingSpans() int { return t.nspans }

func (t *Translator) process(e *ev.Event) *process {
	pid := e.PID
	if p, ok := t.procs[pid]; ok {
		return p
	}
	if len(t.procs) >= t.cfg.MaxProcesses {
		return nil
	}
	p := &process{pid: pid, start: pcommon.NewTimestampFromTime(t.clock.Now()),
		names: map[uint64]string{}, kernelOf: map[uint64]uint64{},
		allocs: map[uint64]allocation{}, errCalls: map[callKey]uint64{}}
	rb := t.mb.NewResourceBuilder()
	rb.SetProcessPid(int64(pid))
	rb.SetHostName(t.cfg.HostName)
	info := t.identify(e)
	p.procStart = info.StartTime
	if info.ExeName != "" {
		rb.SetProcessExecutableName(info.ExeName)
	}
	if info.Cgroup.ContainerID != "" {
		rb.SetContainerID(info.Cgroup.ContainerID)
	}
	if info.Cgroup.PodUID != "" {
		rb.SetK8sPodUID(info.Cgroup.PodUID)
	}
	p.resource = rb.Emit()
	if t.hooks.Select != nil && !t.hooks.Select(info) {
		p.skip = true
		if t.hooks.Skipped != nil {
			t.hooks.Skipped(pid)
		}
	} else if t.hooks.Seen != nil {
		t.hooks.Seen(pid)
	}
	t.procs[pid] = p
	return p
}

// identify reads who the process of e is from /proc, or, when it is
// already gone, from what the kernel told: its comm at exec and its cgroup.
func (t *Translator) identify(e *ev.Event) procattr.Process {
	info := procattr.Process{PID: int(e.PID)}
	if t.res != nil {
		if p, err := t.res.Resolve(int(e.PID)); err == nil {
			return p
		}
	}
	info.ExeName = t.execComm[e.PID]
	if t.hooks.Cgroups != nil {
		if cg, ok := t.hooks.Cgroups.Attribute(e.CgroupID); ok {
			info.Cgroup = cg
		}
	}
	return info
}

// Handle takes one decoded event.
func (t *Translator) Handle(e *ev.Event) {
	src := sourceIndex(e.Source)
	t.received[src]++
	switch e.Kind {
	case ev.KindExec:
		// A new program image: earlier names and allocations mean nothing
		// now, and the identity (executable, rules) must be read again. What
		// the old program did since the last emission is still emitted.
		if p, ok := t.procs[e.PID]; ok {
			t.retire(p)
		}
		if len(t.execComm) < t.cfg.MaxProcesses {
			t.execComm[e.PID] = e.Name
		}
		return
	case ev.KindExit:
		// The group leader's thread ended, which need not be the process
		// (workers may run on): liveness is checked at each emission. Its
		// comm is kept a while for records that arrive later (devrt's).
		if _, ok := t.execComm[e.PID]; ok {
			t.exitedComm = append(t.exitedComm, e.PID)
		}
		return
	}
	p := t.process(e)
	if p == nil {
		t.procLimit[src]++
		return
	}
	if p.skip {
		return
	}
	t.account(p, e)
	link := t.execLink(p, e)
	// __cudaRegisterFunction runs once per kernel at program start (21,504
	// times for PyTorch): bookkeeping for names, not a call worth a span.
	if t.cfg.Spans && t.spanClass[e.API.Class()] && e.API != ev.APICudaRegisterFunction {
		t.addSpan(p, e, link)
	}
	if link != nil && t.nwaiting > 0 {
		t.callArrived(p, link)
	}
}

// account updates the process's counters and tables.
func (t *Translator) account(p *process, e *ev.Event) {
	api := e.API
	ok := e.OK()
	switch {
	case !e.Returned():
		p.unknown[api]++ // no result and no duration, but what it launched counts
	case ok:
		p.okCalls[api]++
		observe(&p.durations, t.cfg.CallDuration, api, float64(e.Duration())/1e9)
	default:
		p.errCalls[callKey{api, e.Result}]++
		observe(&p.durations, t.cfg.CallDuration, api, float64(e.Duration())/1e9)
		return
	}
	switch api.Class() {
	case ev.ClassLaunch:
		p.launches[api]++
		if api == ev.APICuGraphLaunch || api == ev.APICudaGraphLaunch {
			return
		}
		if e.GridSize() > 0 {
			observe(&p.grids, t.cfg.GridSize, api, float64(e.GridSize()))
		}
		if e.BlockSize() > 0 {
			observe(&p.blocks, t.cfg.BlockSize, api, float64(e.BlockSize()))
		}
	case ev.ClassMemory:
		switch api {
		case ev.APICuMemAlloc, ev.APICuMemAllocManaged, ev.APICuMemAllocAsync, ev.APICuMemAllocHost, ev.APICuMemHostAlloc:
			p.allocated[e.MemKind] += e.Bytes
			p.outstand[e.MemKind] += int64(e.Bytes)
			if e.Addr != 0 {
				if len(p.allocs) < t.cfg.MaxAllocsPerProcess {
					p.allocs[e.Addr] = allocation{bytes: e.Bytes, kind: e.MemKind}
				} else {
					p.untracked++
				}
			}
		case ev.APICuMemFree, ev.APICuMemFreeAsync, ev.APICuMemFreeHost:
			if a, found := p.allocs[e.Addr]; found {
				delete(p.allocs, e.Addr)
				p.freed[a.kind] += a.bytes
				p.outstand[a.kind] -= int64(a.bytes)
				e.Bytes, e.MemKind = a.bytes, a.kind
			}
		}
	case ev.ClassCopy:
		if isSet(api) {
			p.set += e.Bytes
			return
		}
		if e.Direction == ev.DirDefault {
			e.Direction = p.direction(e.Src, e.Addr)
		}
		p.copied[e.Direction] += e.Bytes
	case ev.ClassModule:
		switch api {
		case ev.APICuModuleGetFunction, ev.APICuLibraryGetKernel, ev.APICudaRegisterFunction:
			if e.Handle != 0 && e.Name != "" {
				p.remember(t, e.Handle, e.Name)
			}
		case ev.APICuKernelGetFunction:
			if e.Handle != 0 && len(p.kernelOf) < t.cfg.MaxNamesPerProcess {
				p.kernelOf[e.Handle] = e.Parent
			}
		}
	}
}

// observe records v in the API's histogram of hs, made on first use.
func observe(hs *[ev.APIMax]*histogram.Histogram, cfg HistogramConfig, api ev.API, v float64) {
	if !cfg.Enabled {
		return
	}
	h := hs[api]
	if h == nil {
		h = histogram.New(cfg.Buckets)
		hs[api] = h
	}
	h.Record(cfg.Buckets, v)
}

func (p *process) remember(t *Translator, handle uint64, name string) {
	if _, ok := p.names[handle]; !ok && len(p.names) >= t.cfg.MaxNamesPerProcess {
		p.namesFull++
		return
	}
	p.names[handle] = name
}

// direction classifies a unified-addressing copy by the allocations seen at
// exactly its source and destination addresses.
func (p *process) direction(src, dst uint64) ev.Direction {
	where := func(addr uint64) ev.MemKind {
		if a, ok := p.allocs[addr]; ok {
			return a.kind
		}
		return ev.MemNone
	}
	s, d := where(src), where(dst)
	isDev := func(k ev.MemKind) bool { return k == ev.MemDevice || k == ev.MemPool }
	switch {
	case s == ev.MemHost && isDev(d):
		return ev.DirHtoD
	case isDev(s) && d == ev.MemHost:
		return ev.DirDtoH
	case isDev(s) && isDev(d):
		return ev.DirDtoD
	case s == ev.MemHost && d == ev.MemHost:
		return ev.DirHtoH
	}
	return ev.DirDefault
}

// kernelName returns the mangled name launched by a launch event, or "".
func (t *Translator) kernelName(p *process, e *ev.Event) string {
	if n, ok := p.names[e.Handle]; ok {
		return n
	}
	if k, ok := p.kernelOf[e.Handle]; ok {
		if n, ok := p.names[k]; ok {
			return n
		}
	}
	if (e.API == ev.APICudaLaunchKernel || e.API == ev.APICudaLaunchKernelExC) && t.sym != nil {
		// A stub whose registration was not seen (the runtime was probed
		// after the program loaded its kernels): its ELF symbol. A miss is
		// remembered as "" so it is not asked again.
		if n, done := t.sym.Lookup(p.pid, e.Handle); done {
			p.remember(t, e.Handle, n)
			return n
		}
	}
	return ""
}

// Bounds of demangling. A name is whatever string a program passed, and
// by substitutions a 500-byte one can demangle to hundreds of megabytes
// (seconds of the event goroutine, then a span attribute): the demangler
// stops at 1<<maxDemangledPow characters, and a name that long is shown
// mangled. The cache holds at most maxDemangledBytes of names.
const (
	maxDemangledPow   = 14
	maxDemangledBytes = 32 << 20
)

// demangle returns the readable form of a mangled name, cached.
func (t *Translator) demangle(name string) string {
	if d, ok := t.demangled[name]; ok {
		return d
	}
	d := demangle.Filter(name, demangle.NoClones, demangle.MaxLength(maxDemangledPow))
	if len(d) >= 1<<maxDemangledPow {
		d = name // cut short: the mangled name says it all, in fewer bytes
	}
	if len(t.demangled) < 1<<16 && t.demangledBytes < maxDemangledBytes {
		t.demangled[name] = d
		t.demangledBytes += len(name) + len(d)
	}
	return d
}

// release drops the state of a process that has ended.
func (t *Translator) release(p *process) {
	delete(t.procs, p.pid)
	if t.res != nil {
		t.res.Forget(int(p.pid))
	}
	if t.hooks.Released != nil {
		t.hooks.Released(p.pid, true)
	}
}

// retire sets aside a process whose pid now runs a new program: its
// counters are emitted once more, under its old identity, and dropped.
func (t *Translator) retire(p *process) {
	delete(t.procs, p.pid)
	t.retired = append(t.retired, p)
	if t.res != nil {
		t.res.Forget(int(p.pid))
	}
	if t.hooks.Released != nil {
		t.hooks.Released(p.pid, false)
	}
}

// sortedPIDs gives a stable emission order.
func (t *Translator) sortedPIDs() []uint32 {
	pids := make([]uint32, 0, len(t.procs))
	for pid := range t.procs {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	return pids
}
