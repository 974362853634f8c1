package uvm

import (
	"context"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
)

// Scrape returns the cumulative metrics of every process: one resource
// per process and GPU (hw.id) plus one per process for what concerns no
// GPU. Processes untracked or exited since the last Scrape are reported
// one last time and forgotten. It also hands pending fault samples to
// Logs. After Finish (or Shutdown) it returns no metrics: Finish's are
// the last.
func (s *Source) Scrape(ctx context.Context) (pmetric.Metrics, error) {
	if !s.cfg.Enabled {
		return pmetric.NewMetrics(), nil
	}
	s.resolvePending()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return pmetric.NewMetrics(), nil
	}
	return s.scrapeLocked(ctx), ctx.Err()
}

// scrapeLocked is Scrape's work. The caller holds s.mu.
func (s *Source) scrapeLocked(ctx context.Context) pmetric.Metrics {
	s.flushLogsLocked()
	ts := pcommon.NewTimestampFromTime(s.opts.now())
	pids := make([]int, 0, len(s.procs))
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	for _, pid := range pids {
		if ctx.Err() != nil {
			break
		}
		p := s.procs[pid]
		s.emitStream(p, &p.host, ts, true)
		gpus := make([]*stream, 0, len(p.gpus))
		for _, st := range p.gpus {
			gpus = append(gpus, st)
		}
		slices.SortFunc(gpus, func(a, b *stream) int { return strings.Compare(a.hwid, b.hwid) })
		for _, st := range gpus {
			s.emitStream(p, st, ts, false)
		}
		if p.gone {
			delete(s.procs, pid)
			if s.hub != nil {
				s.hub.Remove(pid)
			}
		}
	}
	s.emitGPUs(ts)
	s.emitHost(ts)
	return s.mb.Emit()
}

// resolvePending attributes processes that Consume created, outside s.mu.
func (s *Source) resolvePending() {
	s.mu.Lock()
	var pids []int
	for pid, p := range s.procs {
		if !p.resolved {
			pids = append(pids, pid)
		}
	}
	s.mu.Unlock()
	for _, pid := range pids {
		s.resolve(pid)
	}
}

// processResource is the resource of p, on GPU hwid when not "". The
// caller holds s.mu.
func (s *Source) processResource(p *process, hwid string) pcommon.Resource {
	rb := s.rb
	rb.SetHostName(s.hostName)
	rb.SetProcessPid(int64(p.pid))
	if p.info.ExecutableName != "" {
		rb.SetProcessExecutableName(p.info.ExecutableName)
	}
	if p.info.ContainerID != "" {
		rb.SetContainerID(p.info.ContainerID)
	}
	if p.info.PodUID != "" {
		rb.SetK8sPodUID(p.info.PodUID)
	}
	if hwid != "" {
		rb.SetHwID(hwid)
	}
	return rb.Emit()
}

// emitStream records st's values (those not zero) on its resource. The
// caller holds s.mu.
func (s *Source) emitStream(p *process, st *stream, ts pcommon.Timestamp, host bool) {
	mb, m := s.mb, &s.cfg.Metrics
	if m.GpuUvmFaults.Enabled {
		for proc := range 2 {
			pa := metadata.AttributeProcessorGpu
			if proc == procCPU {
				pa = metadata.AttributeProcessorCPU
			}
			for a := 1; a < nAccess; a++ {
				for ft, n := range st.faults[proc][a] {
					if n == 0 {
						continue
					}
					if ft == faultNone {
						mb.RecordGpuUvmFaultsDataPoint(ts, int64(n), pa, metadata.AttributeAccessType(a))
					} else {
						mb.RecordGpuUvmFaultsDataPoint(ts, int64(n), pa, metadata.AttributeAccessType(a),
							metadata.WithFaultTypeMetricAttribute(faultTypeNames[ft]))
					}
				}
			}
		}
	}
	if m.GpuUvmFatalFaults.Enabled {
		for a := 1; a < nAccess; a++ {
			for r, n := range st.fatal[a] {
				if n != 0 {
					mb.RecordGpuUvmFatalFaultsDataPoint(ts, int64(n), metadata.AttributeAccessType(a), fatalNames[r])
				}
			}
		}
	}
	for d := 1; d < nDirection; d++ {
		var prefetch uint64
		for c := 1; c < nCause; c++ {
			if n := st.migrated[d][c]; n != 0 && m.GpuUvmMigrated.Enabled {
				mb.RecordGpuUvmMigratedDataPoint(ts, int64(n), metadata.AttributeDirection(d), metadata.AttributeCause(c))
			}
			if n := st.migrations[d][c]; n != 0 && m.GpuUvmMigrations.Enabled {
				mb.RecordGpuUvmMigrationsDataPoint(ts, int64(n), metadata.AttributeDirection(d), metadata.AttributeCause(c))
			}
		}
		prefetch = st.migrated[d][metadata.AttributeCausePrefetch]
		if prefetch != 0 && m.GpuUvmPrefetch.Enabled {
			mb.RecordGpuUvmPrefetchDataPoint(ts, int64(prefetch), metadata.AttributeDirection(d))
		}
	}
	if m.GpuUvmRemoteMapped.Enabled {
		for c := 1; c < nMapCause; c++ {
			if n := st.remote[c]; n != 0 {
				mb.RecordGpuUvmRemoteMappedDataPoint(ts, int64(n), metadata.AttributeMapCause(c))
			}
		}
	}
	if st.evictions != 0 && m.GpuUvmEvictions.Enabled {
		mb.RecordGpuUvmEvictionsDataPoint(ts, int64(st.evictions))
	}
	if st.thrashing != 0 && m.GpuUvmThrashing.Enabled {
		mb.RecordGpuUvmThrashingDataPoint(ts, int64(st.thrashing))
	}
	if st.throttling != 0 && m.GpuUvmThrottling.Enabled {
		mb.RecordGpuUvmThrottlingDataPoint(ts, int64(st.throttling))
	}
	if st.replays != 0 && m.GpuUvmFaultReplays.Enabled {
		mb.RecordGpuUvmFaultReplaysDataPoint(ts, int64(st.replays))
	}
	if st.prefetchHinted != 0 && m.GpuUvmPrefetchHinted.Enabled {
		mb.RecordGpuUvmPrefetchHintedDataPoint(ts, int64(st.prefetchHinted))
	}
	if st.readDup != 0 && m.GpuUvmReadDuplicated.Enabled {
		mb.RecordGpuUvmReadDuplicatedDataPoint(ts, int64(st.readDup))
	}
	if st.cls != nil && (m.GpuUvmFaultPattern.Enabled || m.GpuUvmFaultStride.Enabled) {
		r := st.classify()
		if m.GpuUvmFaultPattern.Enabled {
			mb.RecordGpuUvmFaultPatternDataPoint(ts, r.Confidence, patternAttr(r.Pattern))
		}
		if r.Pattern == faultpattern.Strided && m.GpuUvmFaultStride.Enabled {
			mb.RecordGpuUvmFaultStrideDataPoint(ts, r.Stride)
		}
	}
	if host {
		if m.GpuUvmEventsDropped.Enabled {
			if p.driverDropped != 0 {
				mb.RecordGpuUvmEventsDroppedDataPoint(ts, int64(p.driverDropped), metadata.AttributeDropReasonDriverQueueFull)
			}
			if p.decodeErrors != 0 {
				mb.RecordGpuUvmEventsDroppedDataPoint(ts, int64(p.decodeErrors), metadata.AttributeDropReasonDecodeError)
			}
		}
		if m.GpuUvmFaultSamplesDropped.Enabled {
			if p.samplesRate != 0 {
				mb.RecordGpuUvmFaultSamplesDroppedDataPoint(ts, int64(p.samplesRate), metadata.AttributeDropReasonRateLimited)
			}
			if p.samplesFull != 0 {
				mb.RecordGpuUvmFaultSamplesDroppedDataPoint(ts, int64(p.samplesFull), metadata.AttributeDropReasonBufferFull)
			}
		}
	}
	opts := []metadata.ResourceMetricsOption{metadata.WithResource(s.processResource(p, st.hwid))}
	if (st.sizeH != nil && st.sizeH.Count > 0) || (st.durH != nil && st.durH.Count > 0) {
		opts = append(opts, metadata.WithMetrics(func(ms pmetric.MetricSlice) { s.appendHistograms(ms, st, ts) }))
	}
	mb.EmitForResource(opts...)
}

// Histogram metric names and descriptions.
const (
	batchSizeName     = "gpu.uvm.fault.batch.size"
	batchDurationName = "gpu.uvm.fault.batch.duration"
)

func (s *Source) appendHistograms(ms pmetric.MetricSlice, st *stream, ts pcommon.Timestamp) {
	if h := st.sizeH; h != nil && h.Count > 0 {
		h.AppendMetric(ms, batchSizeName, "Faults of the process in each GPU fault batch the driver serviced.",
			"{fault}", s.cfg.Histograms.BatchSize.Buckets, s.start, ts)
	}
	if h := st.durH; h != nil && h.Count > 0 {
		h.AppendMetric(ms, batchDurationName,
			"Service time of a GPU fault batch: from the driver fetching its first fault to the replay that ended it (driver CPU clock).",
			"s", s.cfg.Histograms.BatchDuration.Buckets, s.start, ts)
	}
}

func patternAttr(p faultpattern.Pattern) metadata.AttributePattern {
	switch p {
	case faultpattern.Sequential:
		return metadata.AttributePatternSequential
	case faultpattern.Strided:
		return metadata.AttributePatternStrided
	case faultpattern.Random:
		return metadata.AttributePatternRandom
	case faultpattern.HotSet:
		return metadata.AttributePatternHotSet
	}
	return metadata.AttributePatternUnknown
}
