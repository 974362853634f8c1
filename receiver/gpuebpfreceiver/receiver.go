package gpuebpfreceiver

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procmaps"
	"github.com/otelcol-gpu/otelcol-gpu/internal/symtab"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/cudaprobe"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devrt"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/translate"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/xidprobe"
)

// newTracer loads the CUDA uprobe source; a variable so tests can make it fail.
var newTracer = cudaprobe.New

// sourceOptions are given to the NVML and UVM sources after the receiver's
// own: tests hand them fakes of NVML and of the UVM driver here.
var sourceOptions struct {
	nvml []nvml.Option
	uvm  []uvm.Option
}

// gpuReceiver owns the signal sources of one configuration and the single
// goroutine where their events become pdata.
type gpuReceiver struct {
	cfg     *Config
	set     receiver.Settings
	log     *zap.Logger
	release func()

	mu      sync.Mutex
	traces  consumer.Traces
	metrics consumer.Metrics
	logs    consumer.Logs
	started bool
	stopped bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// The periodic NVML and UVM scrapes: Shutdown waits for them before
	// the sources' last ones.
	scrapers sync.WaitGroup
	// final is the translator's last metrics (the loop sets it as it
	// ends), handed on with the sources' last ones.
	final pmetric.Metrics
	// sealed: Shutdown returned (its context ended first); nothing is
	// handed to the pipelines any more.
	sealed atomic.Bool

	tracer   *cudaprobe.Tracer
	tr       *translate.Translator
	sym      *symtab.Symbolizer
	nvml     *nvml.Source
	xid      *xidprobe.Probe
	xidDone  chan struct{} // closed when the Xid tracepoint's reader returns
	uvm      *uvm.Source
	devrt    *devrt.Source
	probes   *devprobes.Source // device probes (devrt::probes), or nil
	resolver *procattr.Resolver
	scanCh   chan uint32 // new programs (exec): scan their maps a little later
	seenCh   chan uint32 // first call of a traced process: scan its maps now
	forgets  pidQueue    // ended processes whose kernel state to drop (never lossy)

	// devrt de-duplication, event goroutine only: for each process devrt
	// reports, when (uprobe calls that started then are devrt's too); and
	// the processes already probed for a ring.
	devrtCover  map[uint32]coverage
	devrtProbed map[uint32]struct{}
	devrtDups   atomic.Uint64 // uprobe calls dropped as devrt's (tests)
	// execRecords: the uprobes' ring buffer brings exec records, and devrt
	// takes a ring in only once the ring buffer was read up to when the
	// ring was found (read, event goroutine only; see devrt's ReadUpTo).
	execRecords bool
	read        readMark
}

func newReceiver(cfg *Config, set receiver.Settings, release func()) *gpuReceiver {
	return &gpuReceiver{cfg: cfg, set: set, log: set.Logger, release: release}
}

func (r *gpuReceiver) setTraces(c consumer.Traces)   { r.mu.Lock(); r.traces = c; r.mu.Unlock() }
func (r *gpuReceiver) setMetrics(c consumer.Metrics) { r.mu.Lock(); r.metrics = c; r.mu.Unlock() }
func (r *gpuReceiver) setLogs(c consumer.Logs)       { r.mu.Lock(); r.logs = c; r.mu.Unlock() }

// Start starts the sources once, however many pipelines share the receiver.
// A source that cannot start is reported (status and one log line) and the
// receiver keeps running without it.
func (r *gpuReceiver) Start(_ context.Context, host component.Host) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return nil
	}
	r.started = true
	cfg := r.cfg
	resolver, err := procattr.NewResolver(cfg.ProcRoot)
	if err != nil {
		return err
	}
	r.resolver = resolver
	r.sym = symtab.New(cfg.ProcRoot, 256)
	r.sym.Start()
	r.scanCh = make(chan uint32, 4096)
	r.seenCh = make(chan uint32, 4096)
	r.forgets = newPIDQueue()
	hostName, _ := os.Hostname()
	r.tr = translate.New(translate.Config{
		Spans:            cfg.Spans.Enabled && r.traces != nil,
		SpanClasses:      cfg.Spans.Classes,
		CallDuration:     cfg.Histograms.CallDuration,
		GridSize:         cfg.Histograms.GridSize,
		BlockSize:        cfg.Histograms.BlockSize,
		KernelExecution:  cfg.Histograms.KernelExecution,
		KernelQueueDelay: cfg.Histograms.KernelQueueDelay,
		CopyExecution:    cfg.Histograms.CopyExecution,
		Metrics:          cfg.MetricsBuilderConfig,
		HostName:         hostName,
	}, r.set, resolver, r.sym, translate.Hooks{
		Select:   cfg.CUDA.selector(),
		Skipped:  r.skip,
		Released: r.released,
		Seen:     func(pid uint32) { trySend(r.seenCh, pid) },
		Holding:  r.devrtHolding,
		Launched: r.probesLaunched,
		Executed: r.probesExecuted,
		Cgroups:  procattr.NewCgroupIndex(hostRoot(cfg.ProcRoot)+"/sys/fs/cgroup", time.Second),
	})

	if cfg.CUDA.Enabled {
		t, err := newTracer(cudaprobe.Options{
			RingBufferSize:  cfg.CUDA.RingBufferSize,
			MaxInflight:     cfg.CUDA.MaxInflight,
			LaunchEntryOnly: !cfg.CUDA.LaunchReturnProbes,
			Logger:          r.log,
		})
		if err != nil {
			r.log.Error("CUDA uprobe source unavailable; other sources keep running", zap.Error(err))
			componentstatus.ReportStatus(host, componentstatus.NewRecoverableErrorEvent(err))
		} else {
			r.tracer = t
			r.execRecords = true
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	if cfg.NVML.Enabled {
		r.startNVML(ctx, host, hostName)
	}
	if cfg.UVM.Enabled {
		r.startUVM(ctx, host, hostName)
	}
	if cfg.DevRT.Enabled {
		r.startDevrt(ctx)
		if cfg.DevRT.Probes.Enabled {
			r.startProbes(host, hostName)
		}
	}
	if r.tracer != nil {
		r.attachInitial()
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.discover(ctx) }()
		// Shutdown wakes the loop without closing the ring: the records
		// in it are read first (see loop).
		stop := context.AfterFunc(ctx, func() { _ = r.tracer.FlushReader() })
		r.wg.Add(1)
		go func() { defer r.wg.Done(); defer stop(); r.loop(ctx) }()
	} else {
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.loop(ctx) }()
	}
	return nil
}

// Shutdown stops the sources at the first call, from whichever pipeline,
// after handing what was gathered to every pipeline. Waiting for the last
// pipeline would be too late: the collector may already have shut down the
// other pipeline's exporters by then (shutdown follows a topological order
// of the pipeline graph, not receivers first), and they must not be fed.
// If ctx ends before that is done, Shutdown returns its error and nothing
// more is handed on (see finish).
func (r *gpuReceiver) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	cancel := r.cancel
	r.mu.Unlock()
	if r.release != nil {
		r.release()
	}
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() { defer close(done); r.finish(ctx) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		// Out of time: what is still on its way stays there, and the
		// probes are detached all the same, so the traced programs stop
		// paying for them.
		r.sealed.Store(true)
		err = ctx.Err()
	}
	r.sym.Close()
	if r.tracer != nil {
		err = errors.Join(err, r.tracer.Close())
	}
	return err
}

// finish is Shutdown's hand-over, once the loop and the periodic scrapes
// have been told to stop (ctx of Start cancelled). The loop reads the BPF
// ring to its end and drains devrt's rings while the NVML and UVM sources
// take their last readings: the Xid tracepoint's ring is read to its end
// (through the NVML source, still open); NVML is scraped once more and
// released; the UVM trackers are flushed and read one last time (the
// fentry ring to its end), and the UVM source scraped once more. Each
// closes its log channel after its last records, which the forwarders
// hand on. Then one final metrics emission: the translator's last metrics
// with both sources' last scrapes. ctx bounds the sources (each returns
// nothing once it ends); Shutdown stops waiting for finish then.
func (r *gpuReceiver) finish(ctx context.Context) {
	// A periodic scrape under way completes and is handed on first: the
	// final emission must be the last of each source.
	r.scrapers.Wait()
	var (
		sources         sync.WaitGroup
		nvmlMD, uvmMD   pmetric.Metrics
		nvmlErr, uvmErr error
	)
	if r.nvml != nil {
		sources.Add(1)
		go func() {
			defer sources.Done()
			if r.xid != nil {
				if err := r.xid.Drain(); err != nil {
					r.log.Debug("Xid tracepoint ring cannot be read to its end", zap.Error(err))
					_ = r.xid.Close()
				}
				select {
				case <-r.xidDone:
				case <-ctx.Done():
				}
			}
			nvmlMD, nvmlErr = r.nvml.Finish(ctx)
		}()
	}
	if r.uvm != nil {
		sources.Add(1)
		go func() {
			defer sources.Done()
			uvmMD, uvmErr = r.uvm.Finish(ctx)
		}()
	}
	sources.Wait()
	if r.xid != nil {
		_ = r.xid.Close()
	}
	if err := errors.Join(nvmlErr, uvmErr); err != nil {
		r.log.Debug("sources' last readings incomplete", zap.Error(err))
	}
	// The loop's last hand-over of spans, and the log forwarders: their
	// channels are closed.
	r.wg.Wait()
	md := r.final
	if md == (pmetric.Metrics{}) {
		md = pmetric.NewMetrics()
	}
	for _, last := range []pmetric.Metrics{nvmlMD, uvmMD} {
		if last != (pmetric.Metrics{}) {
			last.ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
		}
	}
	r.consumeMetrics(ctx, md)
}

// loop is the only goroutine that touches the translator: it reads the ring,
// hands over spans every flush_interval (or max_batch spans) and metrics
// every collection_interval.
func (r *gpuReceiver) loop(ctx context.Context) {
	now := time.Now()
	nextFlush := now.Add(r.cfg.Spans.FlushInterval)
	nextMetrics := now.Add(r.cfg.CollectionInterval)
	// devrt's rings are drained here, on the one goroutine that touches
	// the translator; without devrt the deadline never comes first.
	nextDrain := now.Add(r.cfg.DevRT.PollInterval)
	if r.devrt == nil {
		nextDrain = now.Add(100 * 365 * 24 * time.Hour)
	}
	// What the loop hands to the consumers while it reads the ring's last
	// records after Shutdown must not be refused for the cancelled ctx.
	out := context.WithoutCancel(ctx)
	var (
		rec ringbuf.Record
		e   ev.Event
		n   uint
		// At Shutdown the records still in the ring are read before the
		// final hand-over: a loop that fell behind (a starved CPU) must
		// not lose calls the programs made. ReadInto says ErrFlushed once
		// the ring is empty; programs that call faster than the loop
		// reads keep it from emptying, so then only the bytes it held
		// when the loop saw Shutdown are read (left; -1 before).
		left = -1
	)
	tick := func(now time.Time) {
		if !now.Before(nextDrain) {
			if r.tracer != nil {
				r.read.mark(translate.Monotonic(), r.tracer.Backlog())
			}
			r.devrt.Poll()
			if r.probes != nil {
				r.probes.Poll() // after the rings: launch calls before the blocks they started
			}
			nextDrain = now.Add(r.cfg.DevRT.PollInterval)
			if r.tr.PendingSpans() >= r.cfg.Spans.MaxBatch {
				r.flushSpans(out)
			}
		}
		if !now.Before(nextFlush) {
			r.flushSpans(out)
			nextFlush = now.Add(r.cfg.Spans.FlushInterval)
		}
		if !now.Before(nextMetrics) {
			r.consumeMetrics(out, r.collectMetrics())
			nextMetrics = now.Add(r.cfg.CollectionInterval)
		}
	}
	defer func() {
		// Final hand-over on shutdown, so nothing decoded is lost:
		// devrt's rings drained a last time first. The metrics go out
		// with the NVML and UVM sources' last ones (finish).
		if r.devrt != nil {
			r.devrt.Shutdown()
			r.tr.FlushGPUExec()
		}
		if r.probes != nil {
			r.probes.Poll()
			r.probes.Shutdown()
		}
		r.flushSpans(context.Background())
		r.final = r.collectMetrics()
	}()
	for {
		deadline := nextFlush
		if nextMetrics.Before(deadline) {
			deadline = nextMetrics
		}
		if nextDrain.Before(deadline) {
			deadline = nextDrain
		}
		if r.tracer == nil {
			select {
			case <-ctx.Done():
				return
			case now := <-time.After(time.Until(deadline)):
				tick(now)
			}
			continue
		}
		err := r.tracer.ReadInto(&rec, deadline)
		switch {
		case err == nil:
			r.handle(rec.RawSample, &e)
			r.read.took(cudaprobe.RecordSize(&rec))
			n++
			if left >= 0 {
				if left -= cudaprobe.RecordSize(&rec); left <= 0 {
					return
				}
			}
			if n%1024 == 0 || r.tr.PendingSpans() >= r.cfg.Spans.MaxBatch {
				if left < 0 && ctx.Err() != nil {
					left = r.tracer.Backlog()
				}
				if r.tr.PendingSpans() >= r.cfg.Spans.MaxBatch {
					r.flushSpans(out)
				}
				tick(time.Now())
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			r.read.emptied()
			tick(time.Now())
		case errors.Is(err, ringbuf.ErrFlushed):
			return // Shutdown's: the ring has been read to its end
		case errors.Is(err, ringbuf.ErrClosed) || errors.Is(err, os.ErrClosed):
			return
		default:
			r.log.Warn("ring buffer read failed", zap.Error(err))
			tick(time.Now())
		}
	}
}

func (r *gpuReceiver) handle(raw []byte, e *ev.Event) {
	if err := ev.Decode(raw, e); err != nil {
		r.tr.DecodeError()
		r.log.Debug("malformed record", zap.Error(err), zap.Int("bytes", len(raw)))
		return
	}
	switch e.Kind {
	case ev.KindExec:
		trySend(r.scanCh, e.PID)
		if r.devrt != nil {
			// The old program's last devrt records go out under its
			// identity, before the translator retires it.
			r.devrt.Exec(e.PID, e.Start)
			delete(r.devrtProbed, e.PID)
			// A coverage that outlived its rings (the process ended
			// under devrt) ends here too: this may be a new process
			// that got the pid.
			if c, ok := r.devrtCover[e.PID]; ok && c.since < e.Start && c.until > e.Start {
				c.until = e.Start
				r.devrtCover[e.PID] = c
			}
		}
	case ev.KindCall, ev.KindCallNamed:
		if r.devrt != nil && r.devrtCovers(e) {
			r.devrtDups.Add(1)
			return
		}
	}
	r.tr.Handle(e)
}

func (r *gpuReceiver) flushSpans(ctx context.Context) {
	if r.tr.PendingSpans() == 0 && r.tr.WaitingGPUExec() == 0 && (r.probes == nil || r.probes.PendingSpans() == 0) {
		return
	}
	td, n := r.tr.TakeSpans()
	if r.probes != nil {
		pt, pn := r.probes.TakeSpans()
		pt.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
		n += pn
	}
	if r.traces == nil || n == 0 || r.sealed.Load() {
		return
	}
	if err := r.traces.ConsumeTraces(ctx, td); err != nil {
		r.log.Debug("traces refused downstream", zap.Error(err))
	}
}

// collectMetrics returns the translator's metrics (and the device
// probes').
func (r *gpuReceiver) collectMetrics() pmetric.Metrics {
	var st translate.SelfStats
	if r.tracer != nil {
		var err error
		st.RingFull, st.InflightFull, st.Unmatched, err = r.tracer.Drops()
		if err != nil {
			r.log.Debug("reading drop counters failed", zap.Error(err))
		}
		st.Probes = r.tracer.Probes()
	}
	if r.devrt != nil {
		d := r.devrt.Stats()
		st.Devrt = translate.DevrtStats{Enabled: true,
			Full: d.Full, Disabled: d.Disabled, Timing: d.Timing, Corrupt: d.Corrupt,
			Active: d.Active, DisabledRings: d.DisabledRings, Closed: d.Closed,
			Invalid: d.Invalid, Abandoned: d.Abandoned, Stale: d.Stale}
	}
	md := r.tr.Metrics(st)
	if r.devrt != nil {
		r.pruneDevrtCover(translate.Monotonic())
	}
	if r.probes != nil {
		r.probes.Metrics().ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	}
	return md
}

// consumeMetrics hands md to the metrics pipeline, if there is one and
// Shutdown has not returned.
func (r *gpuReceiver) consumeMetrics(ctx context.Context, md pmetric.Metrics) {
	if r.metrics == nil || md.ResourceMetrics().Len() == 0 || r.sealed.Load() {
		return
	}
	if err := r.metrics.ConsumeMetrics(ctx, md); err != nil {
		r.log.Debug("metrics refused downstream", zap.Error(err))
	}
}

// startNVML starts device telemetry: NVML scrapes on collection_interval on
// a goroutine of their own (an NVML scrape can take tens of milliseconds per
// GPU and must not hold up the ring), NVML events and the driver's Xid
// tracepoint as log records. Either failing is reported and the rest runs.
func (r *gpuReceiver) startNVML(ctx context.Context, host component.Host, hostName string) {
	src := nvml.New(r.cfg.NVML, r.set, procattr.ResolverAttributor(r.resolver),
		append([]nvml.Option{nvml.WithHostName(hostName)}, sourceOptions.nvml...)...)
	if err := src.Start(ctx); err != nil {
		r.log.Warn("NVML source unavailable; other sources keep running", zap.Error(err))
		componentstatus.ReportStatus(host, componentstatus.NewRecoverableErrorEvent(err))
	} else {
		r.scrapeEvery(ctx, "NVML", src.Scrape)
	}
	r.nvml = src
	// Log records (Xids, NVML events) until the source shuts down, also when
	// NVML itself is missing: the tracepoint still reports Xids.
	r.forwardLogs(src.Logs())
	if !r.cfg.NVML.Events {
		return
	}
	probe, err := xidprobe.New()
	if err != nil {
		r.log.Info("Xid tracepoint unavailable; Xids come from NVML events only", zap.Error(err))
		return
	}
	r.xid = probe
	r.xidDone = make(chan struct{})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(r.xidDone)
		// No pid: the task current at the tracepoint is whoever the driver
		// ran in (on the H200 it was this collector's NVML event thread),
		// not the program that faulted. The source names the GPU's
		// processes instead.
		err := probe.Run(func(x ev.XID) { src.RecordXID(x.BusID, uint64(x.Code), 0, x.Msg) })
		if err != nil {
			r.log.Warn("Xid tracepoint reader stopped", zap.Error(err))
		}
	}()
}

// startUVM starts unified-memory telemetry: the backend is chosen now
// (uvm::backend; a forced one that cannot run is reported, the source
// stays idle and the others keep running), a tracker is attached to each
// CUDA process at its first traced call (Track, from discover), scraped on
// collection_interval on a goroutine of its own; fault samples, when
// enabled, go to the logs pipeline.
func (r *gpuReceiver) startUVM(ctx context.Context, host component.Host, hostName string) {
	src := uvm.New(r.cfg.UVM, r.set, procattr.ResolverAttributor(r.resolver),
		append([]uvm.Option{uvm.WithProcRoot(r.cfg.ProcRoot), uvm.WithHostName(hostName)}, sourceOptions.uvm...)...)
	if err := src.Start(ctx); err != nil {
		r.log.Error("UVM source unavailable; other sources keep running", zap.Error(err))
		componentstatus.ReportStatus(host, componentstatus.NewRecoverableErrorEvent(err))
	}
	r.uvm = src
	r.scrapeEvery(ctx, "UVM", src.Scrape)
	r.forwardLogs(src.Logs())
}

// scrapeEvery runs a source's scrape every collection_interval on a
// goroutine of its own (off the ring reader) and hands the metrics on.
// The source's last scrape is Shutdown's (finish). A scrape under way when
// Shutdown comes is completed and handed on, not cut short: a partial
// scrape would lose what it no longer reports (the UVM source forgets the
// processes it reported one last time).
func (r *gpuReceiver) scrapeEvery(ctx context.Context, source string, scrape func(context.Context) (pmetric.Metrics, error)) {
	r.scrapers.Add(1)
	go func() {
		defer r.scrapers.Done()
		out := context.WithoutCancel(ctx)
		t := time.NewTicker(r.cfg.CollectionInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				md, err := scrape(out)
				if err != nil {
					r.log.Debug("scrape failed", zap.String("source", source), zap.Error(err))
				}
				r.consumeMetrics(out, md)
			}
		}
	}()
}

// forwardLogs hands a source's log records on until it closes the channel.
func (r *gpuReceiver) forwardLogs(ch <-chan plog.Logs) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for ld := range ch {
			if r.logs == nil || r.sealed.Load() {
				continue // drained all the same, so the source never blocks
			}
			if err := r.logs.ConsumeLogs(context.Background(), ld); err != nil {
				r.log.Debug("logs refused downstream", zap.Error(err))
			}
		}
	}()
}

// released drops the kernel state of a process the translator let go of:
// at exit its filter entry and unfinished calls (walking the in-flight map,
// so off the reading goroutine); at execve only its filter entry, so the
// new program is judged afresh and its first calls are not swept away.
func (r *gpuReceiver) released(pid uint32, exited bool) {
	if r.devrt != nil {
		r.devrt.Unsilence(pid)
		delete(r.devrtProbed, pid)
		if exited {
			r.devrtEnded(pid, translate.Monotonic())
		}
	}
	if r.tracer == nil {
		return
	}
	if r.uvm != nil {
		r.uvm.Untrack(int(pid))
	}
	if exited {
		r.forgets.push(pid)
		return
	}
	if c, ok := r.devrtCover[pid]; ok && c.until == devrt.Forever {
		// The new program's ring (its events may have been read before
		// this exec's) covers it: the kernel goes on skipping it. Clearing
		// the filter now would also leave a call that entered skipped to
		// return traced, without an entry.
		return
	}
	r.tracer.ClearFilter(pid)
}

// skip stops the kernel, and devrt, from reporting a process the rules
// exclude.
func (r *gpuReceiver) skip(pid uint32) {
	if r.devrt != nil {
		r.devrt.Silence(pid)
	}
	if r.tracer != nil {
		if err := r.tracer.SetTraced(pid, false); err != nil {
			r.log.Debug("pid filter update failed", zap.Uint32("pid", pid), zap.Error(err))
		}
	}
}

// attachInitial probes the host's driver and the configured libraries, then
// every CUDA library already mapped by a running process.
func (r *gpuReceiver) attachInitial() {
	libs := append(findDrivers(hostRoot(r.cfg.ProcRoot)), r.cfg.CUDA.Libraries...)
	for _, path := range libs {
		r.attach(path, 0)
	}
	if len(libs) == 0 {
		r.log.Info("no CUDA driver library on the host; attaching to processes as they map one")
	}
	pids, err := procmaps.ListPIDs(r.cfg.ProcRoot)
	if err != nil {
		r.log.Warn("cannot list processes", zap.Error(err))
		return
	}
	match := procmaps.LibraryMatcher(r.cfg.CUDA.LibraryGlobs...)
	for _, pid := range pids {
		r.scan(pid, match)
	}
}

func (r *gpuReceiver) attach(path string, pid int) {
	key, err := cudaprobe.StatKey(path)
	if err != nil || r.tracer.Attached(key) {
		return
	}
	lib, err := r.tracer.AttachLibrary(path)
	switch {
	case err != nil:
		r.log.Warn("cannot probe library", zap.String("path", path), zap.Int("pid", pid), zap.Error(err))
	case lib != nil:
		r.log.Info("probed CUDA library", zap.String("path", path), zap.Int("pid", pid),
			zap.Int("functions", lib.Probes), zap.Int("aliases", lib.Aliases))
	}
}

func (r *gpuReceiver) scan(pid int, match func(string) bool) {
	libs, err := procmaps.Scan(r.cfg.ProcRoot, pid, match)
	if err != nil {
		return // gone, or not ours to read
	}
	for _, l := range libs {
		r.attach(l.MapFilesPath, pid)
	}
}

// discover finds libraries mapped later: new programs shortly after exec
// (once the dynamic loader has run, and again for dlopen at start-up), CUDA
// processes at their first driver call (their runtime is loaded by then),
// and the periodic backstop rescan. It also drops kernel state of exited
// processes, which means walking a map and so stays off the reading path.
func (r *gpuReceiver) discover(ctx context.Context) {
	match := procmaps.LibraryMatcher(r.cfg.CUDA.LibraryGlobs...)
	var rescan <-chan time.Time
	if r.cfg.CUDA.RescanInterval > 0 {
		t := time.NewTicker(r.cfg.CUDA.RescanInterval)
		defer t.Stop()
		rescan = t.C
	}
	delayed := make(chan uint32, 4096)
	for {
		select {
		case <-ctx.Done():
			return
		case pid := <-r.scanCh:
			for _, d := range []time.Duration{250 * time.Millisecond, 2 * time.Second} {
				time.AfterFunc(d, func() { trySend(delayed, pid) })
			}
		case pid := <-r.seenCh:
			// A traced process's first call: its CUDA runtime is loaded,
			// probe it; and attach a UVM tracker (which opens files and
			// pins memory, so not on the ring reader). Track retries by
			// itself while the process has no /dev/nvidia-uvm yet; other
			// failures (no driver, no permission) are logged once.
			r.scan(int(pid), match)
			if r.uvm != nil {
				_ = r.uvm.Track(int(pid))
			}
		case pid := <-delayed:
			r.scan(int(pid), match)
		case <-r.forgets.ready:
			r.tracer.ForgetProcesses(r.forgets.drain())
		case <-rescan:
			pids, err := procmaps.ListPIDs(r.cfg.ProcRoot)
			if err != nil {
				continue
			}
			for _, pid := range pids {
				r.scan(pid, match)
			}
		}
	}
}

// pidQueue is an unbounded queue of pids with a wake-up signal: cleanup
// requests must not be dropped when the discovery goroutine is busy (a
// stale "skip" filter entry would hide a later process with the same pid).
type pidQueue struct {
	mu    sync.Mutex
	pids  []uint32
	ready chan struct{}
}

func newPIDQueue() pidQueue { return pidQueue{ready: make(chan struct{}, 1)} }

func (q *pidQueue) push(pid uint32) {
	q.mu.Lock()
	q.pids = append(q.pids, pid)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *pidQueue) drain() []uint32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pids
	q.pids = nil
	return out
}

// readMark tracks how far the uprobes' ring buffer has been read, as a
// time: every record committed before upTo has been handled. A mark is
// the time and the ring's backlog then; it is passed once that many bytes
// were read, or the ring was seen empty. Only records handed back count:
// the programs writing that ring never discard a reservation
// (bpf/cuda.bpf.c), which would keep a mark from passing until the ring
// empties (devrt's readWaitMax bounds the wait all the same).
type readMark struct {
	upTo uint64
	at   uint64
	left int // bytes of the outstanding mark still unread; 0: none
}

func (m *readMark) mark(now uint64, backlog int) {
	switch {
	case m.left > 0: // the last one first: under a flood a new one would never be passed
	case backlog <= 0:
		m.upTo = now
	default:
		m.at, m.left = now, backlog
	}
}

func (m *readMark) took(n int) {
	if m.left > 0 {
		if m.left -= n; m.left <= 0 {
			m.upTo, m.left = m.at, 0
		}
	}
}

func (m *readMark) emptied() { m.took(m.left) }

func trySend(ch chan uint32, v uint32) {
	select {
	case ch <- v:
	default:
	}
}
