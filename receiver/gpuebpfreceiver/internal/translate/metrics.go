package translate

import (
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
	histCallDuration = "gpu.cuda.call.duration"
	histGridSize     = "gpu.cuda.launch.grid.size"
	histBlockSize    = "gpu.cuda.launch.block.size"
)

// Metrics returns the cumulative metrics of every process and of the
// receiver itself, then drops the state of processes that have ended and of
// programs replaced by execve (their final values are in this emission).
// Whether a process has ended is asked of /proc at each emission, so a lost
// exit record or a group that outlives its leader thread cannot leak state.
func (t *Translator) Metrics(stats SelfStats) pmetric.Metrics {
	t.clock.Calibrate()
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
		if t.res != nil && !t.res.Alive(int(pid), p.procStart) {
			t.release(p)
		}
	}

	mb := t.mb
	src := metadata.AttributeSourceUprobe
	mb.RecordGpuEbpfEventsReceivedDataPoint(now, int64(t.received), src)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(stats.RingFull), src, metadata.AttributeReasonRingFull)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(stats.InflightFull), src, metadata.AttributeReasonInflightFull)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(stats.Unmatched), src, metadata.AttributeReasonUnmatched)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(t.decodeErrs), src, metadata.AttributeReasonDecodeError)
	mb.RecordGpuEbpfEventsDroppedDataPoint(now, int64(t.procLimit), src, metadata.AttributeReasonProcessLimit)
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
			m = ms.AppendEmpty()
			m.SetName(name)
			m.SetDescription(desc)
			m.SetUnit(unit)
			m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		}
		dp := h.AppendTo(m.Histogram().DataPoints(), cfg.Buckets, start, now)
		dp.Attributes().PutStr("gpu.cuda.api", ev.API(api).String())
	}
}
