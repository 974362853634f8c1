package policy_test

import (
	"slices"

	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
	sim "github.com/otelcol-gpu/otelcol-gpu/internal/gpuextsim"
)

// evictModel is the simulator's memory manager with prefetch off, as
// kernel-modules/sim/sim_mem.c documents it, and each eviction algorithm of
// evict.h as its comment says it behaves; the kernel runs must match it
// count for count. Only used chunks matter (no releases in these traces).
type evictModel struct {
	p        gpuext.MemParams
	prio     map[uint32]uint32 // pid -> priority
	capacity int

	used     []uint64          // chunk per block, head first: blocks stand for their chunks
	resident map[uint64][]bool // block -> pages
	owner    map[uint64]uint32 // block -> first pid
	count    map[uint64]uint32 // lfu: block -> accesses
	seq      map[uint64]uint64 // fifo: block -> activation number
	next     uint64
	res      sim.MemResult
	tenant   map[uint32]*sim.TenantResult
	order    []uint32
}

const (
	posNone = iota
	posHead
	posTail
	maxSkips = 8
)

func newModel(p gpuext.MemParams, capacity int, prio map[uint32]uint32) *evictModel {
	return &evictModel{p: p, prio: prio, capacity: capacity, resident: map[uint64][]bool{},
		owner: map[uint64]uint32{}, count: map[uint64]uint32{}, seq: map[uint64]uint64{}, tenant: map[uint32]*sim.TenantResult{}}
}

func (m *evictModel) place(b uint64, pos int) {
	if i := slices.Index(m.used, b); i >= 0 {
		m.used = slices.Delete(m.used, i, i+1)
	}
	if pos == posHead {
		m.used = slices.Insert(m.used, 0, b)
	} else {
		m.used = append(m.used, b)
	}
}

func (m *evictModel) activatePos(b uint64) int {
	switch m.p.Eviction {
	case gpuext.EvictMRU, gpuext.EvictLFU:
		if m.p.Eviction == gpuext.EvictLFU {
			m.count[b] = 1
		}
		return posHead
	case gpuext.EvictFIFO:
		m.next++
		m.seq[b] = m.next
	}
	return posTail
}

func (m *evictModel) accessPos(b uint64) int {
	switch m.p.Eviction {
	case gpuext.EvictMRU:
		return posHead
	case gpuext.EvictLFU:
		m.count[b]++
	}
	return posTail // FIFO: no request, the driver's default moves it to the tail
}

// spare says whether the algorithm spares candidate b (skips < maxSkips).
func (m *evictModel) spare(b uint64) bool {
	switch m.p.Eviction {
	case gpuext.EvictLFU:
		return m.count[b] >= m.p.LFUHot
	case gpuext.EvictFIFO:
		oldest := m.used[0]
		for _, u := range m.used {
			if m.seq[u] < m.seq[oldest] {
				oldest = u
			}
		}
		return b != oldest
	case gpuext.EvictPriority:
		pr, ok := m.prio[m.owner[b]]
		if !ok {
			pr = m.p.DefaultPriority
		}
		return pr >= m.p.ProtectPriority
	}
	return false
}

func (m *evictModel) access(a sim.Access) {
	b, page := a.VA/sim.BlockSize, a.VA%sim.BlockSize/sim.PageSize
	if _, ok := m.owner[b]; !ok {
		m.owner[b] = a.PID
	}
	t := m.tenant[a.PID]
	if t == nil {
		t = &sim.TenantResult{PID: a.PID}
		m.tenant[a.PID] = t
		m.order = append(m.order, a.PID)
	}
	m.res.Accesses++
	t.Accesses++
	pages, resident := m.resident[b]
	if resident && pages[page] {
		m.res.Hits++
		t.Hits++
		m.place(b, m.accessPos(b))
		return
	}
	m.res.Faults++
	t.Faults++
	if resident {
		m.place(b, m.accessPos(b))
	} else {
		if len(m.used) == m.capacity {
			m.evict()
		}
		m.resident[b] = make([]bool, sim.BlockPages)
		m.place(b, m.activatePos(b))
	}
	m.resident[b][page] = true
}

func (m *evictModel) evict() {
	for skips := 0; ; skips++ {
		c := m.used[0]
		if skips < maxSkips && m.spare(c) {
			m.place(c, posTail)
			m.res.EvictSkips++
			continue
		}
		m.used = m.used[1:]
		delete(m.resident, c)
		delete(m.count, c)
		delete(m.seq, c)
		m.res.Evictions++
		m.tenant[m.owner[c]].Evictions++
		return
	}
}

// run replays trace and returns the counts the kernel run is compared on.
func (m *evictModel) run(trace []sim.Access) sim.MemResult {
	for _, a := range trace {
		m.access(a)
	}
	for _, pid := range m.order {
		m.res.Tenants = append(m.res.Tenants, *m.tenant[pid])
	}
	return m.res
}

// counts keeps what the model predicts of a kernel result.
func counts(r sim.MemResult) sim.MemResult {
	out := sim.MemResult{Accesses: r.Accesses, Faults: r.Faults, Hits: r.Hits, Evictions: r.Evictions, EvictSkips: r.EvictSkips}
	for _, t := range r.Tenants {
		out.Tenants = append(out.Tenants, sim.TenantResult{PID: t.PID, Accesses: t.Accesses, Faults: t.Faults, Hits: t.Hits, Evictions: t.Evictions})
	}
	return out
}
