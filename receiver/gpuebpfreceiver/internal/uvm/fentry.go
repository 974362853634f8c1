package uvm

import (
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmfentry"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// consumeRecord accounts one record of the fentry backend. Records that
// the tools interface also reports become the same uvmtools.Event and go
// through account, so both backends count alike; the others (fault
// batches, servicing passes, root chunk evictions, prefetch decisions)
// are counted here.
func (s *Source) consumeRecord(r uvmfentry.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	be := &s.be
	t := be.clock.raw(r.Start)
	switch r.Type {
	case uvmfentry.TypeFaultBatch:
		if g := s.gpuStatsOf(r.GPU); g != nil {
			g.batches++
			g.entries[metadata.AttributeEntryKindFetched] += uint64(r.Count)
			g.entries[metadata.AttributeEntryKindDuplicate] += uint64(r.Aux[1])
			g.entries[metadata.AttributeEntryKindInvalidPrefetch] += uint64(r.Aux[2])
		}
		return
	case uvmfentry.TypeFaultService:
		if g := s.gpuStatsOf(r.GPU); g != nil && g.serviceH != nil && r.Flags&uvmfentry.FlagNoStart == 0 {
			g.serviceH.Record(s.cfg.Histograms.ServiceDuration.Buckets, float64(r.Duration())/1e9)
		}
		return
	case uvmfentry.TypeRootEviction:
		if g := s.gpuStatsOf(r.GPU); g != nil && r.Status == 0 {
			g.rootEvictions++
		}
		return
	case uvmfentry.TypeReplay:
		// Like the tools interface's replay events, a replay reaches every
		// process: it ends the batch of that id on the GPU for each one
		// with faults in it.
		s.learnGPU(r.Src, r.GPU)
		ev := uvmtools.Event{Type: uvmtools.EventGPUFaultReplay, Version: uvmtools.V2,
			Processor: uvmtools.Processor(r.Src), Batch: r.Batch, Time: t}
		for _, p := range s.procs {
			if st := p.gpus[r.GPU]; st != nil {
				s.batchReplay(st, &ev)
			}
		}
		return
	}
	if r.PID == 0 {
		be.noOwner++
		return
	}
	pid := int(r.PID)
	if _, ok := s.tracks[pid]; !ok {
		return // not a process the receiver traces (or one untracked)
	}
	p := s.process(pid)
	if p == nil {
		return
	}
	switch r.Type {
	case uvmfentry.TypeGPUFault, uvmfentry.TypeThrottling, uvmfentry.TypeEviction:
		s.learnGPU(r.Src, r.GPU)
	case uvmfentry.TypeMigration:
		if r.Dst != uvmfentry.CPU {
			s.learnGPU(r.Dst, r.GPU)
		} else {
			s.learnGPU(r.Src, r.GPU)
		}
	case uvmfentry.TypePrefetch:
		s.learnGPU(r.Dst, r.GPU)
		st := s.gpuStream(p, &be.table, uvmtools.Processor(r.Dst))
		addBytes(&st.prefetchHinted, r.Bytes)
		return
	}
	ev, n := toolsEvent(&r, t)
	for range n {
		s.account(p, &be.table, &ev)
	}
	// Fault samples are handed on as the tools backend's reader does, at
	// most every poll interval.
	if s.pending.n > 0 && r.Start-be.lastFlush >= uint64(s.cfg.PollInterval) {
		s.flushLogsLocked()
		be.lastFlush = r.Start
	}
}

// toolsEvent is the tools interface's event for r, at raw time t, and how
// many times it counts: a GPU fault record stands for the fault and the
// faults merged with it, each of which the tools interface reports.
func toolsEvent(r *uvmfentry.Record, t uint64) (uvmtools.Event, int) {
	ev := uvmtools.Event{Version: uvmtools.V2, Time: t, Address: r.Address}
	switch r.Type {
	case uvmfentry.TypeGPUFault:
		ev.Type = uvmtools.EventGPUFault
		ev.Processor = uvmtools.Processor(r.Src)
		ev.Access = r.Access.ToolsAccess()
		ev.FaultType = r.FaultType
		ev.Batch = r.Batch
		ev.TimeGPU = r.Value
		return ev, int(min(max(r.Count, 1), maxInstances))
	case uvmfentry.TypeCPUFault:
		ev.Type = uvmtools.EventCPUFault
		ev.Processor = uvmtools.CPU
		ev.Access = r.Access.ToolsAccess()
		ev.PID, ev.TID, ev.CPUID, ev.PC = r.PID, r.TID, r.Aux[0], r.Value
	case uvmfentry.TypeMigration:
		ev.Type = uvmtools.EventMigration
		ev.Src, ev.Dst = uvmtools.Processor(r.Src), uvmtools.Processor(r.Dst)
		ev.SrcNUMA, ev.DstNUMA = int32(r.SrcNUMA), int32(r.DstNUMA)
		ev.Size = r.Bytes
		ev.Cause = r.Cause.ToolsCause()
	case uvmfentry.TypeThrashing:
		ev.Type = uvmtools.EventThrashingDetected
		ev.Size = r.Bytes
		ev.Processors[0] = r.Value
	case uvmfentry.TypeThrottling:
		ev.Type = uvmtools.EventThrottlingStart
		ev.Processor = uvmtools.Processor(r.Src)
	case uvmfentry.TypeEviction:
		if r.Status != 0 {
			return ev, 0 // the eviction failed: nothing left the GPU
		}
		ev.Type = uvmtools.EventEviction
		ev.Src, ev.Dst = uvmtools.Processor(r.Src), uvmtools.CPU
	default:
		return ev, 0
	}
	return ev, 1
}

// emitHost records what concerns no process on a resource with host.name
// only: the backend running, events of processes beyond max_processes, and
// the fentry backend's losses. The caller holds s.mu.
func (s *Source) emitHost(ts pcommon.Timestamp) {
	m := &s.cfg.Metrics
	emitted := false
	if s.be.kind != "" && m.GpuUvmBackendActive.Enabled {
		b := metadata.AttributeBackendTools
		if s.be.kind == BackendFentry {
			b = metadata.AttributeBackendFentry
		}
		s.mb.RecordGpuUvmBackendActiveDataPoint(ts, 1, b)
		emitted = true
	}
	if m.GpuUvmEventsDropped.Enabled {
		drop := func(n uint64, reason metadata.AttributeDropReason) {
			if n > 0 {
				s.mb.RecordGpuUvmEventsDroppedDataPoint(ts, int64(n), reason)
				emitted = true
			}
		}
		drop(s.overLimit, metadata.AttributeDropReasonProcessLimit)
		if s.be.probe != nil {
			drop(s.be.probe.Drops().RingFull, metadata.AttributeDropReasonRingFull)
			drop(s.be.probe.Malformed(), metadata.AttributeDropReasonDecodeError)
			drop(s.be.noOwner, metadata.AttributeDropReasonNoOwner)
		}
	}
	if !emitted {
		return
	}
	rb := s.rb
	rb.SetHostName(s.hostName)
	s.mb.EmitForResource(metadata.WithResource(rb.Emit()))
}

// emitGPUs records the fentry backend's per-GPU statistics, one resource
// per GPU (host.name, hw.id). The caller holds s.mu.
func (s *Source) emitGPUs(ts pcommon.Timestamp) {
	if len(s.be.gpus) == 0 {
		return
	}
	gpus := make([]*gpuStats, 0, len(s.be.gpus))
	for _, g := range s.be.gpus {
		gpus = append(gpus, g)
	}
	slices.SortFunc(gpus, func(a, b *gpuStats) int { return strings.Compare(a.hwid, b.hwid) })
	m := &s.cfg.Metrics
	for _, g := range gpus {
		if g.batches > 0 && m.GpuUvmFaultBatches.Enabled {
			s.mb.RecordGpuUvmFaultBatchesDataPoint(ts, int64(g.batches))
		}
		if m.GpuUvmFaultBatchEntries.Enabled {
			for k := 1; k < nEntryKind; k++ {
				if n := g.entries[k]; n > 0 {
					s.mb.RecordGpuUvmFaultBatchEntriesDataPoint(ts, int64(n), metadata.AttributeEntryKind(k))
				}
			}
		}
		if g.rootEvictions > 0 && m.GpuUvmRootChunkEvictions.Enabled {
			s.mb.RecordGpuUvmRootChunkEvictionsDataPoint(ts, int64(g.rootEvictions))
		}
		rb := s.rb
		rb.SetHostName(s.hostName)
		rb.SetHwID(g.hwid)
		opts := []metadata.ResourceMetricsOption{metadata.WithResource(rb.Emit())}
		if h := g.serviceH; h != nil && h.Count > 0 {
			opts = append(opts, metadata.WithMetrics(func(ms pmetric.MetricSlice) {
				h.AppendMetric(ms, serviceDurationName,
					"Duration of a servicing pass of the GPU's replayable fault buffer: fetching, servicing and replaying batches until the buffer is empty (fentry backend).",
					"s", s.cfg.Histograms.ServiceDuration.Buckets, s.start, ts)
			}))
		}
		s.mb.EmitForResource(opts...)
	}
}

const serviceDurationName = "gpu.uvm.fault.service.duration"
