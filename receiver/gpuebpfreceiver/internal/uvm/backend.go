package uvm

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmfentry"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// FentrySource is what the Source needs of a *uvmfentry.Probe; tests
// inject fakes through WithFentryLoader.
type FentrySource interface {
	Run(handle func(uvmfentry.Record)) error
	// Drain stops the kernel side sending records and makes Run return
	// once it has read the records already in the ring (Finish).
	Drain() error
	Track(pid uint32) error
	Untrack(pid uint32)
	Drops() uvmfentry.Drops
	Malformed() uint64
	Skipped() []uvmfentry.Skipped
	Close() error
}

// FentryLoader loads the fentry backend, as uvmfentry.Open does; its
// errors should wrap uvmfentry's.
type FentryLoader func(uvmfentry.Options) (FentrySource, error)

func defaultFentryLoader(opts uvmfentry.Options) (FentrySource, error) {
	p, err := uvmfentry.Open(opts)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return p, nil
}

// backendState is the backend chosen at Start and the fentry backend's
// accounting state.
type backendState struct {
	once sync.Once
	err  error // Start's result

	// Under Source.mu from here on.
	kind  string // BackendTools, BackendFentry; "" before Start or when none runs
	probe FentrySource
	// The processor ids of the GPUs seen so far and their UUIDs, as a table
	// for account (the ids are the driver's, the same for every process).
	ids       map[uvmtools.Processor]uvmtools.UUID
	table     uvmtools.ProcessorTable
	gpus      map[uvmtools.UUID]*gpuStats
	noOwner   uint64 // records of no process
	lastFlush uint64 // record time of the last fault samples flush
	clock     monoRaw
}

// maxFentryGPUs bounds the per-GPU statistics (a host has at most a few
// dozen GPUs; the driver numbers 32).
const maxFentryGPUs = 64

// maxInstances bounds the events one GPU fault record stands for.
const maxInstances = 1024

// Start chooses the backend (config backend) once: tools; fentry (an error
// when it cannot run, saying why); or auto: fentry where it can run, else
// tools, logging once why not. It logs the backend chosen. Track calls it
// when the receiver has not, so a Source works either way; later calls
// return the first one's result.
func (s *Source) Start(context.Context) error {
	if !s.cfg.Enabled {
		return nil
	}
	s.be.once.Do(s.selectBackend)
	return s.be.err
}

func (s *Source) selectBackend() {
	switch s.cfg.Backend {
	case BackendTools:
		s.setBackend(BackendTools)
	case BackendFentry:
		if err := s.startFentry(); err != nil {
			s.be.err = fmt.Errorf("uvm::backend is %s: %w", BackendFentry, err)
			s.log.Error("UVM fentry backend cannot run; the UVM source is off", zap.Error(err))
		}
	default:
		if err := s.startFentry(); err != nil {
			s.log.Info("UVM fentry backend cannot run here; using the UVM tools backend", zap.Error(err))
			s.setBackend(BackendTools)
		}
	}
}

func (s *Source) setBackend(kind string) {
	s.mu.Lock()
	s.be.kind = kind
	s.mu.Unlock()
	s.log.Info("UVM source started", zap.String("backend", kind))
}

// backend returns the backend running ("" before Start or if none).
func (s *Source) backend() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.be.kind
}

// startFentry loads the fentry backend and starts its reader.
func (s *Source) startFentry() error {
	probe, err := s.opts.fentry(uvmfentry.Options{RingBufferSize: s.cfg.Fentry.RingBufferSize, FilterPIDs: true})
	if err != nil {
		return err
	}
	if sk := probe.Skipped(); len(sk) > 0 {
		var lost []string
		for _, k := range sk {
			lost = append(lost, k.String()+" (no "+k.Hook.Loses+")")
		}
		s.log.Warn("UVM fentry backend: functions this driver does not let it trace", zap.Strings("skipped", lost))
	}
	s.mu.Lock()
	if s.closing || s.stopped {
		s.mu.Unlock()
		_ = probe.Close()
		return ErrStopped
	}
	s.be.probe = probe
	s.be.ids = map[uvmtools.Processor]uvmtools.UUID{}
	s.be.table = uvmtools.NewProcessorTable(uvmtools.V2, cpuInfo)
	s.be.gpus = map[uvmtools.UUID]*gpuStats{}
	s.be.clock = monoRaw{now: s.opts.monoRawOffset}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		if err := probe.Run(s.consumeRecord); err != nil {
			s.log.Warn("UVM fentry ring reader stopped", zap.Error(err))
		}
	}()
	s.setBackend(BackendFentry)
	return nil
}

var cpuInfo = uvmtools.ProcessorInfo{Index: uvmtools.CPU, UUID: uvmtools.CPUUUID, Parent: uvmtools.CPUUUID}

// trackFentry starts accounting pid's records (Track registered it):
// there is nothing to open per process, only the kernel to tell.
func (s *Source) trackFentry(pid int) {
	if err := s.be.probe.Track(uint32(pid)); err != nil {
		// The kernel's pid table is full: this process's records are
		// filtered out in the kernel.
		s.log.Debug("UVM fentry backend cannot select process", zap.Int("pid", pid), zap.Error(err))
	}
	s.resolve(pid)
}

// untrackFentry ends pid's tracking: with no reader to mark it, the
// process is gone at once (reported by the next Scrape, then forgotten).
// Records still in the ring for it are ignored. The caller holds s.mu.
func (s *Source) untrackFentry(pid int) {
	s.be.probe.Untrack(uint32(pid))
	if p := s.procs[pid]; p != nil {
		p.gone = true
	}
}

// closeBackend closes the fentry backend (which stops its reader, if
// still running).
func (s *Source) closeBackend() {
	s.mu.Lock()
	probe := s.be.probe
	s.mu.Unlock()
	if probe != nil {
		_ = probe.Close()
	}
}

// Entry kinds of gpu.uvm.fault.batch.entries, as the generated enum
// numbers them.
const nEntryKind = 4

// gpuStats is what the fentry backend accounts per GPU, for all processes
// together: the driver services a GPU's faults in batches that mix them.
type gpuStats struct {
	hwid          string
	batches       uint64
	entries       [nEntryKind]uint64
	rootEvictions uint64
	serviceH      *histogram.Histogram
}

// learnGPU records that processor id is the GPU uuid. The caller holds
// s.mu.
func (s *Source) learnGPU(id uint16, uuid uvmtools.UUID) {
	p := uvmtools.Processor(id)
	if p == uvmtools.CPU || uuid.IsZero() || s.be.ids[p] == uuid {
		return
	}
	s.be.ids[p] = uuid
	infos := []uvmtools.ProcessorInfo{cpuInfo}
	for idx, u := range s.be.ids {
		infos = append(infos, uvmtools.ProcessorInfo{Index: idx, UUID: u, Parent: u})
	}
	s.be.table = uvmtools.NewProcessorTable(uvmtools.V2, infos...)
}

// gpuStatsOf returns uuid's statistics (nil for no GPU or beyond the
// bound). The caller holds s.mu.
func (s *Source) gpuStatsOf(uuid uvmtools.UUID) *gpuStats {
	if uuid.IsZero() {
		return nil
	}
	g := s.be.gpus[uuid]
	if g == nil {
		if len(s.be.gpus) >= maxFentryGPUs {
			return nil
		}
		g = &gpuStats{hwid: "GPU-" + uuid.String()}
		if s.cfg.Histograms.ServiceDuration.Enabled {
			g.serviceH = histogram.New(s.cfg.Histograms.ServiceDuration.Buckets)
		}
		s.be.gpus[uuid] = g
	}
	return g
}
