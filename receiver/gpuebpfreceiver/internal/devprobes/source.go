package devprobes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion"
	"github.com/otelcol-gpu/otelcol-gpu/internal/probeset"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes/internal/metadata"
)

// Histogram metrics (mdatagen cannot describe histograms).
const (
	histScheduleDelay = "gpu.kernel.block.schedule.delay"
	histLaunchLatency = "gpu.kernel.launch.latency"
	attrKernelName    = "gpu.cuda.kernel.name"
	// attrHWID names the GPU of a region's data ("GPU-<uuid>", as the NVML
	// source's hw.id): a resource attribute beside process.pid.
	attrHWID = "hw.id"
)

// RegionPattern matches devrt's region files in a directory.
const RegionPattern = "gpuext-devmaps-*.maps"

// Limits on what one source keeps.
const (
	MaxRegions   = 4096 // regions read at once
	maxBad       = 4096 // region files given up, remembered so they are not opened again
	maxPending   = 1 << 14
	maxSpansHeld = 1 << 16
)

// Options connect the source to the receiver.
type Options struct {
	// Dirs are the devrt directories (devrt::directories): a server
	// listens in each, and region files are looked for there.
	Dirs     []string
	Settings receiver.Settings
	HostName string
	// Now is the wall clock and Monotonic CLOCK_MONOTONIC in ns (tests
	// set them).
	Now       func() time.Time
	Monotonic func() uint64
	// Alive tells whether a process still runs (default: its
	// <ProcRoot>/<pid>/stat says so; kill(pid, 0) without ProcRoot).
	// Region files of processes that ended without unloading their
	// modules are read a last time and removed.
	Alive func(pid uint32) bool
	// ProcRoot is the host's /proc (the receiver's proc_root). With it a
	// region file is read only for the host process that maps it, and the
	// directories are also looked for in the roots of container processes
	// that map devrt (discover.go). Empty: only Dirs are read, each file
	// for the pid its name says (tests of the regions' contents).
	ProcRoot string
	// Resolve tells a process's start time (default: a procattr.Resolver
	// of ProcRoot).
	Resolve func(pid int) (procattr.Process, error)
}

// Source is the device probes' part of the receiver. Poll, HandleInject,
// Launch and Timed run on the receiver's event goroutine; Metrics and
// TakeSpans on any.
type Source struct {
	cfg   Config
	opts  Options
	log   *zap.Logger
	set   *probeset.Set
	mb    *metadata.MetricsBuilder
	start pcommon.Timestamp

	servers []*devrtinject.Server

	mu      sync.Mutex
	procs   map[uint32]*proc
	regions map[string]*region
	bad     map[string]bool
	broken  int64
	modules map[devrtinject.Outcome]int64
	spans   ptrace.Traces
	nspans  int
	// disc is where region files are found and whose they are (discover.go).
	disc discovery
}

type region struct {
	r     *proberegion.Region
	tr    *proberegion.Tracker
	pid   uint32
	dev   string // the GPU's hw.id (the file's device record), "" if it names none
	ord   int32  // the GPU's ordinal in the process (the same record), -1 if none
	drops map[string]uint64
}

// proc is what the probes saw of one process, cumulative.
type proc struct {
	pid uint32
	// noRegion: it had no region at the last emission either: dropped at
	// the next emission that still finds none. A process whose last
	// region went is emitted twice more: devrt's timings, a poll behind
	// its records, may still settle launches (settle); dropped at the
	// first emission after, as until 2026-11-27, it took them to a new
	// process's matcher, which had none of its calls.
	noRegion bool
	// matchers pair launch calls with launch_latency's records, one per
	// GPU, by device ordinal: devrt names each launch's device and each
	// region's (-1: named none). Each GPU has its own %globaltimer, so its
	// own clock offset too.
	matchers map[int32]*proberegion.LaunchMatcher
	// open counts its regions open on each GPU (by ordinal; none: it has
	// none), devs names
	// the GPU (hw.id) its regions of each ordinal named: once none is
	// open, what its matcher releases is reported at once (settle).
	open map[int32]int
	devs map[int32]string
	// gpus: what each of its GPUs' regions said, by hw.id (a process has
	// a region per context, a context per GPU; SM ids are per GPU).
	gpus map[string]*gpuStats
}

// maxMatchers bounds a process's matchers (device ordinals it named).
const maxMatchers = 64

// matcher is p's launch matcher of the GPU of ordinal ord, or nil when
// ord is not one (an ordinal below -1, or more GPUs than maxMatchers).
func (p *proc) matcher(ord int32) *proberegion.LaunchMatcher {
	m := p.matchers[ord]
	if m == nil && ord >= -1 && len(p.matchers) < maxMatchers {
		m = proberegion.NewLaunchMatcher()
		p.matchers[ord] = m
	}
	return m
}

// closed counts one of p's regions on GPU ord closed.
func (p *proc) closed(ord int32) {
	if p.open[ord]--; p.open[ord] <= 0 {
		delete(p.open, ord)
	}
}

// gpuStats is what the probes saw of one process on one GPU, cumulative.
type gpuStats struct {
	blocks    map[string]int64
	smBlocks  map[uint32]int64
	smBusy    map[uint32]float64
	interval  []proberegion.SMLoad // SM work since the last emission
	imbalance float64
	occ       map[uint32]float64
	dropped   map[string]int64
	delay     map[string]*histogram.Histogram
	latency   map[string]*histogram.Histogram
}

// gpu is p's stats of GPU dev (hw.id, "" for regions that name none).
func (p *proc) gpu(dev string) *gpuStats {
	g := p.gpus[dev]
	if g == nil {
		g = &gpuStats{blocks: map[string]int64{}, smBlocks: map[uint32]int64{}, smBusy: map[uint32]float64{},
			occ: map[uint32]float64{}, dropped: map[string]int64{}, delay: map[string]*histogram.Histogram{},
			latency: map[string]*histogram.Histogram{}}
		p.gpus[dev] = g
	}
	return g
}

// New compiles the probe set; an unusable one (a probe the verifier
// rejects, a missing file) is an error.
func New(cfg Config, opts Options) (*Source, error) {
	set, err := probeset.New(cfg.Config)
	if err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Monotonic == nil {
		opts.Monotonic = monotonic
	}
	opts = procDefaults(opts) // Alive, Resolve
	log := opts.Settings.Logger
	if log == nil {
		log = zap.NewNop()
		opts.Settings.Logger = log
	}
	s := &Source{
		cfg: cfg, opts: opts, log: log, set: set,
		start:   pcommon.NewTimestampFromTime(opts.Now()),
		procs:   map[uint32]*proc{},
		regions: map[string]*region{},
		bad:     map[string]bool{},
		modules: map[devrtinject.Outcome]int64{},
		spans:   ptrace.NewTraces(),
	}
	s.mb = metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, opts.Settings, metadata.WithStartTime(s.start))
	return s, nil
}

func alive(pid uint32) bool {
	err := unix.Kill(int(pid), 0)
	return err == nil || err == unix.EPERM
}

func monotonic() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// Set is the compiled probe set (its layout, its kernel names).
func (s *Source) Set() *probeset.Set { return s.set }

// Start listens on the injection socket of each directory. A directory
// where it cannot is logged and skipped: devrt there loads originals.
func (s *Source) Start() {
	for _, d := range s.opts.Dirs {
		srv, err := devrtinject.Listen(devrtinject.Config{
			Path:    filepath.Join(d, devrtinject.SocketName),
			Patcher: s.set,
			Logger:  s.log,
		})
		if err != nil {
			s.log.Warn("device probes: no injection server in this directory", zap.String("dir", d), zap.Error(err))
			continue
		}
		s.servers = append(s.servers, srv)
	}
	s.log.Info("device probes injecting", zap.Int("probes", len(s.set.Compiled().Probes)),
		zap.Uint64("region_bytes", s.set.Layout().Size), zap.Int("servers", len(s.servers)),
		zap.Bool("per_thread", s.cfg.Mode == probeset.ModeThread))
}

// Shutdown closes the servers (their sockets are removed) and the regions.
// The launches still open in the regions' trackers (the last Poll read
// their blocks; a launch otherwise ends only at a later copy) are finished
// first, so the receiver's final emission and span hand-over include them.
func (s *Source) Shutdown() {
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	s.servers = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := make([]string, 0, len(s.regions))
	for path := range s.regions {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		rg := s.regions[path]
		if p := s.procs[rg.pid]; p != nil {
			s.finishRuns(p, rg, rg.tr.Flush())
			p.closed(rg.ord)
			if m := p.matchers[rg.ord]; m != nil {
				s.settle(p, rg.ord, m) // the launches waiting for their offset
			}
		}
		_ = rg.r.Close()
		delete(s.regions, path)
	}
	s.closeDiscovery()
}

// ServerStats sums the injection servers' counters.
func (s *Source) ServerStats() devrtinject.Stats {
	var t devrtinject.Stats
	for _, srv := range s.servers {
		st := srv.Stats()
		t.Requests += st.Requests
		t.BadRequests += st.BadRequests
		t.Patched += st.Patched
		t.Unchanged += st.Unchanged
		t.Rejected += st.Rejected
		t.Errors += st.Errors
		t.CacheHits += st.CacheHits
		t.Patches += st.Patches
		t.PatchNanos += st.PatchNanos
		t.WriteErrors += st.WriteErrors
	}
	return t
}

// HandleInject takes one of devrt's injection records (kind 8) of process
// pid. An undecodable record is an error (the receiver counts it as a
// decode error).
func (s *Source) HandleInject(pid uint32, rec []byte) error {
	var e devrtinject.Event
	if err := devrtinject.DecodeEvent(rec, &e); err != nil {
		return err
	}
	if e.Flags&devrtinject.FlagOtherContext != 0 {
		// not a load: a patched library bound in another context (GPU)
		if e.Outcome != devrtinject.OutPatched {
			s.log.Debug("devrt could not bind a patched library in another context; its kernels run there uninstrumented",
				zap.Uint32("pid", pid), zap.String("step", e.Text), zap.Int32("cuda_result", e.CUDAResult))
		}
		return nil
	}
	if e.Flags&devrtinject.FlagGrid1D != 0 {
		// not a load: one kernel's 1-D twin refused what its twin took;
		// the kernel runs its twin for every grid, the module stays
		// patched (and counted so)
		s.log.Debug("devrt dropped a kernel's entry for 1-D grids; its launches run the general twin",
			zap.Uint32("pid", pid), zap.String("what", e.Text), zap.Int32("cuda_result", e.CUDAResult))
		return nil
	}
	if e.Reason == devrtinject.ReasonRefused && e.Flags&devrtinject.FlagVars != 0 {
		// not a load: the twin that owns the module's variables refused
		// a launch or a setting; the module stays patched (and counted
		// so): the kernel runs its plain copy there, or the launch failed
		s.log.Debug("a patched module's twin, which owns its variables, refused what the original took",
			zap.Uint32("pid", pid), zap.String("what", e.Text), zap.Int32("cuda_result", e.CUDAResult))
		return nil
	}
	s.mu.Lock()
	s.modules[e.Outcome]++
	s.mu.Unlock()
	if e.Outcome != devrtinject.OutPatched && e.Outcome != devrtinject.OutUnchanged {
		s.log.Debug("devrt did not instrument a module", zap.Uint32("pid", pid),
			zap.Stringer("outcome", e.Outcome), zap.Stringer("reason", e.Reason),
			zap.String("text", e.Text), zap.Int32("cuda_result", e.CUDAResult), zap.Uint32("sm_arch", e.SMArch))
	}
	return nil
}

// Launch takes devrt's record of a launch call of kernel (mangled) by
// process pid on the GPU of ordinal dev (-1: the record names none),
// started at start (CLOCK_MONOTONIC ns). Kernels the probes were never put
// into are ignored.
func (s *Source) Launch(pid uint32, kernel string, dev int32, start uint64) {
	id := ptx.KernelID(kernel)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, m := s.matcherOf(pid, id, dev); m != nil {
		if s.log.Core().Enabled(zap.DebugLevel) {
			s.log.Debug("launch call", zap.Uint32("pid", pid), zap.Int32("device", dev), zap.String("kernel", kernel), zap.Uint64("call_ns", start))
		}
		m.Host(id, start)
		s.settle(p, dev, m)
	}
}

// Timed takes devrt's GPU timing of a launch of kernel on GPU dev: the
// call started at callStart, the work ran from gpuStart to gpuEnd (all
// CLOCK_MONOTONIC ns).
func (s *Source) Timed(pid uint32, kernel string, dev int32, callStart, gpuStart, gpuEnd uint64) {
	id := ptx.KernelID(kernel)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, m := s.matcherOf(pid, id, dev); m != nil {
		if s.log.Core().Enabled(zap.DebugLevel) {
			s.log.Debug("launch timed", zap.Uint32("pid", pid), zap.Int32("device", dev), zap.String("kernel", kernel),
				zap.Uint64("call_ns", callStart), zap.Uint64("gpu_start_ns", gpuStart), zap.Uint64("gpu_end_ns", gpuEnd))
		}
		m.Timed(id, callStart, gpuStart, gpuEnd)
		s.settle(p, dev, m)
	}
}

func (s *Source) matcherOf(pid uint32, id uint64, dev int32) (*proc, *proberegion.LaunchMatcher) {
	if _, ok := s.set.KernelName(id); !ok {
		return nil, nil
	}
	if _, ok := s.set.Layout().Find(proberegion.MapLaunchRing); !ok {
		return nil, nil
	}
	p := s.proc(pid)
	return p, p.matcher(dev)
}

// settle reports what p's matcher m of GPU ord released outside a read of
// its regions once none of them is open: the last read flushed it, and
// devrt's timings, which come a poll behind the records, may still pair
// and release launches (a program that exits right after its last
// launches), which no read would take.
func (s *Source) settle(p *proc, ord int32, m *proberegion.LaunchMatcher) {
	dev, seen := p.devs[ord]
	if !seen || p.open[ord] > 0 {
		return
	}
	m.Flush()
	s.recordLatencies(p, ord, p.gpu(dev), m.Take())
}

func (s *Source) proc(pid uint32) *proc {
	p := s.procs[pid]
	if p == nil {
		p = &proc{pid: pid, matchers: map[int32]*proberegion.LaunchMatcher{}, gpus: map[string]*gpuStats{},
			open: map[int32]int{}, devs: map[int32]string{}}
		s.procs[pid] = p
		s.log.Debug("device probe process", zap.Uint32("pid", pid))
	}
	return p
}

// regionPID is the pid in gpuext-devmaps-<pid>-<created_ns>.maps.
func regionPID(name string) (uint32, bool) {
	rest, ok := strings.CutPrefix(name, "gpuext-devmaps-")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, ".maps")
	if !ok {
		return 0, false
	}
	p, ns, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.ParseUint(p, 10, 32)
	if err != nil || pid == 0 {
		return 0, false
	}
	if _, err := strconv.ParseUint(ns, 10, 64); err != nil {
		return 0, false
	}
	return uint32(pid), true
}

// Poll finds new region files, reads every region and retires those whose
// file devrt removed (the module was unloaded or the process ended; the
// mapping still holds the last contents, read once more).
func (s *Source) Poll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.findRegions() // discover.go: where, and for which process
	paths := make([]string, 0, len(s.regions))
	for p := range s.regions {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	type pidGPU struct {
		pid uint32
		dev string
	}
	sms := map[pidGPU][]proberegion.SMLoad{}
	for _, path := range paths {
		rg := s.regions[path]
		gone := s.regionGone(path)
		ended := !gone && !s.opts.Alive(rg.pid)
		snap, err := rg.r.Read()
		p := s.proc(rg.pid)
		// the process's last region of its GPU, read for the last time:
		// the launches waiting for a timed launch after them are reported
		// now
		last := (err != nil || gone || ended) && !s.otherRegion(path, rg)
		s.consume(p, rg, &snap, last)
		k := pidGPU{rg.pid, rg.dev}
		sms[k] = append(sms[k], rg.tr.SMs(snap.SMs).SMs...)
		if err != nil || gone || ended {
			s.log.Debug("device probe region closed", zap.Uint32("pid", rg.pid), zap.String("path", path),
				zap.Int32("device", rg.ord), zap.Bool("gone", gone), zap.Bool("ended", ended), zap.Bool("last", last), zap.Error(err))
			s.finishRuns(p, rg, rg.tr.Flush())
			_ = rg.r.Close()
			delete(s.regions, path)
			s.release(path, ended && err == nil, err != nil) // removed if the process ended without unloading the module
			p.closed(rg.ord)
			if err != nil {
				s.giveUp(path, err)
			}
		}
	}
	for k, loads := range sms {
		g := s.procs[k.pid].gpu(k.dev)
		b := proberegion.Balance(loads)
		for _, l := range b.SMs {
			// weighed by the probes under block sampling
			g.smBlocks[l.SM] = addSat(g.smBlocks[l.SM], l.Blocks)
			g.smBusy[l.SM] += float64(l.LaneNS) / 32 / 1e9
		}
		g.interval = proberegion.Balance(append(g.interval, b.SMs...)).SMs // summed per SM: bounded
	}
}

// sizeGrace is how long a region file may stay shorter than the layout
// before it is given up (devrt creates it, then sizes it).
const sizeGrace = 10 * time.Second

// giveUp drops a region with one clear log line; nothing else is affected.
func (s *Source) giveUp(path string, err error) {
	s.broken++
	if len(s.bad) >= maxBad {
		clear(s.bad)
	}
	s.bad[path] = true
	s.log.Warn("device probe region dropped", zap.String("path", path), zap.Error(err))
}

// otherRegion tells whether rg's process has a region on rg's GPU besides
// the one at path.
func (s *Source) otherRegion(path string, rg *region) bool {
	for q, o := range s.regions {
		if q != path && o.pid == rg.pid && o.ord == rg.ord {
			return true
		}
	}
	return false
}

func (s *Source) kernelName(id uint64) string {
	if n, ok := s.set.KernelName(id); ok {
		return n
	}
	return fmt.Sprintf("kernel-%016x", id)
}

// recordLatencies adds launch latencies of p's GPU ord to its stats g.
func (s *Source) recordLatencies(p *proc, ord int32, g *gpuStats, lats []proberegion.Latency) {
	debug := len(lats) > 0 && s.log.Core().Enabled(zap.DebugLevel)
	for _, l := range lats {
		name := s.kernelName(l.KernelID)
		if debug {
			s.log.Debug("launch latency", zap.Uint32("pid", p.pid), zap.Int32("device", ord),
				zap.String("kernel", name), zap.Uint64("call_ns", l.HostNS), zap.Int64("latency_ns", l.NS))
		}
		h := g.latency[name]
		if h == nil {
			h = histogram.New(s.cfg.LaunchLatency.Buckets)
			g.latency[name] = h
		}
		h.Record(s.cfg.LaunchLatency.Buckets, float64(l.NS)/1e9)
	}
}

func (s *Source) consume(p *proc, rg *region, snap *proberegion.Snapshot, last bool) {
	g := p.gpu(rg.dev)
	var lats []proberegion.Latency
	if m := p.matcher(rg.ord); m != nil { // nil: an ordinal no GPU has (a broken device record)
		if snap.Drops[proberegion.MapLaunchRing] > rg.drops[proberegion.MapLaunchRing] {
			s.log.Debug("launch ring lost records", zap.Uint32("pid", p.pid), zap.Int32("device", rg.ord),
				zap.Uint64("lost", snap.Drops[proberegion.MapLaunchRing]-rg.drops[proberegion.MapLaunchRing]))
			m.Lost() // records before these were lost: realign each kernel
		}
		if len(snap.Launches) > 0 {
			if s.log.Core().Enabled(zap.DebugLevel) {
				for _, l := range snap.Launches {
					s.log.Debug("launch record", zap.Uint32("pid", p.pid), zap.Int32("device", rg.ord),
						zap.String("kernel", s.kernelName(l.KernelID)), zap.Uint64("first_block_ns", l.StartNS))
				}
			}
			m.Device(snap.Launches)
		}
		if last {
			m.Flush()
		} else {
			m.Expire(s.opts.Monotonic())
		}
		lats = m.Take()
	}
	// after the launch records: a run can end with the read that brought
	// its launch's first block, whose pairing may be the GPU clock's
	// offset its span's times go through
	s.finishRuns(p, rg, rg.tr.Blocks(snap.Blocks, snap.BlockProgress(), s.opts.Now()))
	s.recordLatencies(p, rg.ord, g, lats)
	clk := proberegion.ReadClock{CopyStart: snap.CopyStartNS, Now: s.opts.Monotonic()}
	for _, o := range rg.tr.Occupancy(snap.Occupancy, snap.OccSlots, snap.OccResident, clk) {
		g.occ[o.SM] = o.Warps // in bucket order: the newest stays (weighed by the probes)
	}
	for m, d := range snap.Drops {
		if d > rg.drops[m] {
			g.dropped[m] = addSat(g.dropped[m], d-rg.drops[m])
		}
		rg.drops[m] = d
	}
	if snap.Bad > 0 {
		g.dropped["bad_record"] = addSat(g.dropped["bad_record"], uint64(snap.Bad))
	}
}

// finishRuns takes the launches of p in region rg whose blocks are all in.
func (s *Source) finishRuns(p *proc, rg *region, runs []proberegion.Run) {
	g := p.gpu(rg.dev)
	for i := range runs {
		run := &runs[i]
		name := s.kernelName(run.KernelID)
		h := g.delay[name]
		if h == nil {
			h = histogram.New(s.cfg.ScheduleDelay.Buckets)
			g.delay[name] = h
		}
		// each block stands for its weight (block sampling)
		var blocks uint64
		for i, d := range run.Delays() {
			w := uint64(max(run.Blocks[i].Weight, 1))
			blocks += w
			h.RecordN(s.cfg.ScheduleDelay.Buckets, float64(d)/1e9, w)
		}
		g.blocks[name] = addSat(g.blocks[name], blocks)
		if s.cfg.Spans && s.nspans < maxSpansHeld {
			s.appendSpan(p, rg, name, run)
		}
	}
}

// gpuTime converts a %globaltimer value of GPU ord to wall-clock time:
// through that GPU's calibrated offset in the process when known (see
// proberegion's launch latency), else taken as is (NVIDIA's drivers start
// %globaltimer at the host's Unix time; not guaranteed: spans then say
// gpu.clock.calibrated false).
func (s *Source) gpuTime(p *proc, ord int32, ns uint64) (pcommon.Timestamp, bool) {
	var off int64
	ok := false
	if m := p.matchers[ord]; m != nil { // none yet: not calibrated
		off, ok = m.Offset(ns)
	}
	if !ok {
		return pcommon.Timestamp(ns), false
	}
	mono := int64(ns) - off
	wall := s.opts.Now().UnixNano() - int64(s.opts.Monotonic())
	return pcommon.Timestamp(mono + wall), true
}

// spanEnd is the end of a span of run starting at st: its length is the
// GPU clock's own. (Converting the end through the offset again could
// take a sample other than the start's, which can lie a few microseconds
// apart: a 2 µs launch would end before it started.)
func spanEnd(st pcommon.Timestamp, run *proberegion.Run) pcommon.Timestamp {
	if run.LastEnd <= run.FirstStart {
		return st
	}
	return st + pcommon.Timestamp(run.LastEnd-run.FirstStart)
}

func (s *Source) appendSpan(p *proc, rg *region, name string, run *proberegion.Run) {
	rs := s.spans.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutInt("process.pid", int64(p.pid))
	if rg.dev != "" {
		rs.Resource().Attributes().PutStr(attrHWID, rg.dev)
	}
	if s.opts.HostName != "" {
		rs.Resource().Attributes().PutStr("host.name", s.opts.HostName)
	}
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(metadata.ScopeName)
	sp := ss.Spans().AppendEmpty()
	var tid [16]byte
	var sid [8]byte
	for i := range tid {
		tid[i] = byte(rand.Uint32())
	}
	for i := range sid {
		sid[i] = byte(rand.Uint32())
	}
	sp.SetTraceID(tid)
	sp.SetSpanID(sid)
	sp.SetName(name + " blocks")
	sp.SetKind(ptrace.SpanKindInternal)
	st, cal := s.gpuTime(p, rg.ord, run.FirstStart)
	sp.SetStartTimestamp(st)
	sp.SetEndTimestamp(spanEnd(st, run))
	var minD, maxD, sumD uint64
	sms := map[uint32]bool{}
	for i, b := range run.Blocks {
		d := b.EndNS - b.StartNS
		if i == 0 || d < minD {
			minD = d
		}
		maxD = max(maxD, d)
		sumD += d
		sms[b.SM] = true
	}
	a := sp.Attributes()
	a.PutStr(attrKernelName, name)
	a.PutInt("gpu.kernel.blocks", int64(len(run.Blocks)))
	a.PutInt("gpu.kernel.threads", int64(run.Threads))
	a.PutInt("gpu.kernel.sms", int64(len(sms)))
	a.PutInt("gpu.kernel.grid_id", int64(run.GridID))
	a.PutDouble("gpu.kernel.block.duration.min", float64(minD)/1e9)
	a.PutDouble("gpu.kernel.block.duration.mean", float64(sumD)/float64(len(run.Blocks))/1e9)
	a.PutDouble("gpu.kernel.block.duration.max", float64(maxD)/1e9)
	delays := run.Delays()
	a.PutDouble("gpu.kernel.block.schedule.delay.max", float64(delays[len(delays)-1])/1e9)
	a.PutBool("gpu.clock.calibrated", cal)
	if w := run.Weight(); w > 1 {
		// the blocks above are those sampled: 1 in this many ran the probes
		a.PutInt("gpu.kernel.block.sample", int64(w))
	}
	s.nspans++
}

// PendingSpans is the number of spans TakeSpans would return.
func (s *Source) PendingSpans() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nspans
}

// TakeSpans returns the spans made since the last call.
func (s *Source) TakeSpans() (ptrace.Traces, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, n := s.spans, s.nspans
	s.spans, s.nspans = ptrace.NewTraces(), 0
	return t, n
}

var outcomeAttr = map[devrtinject.Outcome]metadata.AttributeModuleStatus{
	devrtinject.OutPatched:           metadata.AttributeModuleStatusPatched,
	devrtinject.OutUnchanged:         metadata.AttributeModuleStatusUnchanged,
	devrtinject.OutRejected:          metadata.AttributeModuleStatusRejected,
	devrtinject.OutNotInstrumentable: metadata.AttributeModuleStatusNotInstrumentable,
	devrtinject.OutFailed:            metadata.AttributeModuleStatusFailed,
}

// Metrics returns the cumulative metrics of every process the probes saw
// and the source's own; processes whose regions have been gone since the
// last emission are dropped after this one.
func (s *Source) Metrics() pmetric.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := pcommon.NewTimestampFromTime(s.opts.Now())
	pids := make([]uint32, 0, len(s.procs))
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	type hist struct {
		res            pcommon.Resource
		delay, latency map[string]*histogram.Histogram
	}
	var hists []hist
	for _, pid := range pids {
		p := s.procs[pid]
		devs := sortedKeys(p.gpus)
		if len(devs) == 0 {
			devs = []string{""} // the process's own resource
		}
		for _, dev := range devs {
			var delay, latency map[string]*histogram.Histogram
			if g := p.gpus[dev]; g != nil {
				s.recordGPU(now, g)
				delay, latency = g.delay, g.latency
			}
			res := s.resource(pid, dev)
			s.mb.EmitForResource(metadata.WithResource(res))
			if len(delay)+len(latency) > 0 {
				hists = append(hists, hist{res, delay, latency})
			}
		}
		if len(p.open) == 0 && p.noRegion {
			s.log.Debug("device probe process dropped", zap.Uint32("pid", pid))
			delete(s.procs, pid)
			continue
		}
		p.noRegion = len(p.open) == 0
	}
	for _, o := range []devrtinject.Outcome{devrtinject.OutPatched, devrtinject.OutUnchanged, devrtinject.OutRejected,
		devrtinject.OutNotInstrumentable, devrtinject.OutFailed} {
		s.mb.RecordGpuDevrtModulesDataPoint(now, s.modules[o], outcomeAttr[o])
	}
	s.mb.RecordGpuDevrtProbesRegionsDataPoint(now, int64(len(s.regions)), metadata.AttributeRegionStateActive)
	s.mb.RecordGpuDevrtProbesRegionsDataPoint(now, s.broken, metadata.AttributeRegionStateBroken)
	rb := s.mb.NewResourceBuilder()
	if s.opts.HostName != "" {
		rb.SetHostName(s.opts.HostName)
	}
	s.mb.EmitForResource(metadata.WithResource(rb.Emit()))
	out := s.mb.Emit()
	for _, h := range hists {
		rm := out.ResourceMetrics().AppendEmpty()
		h.res.CopyTo(rm.Resource())
		sm := rm.ScopeMetrics().AppendEmpty()
		sm.Scope().SetName(metadata.ScopeName)
		ms := sm.Metrics()
		appendHists(ms, histScheduleDelay, "Each thread block's start minus its launch's first block start (block_sched), by kernel.",
			s.cfg.ScheduleDelay, h.delay, s.start, now)
		appendHists(ms, histLaunchLatency, "Launch call start to the launch's first block start (launch_latency, clock offset from devrt's timed launches), by kernel.",
			s.cfg.LaunchLatency, h.latency, s.start, now)
	}
	return out
}

// resource is the metrics resource of process pid on GPU dev ("": the
// process alone).
func (s *Source) resource(pid uint32, dev string) pcommon.Resource {
	rb := s.mb.NewResourceBuilder()
	rb.SetProcessPid(int64(pid))
	if s.opts.HostName != "" {
		rb.SetHostName(s.opts.HostName)
	}
	res := rb.Emit()
	if dev != "" {
		res.Attributes().PutStr(attrHWID, dev)
	}
	return res
}

// recordGPU records one process's data points of one GPU.
func (s *Source) recordGPU(now pcommon.Timestamp, g *gpuStats) {
	for _, k := range sortedKeys(g.blocks) {
		s.mb.RecordGpuKernelBlocksDataPoint(now, g.blocks[k], k)
	}
	for _, sm := range sortedKeys(g.smBlocks) {
		s.mb.RecordGpuKernelSmBlocksDataPoint(now, g.smBlocks[sm], int64(sm))
		s.mb.RecordGpuKernelSmBusyDataPoint(now, g.smBusy[sm], int64(sm))
	}
	if b := proberegion.Balance(g.interval); b.Imbalance > 0 {
		g.imbalance = b.Imbalance // over the collection interval
	}
	g.interval = g.interval[:0]
	if g.imbalance > 0 {
		s.mb.RecordGpuKernelSmImbalanceDataPoint(now, g.imbalance)
	}
	for _, sm := range sortedKeys(g.occ) {
		s.mb.RecordGpuWarpOccupancyDataPoint(now, g.occ[sm], int64(sm))
	}
	for _, m := range sortedKeys(g.dropped) {
		s.mb.RecordGpuDevrtProbesDroppedDataPoint(now, g.dropped[m], m)
	}
}

func appendHists(ms pmetric.MetricSlice, name, desc string, cfg histogram.Config, hs map[string]*histogram.Histogram, start, now pcommon.Timestamp) {
	if !cfg.Enabled || len(hs) == 0 {
		return
	}
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetDescription(desc)
	m.SetUnit("s")
	m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, k := range sortedKeys(hs) {
		hs[k].AppendTo(m.Histogram().DataPoints(), cfg.Buckets, start, now).Attributes().PutStr(attrKernelName, k)
	}
}

// addSat adds d to the cumulative sum a, saturating at math.MaxInt64: the
// region is memory any kernel of the process can write, and a counter
// read as 2^63 or more must not turn a monotonic sum negative.
func addSat(a int64, d uint64) int64 {
	if a < 0 || d > uint64(math.MaxInt64-a) {
		return math.MaxInt64
	}
	return a + int64(d)
}

func sortedKeys[K int | uint32 | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
