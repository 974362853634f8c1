package translate

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
)

var (
	dirAttr = [...]metadata.AttributeDirection{
		ev.DirHtoD: metadata.AttributeDirectionHtod, ev.DirDtoH: metadata.AttributeDirectionDtoh,
		ev.DirDtoD: metadata.AttributeDirectionDtod, ev.DirHtoH: metadata.AttributeDirectionHtoh,
		ev.DirPeer: metadata.AttributeDirectionPeer, ev.DirDefault: metadata.AttributeDirectionDefault,
	}
	memAttr = [...]metadata.AttributeMemoryKind{
		ev.MemDevice: metadata.AttributeMemoryKindDevice, ev.MemManaged: metadata.AttributeMemoryKindManaged,
		ev.MemHost: metadata.AttributeMemoryKindHost, ev.MemPool: metadata.AttributeMemoryKindPool,
	}
)

// resultUnknown is the gpu.cuda.result of calls reported at entry only.
const resultUnknown = "unknown"

// Histogram metric descriptions (mdatagen cannot generate histograms).
const (
	histCallDuration     = "gpu.cuda.call.duration"
	histGridSize         = "gpu.cuda.launch.grid.size"
	histBlockSize        = "gpu.cuda.launch.block.size"
	histKernelExecution  = "gpu.kernel.execution.duration"
	histKernelQueueDelay = "gpu.kernel.queue.delay"
	histCopyExecution    = "gpu.cuda.copy.execution.duration"
)

// Metrics returns the cumulative metrics of every process and of the
// receiver itself, then drops the state of processes that have ended and of
// programs replaced by execve (their final values are in this emission).
// Whether a process has ended is asked of /proc at each emission, so a lost
// exit record or a group that outlives its leader thread cannot leak state.
func (t *Translator) Metrics(stats SelfStats) pmetric.Metrics {
	t.clock.Calibrate()
	for _, pid := range t.exitedCommPrev {
		delete(t.execComm, pid)
	}
	t.exitedCommPrev, t.exitedComm = t.exitedComm, t.exitedCommPrev[:0]
	now := pcommon.NewTimestampFromTime(t.clock.Now())
	out := pmetric.NewMetrics()
	for _, p := range t.retired {
		if !p.skip {
			t.emitProcess(p, now, out)
		}
	}
	t.retired = t.retired[:0]
	for _, pid := range t.sortedPIDs() {
		p := t.procs[pid]
		if !p.skip {
			t.emitProcess(p, now, out)
		}
		if t.res != nil && !t.res.Alive(int(pid), p.procStart) && (t.hooks.Holding == nil || !t.hooks.Holding(pid)) {
			t.release(p)
		}
	}

	mb := t.mb
	up, upIdx := metadata.AttributeSourceUprobe, sourceIndex(ev.SourceUprobe)
	mb.RecordGpuEbpfEventsReceivedDataPoint(now, int64(t.received[upIdx]), up)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(stats.RingFull), up, metadata.AttributeReasonRingFull)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(stats.InflightFull), up, metadata.AttributeReasonInflightFull)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(stats.Unmatched), up, metadata.AttributeReasonUnmatched)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(t.decodeErrs[upIdx]), up, metadata.AttributeReasonDecodeError)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(t.procLimit[upIdx]), up, metadata.AttributeReasonProcessLimit)
	if d := stats.Devrt; d.Enabled {
		dr, drIdx := metadata.AttributeSourceDevrt, sourceIndex(ev.SourceDevrt)
		mb.RecordGpuEbpfEventsReceivedDataPoint(now, int64(t.received[drIdx]), dr)
		mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(d.Full), dr, metadata.AttributeReasonRingFull)
		mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(d.Disabled), dr, metadata.AttributeReasonDisabled)
		mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(d.Timing), dr, metadata.AttributeReasonTimingUnavailable)
		mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(d.Corrupt), dr, metadata.AttributeReasonRingCorrupt)
		mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(t.decodeErrs[drIdx]), dr, metadata.AttributeReasonDecodeError)
		mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(t.procLimit[drIdx]), dr, metadata.AttributeReasonProcessLimit)
		mb.RecordGpuEbpfDevrtRingsDataPoint(now, d.Active, metadata.AttributeRingStateActive)
		mb.RecordGpuEbpfDevrtRingsDataPoint(now, d.DisabledRings, metadata.AttributeRingStateDisabled)
		mb.RecordGpuEbpfDevrtRingsDataPoint(now, d.Closed, metadata.AttributeRingStateClosed)
		mb.RecordGpuEbpfDevrtRingsRejectedDataPoint(now, int64(d.Invalid), metadata.AttributeRejectReasonInvalid)
		mb.RecordGpuEbpfDevrtRingsRejectedDataPoint(now, int64(d.Abandoned), metadata.AttributeRejectReasonCorrupt)
		mb.RecordGpuEbpfDevrtRingsRejectedDataPoint(now, int64(d.Stale), metadata.AttributeRejectReasonStale)
	}
	mb.RecordGpuEbpfProbesAttachedDataPoint(now, stats.Probes)
	mb.RecordGpuEbpfProcessesTrackedDataPoint(now, int64(len(t.procs)))
	self := t.mb.Emit(metadata.WithResource(t.hostRes))
	self.ResourceMetrics().MoveAndAppendTo(out.ResourceMetrics())
	return out
}

func (t *Translator) emitProcess(p *process, now pcommon.Timestamp, out pmetric.Metrics) {
	mb := t.mb
	for api, n := range p.okCalls {
		if n > 0 {
			a := ev.API(api)
			mb.RecordGpuCudaCallsDataPoint(now, int64(n), a.String(), ev.ResultName(a, 0))
		}
	}
	for api, n := range p.unknown {
		if n > 0 {
			mb.RecordGpuCudaCallsDataPoint(now, int64(n), ev.API(api).String(), resultUnknown)
		}
	}
	for k, n := range p.errCalls {
		mb.RecordGpuCudaCallsDataPoint(now, int64(n), k.api.String(), ev.ResultName(k.api, k.result))
	}
	for api, n := range p.launches {
		if n > 0 {
			mb.RecordGpuCudaLaunchesDataPoint(now, int64(n), ev.API(api).String())
		}
	}
	for d := ev.DirHtoD; d <= ev.DirDefault; d++ {
		if p.copied[d] > 0 {
			mb.RecordGpuCudaMemoryCopiedDataPoint(now, int64(p.copied[d]), dirAttr[d])
		}
	}
	for k := ev.MemDevice; k <= ev.MemPool; k++ {
		if p.allocated[k] == 0 && p.freed[k] == 0 {
			continue
		}
		mb.RecordGpuCudaMemoryAllocatedDataPoint(now, int64(p.allocated[k]), memAttr[k])
		mb.RecordGpuCudaMemoryFreedDataPoint(now, int64(p.freed[k]), memAttr[k])
		mb.RecordGpuCudaMemoryOutstandingDataPoint(now, p.outstand[k], memAttr[k])
	}
	if p.set > 0 {
		mb.RecordGpuCudaMemorySetDataPoint(now, int64(p.set))
	}
	m := mb.Emit(metadata.WithResource(p.resource), metadata.WithStartTimeOverride(p.start))
	if m.ResourceMetrics().Len() == 0 {
		// Every tracked process has at least one gpu.cuda.calls point: with
		// that metric on, nothing back means the resource attribute filters
		// (metrics_include/exclude) dropped the process, histograms too.
		if t.cfg.Metrics.Metrics.GpuCudaCalls.Enabled {
			return
		}
		rm := m.ResourceMetrics().AppendEmpty()
		p.resource.CopyTo(rm.Resource())
	}
	rm := m.ResourceMetrics().At(0)
	if rm.ScopeMetrics().Len() == 0 {
		rm.ScopeMetrics().AppendEmpty().Scope().SetName(attrScopeName)
	}
	ms := rm.ScopeMetrics().At(0).Metrics()
	t.appendHistograms(ms, histCallDuration, "Duration of CUDA API calls, by function.", "s",
		t.cfg.CallDuration, p.durations[:], p.start, now)
	t.appendHistograms(ms, histGridSize, "Thread blocks per kernel launch, by launching function.", "{block}",
		t.cfg.GridSize, p.grids[:], p.start, now)
	t.appendHistograms(ms, histBlockSize, "Threads per block of kernel launches, by launching function.", "{thread}",
		t.cfg.BlockSize, p.blocks[:], p.start, now)
	if x := p.exec; x != nil {
		t.appendHistograms(ms, histKernelExecution, "Time sampled kernels and graphs ran on the GPU (devrt), by launching function.", "s",
			t.cfg.KernelExecution, x.kernelDur[:], p.start, now)
		t.appendHistograms(ms, histKernelQueueDelay, "Time from a sampled launch call to its work starting on the GPU (devrt), by launching function.", "s",
			t.cfg.KernelQueueDelay, x.queueDelay[:], p.start, now)
		t.appendCopyHistograms(ms, x, p.start, now)
	}
	if ms.Len() == 0 {
		return
	}
	rm.MoveTo(out.ResourceMetrics().AppendEmpty())
}

func (t *Translator) appendHistograms(ms pmetric.MetricSlice, name, desc, unit string, cfg HistogramConfig,
	hs []*histogram.Histogram, start, now pcommon.Timestamp) {
	if !cfg.Enabled {
		return
	}
	var m pmetric.Metric
	for api, h := range hs {
		if h == nil {
			continue
		}
		if m == (pmetric.Metric{}) {
			m = appendHistogramMetric(ms, name, desc, unit)
		}
		dp := h.AppendTo(m.Histogram().DataPoints(), cfg.Buckets, start, now)
		dp.Attributes().PutStr("gpu.cuda.api", ev.API(api).String())
	}
}

// appendCopyHistograms emits gpu.cuda.copy.execution.duration by function
// and, for copies, direction, in a stable order.
func (t *Translator) appendCopyHistograms(ms pmetric.MetricSlice, x *execState, start, now pcommon.Timestamp) {
	cfg := t.cfg.CopyExecution
	if !cfg.Enabled || len(x.copyDur) == 0 {
		return
	}
	keys := make([]copyKey, 0, len(x.copyDur))
	for k := range x.copyDur {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].api != keys[j].api {
			return keys[i].api < keys[j].api
		}
		return keys[i].dir < keys[j].dir
	})
	m := appendHistogramMetric(ms, histCopyExecution,
		"Time sampled copies and sets ran on the GPU (devrt), by function and copy direction.", "s")
	for _, k := range keys {
		dp := x.copyDur[k].AppendTo(m.Histogram().DataPoints(), cfg.Buckets, start, now)
		dp.Attributes().PutStr("gpu.cuda.api", k.api.String())
		if k.dir != ev.DirNone {
			dp.Attributes().PutStr("gpu.cuda.copy.direction", k.dir.String())
		}
	}
}

func appendHistogramMetric(ms pmetric.MetricSlice, name, desc, unit string) pmetric.Metric {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetDescription(desc)
	m.SetUnit(unit)
	m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	return m
}
