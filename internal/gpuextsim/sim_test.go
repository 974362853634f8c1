package gpuextsim

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// These tests need gpu_ext.ko and gpu_ext_sim.ko loaded: they run in the
// qemu VM of scripts/kernel-test.sh (which sets GPUEXT_KERNEL_TEST=1, so a
// missing module fails them there) and skip everywhere else. No policy may be
// attached while they run (they assert the default behaviour and exact
// counter moves).

func needSim(t *testing.T) *Sim {
	t.Helper()
	s, err := Open()
	if errors.Is(err, ErrNoDevice) && os.Getenv("GPUEXT_KERNEL_TEST") == "" {
		t.Skipf("%s absent (gpu_ext_sim not loaded; runs under qemu: make kernel-test)", DevicePath)
	}
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	st, err := ReadStats()
	require.NoError(t, err)
	require.Equal(t, "-", st.MemPolicy, "a memory policy is attached")
	require.Equal(t, "-", st.SchedPolicy, "a scheduling policy is attached")
	return s
}

const (
	blockA = 1 << 30
	blockB = blockA + BlockSize
	blockC = blockA + 2*BlockSize
	blockD = blockA + 3*BlockSize
	pg     = PageSize
)

func acc(va uint64, pid uint32) Access { return Access{VA: va, PID: pid} }

// TestReplayMemDefault replays small traces with no policy; every count is
// worked out by hand in the comments.
func TestReplayMemDefault(t *testing.T) {
	needSim(t)
	tests := []struct {
		name  string
		cfg   MemConfig
		trace []Access
		want  MemResult
	}{{
		// 4 blocks twice through 2 chunks: every access faults; the first
		// two take free chunks, the other six evict one 1-page block each.
		name:  "cyclic over capacity",
		cfg:   MemConfig{CapacityChunks: 2, NoPrefetch: true},
		trace: []Access{acc(blockA, 1), acc(blockB, 1), acc(blockC, 1), acc(blockD, 1), acc(blockA, 1), acc(blockB, 1), acc(blockC, 1), acc(blockD, 1)},
		want: MemResult{Accesses: 8, Faults: 8, Evictions: 6, MigratedBytes: (8 + 6) * pg,
			UsedChunks: 2, Blocks: 4, Tenants: []TenantResult{{PID: 1, Accesses: 8, Faults: 8, Evictions: 6, MigratedBytes: 14 * pg}}},
	}, {
		// A B A C B with 2 chunks. LRU: the hit on A makes B the oldest,
		// so C evicts B and B evicts A: 4 faults, 2 evictions. (FIFO would
		// evict A for C and then hit B: 3 faults.)
		name:  "lru not fifo",
		cfg:   MemConfig{CapacityChunks: 2, NoPrefetch: true},
		trace: []Access{acc(blockA, 1), acc(blockB, 1), acc(blockA, 1), acc(blockC, 1), acc(blockB, 1)},
		want: MemResult{Accesses: 5, Faults: 4, Hits: 1, Evictions: 2, MigratedBytes: (4 + 2) * pg,
			UsedChunks: 2, Blocks: 3, Tenants: []TenantResult{{PID: 1, Accesses: 5, Faults: 4, Hits: 1, Evictions: 2, MigratedBytes: 6 * pg}}},
	}, {
		// One block, pages 0,1,2,3,4 with the stock prefetch:
		// 0: fault, level 0 only; 1: fault, [0,2) has 2/2 but both resident;
		// 2: fault, [0,4) has 3/4 > 51%: prefetch 3; 3: hit;
		// 4: fault, [0,8) has 5/8 > 51%: prefetch 5,6,7 ([0,16) 5/16 no).
		name:  "stock prefetch",
		cfg:   MemConfig{CapacityChunks: 1},
		trace: Sequential(7, blockA, 5),
		want: MemResult{Accesses: 5, Faults: 4, Hits: 1, PrefetchedBytes: 4 * pg, MigratedBytes: 8 * pg,
			UsedChunks: 1, Blocks: 1, Tenants: []TenantResult{{PID: 7, Accesses: 5, Faults: 4, Hits: 1, PrefetchedBytes: 4 * pg, MigratedBytes: 8 * pg}}},
	}, {
		// Same pages without prefetch: 5 faults.
		name:  "no prefetch",
		cfg:   MemConfig{CapacityChunks: 1, NoPrefetch: true},
		trace: Sequential(7, blockA, 5),
		want: MemResult{Accesses: 5, Faults: 5, MigratedBytes: 5 * pg, UsedChunks: 1, Blocks: 1,
			Tenants: []TenantResult{{PID: 7, Accesses: 5, Faults: 5, MigratedBytes: 5 * pg}}},
	}, {
		// A (pid 1) and B (pid 2) fill 2 chunks; A is released (its chunk
		// goes unused, data dropped); C (pid 2) takes the unused chunk
		// first (eviction of 0 bytes, counted for A's owner); A again
		// evicts the LRU used chunk, B's (1 page).
		name: "release and unused first",
		cfg:  MemConfig{CapacityChunks: 2, NoPrefetch: true},
		trace: []Access{acc(blockA, 1), acc(blockB, 2), {VA: blockA, PID: 1, Release: true},
			acc(blockC, 2), acc(blockA, 1)},
		want: MemResult{Accesses: 4, Faults: 4, Evictions: 2, MigratedBytes: (4 + 1) * pg, UsedChunks: 2, Blocks: 3,
			Tenants: []TenantResult{
				{PID: 1, Accesses: 2, Faults: 2, Evictions: 1, MigratedBytes: 2 * pg},
				{PID: 2, Accesses: 2, Faults: 2, Evictions: 1, MigratedBytes: 3 * pg}}},
	}, {
		// A released and touched again keeps its chunk: a fault, no eviction.
		name:  "release then reuse",
		cfg:   MemConfig{CapacityChunks: 1, NoPrefetch: true},
		trace: []Access{acc(blockA, 1), {VA: blockA, PID: 1, Release: true}, acc(blockA+pg, 1)},
		want: MemResult{Accesses: 2, Faults: 2, MigratedBytes: 2 * pg, UsedChunks: 1, Blocks: 1,
			Tenants: []TenantResult{{PID: 1, Accesses: 2, Faults: 2, MigratedBytes: 2 * pg}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReplayMem(tt.cfg, tt.trace)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestReplayMemSequentialBlocks: K blocks touched page by page with
// capacity C < K and no prefetch: every page faults, every block after the
// first C evicts a full block.
func TestReplayMemSequentialBlocks(t *testing.T) {
	needSim(t)
	const k, c = 6, 4
	got, err := ReplayMem(MemConfig{CapacityChunks: c, NoPrefetch: true}, Sequential(3, blockA, k*BlockPages))
	require.NoError(t, err)
	require.Equal(t, uint64(k*BlockPages), got.Faults)
	require.Equal(t, uint64(k-c), got.Evictions)
	require.Equal(t, uint64(k*BlockPages+(k-c)*BlockPages)*pg, got.MigratedBytes)
	require.Equal(t, uint32(c), got.UsedChunks)

	// With the stock prefetch, a block read in order faults far less:
	// pages 0,1,2,4,8,16,32,64,65,128,129,130,256,257,258,260,264 fault
	// (17); e.g. at 64, [0,128) holds 65/128 < 51%, at 65 66/128 > 51%
	// prefetches 66..127; at 258, [256,260) holds 3/4: 259 comes along.
	got, err = ReplayMem(MemConfig{CapacityChunks: 1}, Sequential(3, blockA, BlockPages))
	require.NoError(t, err)
	require.Equal(t, MemResult{Accesses: BlockPages, Faults: 17, Hits: BlockPages - 17,
		PrefetchedBytes: (BlockPages - 17) * pg, MigratedBytes: BlockPages * pg, UsedChunks: 1, Blocks: 1,
		Tenants: []TenantResult{{PID: 3, Accesses: BlockPages, Faults: 17, Hits: BlockPages - 17,
			PrefetchedBytes: (BlockPages - 17) * pg, MigratedBytes: BlockPages * pg}}}, got)
}

// TestStatsMoveExactly: with no policy attached, each entry point call is
// counted once and nothing else moves.
func TestStatsMoveExactly(t *testing.T) {
	s := needSim(t)
	before, err := ReadStats()
	require.NoError(t, err)
	require.Equal(t, uint32(1), before.ABIVersion)

	// A B A C B, 2 chunks, stock prefetch on: activations A B C B (4),
	// access 1 (the hit), evictions 2, page_prefetch once per fault (4).
	require.NoError(t, s.ResetMem(MemConfig{CapacityChunks: 2}))
	require.NoError(t, s.Replay([]Access{acc(blockA, 1), acc(blockB, 1), acc(blockA, 1), acc(blockC, 1), acc(blockB, 1)}))
	// Two tasks, one job each.
	require.NoError(t, s.ResetSched(SchedConfig{DefaultTimesliceUS: 1000}, []Task{{PID: 1, Comm: "a"}, {PID: 2, Comm: "b"}}))
	require.NoError(t, s.Queue([]Job{{Task: 0, DurationNS: 10}, {Task: 1, DurationNS: 10}}))
	_, err = s.RunSched()
	require.NoError(t, err)
	_, err = s.Bench(HookPagePrefetchIter, 1000)
	require.NoError(t, err)

	after, err := ReadStats()
	require.NoError(t, err)
	calls := [HookMax]uint64{4, 1, 2, 4, 1000, 2, 2, 2}
	for i, d := range after.Sub(before) {
		require.Equal(t, HookStats{Hook: HookNames[i], Calls: calls[i]}, d, HookNames[i])
	}
}

// TestReplaySchedDefault: two tasks, 1 ms timeslice, 1 us switch.
// A (3 ms) runs 0-1ms; switch; B (1 ms) runs 1.001-2.001ms and is done;
// switch; A 2.002-3.002ms, then A again with no switch, done at 4.002ms.
func TestReplaySchedDefault(t *testing.T) {
	needSim(t)
	got, err := ReplaySchedRun(SchedConfig{SwitchNS: 1000, DefaultTimesliceUS: 1000},
		[]Task{{PID: 10, Comm: "a"}, {PID: 20, Comm: "b"}},
		[]Job{{Task: 0, SubmitNS: 0, DurationNS: 3_000_000}, {Task: 1, SubmitNS: 0, DurationNS: 1_000_000}})
	require.NoError(t, err)
	require.Equal(t, SchedResult{MakespanNS: 4_002_000, Switches: 2, Tasks: []TaskResult{
		{PID: 10, Jobs: 1, MeanLatencyNS: 4_002_000, P99LatencyNS: 4_002_000, BusyNS: 3_000_000, TimesliceUS: 1000},
		{PID: 20, Jobs: 1, MeanLatencyNS: 2_001_000, P99LatencyNS: 2_001_000, MeanWaitNS: 1_001_000, P99WaitNS: 1_001_000,
			BusyNS: 1_000_000, TimesliceUS: 1000},
	}}, got)
}

// TestReplaySchedIdleAndFIFO: jobs of one task run FIFO; idle time is
// skipped to the next submit; a task with no ready job yields its slice.
func TestReplaySchedIdleAndFIFO(t *testing.T) {
	needSim(t)
	// Task a: jobs at 0 (100us) and 0 (200us): FIFO, both in one slice:
	// finish at 100us and 300us. Task b: a job at 1ms (50us): the GPU idles
	// from 300us to 1ms, switches (10us), runs it to 1.06ms.
	got, err := ReplaySchedRun(SchedConfig{SwitchNS: 10_000, DefaultTimesliceUS: 1000},
		[]Task{{PID: 1, Comm: "a"}, {PID: 2, Comm: "b"}},
		[]Job{{Task: 1, SubmitNS: 1_000_000, DurationNS: 50_000}, {Task: 0, DurationNS: 100_000}, {Task: 0, DurationNS: 200_000}})
	require.NoError(t, err)
	require.Equal(t, SchedResult{MakespanNS: 1_060_000, Switches: 1, Tasks: []TaskResult{
		{PID: 1, Jobs: 2, MeanLatencyNS: 200_000, P99LatencyNS: 300_000, MeanWaitNS: 50_000, P99WaitNS: 100_000,
			BusyNS: 300_000, TimesliceUS: 1000},
		{PID: 2, Jobs: 1, MeanLatencyNS: 60_000, P99LatencyNS: 60_000, MeanWaitNS: 10_000, P99WaitNS: 10_000,
			BusyNS: 50_000, TimesliceUS: 1000},
	}}, got)
}

func errnoOf(t *testing.T, err error) unix.Errno {
	t.Helper()
	var e unix.Errno
	require.ErrorAs(t, err, &e)
	return e
}

// TestBadInput: each malformed request gets its errno and changes nothing.
func TestBadInput(t *testing.T) {
	s := needSim(t)

	// Nothing started yet.
	require.Equal(t, unix.EBADFD, errnoOf(t, s.Replay([]Access{acc(blockA, 1)})))
	_, err := s.MemResult()
	require.Equal(t, unix.EBADFD, errnoOf(t, err))
	_, err = s.RunSched()
	require.Equal(t, unix.EBADFD, errnoOf(t, err))

	for _, cfg := range []MemConfig{{CapacityChunks: 0}, {CapacityChunks: MaxChunks + 1}} {
		require.Equal(t, unix.EINVAL, errnoOf(t, s.ResetMem(cfg)), "%+v", cfg)
	}
	bad := MemConfig{CapacityChunks: 1}.encode()
	bad[4] = 0x80 // unknown flag
	require.Equal(t, unix.EINVAL, errnoOf(t, s.ioctl("MEM_RESET", iocMemReset, bad)))
	bad = MemConfig{CapacityChunks: 1}.encode()
	bad[8] = 1 // reserved
	require.Equal(t, unix.EINVAL, errnoOf(t, s.ioctl("MEM_RESET", iocMemReset, bad)))

	require.NoError(t, s.ResetMem(MemConfig{CapacityChunks: 4, NoPrefetch: true}))
	// A record with pid 0 fails the whole write: the good first record is
	// not replayed either.
	require.Equal(t, unix.EINVAL, errnoOf(t, s.Replay([]Access{acc(blockA, 1), acc(blockB, 0)})))
	rec := encodeAccesses([]Access{acc(blockA, 1)})
	rec[12] = 4 // unknown access flag
	_, err = unix.Write(int(s.f.Fd()), rec)
	require.Equal(t, unix.EINVAL, err)
	_, err = unix.Write(int(s.f.Fd()), rec[:15]) // not a whole record
	require.Equal(t, unix.EINVAL, err)
	r, err := s.MemResult()
	require.NoError(t, err)
	require.Equal(t, MemResult{}, r)

	// The 17th tenant: the first 16 records are replayed (short write),
	// then ENOSPC.
	var trace []Access
	for pid := uint32(1); pid <= MaxTenants+1; pid++ {
		trace = append(trace, acc(blockA+uint64(pid)*pg, pid))
	}
	require.Equal(t, unix.ENOSPC, errnoOf(t, s.Replay(trace)))
	r, err = s.MemResult()
	require.NoError(t, err)
	require.Equal(t, uint64(MaxTenants), r.Accesses)
	require.Len(t, r.Tenants, MaxTenants)

	// Scheduling sessions.
	_, err = s.MemResult()
	require.NoError(t, err)
	ok := []Task{{PID: 1, Comm: "a"}}
	require.Equal(t, unix.EINVAL, errnoOf(t, s.ResetSched(SchedConfig{DefaultTimesliceUS: 50}, ok)))
	require.Equal(t, unix.EINVAL, errnoOf(t, s.ResetSched(SchedConfig{DefaultTimesliceUS: TimesliceMaxUS + 1}, ok)))
	require.Equal(t, unix.EINVAL, errnoOf(t, s.ResetSched(SchedConfig{DefaultTimesliceUS: 1000, SwitchNS: MaxSwitchNS + 1}, ok)))
	require.Equal(t, unix.EINVAL, errnoOf(t, s.ResetSched(SchedConfig{DefaultTimesliceUS: 1000}, []Task{{PID: 0}})))
	cfg, err := SchedConfig{DefaultTimesliceUS: 1000}.encode(ok)
	require.NoError(t, err)
	le.PutUint32(cfg[16:], 0) // ntasks 0
	require.Equal(t, unix.EINVAL, errnoOf(t, s.ioctl("SCHED_RESET", iocSchedReset, cfg)))
	le.PutUint32(cfg[16:], MaxTasks+1)
	require.Equal(t, unix.EINVAL, errnoOf(t, s.ioctl("SCHED_RESET", iocSchedReset, cfg)))
	// A failed reset kept the memory session.
	_, err = s.MemResult()
	require.NoError(t, err)

	require.NoError(t, s.ResetSched(SchedConfig{DefaultTimesliceUS: 1000}, ok))
	_, err = s.MemResult()
	require.Equal(t, unix.EBADFD, errnoOf(t, err))
	for _, j := range []Job{{Task: 1, DurationNS: 1}, {Task: -1, DurationNS: 1}, {Task: 0, DurationNS: 0},
		{Task: 0, DurationNS: MaxJobNS + 1}, {Task: 0, SubmitNS: MaxSubmitNS + 1, DurationNS: 1}} {
		require.Equal(t, unix.EINVAL, errnoOf(t, s.Queue([]Job{{Task: 0, DurationNS: 5}, j})), "%+v", j)
	}
	var big []Job
	for i := 0; i < 11; i++ {
		big = append(big, Job{Task: 0, DurationNS: MaxJobNS})
	}
	require.Equal(t, unix.ENOSPC, errnoOf(t, s.Queue(big)))
	// None of the refused jobs were queued: an empty run.
	res, err := s.RunSched()
	require.NoError(t, err)
	require.Equal(t, uint64(0), res.Tasks[0].Jobs)
	require.Equal(t, uint64(0), res.MakespanNS)

	_, err = s.Bench(HookMax, 1)
	require.Equal(t, unix.EINVAL, errnoOf(t, err))
	_, err = s.Bench(HookBlockAccess, 0)
	require.Equal(t, unix.EINVAL, errnoOf(t, err))
	_, err = s.Bench(HookBlockAccess, MaxBenchCalls+1)
	require.Equal(t, unix.EINVAL, errnoOf(t, err))
	require.Equal(t, unix.ENOTTY, errnoOf(t, s.ioctl("bogus", ioc(iocRead, 99, 8), make([]byte, 8))))
}

func TestBenchHook(t *testing.T) {
	needSim(t)
	for h := uint32(0); h < HookMax; h++ {
		ns, err := BenchHook(h, 10000)
		require.NoError(t, err)
		require.Greater(t, ns, 0.0, HookNames[h])
		t.Logf("%s: %.1f ns/call (no policy, qemu TCG)", HookNames[h], ns)
	}
}

// TestGarbageNeverHurts throws seeded random bytes at every entry of the
// device (configs, records, result buffers, unknown ioctls), mixing in
// valid requests, and then checks that a known trace still gives its exact
// result: bad input is refused, never crashes the kernel or corrupts a
// session. (A crash ends the VM run: no EXIT line.)
func TestGarbageNeverHurts(t *testing.T) {
	s := needSim(t)
	r := rng(2026)
	fill := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		// Small numbers pass the first checks more often.
		if n >= 8 && r.IntN(2) == 0 {
			le.PutUint32(b[0:], uint32(r.IntN(70000)))
			le.PutUint32(b[4:], uint32(r.IntN(3)))
		}
		return b
	}
	reqs := []struct {
		name string
		req  uintptr
		size int
	}{
		{"MEM_RESET", iocMemReset, memConfigSize}, {"MEM_RESULT", iocMemResult, memResultSize},
		{"SCHED_RESET", iocSchedReset, schedConfigSize}, {"SCHED_RUN", iocSchedRun, schedResultSize},
		{"BENCH", iocBench, benchSize},
	}
	var accepted, refused int
	for i := 0; i < 3000; i++ {
		var err error
		switch r.IntN(4) {
		case 0:
			q := reqs[r.IntN(len(reqs))]
			if q.req == iocBench {
				b := fill(q.size)
				le.PutUint64(b[8:], uint64(r.IntN(4096))) // keep it quick
				err = s.ioctl(q.name, q.req, b)
			} else {
				err = s.ioctl(q.name, q.req, fill(q.size))
			}
		case 1:
			_, err = unix.Write(int(s.f.Fd()), fill(r.IntN(4*jobSize)+1))
		case 2:
			err = s.ioctl("random", ioc(uintptr(r.IntN(4)), uintptr(r.IntN(16)), uintptr(r.IntN(64)+8)), make([]byte, 72))
		case 3: // a valid step now and then, so later garbage meets live sessions
			if r.IntN(2) == 0 {
				err = s.ResetMem(MemConfig{CapacityChunks: uint32(r.IntN(8) + 1)})
				if err == nil {
					err = s.Replay(Random(uint64(i), uint32(r.IntN(3)+1), blockA, 4*BlockPages, 200))
				}
			} else {
				err = s.ResetSched(SchedConfig{DefaultTimesliceUS: 1000, SwitchNS: 100}, []Task{{PID: 1}, {PID: 2}})
				if err == nil {
					err = s.Queue([]Job{{Task: 0, DurationNS: 5000}, {Task: 1, SubmitNS: 100, DurationNS: 7000}})
				}
			}
			require.NoError(t, err, "a valid step after garbage")
		}
		if err == nil {
			accepted++
		} else {
			refused++
		}
	}
	t.Logf("%d requests accepted, %d refused", accepted, refused)
	require.Greater(t, refused, 1000)

	got, err := ReplayMem(MemConfig{CapacityChunks: 2, NoPrefetch: true},
		[]Access{acc(blockA, 1), acc(blockB, 1), acc(blockA, 1), acc(blockC, 1), acc(blockB, 1)})
	require.NoError(t, err)
	require.Equal(t, uint64(4), got.Faults)
	require.Equal(t, uint64(2), got.Evictions)
}
