package policy_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext/ktest"
	sim "github.com/otelcol-gpu/otelcol-gpu/internal/gpuextsim"
)

// These tests attach each policy in the real kernel, replay the simulator's
// traces through the gpu_ext entry points, and compare with the same trace
// under no policy (the simulator's stock LRU and UVM-like prefetch) and,
// for eviction, with evictModel count for count.

const base = 1 << 30 // 2 MiB aligned

func needSim(t *testing.T) *gpuext.Loader {
	t.Helper()
	ktest.Require(t, ktest.Module, ktest.Sim, "/sys/fs/bpf")
	st, err := sim.ReadStats()
	require.NoError(t, err)
	require.Equal(t, "-", st.MemPolicy, "a memory policy is left attached")
	require.Equal(t, "-", st.SchedPolicy, "a scheduling policy is left attached")
	return gpuext.New()
}

// replay runs trace with no policy (p nil), or with the memory policy p
// attached for the replay only (and the pids' priorities); it returns the
// result and the module's counters the replay moved.
func replay(t *testing.T, l *gpuext.Loader, p *gpuext.MemParams, prio map[uint32]uint32, cfg sim.MemConfig, trace []sim.Access) (sim.MemResult, [sim.HookMax]sim.HookStats) {
	t.Helper()
	if p != nil {
		require.NoError(t, l.AttachMem("replay", *p))
		defer func() { require.NoError(t, l.Detach(gpuext.Mem)) }()
		for pid, pr := range prio {
			require.NoError(t, l.SetPriority(gpuext.Owner{PID: pid}, pr))
		}
	}
	before, err := sim.ReadStats()
	require.NoError(t, err)
	res, err := sim.ReplayMem(cfg, trace)
	require.NoError(t, err)
	after, err := sim.ReadStats()
	require.NoError(t, err)
	return res, after.Sub(before)
}

func params(e gpuext.Eviction, pf gpuext.Prefetch, edit ...func(*gpuext.MemParams)) *gpuext.MemParams {
	p := gpuext.DefaultMemParams()
	p.Eviction, p.Prefetch = e, pf
	for _, f := range edit {
		f(&p)
	}
	return &p
}

// cyclic is rounds passes over page 0 of blocks 0..n-1.
func cyclic(pid uint32, n, rounds int) []sim.Access {
	var out []sim.Access
	for r := 0; r < rounds; r++ {
		for b := 0; b < n; b++ {
			out = append(out, sim.Access{VA: base + uint64(b)*sim.BlockSize, PID: pid})
		}
	}
	return out
}

// requireNoBadRequests: the policies never ask for what the module must
// refuse or clamp, and every request they make is applied.
func requireNoBadRequests(t *testing.T, d [sim.HookMax]sim.HookStats) {
	t.Helper()
	for _, h := range d {
		require.Zero(t, h.Rejected, "%s rejected", h.Hook)
		require.Zero(t, h.Clamped, "%s clamped", h.Hook)
		require.Equal(t, h.Calls, h.Policy, "%s: every call runs the policy", h.Hook)
	}
}

// TestKernelEvictionMatchesModel: every eviction algorithm, on traces where
// they differ, gives exactly the counts of evictModel; the traces carry
// their own claims (MRU beats LRU on a scan larger than memory, LFU on a
// hot set with cold scans, FIFO ignores reuse, priority protects a tenant).
func TestKernelEvictionMatchesModel(t *testing.T) {
	l := needSim(t)
	hot := sim.HotSet(7, 100, base, 4, 64, 4, 3, 40)         // 4 hot blocks + scans of 4 cold ones
	two := sim.TwoTenants(11, 200, 300, base, 6, 256, 6, 40) // hi reuses 6 blocks, lo streams
	small := []sim.Access{{VA: base, PID: 1}, {VA: base + sim.BlockSize, PID: 1}, {VA: base + 2*sim.BlockSize, PID: 1},
		{VA: base + sim.PageSize, PID: 1}, {VA: base + 3*sim.BlockSize, PID: 1}, {VA: base + 2*sim.PageSize, PID: 1}} // A B C A' D A''
	prio := map[uint32]uint32{200: 7}
	for _, tc := range []struct {
		name     string
		evict    gpuext.Eviction
		capacity uint32
		trace    []sim.Access
		prio     map[uint32]uint32
	}{
		{"lru cyclic", gpuext.EvictLRU, 4, cyclic(1, 6, 5), nil},
		{"mru cyclic", gpuext.EvictMRU, 4, cyclic(1, 6, 5), nil},
		{"fifo cyclic", gpuext.EvictFIFO, 4, cyclic(1, 6, 5), nil},
		{"lru small", gpuext.EvictLRU, 3, small, nil},
		{"fifo small", gpuext.EvictFIFO, 3, small, nil},
		{"lru hotset", gpuext.EvictLRU, 6, hot, nil},
		{"lfu hotset", gpuext.EvictLFU, 6, hot, nil},
		{"mru hotset", gpuext.EvictMRU, 6, hot, nil},
		{"fifo hotset", gpuext.EvictFIFO, 6, hot, nil},
		{"lru two tenants", gpuext.EvictLRU, 8, two, nil},
		{"priority two tenants", gpuext.EvictPriority, 8, two, prio},
		{"lfu two tenants", gpuext.EvictLFU, 8, two, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params(tc.evict, gpuext.PrefetchDefault)
			cfg := sim.MemConfig{CapacityChunks: tc.capacity, NoPrefetch: true}
			got, d := replay(t, l, p, tc.prio, cfg, tc.trace)
			want := newModel(*p, int(tc.capacity), tc.prio).run(tc.trace)
			require.Equal(t, want, counts(got))
			requireNoBadRequests(t, d)
			require.Equal(t, got.Evictions+got.EvictSkips, d[sim.HookEvictPrepare].Calls, "one evict_prepare per candidate")
			require.Equal(t, got.EvictSkips, d[sim.HookEvictPrepare].Requests, "a request in evict_prepare is a spare")
			t.Logf("%s: faults %d evictions %d spared %d", tc.name, got.Faults, got.Evictions, got.EvictSkips)
		})
	}
}

// TestKernelEvictionClaims: what each algorithm is for, against no policy.
func TestKernelEvictionClaims(t *testing.T) {
	l := needSim(t)
	run := func(p *gpuext.MemParams, prio map[uint32]uint32, capacity uint32, trace []sim.Access) sim.MemResult {
		r, _ := replay(t, l, p, prio, sim.MemConfig{CapacityChunks: capacity, NoPrefetch: true}, trace)
		return r
	}
	// A scan over 6 blocks with room for 4: LRU faults on every access,
	// MRU keeps 3 blocks resident and faults on the rest.
	scan := cyclic(1, 6, 5)
	lruScan := run(nil, nil, 4, scan)
	require.Equal(t, uint64(30), lruScan.Faults)
	mru := run(params(gpuext.EvictMRU, gpuext.PrefetchDefault), nil, 4, scan)
	require.Less(t, mru.Faults, lruScan.Faults)

	// Hot set with cold scans: LFU keeps the hot blocks.
	hot := sim.HotSet(7, 100, base, 4, 64, 4, 3, 40)
	lruHot := run(nil, nil, 6, hot)
	lfu := run(params(gpuext.EvictLFU, gpuext.PrefetchDefault), nil, 6, hot)
	require.Less(t, lfu.Faults, lruHot.Faults)

	// Two tenants: priority protects hi (pid 200) from lo's stream; the
	// total stays within what lo's stream costs anyway.
	two := sim.TwoTenants(11, 200, 300, base, 6, 256, 6, 40)
	none := run(nil, nil, 8, two)
	pr := run(params(gpuext.EvictPriority, gpuext.PrefetchDefault), map[uint32]uint32{200: 7}, 8, two)
	require.Equal(t, uint32(200), pr.Tenants[0].PID)
	require.Less(t, pr.Tenants[0].Faults, none.Tenants[0].Faults)
	require.Less(t, pr.Tenants[0].Evictions, none.Tenants[0].Evictions)
	require.LessOrEqual(t, pr.Faults, none.Faults)
	t.Logf("mru %d vs lru %d faults on the scan; lfu %d vs lru %d on the hot set; hi tenant %d vs %d faults, total %d vs %d",
		mru.Faults, lruScan.Faults, lfu.Faults, lruHot.Faults, pr.Tenants[0].Faults, none.Tenants[0].Faults, pr.Faults, none.Faults)
}

// TestKernelPrefetch: each prefetch algorithm on the traces it is for.
func TestKernelPrefetch(t *testing.T) {
	l := needSim(t)
	const nblocks = 4
	seq := sim.Sequential(5, base, nblocks*sim.BlockPages)
	cfg := sim.MemConfig{CapacityChunks: nblocks}
	none, _ := replay(t, l, nil, nil, cfg, seq)
	require.Equal(t, uint64(nblocks*17), none.Faults, "the stock algorithm: 17 faults a block read in order")

	for _, tc := range []struct {
		name   string
		p      *gpuext.MemParams
		faults uint64
	}{
		// Only the faulting page: every page faults.
		{"none", params(gpuext.EvictLRU, gpuext.PrefetchNone), nblocks * sim.BlockPages},
		// The whole block on its first fault.
		{"always_max", params(gpuext.EvictLRU, gpuext.PrefetchAlwaysMax), nblocks},
		// To the block's end, then 64 pages at a time.
		{"sequential to end", params(gpuext.EvictLRU, gpuext.PrefetchSequential), nblocks},
		{"sequential 64", params(gpuext.EvictLRU, gpuext.PrefetchSequential, func(p *gpuext.MemParams) { p.SequentialPages = 64 }), nblocks * sim.BlockPages / 64},
		// The stock tree with threshold 0: any node with a page in it.
		{"threshold 0", params(gpuext.EvictLRU, gpuext.PrefetchThreshold, func(p *gpuext.MemParams) { p.ThresholdPercent = 0 }), nblocks},
		// With UVM's 51% the policy is the stock algorithm.
		{"threshold 51", params(gpuext.EvictLRU, gpuext.PrefetchThreshold, func(p *gpuext.MemParams) { p.ThresholdPercent = 51 }), nblocks * 17},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, d := replay(t, l, tc.p, nil, cfg, seq)
			require.Equal(t, tc.faults, got.Faults)
			require.Equal(t, uint64(nblocks*sim.BlockPages)-tc.faults, got.Hits)
			requireNoBadRequests(t, d)
			require.Equal(t, got.Faults, d[sim.HookPagePrefetch].Calls, "one page_prefetch per fault")
			if tc.p.Prefetch == gpuext.PrefetchThreshold {
				require.Equal(t, got.Faults*10, d[sim.HookPagePrefetchIter].Calls, "ten tree levels per fault")
			}
			if tc.name == "threshold 51" {
				require.Equal(t, none, got)
			}
		})
	}
}

// TestKernelStridePrefetch: a stride of 16 pages over 8 blocks. The stock
// algorithm never sees a dense node and faults on every access; the stride
// policy, once confident, brings the next strides in with each fault.
func TestKernelStridePrefetch(t *testing.T) {
	l := needSim(t)
	const stride, count = 16, 8 * sim.BlockPages / 16
	trace := sim.Stride(9, base, stride, count)
	cfg := sim.MemConfig{CapacityChunks: 8}
	none, _ := replay(t, l, nil, nil, cfg, trace)
	require.Equal(t, uint64(count), none.Faults)
	for _, ahead := range []uint32{1, 4, 8} {
		t.Run(fmt.Sprint("ahead ", ahead), func(t *testing.T) {
			p := params(gpuext.EvictLRU, gpuext.PrefetchStride, func(p *gpuext.MemParams) {
				p.StrideMinConfidence, p.StrideAhead = 2, ahead
			})
			got, d := replay(t, l, p, nil, cfg, trace)
			requireNoBadRequests(t, d)
			// Faults on strides 0, 1 and 2 build the confidence (the
			// first has no distance, the second sets the stride, the third
			// repeats it); from stride 3 on each fault brings the next
			// ahead strides, but a region never leaves its block: the
			// first block costs 3 + ceil(29/(ahead+1)) faults, each other
			// one (32 strides, the crossing fault repeating the stride)
			// ceil(32/(ahead+1)).
			ceil := func(n, d int) int { return (n + d - 1) / d }
			perBlock := sim.BlockPages / stride
			want := uint64(3 + ceil(perBlock-3, int(ahead)+1) + 7*ceil(perBlock, int(ahead)+1))
			require.Equal(t, want, got.Faults)
			require.Less(t, got.Faults, none.Faults)
		})
	}
}

// TestKernelPrefetchPerPID: a per-process prefetch algorithm (what the
// gpupolicy processor advises one process) applies to that process's faults
// only: pid 10 reads 2 blocks in order with always_max, pid 20 reads random
// pages of 2 other blocks under the policy-wide none.
func TestKernelPrefetchPerPID(t *testing.T) {
	l := needSim(t)
	seq := sim.Sequential(10, base, 2*sim.BlockPages)
	rnd := sim.Random(4, 20, base+4*sim.BlockSize, 2*sim.BlockPages, 600)
	var trace []sim.Access
	for i := range seq {
		trace = append(trace, seq[i])
		if i < len(rnd) {
			trace = append(trace, rnd[i])
		}
	}
	distinct := map[uint64]bool{}
	for _, a := range rnd {
		distinct[a.VA] = true
	}
	require.NoError(t, l.AttachMem("per_pid", *params(gpuext.EvictLRU, gpuext.PrefetchNone)))
	defer func() { require.NoError(t, l.Detach(gpuext.Mem)) }()
	require.NoError(t, l.SetPrefetchFor(10, gpuext.PrefetchAlwaysMax))
	st, err := l.Status()
	require.NoError(t, err)
	require.Equal(t, map[uint32]gpuext.Prefetch{10: gpuext.PrefetchAlwaysMax}, st.Mem.Prefetch)

	got, err := sim.ReplayMem(sim.MemConfig{CapacityChunks: 4}, trace)
	require.NoError(t, err)
	require.Equal(t, uint32(10), got.Tenants[0].PID)
	require.Equal(t, uint64(2), got.Tenants[0].Faults, "one fault a block")
	require.Equal(t, uint64(2*(sim.BlockPages-1)*sim.PageSize), got.Tenants[0].PrefetchedBytes)
	require.Equal(t, uint64(len(distinct)), got.Tenants[1].Faults, "one fault a distinct page")
	require.Zero(t, got.Tenants[1].PrefetchedBytes)

	require.NoError(t, l.ClearPrefetchFor(10))
	got, err = sim.ReplayMem(sim.MemConfig{CapacityChunks: 4}, trace)
	require.NoError(t, err)
	require.Equal(t, uint64(2*sim.BlockPages), got.Tenants[0].Faults, "none again: every page")
}
