package translate

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
)

// GPU execution: devrt times a sample of the kernels, graphs, copies and
// sets a process enqueues and reports, after the work ran, when it started
// and ended on the GPU (struct gpuext_gpu_exec). Each becomes a span, the
// child of the launching call's span, and observations of the execution
// and queueing histograms.
//
// The record names its call by corr, the process's call number. The GPU
// finishes work milliseconds after the call, often after the call's span
// was handed over, so each devrt process keeps the ids of its recent
// enqueuing calls in a small table indexed by corr: bounded, no map churn
// per call, and a record whose call has been overwritten (more than
// execLinks calls later) still makes a span, a root one. devrt's poller
// thread may also write a record before the calling thread has written
// the call's (the caller preempted between the call's return and its
// write): such a record waits for its call, up to execWait (maxWaitingExec
// of them at most), checked at each hand-over of spans.

// execLinks is the number of recent enqueuing calls remembered per devrt
// process: a power of two.
const execLinks = 1024

// maxWaitingExec bounds the GPU execution records waiting for their call.
const maxWaitingExec = 4096

// execWait is how long a GPU execution record waits for its call (ns).
const execWait = uint64(time.Second)

// waitingExec is a GPU execution record that arrived before its call.
type waitingExec struct {
	x       ev.GPUExec
	arrived uint64 // CLOCK_MONOTONIC ns
}

// execLink is what a GPU execution record needs of its call.
type execLink struct {
	corr    uint32
	valid   bool
	dir     ev.Direction // the call's direction, refined from allocations
	kernel  string       // mangled name of the kernel launched, if known
	dev     int32        // the launch's device ordinal, -1 if devrt did not name it
	traceID pcommon.TraceID
	spanID  pcommon.SpanID // empty: the call made no span
}

// copyKey is a gpu.cuda.copy.execution.duration series.
type copyKey struct {
	api ev.API
	dir ev.Direction
}

// execState is the GPU execution state of a devrt process.
type execState struct {
	links      [execLinks]execLink
	kernelDur  [ev.APIMax]*histogram.Histogram
	queueDelay [ev.APIMax]*histogram.Histogram
	copyDur    map[copyKey]*histogram.Histogram
	unlinked   uint64 // records whose call was no longer (or never) in links
	waiting    map[uint32]waitingExec
}

// Span attributes of GPU execution spans.
const (
	attrQueueDelay   = "gpu.cuda.queue.delay"   // ns from the call's start to the GPU start
	attrClockClamped = "gpu.cuda.clock_clamped" // the GPU start was before the call: moved to it
	execSpanSuffix   = " gpu"
)

// enqueues reports whether api puts work on a stream: launches, copies, sets.
func enqueues(api ev.API) bool {
	c := api.Class()
	return c == ev.ClassLaunch || c == ev.ClassCopy
}

// isSet reports whether api is a cuMemset*.
func isSet(api ev.API) bool { return api >= ev.APICuMemsetD8 && api <= ev.APICuMemsetD2D32Async }

// execLink returns the link slot for a devrt call that enqueues work, filled
// with what the call knows (span ids are added with its span), or nil.
func (t *Translator) execLink(p *process, e *ev.Event) *execLink {
	if e.Source != ev.SourceDevrt || e.Corr == 0 || !enqueues(e.API) {
		return nil
	}
	if p.exec == nil {
		p.exec = &execState{copyDur: map[copyKey]*histogram.Histogram{}}
	}
	l := &p.exec.links[e.Corr&(execLinks-1)]
	*l = execLink{corr: e.Corr, valid: true, dir: e.Direction, dev: e.Device}
	if e.API.Class() == ev.ClassLaunch {
		l.kernel = t.kernelName(p, e)
		if l.kernel != "" && t.hooks.Launched != nil {
			t.hooks.Launched(p.pid, l.kernel, e.Device, e.Start)
		}
	}
	return l
}

// HandleGPUExec takes one decoded GPU execution record.
func (t *Translator) HandleGPUExec(x *ev.GPUExec) {
	src := sourceIndex(x.Source)
	t.received[src]++
	p := t.process(&ev.Event{PID: x.PID, Source: x.Source})
	if p == nil {
		t.procLimit[src]++
		return
	}
	if p.skip {
		return
	}
	if p.exec == nil {
		p.exec = &execState{copyDur: map[copyKey]*histogram.Histogram{}}
	}
	if l := &p.exec.links[x.Corr&(execLinks-1)]; l.valid && l.corr == x.Corr {
		t.execute(p, x, l)
		return
	}
	if _, dup := p.exec.waiting[x.Corr]; !dup && t.nwaiting < maxWaitingExec {
		if p.exec.waiting == nil {
			p.exec.waiting = map[uint32]waitingExec{}
		}
		if len(p.exec.waiting) == 0 {
			t.waiting = append(t.waiting, p)
		}
		p.exec.waiting[x.Corr] = waitingExec{x: *x, arrived: Monotonic()}
		t.nwaiting++
		return
	}
	p.exec.unlinked++
	t.execute(p, x, nil)
}

// callArrived takes the GPU execution record that waited for the call of
// link, now that the call's span exists.
func (t *Translator) callArrived(p *process, link *execLink) {
	w, ok := p.exec.waiting[link.corr]
	if !ok {
		return
	}
	delete(p.exec.waiting, link.corr)
	t.nwaiting--
	t.execute(p, &w.x, link)
}

// expireWaiting gives up on the records that waited execWait for their
// call (all of them when all), as root spans.
func (t *Translator) expireWaiting(all bool) {
	now := Monotonic()
	kept := t.waiting[:0]
	for _, p := range t.waiting {
		for corr, w := range p.exec.waiting {
			if all || now-w.arrived >= execWait {
				delete(p.exec.waiting, corr)
				t.nwaiting--
				p.exec.unlinked++
				t.execute(p, &w.x, nil)
			}
		}
		if len(p.exec.waiting) > 0 {
			kept = append(kept, p)
		}
	}
	clear(t.waiting[len(kept):])
	t.waiting = kept
}

// WaitingGPUExec is the number of GPU execution records waiting for their
// call; the next hand-overs of spans settle them even if no other span
// comes.
func (t *Translator) WaitingGPUExec() int { return t.nwaiting }

// FlushGPUExec turns every GPU execution record still waiting for its call
// into a span now (at shutdown, before the last hand-over).
func (t *Translator) FlushGPUExec() { t.expireWaiting(true) }

// execute accounts one GPU execution and makes its span.
func (t *Translator) execute(p *process, x *ev.GPUExec, link *execLink) {
	dur := float64(x.Duration()) / 1e9
	dir := ev.DirNone
	if x.API.Class() == ev.ClassLaunch {
		if link != nil && link.kernel != "" && t.hooks.Executed != nil {
			t.hooks.Executed(p.pid, link.kernel, link.dev, x.CallStart, x.GPUStart, x.GPUEnd)
		}
		observe(&p.exec.kernelDur, t.cfg.KernelExecution, x.API, dur)
		observe(&p.exec.queueDelay, t.cfg.KernelQueueDelay, x.API, float64(x.QueueDelay())/1e9)
	} else {
		dir = apiDirection(x.API)
		if link != nil && link.dir != ev.DirNone {
			dir = link.dir
		}
		if t.cfg.CopyExecution.Enabled {
			k := copyKey{x.API, dir}
			h := p.exec.copyDur[k]
			if h == nil {
				h = histogram.New(t.cfg.CopyExecution.Buckets)
				p.exec.copyDur[k] = h
			}
			h.Record(t.cfg.CopyExecution.Buckets, dur)
		}
	}
	if t.cfg.Spans && t.spanClass[x.API.Class()] {
		t.addExecSpan(p, x, link, dir)
	}
}

// addExecSpan records the GPU execution as a child of its call's span.
func (t *Translator) addExecSpan(p *process, x *ev.GPUExec, link *execLink, dir ev.Direction) {
	sp := t.spanSlice(p).AppendEmpty()
	t.nspans++
	traceID, spanID := t.ids.next()
	if link != nil && !link.spanID.IsEmpty() {
		traceID = link.traceID
		sp.SetParentSpanID(link.spanID)
	}
	sp.SetTraceID(traceID)
	sp.SetSpanID(spanID)
	sp.SetName(x.API.String() + execSpanSuffix)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(t.clock.Timestamp(x.GPUStart))
	sp.SetEndTimestamp(t.clock.Timestamp(x.GPUEnd))
	attrs := sp.Attributes()
	attrs.EnsureCapacity(6)
	attrs.PutInt(attrThreadID, int64(x.TID))
	attrs.PutInt(attrQueueDelay, int64(x.QueueDelay()))
	if x.Stream != 0 {
		attrs.PutInt(attrStream, int64(x.Stream))
	}
	if x.Flags&ev.ExecFlagClamped != 0 {
		attrs.PutBool(attrClockClamped, true)
	}
	if x.Flags&ev.ExecFlagCallFailed != 0 {
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("the enqueuing call failed")
	}
	switch {
	case x.API == ev.APICuGraphLaunch || x.API == ev.APICudaGraphLaunch:
		attrs.PutInt(attrHandle, int64(x.Handle))
	case x.API.Class() == ev.ClassLaunch:
		name := ""
		if link != nil {
			name = link.kernel
		}
		if name == "" {
			name = t.kernelName(p, &ev.Event{API: x.API, Handle: x.Handle})
		}
		if name != "" {
			attrs.PutStr(attrKernelName, t.demangle(name))
		}
	default:
		attrs.PutInt(attrCopyBytes, int64(x.Bytes))
		if dir != ev.DirNone {
			attrs.PutStr(attrDirection, dir.String())
		}
	}
}

// apiDirection is the direction a copy API's name tells (DirDefault when
// only its addresses would, DirNone for sets and 2D/3D copies, whose
// direction is in a descriptor).
func apiDirection(api ev.API) ev.Direction {
	switch api {
	case ev.APICuMemcpyHtoD, ev.APICuMemcpyHtoDAsync:
		return ev.DirHtoD
	case ev.APICuMemcpyDtoH, ev.APICuMemcpyDtoHAsync:
		return ev.DirDtoH
	case ev.APICuMemcpyDtoD, ev.APICuMemcpyDtoDAsync:
		return ev.DirDtoD
	case ev.APICuMemcpyPeer, ev.APICuMemcpyPeerAsync:
		return ev.DirPeer
	case ev.APICuMemcpy, ev.APICuMemcpyAsync:
		return ev.DirDefault
	}
	return ev.DirNone
}
