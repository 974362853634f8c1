package translate

import (
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Nesting: a runtime call (cudaLaunchKernel) makes a driver call
// (cuLaunchKernel) on the same thread, and both are probed. The inner call
// returns first, so its record arrives first. Each thread keeps its last few
// spans of the current batch; when a span arrives whose interval contains
// some of them, it becomes their trace's root: the outermost unparented
// ones get it as parent, and all of them take its trace id.

const recentPerThread = 8

type recentSpan struct {
	span       ptrace.Span
	start, end uint64
	parented   bool
	link       *execLink // the call's GPU execution link, kept in step with the trace id
	corr       uint32    // ... while the link still belongs to this call
}

// threadKey names a thread: its id is unique only within its process's pid
// namespace (devrt writes gettid() of the process's own), so the pid, in
// the collector's namespace, goes with it.
type threadKey struct{ pid, tid uint32 }

type threadSpans struct {
	spans [recentPerThread]recentSpan
	n     int // spans recorded, the last recentPerThread of them kept
}

// nest links the spans of thread k that e's interval contains to sp, then
// remembers sp (and link, the GPU execution link of its call, if any). Only spans of the current batch are kept (the table is
// cleared when a batch is handed over), so a handle is never stale.
func (t *Translator) nest(k threadKey, start, end uint64, sp ptrace.Span, link *execLink) {
	ts := t.threads[k]
	if ts == nil {
		ts = &threadSpans{}
		t.threads[k] = ts
	}
	traceID, spanID := sp.TraceID(), sp.SpanID()
	kept := min(ts.n, recentPerThread)
	for i := 0; i < kept; i++ {
		r := &ts.spans[i]
		if r.start < start || r.end > end {
			continue
		}
		r.span.SetTraceID(traceID)
		if r.link != nil && r.link.corr == r.corr {
			r.link.traceID = traceID
		}
		if !r.parented {
			r.span.SetParentSpanID(spanID)
			r.parented = true
		}
	}
	rs := recentSpan{span: sp, start: start, end: end, link: link}
	if link != nil {
		rs.corr = link.corr
	}
	ts.spans[ts.n%recentPerThread] = rs
	ts.n++
}
