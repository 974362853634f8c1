package translate

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/ptrace"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// Span attribute keys.
const (
	attrThreadID     = "thread.id"
	attrErrorType    = "error.type"
	attrResult       = "gpu.cuda.result"
	attrKernelName   = "gpu.cuda.kernel.name"
	attrFunctionName = "gpu.cuda.function.name"
	attrGrid         = "gpu.cuda.grid"
	attrBlock        = "gpu.cuda.block"
	attrSharedMem    = "gpu.cuda.shared_memory"
	attrStream       = "gpu.cuda.stream"
	attrHandle       = "gpu.cuda.handle"
	attrAddress      = "gpu.cuda.memory.address"
	attrSize         = "gpu.cuda.memory.size"
	attrMemKind      = "gpu.cuda.memory.kind"
	attrCopyBytes    = "gpu.cuda.copy.bytes"
	attrDirection    = "gpu.cuda.copy.direction"
	attrDevice       = "gpu.cuda.device"
	attrEntryOnly    = "gpu.cuda.entry_only"
	attrScopeName    = "github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver"
)

func dims(d [3]uint32) string {
	var b [32]byte
	s := strconv.AppendUint(b[:0], uint64(d[0]), 10)
	s = append(s, 'x')
	s = strconv.AppendUint(s, uint64(d[1]), 10)
	s = append(s, 'x')
	s = strconv.AppendUint(s, uint64(d[2]), 10)
	return string(s)
}

// spanSlice returns the process's span slice in the current batch, adding
// its resource to the batch on first use.
func (t *Translator) spanSlice(p *process) ptrace.SpanSlice {
	if p.spansGen == t.gen+1 {
		return p.spans
	}
	rs := t.traces.ResourceSpans().AppendEmpty()
	p.resource.CopyTo(rs.Resource())
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(attrScopeName)
	p.spans = ss.Spans()
	p.spansGen = t.gen + 1
	return p.spans
}

// addSpan records one API call as a span with its real start and end.
// link, when not nil, is where a GPU execution record of the call will
// find the span's ids.
func (t *Translator) addSpan(p *process, e *ev.Event, link *execLink) {
	sp := t.spanSlice(p).AppendEmpty()
	t.nspans++
	tid, sid := t.ids.next()
	sp.SetTraceID(tid)
	sp.SetSpanID(sid)
	sp.SetName(e.API.String())
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(t.clock.Timestamp(e.Start))
	sp.SetEndTimestamp(t.clock.Timestamp(e.End))
	if link != nil {
		link.traceID, link.spanID = tid, sid
	}
	if e.Returned() {
		t.nest(threadKey{p.pid, e.TID}, e.Start, e.End, sp, link)
	}
	attrs := sp.Attributes()
	attrs.EnsureCapacity(6)
	attrs.PutInt(attrThreadID, int64(e.TID))
	if !e.Returned() {
		attrs.PutBool(attrEntryOnly, true) // seen at entry only: no duration, no result
	} else if !e.OK() {
		name := ev.ResultName(e.API, e.Result)
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(name)
		attrs.PutStr(attrResult, name)
		attrs.PutStr(attrErrorType, name)
	}
	if e.Stream != 0 {
		attrs.PutInt(attrStream, int64(e.Stream))
	}
	if e.Device >= 0 {
		attrs.PutInt(attrDevice, int64(e.Device))
	}

	switch e.API.Class() {
	case ev.ClassLaunch:
		if e.API == ev.APICuGraphLaunch || e.API == ev.APICudaGraphLaunch {
			attrs.PutInt(attrHandle, int64(e.Handle))
			return
		}
		if n := t.kernelName(p, e); n != "" {
			attrs.PutStr(attrKernelName, t.demangle(n))
		}
		attrs.PutStr(attrGrid, dims(e.Grid))
		attrs.PutStr(attrBlock, dims(e.Block))
		if e.SharedMem != 0 {
			attrs.PutInt(attrSharedMem, int64(e.SharedMem))
		}
	case ev.ClassMemory:
		attrs.PutInt(attrAddress, int64(e.Addr))
		if e.Bytes != 0 {
			attrs.PutInt(attrSize, int64(e.Bytes))
		}
		if e.MemKind != ev.MemNone {
			attrs.PutStr(attrMemKind, e.MemKind.String())
		}
	case ev.ClassCopy:
		attrs.PutInt(attrCopyBytes, int64(e.Bytes))
		if e.Direction != ev.DirNone {
			attrs.PutStr(attrDirection, e.Direction.String())
		}
	case ev.ClassModule, ev.ClassContext:
		if e.Handle != 0 {
			attrs.PutInt(attrHandle, int64(e.Handle))
		}
		if e.Name != "" {
			attrs.PutStr(attrFunctionName, t.demangle(e.Name))
		}
	}
}

// TakeSpans hands over the spans gathered since the last call.
func (t *Translator) TakeSpans() (ptrace.Traces, int) {
	if t.nwaiting > 0 {
		t.expireWaiting(false)
	}
	out, n := t.traces, t.nspans
	t.traces = ptrace.NewTraces()
	t.nspans = 0
	t.gen++
	clear(t.threads)
	return out, n
}
