package misbehave

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext/ktest"
	sim "github.com/otelcol-gpu/otelcol-gpu/internal/gpuextsim"
)

// CFLAGS as in bpf/doc.go; the objects and their Go files are test-only.
//go:generate go tool bpf2go -cc clang-19 -target amd64 -no-global-types -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" MisbehaveMem testdata/misbehave_mem.bpf.c
//go:generate go tool bpf2go -cc clang-19 -target amd64 -no-global-types -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" MisbehaveSched testdata/misbehave_sched.bpf.c

// Indexes of rets[] (testdata/misbehave.h).
const (
	retActivate = iota
	retAccessBad
	retAccessHead
	retEvict
	retRegionWide
	retRegionReversed
	retInitTS
	retInitIL
	retInitReject
	bindCtxTS
	retDestroyTS
	retDestroyIL
	retIterReversed
	nrets
)

const (
	blockA = 1 << 30
	blockB = blockA + sim.BlockSize
	blockC = blockA + 2*sim.BlockSize
)

func acc(va uint64, pid uint32) sim.Access { return sim.Access{VA: va, PID: pid} }

// needSim: the modules are loaded and no policy is attached.
func needSim(t *testing.T) *sim.Sim {
	t.Helper()
	ktest.Require(t, ktest.Module, ktest.Sim)
	st, err := sim.ReadStats()
	require.NoError(t, err)
	require.Equal(t, "-", st.MemPolicy, "a memory policy is left attached")
	require.Equal(t, "-", st.SchedPolicy, "a scheduling policy is left attached")
	s, err := sim.Open()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// attach loads one misbehaving policy. Its struct_ops map is created
// without BPF_F_LINK, so creating it registers the policy (.reg with no
// link: the other attach path of the module) and deleting its element
// unregisters it.
func attach(t *testing.T, spec *ebpf.CollectionSpec, ops, name string) *ebpf.Collection {
	t.Helper()
	for n, m := range spec.Maps {
		if m.Type == ebpf.StructOpsMap {
			delete(spec.Maps, n) // the C variable only carries the type
		}
	}
	require.NoError(t, policy.Prepare(spec, ops, name))
	spec.Maps[policy.OpsMap].Flags = 0
	coll, err := ebpf.NewCollection(spec)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, coll.Maps[policy.OpsMap].Delete(uint32(0)))
		coll.Close()
	})
	return coll
}

// attachMisbehave attaches both policies and checks the module names them.
func attachMisbehave(t *testing.T) (mem, sched *ebpf.Collection) {
	t.Helper()
	t.Cleanup(func() {
		st, err := sim.ReadStats()
		require.NoError(t, err)
		require.Equal(t, "-", st.MemPolicy)
		require.Equal(t, "-", st.SchedPolicy)
	})
	ms, err := LoadMisbehaveMem()
	require.NoError(t, err)
	mem = attach(t, ms, policy.MemOps, "misbehave")
	ss, err := LoadMisbehaveSched()
	require.NoError(t, err)
	sched = attach(t, ss, policy.SchedOps, "misbehave_s")
	st, err := sim.ReadStats()
	require.NoError(t, err)
	require.Equal(t, "misbehave", st.MemPolicy)
	require.Equal(t, "misbehave_s", st.SchedPolicy)
	return mem, sched
}

func rets(t *testing.T, coll *ebpf.Collection) [nrets]int64 {
	t.Helper()
	var r [nrets]int64
	require.NoError(t, coll.Variables["rets"].Get(&r))
	return r
}

func eperm() int64  { return -int64(unix.EPERM) }
func einval() int64 { return -int64(unix.EINVAL) }

// TestModuleValidatesRequests attaches policies that ask for everything the
// module must refuse or clamp, drives every hook through the simulator, and
// checks the decisions the driver got (through the simulator's results),
// each kfunc's return value and the exact counter moves.
func TestModuleValidatesRequests(t *testing.T) {
	s := needSim(t)
	memColl, schedColl := attachMisbehave(t)

	t.Run("memory", func(t *testing.T) {
		before, err := sim.ReadStats()
		require.NoError(t, err)
		// A B A C B, 2 chunks, no prefetch.
		// activate asks for position 7: rejected, so the default (tail).
		// access asks 9 then HEAD: the last (HEAD) applies, the hit chunk
		// goes to the used HEAD, so C evicts A, not B (LRU would evict B)
		// and the last B hits.
		// evict_prepare always asks TAIL: spared 8 times (skips 0..7), the
		// 9th request (skips 8) is refused: one eviction = 9 calls.
		res, err := sim.ReplayMem(sim.MemConfig{CapacityChunks: 2, NoPrefetch: true},
			[]sim.Access{acc(blockA, 1), acc(blockB, 1), acc(blockA, 1), acc(blockC, 1), acc(blockB, 1)})
		require.NoError(t, err)
		require.Equal(t, uint64(3), res.Faults)
		require.Equal(t, uint64(2), res.Hits)
		require.Equal(t, uint64(1), res.Evictions)
		require.Equal(t, uint64(sim.EvictMaxSkips), res.EvictSkips)
		after, err := sim.ReadStats()
		require.NoError(t, err)
		d := after.Sub(before)
		require.Equal(t, sim.HookStats{Hook: "block_activate", Calls: 3, Policy: 3, Requests: 3, Rejected: 3}, d[sim.HookBlockActivate])
		require.Equal(t, sim.HookStats{Hook: "block_access", Calls: 2, Policy: 2, Requests: 4, Applied: 2}, d[sim.HookBlockAccess])
		require.Equal(t, sim.HookStats{Hook: "evict_prepare", Calls: 9, Policy: 9, Requests: 9, Applied: 8, Rejected: 1}, d[sim.HookEvictPrepare])
		r := rets(t, memColl)
		require.Equal(t, einval(), r[retActivate])
		require.Equal(t, einval(), r[retAccessBad])
		require.Equal(t, int64(0), r[retAccessHead])
		require.Equal(t, eperm(), r[retEvict], "the last request of an eviction hits the bound")
	})

	t.Run("prefetch", func(t *testing.T) {
		before, err := sim.ReadStats()
		require.NoError(t, err)
		// One fault per block, at page p of block p:
		// p0: BYPASS (5, 600) is clamped to [5, 512): 507 pages.
		// p1: BYPASS (10, 3) is rejected: DEFAULT, which adds nothing.
		// p2: ENTER_LOOP; _iter picks level 2 = [0, 4): pages 0, 1, 3;
		//     its level 4 request (20, 10) is rejected.
		// p3: action 99 is rejected: DEFAULT, nothing.
		// p4: a region with DEFAULT is rejected (unused): DEFAULT, nothing.
		var trace []sim.Access
		for p := uint64(0); p < 5; p++ {
			trace = append(trace, acc(blockA+p*sim.BlockSize+p*sim.PageSize, 1))
		}
		res, err := sim.ReplayMem(sim.MemConfig{CapacityChunks: 8}, trace)
		require.NoError(t, err)
		require.Equal(t, uint64(5), res.Faults)
		require.Equal(t, uint64(507+3)*sim.PageSize, res.PrefetchedBytes)
		after, err := sim.ReadStats()
		require.NoError(t, err)
		d := after.Sub(before)
		require.Equal(t, sim.HookStats{Hook: "page_prefetch", Calls: 5, Policy: 5, Requests: 3, Applied: 1, Rejected: 3, Clamped: 1}, d[sim.HookPagePrefetch])
		require.Equal(t, sim.HookStats{Hook: "page_prefetch_iter", Calls: 10, Policy: 10, Requests: 2, Applied: 1, Rejected: 1}, d[sim.HookPagePrefetchIter])
		r := rets(t, memColl)
		require.Equal(t, int64(0), r[retRegionWide], "a wide region is clamped, not refused")
		require.Equal(t, einval(), r[retRegionReversed])
		require.Equal(t, einval(), r[retIterReversed])
	})

	t.Run("scheduling", func(t *testing.T) {
		before, err := sim.ReadStats()
		require.NoError(t, err)
		// init: timeslice 5 us clamped to 100, interleave 9 and reject
		// refused; bind sees 100 us, asks 20 s (clamped to 10 s) and HIGH;
		// pid 666 also asks reject at bind: applied, its job dropped.
		// destroy: both requests refused.
		res, err := sim.ReplaySchedRun(sim.SchedConfig{DefaultTimesliceUS: 1000},
			[]sim.Task{{PID: 1, Comm: "a"}, {PID: 666, Comm: "b"}},
			[]sim.Job{{Task: 0, DurationNS: 1_000_000}, {Task: 1, DurationNS: 1_000_000}})
		require.NoError(t, err)
		require.Equal(t, sim.SchedResult{MakespanNS: 1_000_000, Tasks: []sim.TaskResult{
			{PID: 1, Jobs: 1, MeanLatencyNS: 1_000_000, P99LatencyNS: 1_000_000, BusyNS: 1_000_000,
				TimesliceUS: sim.TimesliceMaxUS, Interleave: sim.InterleaveHigh},
			{PID: 666, Dropped: 1, TimesliceUS: sim.TimesliceMaxUS, Interleave: sim.InterleaveHigh, Rejected: true},
		}}, res)
		after, err := sim.ReadStats()
		require.NoError(t, err)
		d := after.Sub(before)
		require.Equal(t, sim.HookStats{Hook: "task_init", Calls: 2, Policy: 2, Requests: 6, Rejected: 4, Clamped: 2}, d[sim.HookTaskInit])
		require.Equal(t, sim.HookStats{Hook: "task_bind", Calls: 2, Policy: 2, Requests: 5, Applied: 3, Clamped: 2}, d[sim.HookTaskBind])
		require.Equal(t, sim.HookStats{Hook: "task_destroy", Calls: 2, Policy: 2, Requests: 4, Rejected: 4}, d[sim.HookTaskDestroy])
		r := rets(t, schedColl)
		require.Equal(t, int64(0), r[retInitTS])
		require.Equal(t, einval(), r[retInitIL])
		require.Equal(t, eperm(), r[retInitReject])
		require.Equal(t, int64(sim.TimesliceMinUS), r[bindCtxTS], "bind sees init's clamped timeslice")
		require.Equal(t, eperm(), r[retDestroyTS])
		require.Equal(t, eperm(), r[retDestroyIL])
	})

	t.Run("bench with a policy", func(t *testing.T) {
		ns, err := s.Bench(sim.HookBlockAccess, 10000)
		require.NoError(t, err)
		t.Logf("block_access with a 2-kfunc policy: %.1f ns/call (qemu TCG)", float64(ns)/10000)
	})
}
