package uvm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// Source turns the UVM events of tracked processes into metrics, fault
// patterns and (optionally) fault samples. Track, Untrack, Consume,
// Scrape, Pattern, Finish and Shutdown may be called concurrently.
type Source struct {
	cfg       Config
	set       receiver.Settings
	log       *zap.Logger
	attr      Attributor
	opts      options
	opener    Opener
	hostName  string
	rawOffset int64
	mask      uvmtools.EventMask
	logs      chan plog.Logs
	hub       *faultstream.Hub // nil: fault_stream off
	unregHub  func()

	mu sync.Mutex
	// closing: Finish (or Shutdown) began; no new tracking, but the
	// trackers' last reads and the fentry ring's last records still
	// count. stopped: nothing counts any more, Scrape returns nothing.
	closing    bool
	stopped    bool
	logsClosed bool
	procs      map[int]*process
	tracks     map[int]*track
	mb         *metadata.MetricsBuilder
	rb         *metadata.ResourceBuilder
	start      pcommon.Timestamp
	overLimit  uint64 // events of processes beyond max_processes
	pending    pendingLogs
	warned     map[error]bool
	wg         sync.WaitGroup
	be         backendState // the backend Start chose (its fields under mu)
}

// track is the tracking of one pid: a tracker being opened, retried or
// read.
type track struct {
	pid     int
	stop    chan struct{}
	stopped bool // stop closed (under Source.mu)
	// The tracker's totals already added to the process's (under
	// Source.mu): a process tracked again (after execve) gets a tracker
	// counting from zero.
	dropped, decodeErrors uint64
}

// New returns a Source. attr describes the tracked processes (nil: pid
// only). It opens nothing until Track.
func New(cfg Config, set receiver.Settings, attr Attributor, opts ...Option) *Source {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	cfg = cfg.withDefaults()
	log := set.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if attr == nil {
		attr = pidOnly
	}
	host := o.hostName
	if host == "" {
		host, _ = os.Hostname()
	}
	s := &Source{
		cfg:      cfg,
		set:      set,
		log:      log,
		attr:     attr,
		opts:     o,
		opener:   o.opener,
		hostName: host,
		mask:     cfg.eventMask(),
		logs:     make(chan plog.Logs, o.logBuffer),
		procs:    map[int]*process{},
		tracks:   map[int]*track{},
		rb:       metadata.NewResourceBuilder(cfg.ResourceAttributes),
		warned:   map[error]bool{},
	}
	if s.opener == nil {
		s.opener = defaultOpener(o.procRoot)
	}
	if o.rawOffset != nil {
		s.rawOffset = *o.rawOffset
	} else {
		s.rawOffset = rawClockOffset(o.now)
	}
	s.start = pcommon.NewTimestampFromTime(o.now())
	s.mb = metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set, metadata.WithStartTime(s.start))
	s.hub, s.unregHub = newHub(cfg, set.ID.String())
	return s
}

// Logs delivers fault samples (when fault_samples is enabled) as batches
// of log records; a batch that finds the channel full is dropped and
// counted (gpu.uvm.fault.samples.dropped{reason=buffer_full}). Shutdown
// closes it.
func (s *Source) Logs() <-chan plog.Logs { return s.logs }

// Consume accounts one event of process pid, whose processor indices
// table resolves. It is the one place where events are accounted: the
// trackers' reader goroutines call it (through consumeBatch), and so may
// tests and other feeders.
func (s *Source) Consume(pid int, table uvmtools.ProcessorTable, ev uvmtools.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || !s.cfg.Enabled {
		return
	}
	if p := s.process(pid); p != nil {
		s.account(p, &table, &ev)
	}
}

// process returns pid's accounting, creating it if the bound allows; nil
// (and the event counted as dropped) if not. The caller holds s.mu.
func (s *Source) process(pid int) *process {
	p := s.procs[pid]
	if p != nil {
		return p
	}
	if len(s.procs) >= s.cfg.MaxProcesses {
		s.overLimit++
		return nil
	}
	p = &process{pid: pid, info: Process{PID: uint32(pid)}}
	s.initStream(&p.host)
	s.procs[pid] = p
	return p
}

// consumeBatch accounts what a tracker's read returned, unless the track
// was stopped meanwhile. It reports whether an event named a GPU index
// the table does not know.
func (s *Source) consumeBatch(tr *track, table *uvmtools.ProcessorTable, evs []uvmtools.Event, st uvmtools.Stats) (unknownGPU bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A stopped track still counts its final read (see read), also when
	// Finish stopped it; only a source past Finish discards.
	if s.stopped {
		return false
	}
	p := s.process(tr.pid)
	if p == nil {
		return false
	}
	for i := range evs {
		if !s.account(p, table, &evs[i]) {
			unknownGPU = true
		}
	}
	if st.Dropped > tr.dropped {
		p.driverDropped += st.Dropped - tr.dropped
		tr.dropped = st.Dropped
	}
	if st.DecodeErrors > tr.decodeErrors {
		p.decodeErrors += st.DecodeErrors - tr.decodeErrors
		tr.decodeErrors = st.DecodeErrors
	}
	s.flushLogsLocked()
	return unknownGPU
}

// Track starts tracking process pid (the receiver calls it when the CUDA
// source first sees a process). It returns nil if pid is tracked already
// or being retried, and otherwise the error of uvmtools.Open (errors.Is
// with ErrNoDevice, ErrNoProcess, ErrPermission, ErrUnsupported), or
// ErrProcessLimit. On ErrNotCUDA (the process has no UVM VA space yet)
// it returns the error but keeps retrying on its own, a bounded number of
// times with exponential backoff (WithRetry).
func (s *Source) Track(pid int) error {
	if !s.cfg.Enabled {
		return nil
	}
	if err := s.Start(context.Background()); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closing || s.stopped {
		s.mu.Unlock()
		return ErrStopped
	}
	if _, ok := s.tracks[pid]; ok {
		s.mu.Unlock()
		return nil
	}
	if len(s.tracks) >= s.cfg.MaxProcesses {
		s.mu.Unlock()
		return fmt.Errorf("%w (%d): not tracking pid %d", ErrProcessLimit, s.cfg.MaxProcesses, pid)
	}
	tr := &track{pid: pid, stop: make(chan struct{})}
	s.tracks[pid] = tr
	if p := s.procs[pid]; p != nil {
		// Tracked again (the receiver untracks a process at execve and
		// tracks the new program): its accounting goes on, not forgotten
		// by the next Scrape as the old tracking's end marked it; the new
		// program is attributed afresh.
		p.gone, p.resolved = false, false
	}
	fentry := s.be.kind == BackendFentry
	s.mu.Unlock()
	if fentry {
		s.trackFentry(pid)
		return nil
	}

	err := s.attach(tr)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, uvmtools.ErrNotCUDA) && s.opts.retries > 0:
		s.mu.Lock()
		if !tr.stopped {
			s.wg.Add(1)
			go s.retry(tr)
		}
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	s.endTrack(tr)
	s.warnOnce(err, pid)
	s.mu.Unlock()
	return err
}

// warnOnce logs the first error of each kind. The caller holds s.mu.
func (s *Source) warnOnce(err error, pid int) {
	for _, kind := range []error{uvmtools.ErrNoDevice, uvmtools.ErrPermission, uvmtools.ErrUnsupported, ErrProcessLimit} {
		if errors.Is(err, kind) {
			if !s.warned[kind] {
				s.warned[kind] = true
				s.log.Warn("cannot trace UVM events (reported once)", zap.Int("pid", pid), zap.Error(err))
			}
			return
		}
	}
	s.log.Debug("cannot trace UVM events of process", zap.Int("pid", pid), zap.Error(err))
}

// endTrack ends tr: its process is gone (reported by the next Scrape, then
// forgotten) unless a newer Track of the pid runs. The caller holds s.mu.
func (s *Source) endTrack(tr *track) {
	s.dropTrack(tr)
	if s.tracks[tr.pid] != nil {
		return
	}
	if p := s.procs[tr.pid]; p != nil {
		p.gone = true
	}
}

// dropTrack forgets tr if it is still pid's track. The caller holds s.mu.
func (s *Source) dropTrack(tr *track) {
	if s.tracks[tr.pid] == tr {
		delete(s.tracks, tr.pid)
	}
	if !tr.stopped {
		tr.stopped = true
		close(tr.stop)
	}
}

// attach opens a tracker for tr and starts its reader.
func (s *Source) attach(tr *track) error {
	t, err := s.opener(tr.pid, uvmtools.Options{Events: s.mask, QueueEntries: s.cfg.QueueEntries})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.stopped || tr.stopped {
		_ = t.Close()
		return ErrStopped
	}
	s.wg.Add(1)
	go s.read(tr, t)
	return nil
}

// retry reopens a process that was not a CUDA process yet.
func (s *Source) retry(tr *track) {
	defer s.wg.Done()
	delay := s.opts.retryDelay
	var err error
	for i := 0; i < s.opts.retries; i++ {
		timer := time.NewTimer(delay)
		select {
		case <-tr.stop:
			timer.Stop()
			s.mu.Lock()
			s.endTrack(tr)
			s.mu.Unlock()
			return
		case <-timer.C:
		}
		if err = s.attach(tr); err == nil || !errors.Is(err, uvmtools.ErrNotCUDA) {
			break
		}
		delay = min(2*delay, s.opts.retryMax)
	}
	if err == nil {
		return
	}
	s.mu.Lock()
	s.endTrack(tr)
	if !errors.Is(err, ErrStopped) {
		s.warnOnce(err, tr.pid)
	}
	s.mu.Unlock()
}

// read drains a tracker every poll interval (or when its queue is half
// full) until the track stops or the process exits, and once more then.
func (s *Source) read(tr *track, t Tracker) {
	defer s.wg.Done()
	defer t.Close()
	s.resolve(tr.pid)
	table, _ := t.Processors()
	lastTable := time.Now()
	var buf []uvmtools.Event
	collect := func(e uvmtools.Event) { buf = append(buf, e) }
	for {
		// Stopped (Untrack, Shutdown) or not, what the driver has queued is
		// read once more: a process that ends right after its last burst
		// is untracked by then, and its final events must still count.
		stopped := false
		select {
		case <-tr.stop:
			stopped = true
		default:
			if _, err := t.Wait(s.cfg.PollInterval); err != nil {
				// Wait failed at once (poll(2) sees POLLERR on every
				// tracker once nvidia-uvm is in a fatal state, and that
				// lasts): wait the interval here, not in a busy loop.
				timer := time.NewTimer(s.cfg.PollInterval)
				select {
				case <-tr.stop:
					stopped = true
				case <-timer.C:
				}
				timer.Stop()
			}
		}
		exited := stopped || t.Exited()
		_ = t.Flush() // deliver migrations and replays held until their GPU work completed
		buf = buf[:0]
		_, _, err := t.Read(collect)
		if s.consumeBatch(tr, &table, buf, t.Stats()) && time.Since(lastTable) > time.Second {
			// A GPU registered since the table was read: read it again
			// (at most once a second); its events so far stay on the
			// process's GPU-less resource.
			if nt, terr := t.Processors(); terr == nil {
				table = nt
			}
			lastTable = time.Now()
		}
		if exited || errors.Is(err, uvmtools.ErrClosed) {
			s.mu.Lock()
			s.endTrack(tr)
			s.mu.Unlock()
			return
		}
	}
}

// Untrack stops tracking pid. What was accounted is reported by the next
// Scrape, then forgotten.
func (s *Source) Untrack(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tr := s.tracks[pid]; tr != nil {
		// The reader reads what is queued once more and then marks the
		// process gone: marking it here would let a Scrape forget it
		// before its last events are counted.
		s.dropTrack(tr)
		if s.be.kind == BackendFentry {
			s.untrackFentry(pid)
		}
		return
	}
	if p := s.procs[pid]; p != nil {
		p.gone = true
	}
}

// resolve attributes pid (outside s.mu) unless it was already.
func (s *Source) resolve(pid int) {
	s.mu.Lock()
	p := s.procs[pid]
	done := p != nil && p.resolved
	s.mu.Unlock()
	if done {
		return
	}
	info := s.attr.Attribute(uint32(pid))
	info.PID = uint32(pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p = s.process(pid); p != nil {
		p.info, p.resolved = info, true
	}
}

// Pattern returns the latest classification of pid's recent GPU faults,
// on the GPU where it faulted last; false if there is none (unknown pid,
// no GPU fault yet, classification off).
func (s *Source) Pattern(pid int) (faultpattern.Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[pid]
	if p == nil || p.patterned == nil {
		return faultpattern.Result{}, false
	}
	return p.patterned.classify(), true
}

// Finish ends the source and returns its last metrics. Tracking stops
// (Track returns ErrStopped); each tracker's reader comes back from its
// wait (up to poll_interval), flushes the driver's held-back events, reads
// the tracker one last time and closes it; the fentry backend's programs
// are detached and its ring is read to its end before it is closed (the
// processes tracked when Finish began still own their records); retries
// end. Then the fault samples those reads took are handed to Logs (or
// counted as dropped if it is full: Finish never waits for a reader of
// Logs), and the metrics are one last Scrape, which counts all of that
// and reports every process one last time. Logs is closed.
//
// If ctx ends first, Finish returns its error and no metrics; the readers
// finish in the background, what they read then is not counted, and Logs
// closes once they are done. Only the first Finish or Shutdown does
// anything; afterwards Finish and Scrape return no metrics.
func (s *Source) Finish(ctx context.Context) (pmetric.Metrics, error) {
	return s.finish(ctx, true)
}

// Shutdown is Finish without the last metrics: it stops every tracker and
// retry, waits for their last reads (or ctx), and closes Logs.
func (s *Source) Shutdown(ctx context.Context) error {
	_, err := s.finish(ctx, false)
	return err
}

func (s *Source) finish(ctx context.Context, scrape bool) (pmetric.Metrics, error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return pmetric.NewMetrics(), nil
	}
	s.closing = true
	s.unregHub()
	probe := s.be.probe
	if probe == nil {
		// Tools backend: each reader reads its tracker once more when
		// its track stops. The fentry backend's tracks stay until its
		// ring is read: they say whose records count.
		for _, tr := range s.tracks {
			s.dropTrack(tr)
		}
	}
	s.mu.Unlock()
	if probe != nil {
		if err := probe.Drain(); err != nil {
			// Run may not end by itself: close it (the ring's last
			// records are lost).
			s.log.Debug("UVM fentry ring cannot be read to its end", zap.Error(err))
			_ = probe.Close()
		}
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.stop()
		go func() { <-done; s.closeLogs() }()
		return pmetric.NewMetrics(), ctx.Err()
	}
	s.stop()
	md := pmetric.NewMetrics()
	if scrape && s.cfg.Enabled {
		s.resolvePending()
		s.mu.Lock()
		md = s.scrapeLocked(ctx) // hands the pending samples to Logs first
		s.mu.Unlock()
	}
	s.closeLogs()
	if err := ctx.Err(); err != nil {
		return pmetric.NewMetrics(), err
	}
	return md, nil
}

// stop ends the accounting: what readers still running read is
// discarded; the fentry backend is closed and its tracks dropped.
func (s *Source) stop() {
	s.mu.Lock()
	s.stopped = true
	for _, tr := range s.tracks {
		s.dropTrack(tr)
	}
	s.mu.Unlock()
	s.closeBackend()
}

// closeLogs hands the pending fault samples to Logs and closes it.
func (s *Source) closeLogs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLogsLocked()
	if !s.logsClosed {
		s.logsClosed = true
		close(s.logs)
	}
}
