package uvm

import (
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// streamsPerProcess bounds the fault streams of the hub: a process's CPU
// faults and those on up to three GPUs, on average, per max_processes.
const streamsPerProcess = 4

// newHub returns the hub of the fault stream and registers it under the
// receiver's component ID for the gpupolicy processor, or nil when the
// stream is off.
func newHub(cfg Config, id string) (*faultstream.Hub, func()) {
	if !cfg.Enabled || !cfg.FaultStream.Enabled {
		return nil, func() {}
	}
	h := faultstream.NewHub(cfg.FaultStream.Capacity, cfg.MaxProcesses*streamsPerProcess)
	return h, faultstream.Register(id, h)
}

// publish adds a GPU or CPU fault of p (on st) to the fault stream. The
// caller holds s.mu.
func (s *Source) publish(p *process, st *stream, ev *uvmtools.Event) {
	if s.hub == nil {
		return
	}
	if st.fs == nil {
		if st.fsRefused {
			return
		}
		st.fs = s.hub.Stream(faultstream.Key{PID: p.pid, HWID: st.hwid})
		if st.fs == nil {
			st.fsRefused = true
			return
		}
	}
	t := ev.TimeGPU
	if ev.Type == uvmtools.EventCPUFault || t == 0 {
		t = ev.Time
	}
	st.fs.Add(faultstream.Sample{TimeNs: t, Addr: ev.Address, Access: streamAccess(ev.Access)})
}

func streamAccess(a uvmtools.AccessType) faultstream.Access {
	switch a {
	case uvmtools.AccessRead:
		return faultstream.AccessRead
	case uvmtools.AccessWrite:
		return faultstream.AccessWrite
	case uvmtools.AccessAtomic:
		return faultstream.AccessAtomic
	case uvmtools.AccessPrefetch:
		return faultstream.AccessPrefetch
	}
	return faultstream.AccessUnknown
}

// Hub returns the fault stream's hub (nil when fault_stream is off).
func (s *Source) Hub() *faultstream.Hub { return s.hub }
