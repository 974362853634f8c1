package gpuext

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext/ktest"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuextsim"
)

func sysfs(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(ktest.Module, name))
	require.NoError(t, err)
	return strings.TrimSpace(string(raw))
}

// TestKernelMemLifecycle: load, attach, pin, report, update and detach the
// memory policy in the real kernel, and the module's one-policy rule.
func TestKernelMemLifecycle(t *testing.T) {
	ktest.Require(t, ktest.Module, "/sys/fs/bpf")
	l := New()
	require.NoError(t, CheckModule(l.Paths))
	require.Equal(t, "-", sysfs(t, "mem_policy"))

	p := DefaultMemParams()
	p.Eviction, p.Prefetch, p.StrideAhead = EvictLFU, PrefetchStride, 8
	require.NoError(t, l.AttachMem("lfu_stride", p))
	t.Cleanup(func() { _ = l.Detach(Mem) })
	require.Equal(t, "lfu_stride", sysfs(t, "mem_policy"))
	entries, err := os.ReadDir(filepath.Join(l.Paths.BPFFS, "mem"))
	require.NoError(t, err)
	var pins []string
	for _, e := range entries {
		pins = append(pins, e.Name())
	}
	require.ElementsMatch(t, []string{"link", "mem_cfg", "prio_pid", "prio_cgroup", "mem_stats", "lfu_count",
		"fifo_seq", "fifo_order", "mem_clock", "stride_state", "prefetch_pid"}, pins)

	// The pins keep it: a second attach is refused by the pins, and one
	// with other pins by the module (-EEXIST).
	require.ErrorIs(t, l.AttachMem("again", p), ErrAttached)
	other := &Loader{Paths: Paths{Sys: l.Paths.Sys, BTF: l.Paths.BTF, BPFFS: filepath.Join(l.Paths.BPFFS, "other")}}
	err = other.AttachMem("again", p)
	require.ErrorIs(t, err, ErrAttached)
	require.Contains(t, err.Error(), "the gpu_ext module already has a mem policy (lfu_stride)")
	_, err = os.Stat(filepath.Join(other.Paths.BPFFS, "mem"))
	require.ErrorIs(t, err, os.ErrNotExist, "a refused attach leaves no pins")

	got, err := l.MemParams()
	require.NoError(t, err)
	require.Equal(t, p, got)
	p.Eviction, p.Prefetch, p.ThresholdPercent = EvictPriority, PrefetchThreshold, 10
	require.NoError(t, l.SetMem(p))
	got, err = l.MemParams()
	require.NoError(t, err)
	require.Equal(t, p, got)
	bad := p
	bad.ThresholdPercent = 200
	require.EqualError(t, l.SetMem(bad), "threshold 200%: want 0..100")

	require.NoError(t, l.SetPriority(Owner{PID: 42}, 7))
	require.NoError(t, l.SetPriority(Owner{Cgroup: 9000}, 3))
	st, err := l.Status()
	require.NoError(t, err)
	require.Equal(t, "lfu_stride", st.MemPolicy)
	require.Equal(t, "-", st.SchedPolicy)
	require.Nil(t, st.Sched)
	require.NotNil(t, st.Mem)
	require.Equal(t, p, st.Mem.Params)
	require.Equal(t, map[Owner]uint32{{PID: 42}: 7, {Cgroup: 9000}: 3}, st.Mem.Priorities)
	require.Len(t, st.Mem.Stats, len(MemStatNames))
	for i, h := range st.Hooks {
		require.Equal(t, gpuextsim.HookNames[i], h.Hook)
	}
	require.NoError(t, l.SetPrefetchFor(42, PrefetchStride))
	require.EqualError(t, l.SetPrefetchFor(0, PrefetchStride), "pid: want a number > 0")
	require.EqualError(t, l.SetPrefetchFor(42, 9), "prefetch 9: want one of default, none, always_max, sequential, stride, threshold")
	st, err = l.Status()
	require.NoError(t, err)
	require.Equal(t, map[uint32]Prefetch{42: PrefetchStride}, st.Mem.Prefetch)
	require.NoError(t, l.ClearPrefetchFor(42))
	require.NoError(t, l.ClearPrefetchFor(42), "clearing twice is fine")
	require.NoError(t, l.DeletePriority(Owner{PID: 42}))
	st, err = l.Status()
	require.NoError(t, err)
	require.Equal(t, map[Owner]uint32{{Cgroup: 9000}: 3}, st.Mem.Priorities)

	require.NoError(t, l.Detach(Mem))
	require.Equal(t, "-", sysfs(t, "mem_policy"))
	_, err = os.Stat(filepath.Join(l.Paths.BPFFS, "mem"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorIs(t, l.Detach(Mem), ErrNotAttached)

	// Detached for real: attaching again works.
	require.NoError(t, l.AttachMem(policy.DefaultMemName, DefaultMemParams()))
	require.Equal(t, policy.DefaultMemName, sysfs(t, "mem_policy"))
	require.NoError(t, l.Detach(Mem))
}

// TestKernelSchedLifecycle: the same for the scheduling policy.
func TestKernelSchedLifecycle(t *testing.T) {
	ktest.Require(t, ktest.Module, "/sys/fs/bpf")
	l := New()
	p := LCBE(1_000_000, 200)
	p.Rules[Task{Comm: "inference"}] = ClassLC
	p.Rules[Task{PID: 77}] = ClassBE
	p.Classes[5] = ClassParams{Reject: true, Interleave: InterleaveHigh}
	require.NoError(t, l.AttachSched("lcbe", p))
	t.Cleanup(func() { _ = l.Detach(Sched) })
	require.Equal(t, "lcbe", sysfs(t, "sched_policy"))
	require.ErrorIs(t, l.AttachSched("lcbe", p), ErrAttached)

	st, err := l.Status()
	require.NoError(t, err)
	require.Nil(t, st.Mem)
	require.NotNil(t, st.Sched)
	require.Equal(t, p, st.Sched.Params)
	require.Empty(t, st.Sched.Stats)

	q := LCBE(2_000_000, 500)
	q.DefaultClass = ClassBE
	q.Rules[Task{Cgroup: 1234}] = ClassLC
	require.NoError(t, l.SetSched(q))
	st, err = l.Status()
	require.NoError(t, err)
	require.Equal(t, q, st.Sched.Params, "rules of p are gone")
	require.Contains(t, st.String(), "sched: class lc timeslice 2000000 us interleave default reject false\n")
	require.Contains(t, st.String(), "sched: rule cgroup 1234 -> lc\n")

	require.NoError(t, l.Detach(Sched))
	require.Equal(t, "-", sysfs(t, "sched_policy"))
	require.ErrorIs(t, l.Detach(Sched), ErrNotAttached)
}
