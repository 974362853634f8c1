package gpupolicyprocessor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext/ktest"
	sim "github.com/otelcol-gpu/otelcol-gpu/internal/gpuextsim"
	"github.com/otelcol-gpu/otelcol-gpu/processor/gpupolicyprocessor/internal/metadata"
)

// The workloads of the kernel test: one process reading 4 blocks in order,
// one reusing 4 hot blocks between scans of cold ones. The same traces feed
// the fault stream (what the receiver would have seen) and gpu_ext_sim (the
// driver the policy steers).
const (
	ktestBase   = 1 << 30 // 2 MiB aligned
	seqPID      = 100
	hotPID      = 200
	seqBlocks   = 4
	hotCapacity = 6 // chunks: between the hot set and hot set + scan (sim.HotSet)
)

func seqTrace() []sim.Access { return sim.Sequential(seqPID, ktestBase, seqBlocks*sim.BlockPages) }
func hotTrace() []sim.Access { return sim.HotSet(7, hotPID, ktestBase, 4, 64, 4, 3, 40) }

// faults turns a trace into the fault samples a receiver would publish,
// starting at time ns.
func faults(trace []sim.Access, ns uint64) []faultstream.Sample {
	out := make([]faultstream.Sample, len(trace))
	for i, a := range trace {
		out[i] = faultstream.Sample{TimeNs: ns + uint64(i), Addr: a.VA, Access: faultstream.AccessRead}
		if a.Write {
			out[i].Access = faultstream.AccessWrite
		}
	}
	return out
}

// TestKernelTracesClassify: the kernel test's premise, checked on every
// machine: over the rounds feed makes, the traces' faults get the advice
// the test expects to find in the policy.
func TestKernelTracesClassify(t *testing.T) {
	hub := faultstream.NewHub(4096, 0)
	defer faultstream.Register("gpuebpf/classify", hub)()
	p, sink, _, clock := ktestProcessor(t, "gpuebpf/classify", func(c *Config) { c.Mode = ModeAdvise })
	defer func() { require.NoError(t, p.Shutdown(context.Background())) }()
	for round := range 4 {
		feed(t, hub, p, clock, round)
		got := advices(t, sink.AllMetrics()[round])
		require.Len(t, got, 2)
		assert.Equal(t, []string{"sequential", "hot_set"}, []string{got[0].Pattern, got[1].Pattern})
		assert.Equal(t, []int64{seqPID, hotPID}, []int64{got[0].PID, got[1].PID})
	}
}

func modulePolicy(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(ktest.Module, "mem_policy"))
	require.NoError(t, err)
	return strings.TrimSpace(string(raw))
}

// ktestProcessor starts an enforce-mode processor over hub id, with a
// clock the test moves.
func ktestProcessor(t *testing.T, id string, edit func(*Config)) (processor.Metrics, *consumertest.MetricsSink, *statusHost, *time.Time) {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Mode, cfg.SignalsFrom = ModeEnforce, id
	cfg.Enforce.StableRounds = 2
	if edit != nil {
		edit(cfg)
	}
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	clock := time.Unix(1000, 0)
	policies.m[cfg].advice.now = func() time.Time { return clock }
	host := &statusHost{}
	require.NoError(t, p.Start(context.Background(), host))
	return p, sink, host, &clock
}

// feed publishes both workloads' faults and runs one round of the
// processor's consume loop, then moves the clock past the interval.
func feed(t *testing.T, hub *faultstream.Hub, p processor.Metrics, clock *time.Time, round int) {
	t.Helper()
	ns := uint64(round) * 1e6
	publish(hub, faultstream.Key{PID: seqPID, HWID: "GPU-sim"}, faults(seqTrace()[:2048], ns))
	publish(hub, faultstream.Key{PID: hotPID, HWID: "GPU-sim"}, faults(hotTrace(), ns))
	require.NoError(t, p.ConsumeMetrics(context.Background(), pmetric.NewMetrics()))
	*clock = clock.Add(createDefaultConfig().Advise.Interval)
}

// TestKernelEnforce runs the processor in enforce mode against the real
// gpu_ext module (scripts/kernel-test.sh): it attaches the memory policy,
// turns the fault streams' stable advice into the pinned maps, and the
// simulator shows the effect on the same workloads; shutdown undoes the
// changes and keeps the policy, or detaches it when configured.
func TestKernelEnforce(t *testing.T) {
	ktest.Require(t, ktest.Module, ktest.Sim, "/sys/fs/bpf")
	l := gpuext.New()
	require.Equal(t, "-", modulePolicy(t), "a memory policy is left attached")
	t.Cleanup(func() { _ = l.Detach(gpuext.Mem) })
	hub := faultstream.NewHub(4096, 0)
	defer faultstream.Register("gpuebpf/ktest", hub)()

	p, sink, host, clock := ktestProcessor(t, "gpuebpf/ktest", nil)
	assert.Empty(t, host.events)
	require.Equal(t, "gpuext_mem", modulePolicy(t), "the processor attached the policy")
	feed(t, hub, p, clock, 0)
	st, err := l.Status()
	require.NoError(t, err)
	require.Empty(t, st.Mem.Prefetch, "one round is not stable yet")
	require.Equal(t, gpuext.DefaultMemParams(), st.Mem.Params)
	feed(t, hub, p, clock, 1)

	// The pinned maps hold what the advice said, and nothing else.
	st, err = l.Status()
	require.NoError(t, err)
	require.Equal(t, map[uint32]gpuext.Prefetch{seqPID: gpuext.PrefetchAlwaysMax}, st.Mem.Prefetch)
	want := gpuext.DefaultMemParams()
	want.Eviction = gpuext.EvictLFU
	require.Equal(t, want, st.Mem.Params)
	out := sink.AllMetrics()
	require.Len(t, out, 2)
	assert.Equal(t, []counted{{metricApplied, "eviction", "lfu", 1}, {metricApplied, "prefetch", "always_max", 1}}, counts(t, out[1]))

	// The simulator replays the workloads under what the processor set.
	seqOn, err := sim.ReplayMem(sim.MemConfig{CapacityChunks: seqBlocks}, seqTrace())
	require.NoError(t, err)
	hotOn, err := sim.ReplayMem(sim.MemConfig{CapacityChunks: hotCapacity, NoPrefetch: true}, hotTrace())
	require.NoError(t, err)

	// Shutdown undoes it and leaves the policy attached and pinned.
	require.NoError(t, p.Shutdown(context.Background()))
	st, err = l.Status()
	require.NoError(t, err)
	require.Equal(t, "gpuext_mem", st.MemPolicy)
	require.Empty(t, st.Mem.Prefetch)
	require.Equal(t, gpuext.DefaultMemParams(), st.Mem.Params)

	// The same workloads under the policy's defaults: the driver's own
	// behaviour (stock prefetch, LRU).
	seqOff, err := sim.ReplayMem(sim.MemConfig{CapacityChunks: seqBlocks}, seqTrace())
	require.NoError(t, err)
	hotOff, err := sim.ReplayMem(sim.MemConfig{CapacityChunks: hotCapacity, NoPrefetch: true}, hotTrace())
	require.NoError(t, err)
	require.Equal(t, uint64(seqBlocks), seqOn.Faults, "always_max: one fault a block")
	require.Equal(t, uint64(seqBlocks*17), seqOff.Faults, "stock prefetch: 17 faults a block read in order")
	require.Less(t, hotOn.Faults, hotOff.Faults, "LFU keeps the hot set resident")
	t.Logf("sequential: %d faults enforced, %d without; hot set: %d faults enforced, %d without",
		seqOn.Faults, seqOff.Faults, hotOn.Faults, hotOff.Faults)

	// A processor that only adopts the pinned policy, and detaches it at
	// shutdown.
	p, _, host, clock = ktestProcessor(t, "gpuebpf/ktest", func(c *Config) {
		c.Enforce.Attach, c.Enforce.DetachOnShutdown = false, true
	})
	assert.Empty(t, host.events)
	feed(t, hub, p, clock, 2)
	feed(t, hub, p, clock, 3)
	st, err = l.Status()
	require.NoError(t, err)
	require.Equal(t, map[uint32]gpuext.Prefetch{seqPID: gpuext.PrefetchAlwaysMax}, st.Mem.Prefetch)
	require.NoError(t, p.Shutdown(context.Background()))
	require.Equal(t, "-", modulePolicy(t))
	_, err = os.Stat(filepath.Join(l.Paths.BPFFS, "mem"))
	require.ErrorIs(t, err, os.ErrNotExist, "no pins left")

	// Someone else's policy is left alone: the processor advises only.
	theirs := gpuext.DefaultMemParams()
	theirs.Eviction = gpuext.EvictFIFO
	require.NoError(t, l.AttachMem("tenant_fifo", theirs))
	p, sink, host, clock = ktestProcessor(t, "gpuebpf/ktest", nil)
	require.Len(t, host.events, 1)
	assert.EqualError(t, host.events[0].Err(), `gpupolicy enforce mode runs as advise: the memory policy pinned at /sys/fs/bpf/gpuext/mem is "tenant_fifo", not "gpuext_mem" (enforce::policy_name): left alone`)
	for i := range 3 {
		feed(t, hub, p, clock, 4+i)
	}
	assert.Len(t, advices(t, sink.AllMetrics()[2]), 2, "still advising")
	require.NoError(t, p.Shutdown(context.Background()))
	st, err = l.Status()
	require.NoError(t, err)
	require.Equal(t, "tenant_fifo", st.MemPolicy)
	require.Empty(t, st.Mem.Prefetch)
	require.Equal(t, theirs, st.Mem.Params)
	require.NoError(t, l.Detach(gpuext.Mem))
}

// TestKernelEnforceReplacedPolicy: someone detaches the processor's policy
// and pins another in its place while the processor runs; shutdown leaves
// the other one as it is (its entries, its eviction, attached), even with
// detach_on_shutdown.
func TestKernelEnforceReplacedPolicy(t *testing.T) {
	ktest.Require(t, ktest.Module, ktest.Sim, "/sys/fs/bpf")
	l := gpuext.New()
	require.Equal(t, "-", modulePolicy(t), "a memory policy is left attached")
	t.Cleanup(func() { _ = l.Detach(gpuext.Mem) })
	hub := faultstream.NewHub(4096, 0)
	defer faultstream.Register("gpuebpf/replaced", hub)()

	p, _, host, clock := ktestProcessor(t, "gpuebpf/replaced", func(c *Config) { c.Enforce.DetachOnShutdown = true })
	assert.Empty(t, host.events)
	feed(t, hub, p, clock, 0)
	feed(t, hub, p, clock, 1)
	st, err := l.Status()
	require.NoError(t, err)
	require.Equal(t, map[uint32]gpuext.Prefetch{seqPID: gpuext.PrefetchAlwaysMax}, st.Mem.Prefetch)

	require.NoError(t, l.Detach(gpuext.Mem))
	theirs := gpuext.DefaultMemParams()
	theirs.Eviction = gpuext.EvictFIFO
	require.NoError(t, l.AttachMem("tenant_fifo", theirs))
	require.NoError(t, l.SetPrefetchFor(seqPID, gpuext.PrefetchNone))

	require.NoError(t, p.Shutdown(context.Background()))
	st, err = l.Status()
	require.NoError(t, err)
	require.Equal(t, "tenant_fifo", st.MemPolicy)
	require.Equal(t, map[uint32]gpuext.Prefetch{seqPID: gpuext.PrefetchNone}, st.Mem.Prefetch)
	require.Equal(t, theirs, st.Mem.Params)
}
