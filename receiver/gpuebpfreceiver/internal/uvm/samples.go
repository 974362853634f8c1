package uvm

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// maxPendingSamples is how many fault samples are gathered into one
// plog.Logs before it is handed to the Logs channel (it is also handed
// over after each read of a process's queue, and at each Scrape).
const maxPendingSamples = 256

// tokenBucket limits samples per process on the driver's event clock, so
// that a burst read late from the queue is limited as it happened, and a
// replay of recorded events behaves as the live run did.
type tokenBucket struct {
	tokens float64
	last   uint64 // event ns of the last refill; 0: never
}

// take reports whether a sample at event time t (ns) may be emitted, at
// rate per second with a burst of one second's worth.
func (b *tokenBucket) take(t uint64, rate float64) bool {
	switch {
	case b.last == 0:
		b.tokens = rate
		b.last = t
	case t > b.last:
		b.tokens = min(rate, b.tokens+float64(t-b.last)*rate/1e9)
		b.last = t
	}
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// pendingLogs gathers fault samples until they are handed to the channel.
type pendingLogs struct {
	logs  plog.Logs
	byPID map[int]plog.LogRecordSlice
	count map[int]int // samples per pid, to count them as dropped if the channel is full
	n     int
}

// sample emits ev as a log record if the process's rate allows. The
// caller holds s.mu.
func (s *Source) sample(p *process, st *stream, ev *uvmtools.Event) {
	if !p.limiter.take(ev.Time, float64(s.cfg.FaultSamples.MaxPerSecond)) {
		p.samplesRate++
		return
	}
	pl := &s.pending
	if pl.byPID == nil {
		pl.logs = plog.NewLogs()
		pl.byPID = map[int]plog.LogRecordSlice{}
		pl.count = map[int]int{}
	}
	recs, ok := pl.byPID[p.pid]
	if !ok {
		rl := pl.logs.ResourceLogs().AppendEmpty()
		s.processResource(p, "").MoveTo(rl.Resource())
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName(metadata.ScopeName)
		recs = sl.LogRecords()
		pl.byPID[p.pid] = recs
	}
	p.samplesTaken++
	pl.count[p.pid]++
	pl.n++

	r := recs.AppendEmpty()
	r.SetTimestamp(pcommon.Timestamp(int64(ev.Time) + s.rawOffset))
	r.SetObservedTimestamp(pcommon.NewTimestampFromTime(s.opts.now()))
	r.SetSeverityNumber(plog.SeverityNumberInfo)
	r.SetSeverityText("INFO")
	r.SetEventName("gpu.uvm.fault")
	proc, access := "cpu", accessIndex(ev.Access).String()
	if ev.Type == uvmtools.EventGPUFault {
		proc = "gpu"
	}
	addr := "0x" + strconv.FormatUint(ev.Address, 16)
	r.Body().SetStr(proc + " fault " + access + " " + addr)
	a := r.Attributes()
	a.EnsureCapacity(7)
	a.PutStr("gpu.uvm.processor", proc)
	a.PutStr("gpu.uvm.fault.address", addr)
	a.PutStr("gpu.uvm.access.type", access)
	if ev.Type == uvmtools.EventGPUFault {
		a.PutStr("gpu.uvm.fault.type", faultTypeNames[faultTypeIndex(ev.FaultType)])
		if st.hwid != "" {
			a.PutStr("hw.id", st.hwid)
		}
		a.PutInt("gpu.uvm.fault.batch", int64(ev.Batch))
		a.PutInt("gpu.uvm.fault.gpu_time", int64(ev.TimeGPU))
	} else {
		a.PutInt("thread.id", int64(ev.TID))
	}
	if pl.n >= maxPendingSamples {
		s.flushLogsLocked()
	}
}

// flushLogsLocked hands the pending samples to the Logs channel, or drops
// and counts them if it is full. The caller holds s.mu.
func (s *Source) flushLogsLocked() {
	pl := &s.pending
	if pl.n == 0 || s.logsClosed {
		return
	}
	select {
	case s.logs <- pl.logs:
	default:
		for pid, n := range pl.count {
			if p := s.procs[pid]; p != nil {
				p.samplesFull += uint64(n)
			}
		}
	}
	*pl = pendingLogs{}
}
