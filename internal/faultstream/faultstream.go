// Package faultstream shares each process's most recent page faults between
// the component that sees them (the gpuebpf receiver's UVM source) and the
// one that decides from them (the gpupolicy processor), inside one
// collector.
//
// Why a hub and not the telemetry pipeline: fault addresses are exported as
// log records only when a user asks (a fault storm is hundreds of thousands
// of faults a second), and a policy must not depend on what a pipeline
// happens to forward. The hub is bounded: a ring of the last Capacity faults
// per stream (one process on one GPU, or its CPU faults), at most
// MaxStreams streams; the oldest fault is overwritten, the newest stream
// beyond the bound is refused and counted.
//
// Publishers register a Hub under their component ID (Register); readers
// look it up by that ID (Lookup), so a processor configured to follow
// "gpuebpf/2" reads that receiver's faults only. Every method is safe for
// concurrent use; Add takes one uncontended lock of its stream and
// allocates nothing.
package faultstream

import (
	"slices"
	"sync"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
)

// Access is the kind of access that faulted.
type Access uint8

// Accesses, as the UVM driver reports them.
const (
	AccessUnknown Access = iota
	AccessRead
	AccessWrite
	AccessAtomic
	AccessPrefetch
)

var accessNames = [...]string{"unknown", "read", "write", "atomic", "prefetch"}

// String returns "read", "write", "atomic", "prefetch" or "unknown".
func (a Access) String() string {
	if int(a) < len(accessNames) {
		return accessNames[a]
	}
	return "unknown"
}

// Sample is one fault.
type Sample struct {
	// TimeNs orders a stream's samples: the GPU's own timestamp for GPU
	// faults (it undoes the driver's sorting of each batch by address), the
	// host's for CPU faults.
	TimeNs uint64
	Addr   uint64
	Access Access
}

// Key names a stream.
type Key struct {
	PID int
	// HWID is the GPU's hw.id (GPU-<uuid>); empty for the process's CPU
	// faults.
	HWID string
}

// Defaults and bounds.
const (
	DefaultCapacity   = 4096
	MaxCapacity       = 1 << 20
	DefaultMaxStreams = 4096
)

// Stream is the ring of one Key's latest faults.
type Stream struct {
	mu    sync.Mutex
	buf   []Sample
	next  int    // index the next sample goes to
	total uint64 // samples ever added
}

// Add appends s, overwriting the oldest sample when the ring is full.
func (st *Stream) Add(s Sample) {
	st.mu.Lock()
	st.buf[st.next] = s
	st.next++
	if st.next == len(st.buf) {
		st.next = 0
	}
	st.total++
	st.mu.Unlock()
}

// Recent appends the stream's samples, oldest first, to dst and returns it
// with the number of samples ever added (those not returned were
// overwritten).
func (st *Stream) Recent(dst []Sample) ([]Sample, uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.total < uint64(len(st.buf)) {
		return append(dst, st.buf[:st.next]...), st.total
	}
	dst = append(dst, st.buf[st.next:]...)
	return append(dst, st.buf[:st.next]...), st.total
}

// Hub holds the streams of one publisher.
type Hub struct {
	capacity   int
	maxStreams int

	mu      sync.RWMutex
	streams map[Key]*Stream
	refused uint64 // streams refused by maxStreams
}

// NewHub returns a hub of rings of capacity samples (0: DefaultCapacity,
// capped at MaxCapacity) and at most maxStreams streams (0:
// DefaultMaxStreams).
func NewHub(capacity, maxStreams int) *Hub {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	capacity = min(capacity, MaxCapacity)
	if maxStreams <= 0 {
		maxStreams = DefaultMaxStreams
	}
	return &Hub{capacity: capacity, maxStreams: maxStreams, streams: map[Key]*Stream{}}
}

// Capacity is the number of samples each stream keeps.
func (h *Hub) Capacity() int { return h.capacity }

// Stream returns k's stream, creating it; nil when MaxStreams streams exist
// already (counted in Refused). Publishers keep the pointer and Add to it.
func (h *Hub) Stream(k Key) *Stream {
	h.mu.RLock()
	st := h.streams[k]
	h.mu.RUnlock()
	if st != nil {
		return st
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if st = h.streams[k]; st != nil {
		return st
	}
	if len(h.streams) >= h.maxStreams {
		h.refused++
		return nil
	}
	st = &Stream{buf: make([]Sample, h.capacity)}
	h.streams[k] = st
	return st
}

// Remove forgets every stream of pid (the process exited).
func (h *Hub) Remove(pid int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k := range h.streams {
		if k.PID == pid {
			delete(h.streams, k)
		}
	}
}

// Keys returns the streams' keys, ordered by pid then hw.id.
func (h *Hub) Keys() []Key {
	h.mu.RLock()
	keys := make([]Key, 0, len(h.streams))
	for k := range h.streams {
		keys = append(keys, k)
	}
	h.mu.RUnlock()
	slices.SortFunc(keys, func(a, b Key) int {
		if a.PID != b.PID {
			return a.PID - b.PID
		}
		switch {
		case a.HWID < b.HWID:
			return -1
		case a.HWID > b.HWID:
			return 1
		}
		return 0
	})
	return keys
}

// Recent appends k's samples, oldest first, to dst; ok is false if there is
// no such stream.
func (h *Hub) Recent(k Key, dst []Sample) (samples []Sample, total uint64, ok bool) {
	h.mu.RLock()
	st := h.streams[k]
	h.mu.RUnlock()
	if st == nil {
		return dst, 0, false
	}
	samples, total = st.Recent(dst)
	return samples, total, true
}

// Refused is the number of streams refused because MaxStreams existed.
func (h *Hub) Refused() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.refused
}

// SinceIdle returns the samples after the last pause of more than idle ns
// between consecutive samples (all of them when there is none, or idle is
// 0): the current phase of the program, which a classification should not
// mix with the last one.
func SinceIdle(samples []Sample, idle uint64) []Sample {
	if idle == 0 {
		return samples
	}
	for i := len(samples) - 1; i > 0; i-- {
		if samples[i].TimeNs > samples[i-1].TimeNs+idle {
			return samples[i:]
		}
	}
	return samples
}

// Classify classifies samples with a classifier of opts (Window defaulting
// to len(samples)): the analysis the UVM source exports as
// gpu.uvm.fault.pattern, for readers of a stream.
func Classify(samples []Sample, opts faultpattern.Options) faultpattern.Result {
	if opts.Window == 0 {
		opts.Window = max(len(samples), 1)
	}
	c := faultpattern.New(opts)
	for _, s := range samples {
		c.Add(faultpattern.Sample{
			Addr:   s.Addr,
			Write:  s.Access == AccessWrite || s.Access == AccessAtomic,
			TimeNs: s.TimeNs,
		})
	}
	return c.Classify()
}

// registry maps publishers' component IDs to their hubs.
var registry = struct {
	sync.Mutex
	hubs map[string]*Hub
}{hubs: map[string]*Hub{}}

// Register makes h the hub of component id and returns a function that
// unregisters it (if it is still id's hub).
func Register(id string, h *Hub) (unregister func()) {
	registry.Lock()
	registry.hubs[id] = h
	registry.Unlock()
	return func() {
		registry.Lock()
		defer registry.Unlock()
		if registry.hubs[id] == h {
			delete(registry.hubs, id)
		}
	}
}

// Lookup returns the hub registered by component id.
func Lookup(id string) (*Hub, bool) {
	registry.Lock()
	defer registry.Unlock()
	h, ok := registry.hubs[id]
	return h, ok
}
