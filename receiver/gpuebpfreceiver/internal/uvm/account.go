package uvm

import (
	"math"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// Bounds of per-process state.
const (
	// maxGPUsPerProcess bounds the GPU streams of a process; events of
	// further GPUs are accounted on the process's GPU-less resource.
	maxGPUsPerProcess = 64
	// maxOpenBatches bounds the fault batches of one GPU stream waiting
	// for their replay. The driver queues replays when the GPU work
	// completes, so a dozen or more batches can be open at once (16 in
	// the recorded fixture); the oldest beyond this is closed without a
	// duration.
	maxOpenBatches = 256
)

// Index spaces of the counter arrays: the generated enums start at 1.
const (
	nAccess     = int(metadata.AttributeAccessTypeInvalid) + 1
	nDirection  = int(metadata.AttributeDirectionHtoh) + 1
	nCause      = int(metadata.AttributeCauseOther) + 1
	nMapCause   = int(metadata.AttributeMapCauseOther) + 1
	nFaultType  = 18 // the driver's 17 fault types and "unknown"
	faultNone   = nFaultType
	nFatal      = 8 // the driver's 7 fatal reasons and "unknown"
	procGPU     = 0
	procCPU     = 1
	unknownType = nFaultType - 1
)

var faultTypeNames, fatalNames = func() (ft [nFaultType]string, fr [nFatal]string) {
	for i := range unknownType {
		ft[i] = uvmtools.FaultType(i).String()
	}
	ft[unknownType] = "unknown"
	for i := range nFatal - 1 {
		fr[i] = uvmtools.FatalReason(i).String()
	}
	fr[nFatal-1] = "unknown"
	return
}()

func accessIndex(a uvmtools.AccessType) metadata.AttributeAccessType {
	switch a {
	case uvmtools.AccessRead:
		return metadata.AttributeAccessTypeRead
	case uvmtools.AccessWrite:
		return metadata.AttributeAccessTypeWrite
	case uvmtools.AccessAtomic:
		return metadata.AttributeAccessTypeAtomic
	case uvmtools.AccessPrefetch:
		return metadata.AttributeAccessTypePrefetch
	}
	return metadata.AttributeAccessTypeInvalid
}

func faultTypeIndex(f uvmtools.FaultType) int {
	if int(f) < unknownType {
		return int(f)
	}
	return unknownType
}

func directionOf(d uvmtools.Direction) metadata.AttributeDirection {
	switch d {
	case uvmtools.DirectionCPUToGPU:
		return metadata.AttributeDirectionHtod
	case uvmtools.DirectionGPUToCPU:
		return metadata.AttributeDirectionDtoh
	case uvmtools.DirectionGPUToGPU:
		return metadata.AttributeDirectionDtod
	}
	return metadata.AttributeDirectionHtoh
}

// causeOf maps the driver's migration cause. CPU-to-CPU migrations carry
// an untranslated internal cause (a driver quirk): other.
func causeOf(c uvmtools.MigrationCause, d uvmtools.Direction) metadata.AttributeCause {
	if d == uvmtools.DirectionCPUToCPU {
		return metadata.AttributeCauseOther
	}
	switch c {
	case uvmtools.CauseCoherence:
		return metadata.AttributeCauseFault
	case uvmtools.CausePrefetch:
		return metadata.AttributeCausePrefetch
	case uvmtools.CauseEviction:
		return metadata.AttributeCauseEviction
	case uvmtools.CauseUser:
		return metadata.AttributeCauseExplicit
	}
	return metadata.AttributeCauseOther
}

func mapCauseOf(c uvmtools.MapRemoteCause) metadata.AttributeMapCause {
	if c >= 1 && c <= 5 { // coherence, thrashing, policy, out_of_memory, eviction
		return metadata.AttributeMapCause(c)
	}
	return metadata.AttributeMapCauseOther
}

// openBatch is a GPU fault batch waiting for its replay.
type openBatch struct {
	id     uint32
	faults uint32
	first  uint64 // earliest CPU timestamp of its faults (ns)
}

// stream is what is accounted for one process on one GPU (hwid set), or
// for the process's events that concern no GPU or an unknown one.
type stream struct {
	hwid string

	faults     [2][nAccess][nFaultType + 1]uint64 // [procGPU|procCPU][access][fault type or faultNone]
	fatal      [nAccess][nFatal]uint64
	migrated   [nDirection][nCause]uint64
	migrations [nDirection][nCause]uint64
	remote     [nMapCause]uint64
	evictions  uint64
	thrashing  uint64
	throttling uint64
	replays    uint64
	readDup    uint64
	// prefetchHinted: bytes the prefetcher added to fault migrations
	// (fentry backend only)
	prefetchHinted uint64

	batches []openBatch // ascending arrival
	sizeH   *histogram.Histogram
	durH    *histogram.Histogram

	cls       *faultpattern.Classifier // nil: classification off
	dirty     bool                     // faults added since result
	result    faultpattern.Result
	lastFault uint64 // CPU time of the latest GPU fault

	fs        *faultstream.Stream // fault stream; nil until the first fault
	fsRefused bool                // the hub had no room for it
}

// process is the accounting of one pid.
type process struct {
	pid      int
	info     Process
	resolved bool // info came from the Attributor
	gone     bool // untracked or exited: emitted once more, then forgotten

	host stream // no GPU
	gpus map[uvmtools.UUID]*stream

	// lookup cache: the stream of the last GPU index seen
	lastIdx   uvmtools.Processor
	lastTabN  int
	lastGPU   *stream
	patterned *stream // the GPU stream with the latest GPU fault

	driverDropped uint64
	decodeErrors  uint64

	limiter      tokenBucket
	samplesRate  uint64 // fault samples dropped: rate_limited
	samplesFull  uint64 // fault samples dropped: buffer_full
	samplesTaken uint64
}

// gpuStream returns the stream of GPU index p, or the host stream for the
// CPU, an index not in table, or a GPU beyond maxGPUsPerProcess. The
// stream of a physical GPU is shared by its MIG instances (one hw.id).
func (s *Source) gpuStream(p *process, table *uvmtools.ProcessorTable, idx uvmtools.Processor) *stream {
	if idx == uvmtools.CPU {
		return &p.host
	}
	if p.lastGPU != nil && idx == p.lastIdx && table.Len() == p.lastTabN {
		return p.lastGPU
	}
	info, ok := table.Lookup(idx)
	if !ok {
		return &p.host
	}
	st := p.gpus[info.Parent]
	if st == nil {
		if len(p.gpus) >= maxGPUsPerProcess {
			return &p.host
		}
		st = s.newStream(info.HWID())
		if p.gpus == nil {
			p.gpus = map[uvmtools.UUID]*stream{}
		}
		p.gpus[info.Parent] = st
	}
	p.lastIdx, p.lastTabN, p.lastGPU = idx, table.Len(), st
	return st
}

func (s *Source) newStream(hwid string) *stream {
	st := &stream{hwid: hwid}
	s.initStream(st)
	return st
}

func (s *Source) initStream(st *stream) {
	if s.cfg.Histograms.BatchSize.Enabled {
		st.sizeH = histogram.New(s.cfg.Histograms.BatchSize.Buckets)
	}
	if s.cfg.Histograms.BatchDuration.Enabled {
		st.durH = histogram.New(s.cfg.Histograms.BatchDuration.Buckets)
	}
}

// account adds one event to p. The caller holds s.mu. It returns false
// for a GPU index that table does not know (the caller may re-read it).
func (s *Source) account(p *process, table *uvmtools.ProcessorTable, ev *uvmtools.Event) (known bool) {
	known = true
	gpu := func(idx uvmtools.Processor) *stream {
		st := s.gpuStream(p, table, idx)
		if st == &p.host && idx != uvmtools.CPU {
			known = false
		}
		return st
	}
	switch ev.Type {
	case uvmtools.EventGPUFault:
		st := gpu(ev.Processor)
		st.faults[procGPU][accessIndex(ev.Access)][faultTypeIndex(ev.FaultType)]++
		s.batchFault(st, ev)
		if st.cls == nil && s.cfg.PatternWindow > 0 {
			st.cls = faultpattern.New(faultpattern.Options{Window: s.cfg.PatternWindow})
		}
		if st.cls != nil {
			if idle := uint64(s.cfg.PatternIdleReset); idle > 0 && st.lastFault != 0 && ev.Time > st.lastFault+idle {
				st.cls.Reset()
			}
			st.cls.Add(faultpattern.Sample{
				Addr:   ev.Address,
				Write:  ev.Access == uvmtools.AccessWrite || ev.Access == uvmtools.AccessAtomic,
				TimeNs: ev.TimeGPU,
			})
			st.dirty = true
			st.lastFault = ev.Time
			p.patterned = st
		}
		if s.cfg.FaultSamples.Enabled {
			s.sample(p, st, ev)
		}
		s.publish(p, st, ev)
	case uvmtools.EventCPUFault:
		p.host.faults[procCPU][accessIndex(ev.Access)][faultNone]++
		s.publish(p, &p.host, ev)
		if s.cfg.FaultSamples.Enabled {
			s.sample(p, &p.host, ev)
		}
	case uvmtools.EventMigration:
		d := ev.Direction()
		idx := ev.Dst // htod, dtod: the destination GPU
		switch d {
		case uvmtools.DirectionGPUToCPU:
			idx = ev.Src
		case uvmtools.DirectionCPUToCPU:
			idx = uvmtools.CPU
		}
		st := gpu(idx)
		dir, cause := directionOf(d), causeOf(ev.Cause, d)
		addBytes(&st.migrated[dir][cause], ev.Size)
		st.migrations[dir][cause]++
	case uvmtools.EventGPUFaultReplay:
		st := gpu(ev.Processor)
		s.batchReplay(st, ev)
	case uvmtools.EventFatalFault:
		st := gpu(ev.Processor)
		st.fatal[accessIndex(ev.Access)][min(int(ev.Fatal), nFatal-1)]++
	case uvmtools.EventEviction:
		gpu(ev.Src).evictions++
	case uvmtools.EventThrashingDetected:
		p.host.thrashing++
	case uvmtools.EventThrottlingStart:
		gpu(ev.Processor).throttling++
	case uvmtools.EventMapRemote:
		addBytes(&gpu(ev.Src).remote[mapCauseOf(ev.MapCause)], ev.Size)
	case uvmtools.EventReadDuplicate:
		addBytes(&p.host.readDup, ev.Size)
	}
	return known
}

// addBytes adds an event's byte count to a cumulative sum, saturating at
// math.MaxInt64 (what an int64 data point holds): a size no event can
// carry (a corrupt entry) must not wrap a monotonic sum negative.
func addBytes(sum *uint64, n uint64) {
	*sum = min(*sum+min(n, math.MaxInt64), math.MaxInt64)
}

// batchFault counts a GPU fault in its batch.
//
// A batch is what the driver fetched from one GPU's fault buffer and
// serviced together; its faults carry the batch id, and the driver ends
// it with a replay event of that id (for replayable faults). Its size is
// the number of this process's faults in it; its duration is the replay's
// CPU timestamp minus the earliest CPU timestamp of its faults: from the
// driver fetching the batch to issuing the replay, after servicing every
// fault in it (migrations, mappings). Migration end times cannot serve:
// the driver stamps them when it notices completion, often milliseconds
// later, for a whole phase at once.
func (s *Source) batchFault(st *stream, ev *uvmtools.Event) {
	if st.sizeH == nil && st.durH == nil && !s.cfg.Metrics.GpuUvmFaultReplays.Enabled {
		return
	}
	for i := len(st.batches) - 1; i >= 0; i-- {
		b := &st.batches[i]
		if b.id == ev.Batch {
			b.faults++
			if ev.Time < b.first {
				b.first = ev.Time
			}
			return
		}
	}
	if len(st.batches) == maxOpenBatches {
		s.closeBatch(st, 0, 0) // no replay seen: size only
	}
	st.batches = append(st.batches, openBatch{id: ev.Batch, faults: 1, first: ev.Time})
}

// batchReplay closes the batch a replay ends. Replays are broadcast to
// every traced process: one that ends no batch of this process is ignored.
func (s *Source) batchReplay(st *stream, ev *uvmtools.Event) {
	for i := range st.batches {
		if st.batches[i].id == ev.Batch {
			st.replays++
			s.closeBatch(st, i, ev.Time)
			return
		}
	}
}

// closeBatch records batch i and removes it; end 0 means no replay.
func (s *Source) closeBatch(st *stream, i int, end uint64) {
	b := st.batches[i]
	st.batches = append(st.batches[:i], st.batches[i+1:]...)
	if st.sizeH != nil {
		st.sizeH.Record(s.cfg.Histograms.BatchSize.Buckets, float64(b.faults))
	}
	if st.durH != nil && end != 0 && end >= b.first {
		st.durH.Record(s.cfg.Histograms.BatchDuration.Buckets, float64(end-b.first)/1e9)
	}
}

// classify brings st.result up to date.
func (st *stream) classify() faultpattern.Result {
	if st.cls != nil && st.dirty {
		st.result = st.cls.Classify()
		st.dirty = false
	}
	return st.result
}
