package gpuebpfreceiver

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devrt"
)

// devrt's records take the uprobes' path: decoded here, then one
// translator. When both see a process, each call is reported once: from
// the moment devrt's ring began (its created_ns) the process's calls are
// devrt's, so the uprobe events of calls that started since are dropped,
// and the kernel is told to skip the process (a map lookup per call
// instead of two traps and a record). That holds until devrt disables
// itself or the process execs. A process that has ended under devrt stays
// covered after its ring was drained and removed, since its uprobe events
// may be read later still: up to the moment the translator lets go of it
// (calls after that are a new owner's of the pid), for endedCoverGrace.

// maxProbed bounds the processes remembered as probed for a ring, and
// those remembered as covered.
const maxProbed = 1 << 16

// coverage is when devrt reports a process's calls: [since, until).
type coverage struct{ since, until uint64 }

func (r *gpuReceiver) startDevrt(ctx context.Context) {
	r.devrtCover = map[uint32]coverage{}
	r.devrtProbed = map[uint32]struct{}{}
	opts := devrt.Options{
		ProcRoot: r.cfg.ProcRoot,
		Logger:   r.log.With(zap.String("source", "devrt")),
		Handle:   r.handleDevrt,
		Resolve:  r.resolver.Resolve,
		Alive:    r.resolver.Alive,
		Attached: r.devrtAttached,
		Detached: r.devrtDetached,
	}
	if r.execRecords {
		// A ring's program may have exited by the time its ring is
		// drained, and then only its exec record names it (for the
		// selection rules): that record is read first.
		opts.ReadUpTo = func() uint64 { return r.read.upTo }
	}
	r.devrt = devrt.New(r.cfg.DevRT, opts)
	r.devrt.Start(ctx)
}

// startProbes compiles the device probes and starts an injection server in
// each devrt directory. A probe set that cannot be used is reported and
// devrt runs on without injection.
func (r *gpuReceiver) startProbes(host component.Host, hostName string) {
	src, err := devprobes.New(r.cfg.DevRT.Probes, devprobes.Options{
		Dirs:     r.cfg.DevRT.Directories,
		Settings: withLogger(r.set, r.log.With(zap.String("source", "devprobes"))),
		HostName: hostName,
		ProcRoot: r.cfg.ProcRoot,
		Resolve:  r.resolver.Resolve,
	})
	if err != nil {
		r.log.Error("device probes unavailable; devrt runs on without injection", zap.Error(err))
		componentstatus.ReportStatus(host, componentstatus.NewRecoverableErrorEvent(err))
		return
	}
	src.Start()
	r.probes = src
}

func withLogger(set receiver.Settings, log *zap.Logger) receiver.Settings {
	set.Logger = log
	return set
}

// probesLaunched and probesExecuted pass devrt's launch calls and their
// GPU timing to the device probes (launch latency).
func (r *gpuReceiver) probesLaunched(pid uint32, kernel string, dev int32, start uint64) {
	if r.probes != nil {
		r.probes.Launch(pid, kernel, dev, start)
	}
}

func (r *gpuReceiver) probesExecuted(pid uint32, kernel string, dev int32, callStart, gpuStart, gpuEnd uint64) {
	if r.probes != nil {
		r.probes.Timed(pid, kernel, dev, callStart, gpuStart, gpuEnd)
	}
}

// handleDevrt decodes one record of the ring of process pid (in the
// collector's pid namespace). What the process claims is its own business
// except who it is: the pid is the ring's, the source devrt, and only
// call and GPU execution records are taken from it.
func (r *gpuReceiver) handleDevrt(pid uint32, rec []byte) {
	switch ev.RecordKind(rec) {
	case ev.KindGPUExec:
		var x ev.GPUExec
		if err := ev.DecodeGPUExec(rec, &x); err != nil {
			r.devrtDecodeError(err, rec)
			return
		}
		x.PID, x.Source = pid, ev.SourceDevrt
		r.tr.HandleGPUExec(&x)
	case ev.KindCall, ev.KindCallNamed:
		var e ev.Event
		if err := ev.Decode(rec, &e); err != nil {
			r.devrtDecodeError(err, rec)
			return
		}
		e.PID, e.Source = pid, ev.SourceDevrt
		r.tr.Handle(&e)
	case devrtinject.KindInject:
		// What devrt did with a module load (written only while an
		// injection socket exists).
		if r.probes == nil {
			var x devrtinject.Event
			if err := devrtinject.DecodeEvent(rec, &x); err != nil {
				r.devrtDecodeError(err, rec)
			}
			return
		}
		if err := r.probes.HandleInject(pid, rec); err != nil {
			r.devrtDecodeError(err, rec)
		}
	default:
		r.devrtDecodeError(ev.ErrKind, rec)
	}
}

func (r *gpuReceiver) devrtDecodeError(err error, rec []byte) {
	r.tr.DecodeErrorFrom(ev.SourceDevrt)
	r.log.Debug("malformed devrt record", zap.Error(err), zap.Int("bytes", len(rec)))
}

// devrtCovers reports whether devrt reports the uprobe call e, which is
// then dropped. A process's first uprobe call looks for its ring at once:
// devrt makes the ring before it reports, so a ring that reports this call
// exists by now.
func (r *gpuReceiver) devrtCovers(e *ev.Event) bool {
	if _, ok := r.devrtProbed[e.PID]; !ok {
		if len(r.devrtProbed) >= maxProbed {
			clear(r.devrtProbed)
		}
		r.devrtProbed[e.PID] = struct{}{}
		r.devrt.Probe(e.PID)
	}
	c, ok := r.devrtCover[e.PID]
	return ok && e.Start >= c.since && e.Start < c.until && r.cfg.DevRT.Reports(e.API.Class())
}

// devrtAttached: devrt reports pid's calls from created on. The
// translator learns who the process is now, while it runs: a short-lived
// one may have exited by the time its records are drained.
func (r *gpuReceiver) devrtAttached(pid uint32, created uint64) {
	r.tr.Track(pid)
	if len(r.devrtCover) >= maxProbed {
		clear(r.devrtCover)
	}
	r.devrtCover[pid] = coverage{since: created, until: devrt.Forever}
	r.devrtProbed[pid] = struct{}{}
	if r.cfg.DevRT.ReportsAllCalls() {
		r.skipUprobes(pid)
	}
}

// devrtDetached: devrt reports pid's calls only until until (it disabled
// itself, the process exec'd, or, Forever, ended): the uprobes report it
// again, unless the rules exclude it.
func (r *gpuReceiver) devrtDetached(pid uint32, until uint64) {
	if c, ok := r.devrtCover[pid]; ok {
		c.until = until
		r.devrtCover[pid] = c
	}
	if r.tracer != nil && !r.tr.Skipping(pid) {
		r.tracer.ClearFilter(pid)
	}
}

// endedCoverGrace is how long the coverage of a process that has ended
// outlives the translator's state of it: the longest its uprobe events may
// wait unread behind the drain that retired its ring.
const endedCoverGrace = uint64(30 * time.Second)

// devrtEnded: the translator let go of pid, which has ended, at now. Its
// uprobe events may not all have been read (the loop can drain its ring,
// see it gone and emit metrics before reading the ring buffer again): the
// calls it made stay devrt's, those of a later process that gets the pid
// do not.
func (r *gpuReceiver) devrtEnded(pid uint32, now uint64) {
	if c, ok := r.devrtCover[pid]; ok && c.until > now {
		c.until = now
		r.devrtCover[pid] = c
	}
}

// pruneDevrtCover forgets the coverage of processes that ended more than
// endedCoverGrace before now.
func (r *gpuReceiver) pruneDevrtCover(now uint64) {
	for pid, c := range r.devrtCover {
		if c.until != devrt.Forever && c.until+endedCoverGrace < now {
			delete(r.devrtCover, pid)
		}
	}
}

// skipUprobes makes the kernel skip pid's calls, when devrt reports all
// of them.
func (r *gpuReceiver) skipUprobes(pid uint32) {
	if r.tracer == nil || !r.cfg.DevRT.ReportsAllCalls() {
		return
	}
	if err := r.tracer.SetTraced(pid, false); err != nil {
		r.log.Debug("pid filter update failed", zap.Uint32("pid", pid), zap.Error(err))
	}
}

// devrtHolding tells the translator to keep an exited process's state
// while its ring has not been drained for the last time.
func (r *gpuReceiver) devrtHolding(pid uint32) bool {
	return r.devrt != nil && r.devrt.Holding(pid)
}
