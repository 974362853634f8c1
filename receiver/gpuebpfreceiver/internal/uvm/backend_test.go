package uvm

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmfentry"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// fakeProbe stands in for a loaded uvmfentry.Probe: send hands a record to
// the Source's reader and returns once it was accounted.
type fakeProbe struct {
	recs      chan uvmfentry.Record
	done      chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	drained   chan struct{}
	drainOnce sync.Once
	drops     uvmfentry.Drops
	malformed uint64
	skipped   []uvmfentry.Skipped

	mu      sync.Mutex
	tracked map[uint32]bool
}

func newFakeProbe() *fakeProbe {
	return &fakeProbe{recs: make(chan uvmfentry.Record), done: make(chan struct{}), closed: make(chan struct{}),
		drained: make(chan struct{}), tracked: map[uint32]bool{}}
}

func (f *fakeProbe) Run(handle func(uvmfentry.Record)) error {
	for {
		select {
		case r := <-f.recs:
			handle(r)
			f.done <- struct{}{}
		case <-f.closed:
			return nil
		case <-f.drained:
			return nil
		}
	}
}

func (f *fakeProbe) send(rs ...uvmfentry.Record) {
	for _, r := range rs {
		f.recs <- r
		<-f.done
	}
}

func (f *fakeProbe) Track(pid uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tracked[pid] = true
	return nil
}

func (f *fakeProbe) Untrack(pid uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tracked, pid)
}

func (f *fakeProbe) isTracked(pid uint32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tracked[pid]
}

func (f *fakeProbe) Drops() uvmfentry.Drops       { return f.drops }
func (f *fakeProbe) Malformed() uint64            { return f.malformed }
func (f *fakeProbe) Skipped() []uvmfentry.Skipped { return f.skipped }
func (f *fakeProbe) Close() error                 { f.closeOnce.Do(func() { close(f.closed) }); return nil }
func (f *fakeProbe) Drain() error                 { f.drainOnce.Do(func() { close(f.drained) }); return nil }
func withMonoRawOffset(off int64) Option {
	return func(o *options) { o.monoRawOffset = func() int64 { return off } }
}
func (f *fakeProbe) wasClosed() bool {
	select {
	case <-f.closed:
		return true
	default:
		return false
	}
}

// backendSource is a Source whose loader returns probe or err, and whose
// opener counts its calls; logs are observed.
func backendSource(t *testing.T, backend string, probe FentrySource, loadErr error) (*Source, *observer.ObservedLogs, *int, *int) {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.Backend = backend
	core, logs := observer.New(zapcore.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	var loads, opens int
	s := New(cfg, set, nil, WithHostName("host"), WithRawClockOffset(0), withMonoRawOffset(0),
		WithOpener(func(int, uvmtools.Options) (Tracker, error) { opens++; return nil, uvmtools.ErrNoDevice }),
		WithRetry(0, 0, 0),
		WithFentryLoader(func(o uvmfentry.Options) (FentrySource, error) {
			loads++
			assert.True(t, o.FilterPIDs, "only the tracked processes' records")
			assert.Equal(t, DefaultFentryRingSize, o.RingBufferSize)
			if loadErr != nil {
				return nil, loadErr
			}
			return probe, nil
		}))
	t.Cleanup(func() { require.NoError(t, s.Shutdown(context.Background())) })
	return s, logs, &loads, &opens
}

// Why the fentry backend cannot run, as uvmfentry.Open says it.
var fentryFailures = []struct {
	name string
	err  error
}{
	{"module not loaded", fmt.Errorf("%w (/sys/module/nvidia_uvm does not exist)", uvmfentry.ErrModuleNotLoaded)},
	{"no module BTF", fmt.Errorf("%w (/sys/kernel/btf/nvidia_uvm does not exist)", uvmfentry.ErrNoModuleBTF)},
	{"function inlined", fmt.Errorf("%w: uvm_tools_broadcast_replay: no symbol of its own in the module (inlined)", uvmfentry.ErrFunctionMissing)},
	{"lockdown", fmt.Errorf("%w: attach uvm_perf_event_notify: operation not permitted "+
		"(kernel lockdown is in integrity mode, which refuses BPF tracing of kernel functions)", uvmfentry.ErrKernelRefused)},
}

// TestBackendAutoFallsBack: auto tries fentry, says once why it cannot
// run, and tracks with the tools interface.
func TestBackendAutoFallsBack(t *testing.T) {
	for _, f := range fentryFailures {
		loadErr := f.err
		t.Run(f.name, func(t *testing.T) {
			s, logs, loads, opens := backendSource(t, BackendAuto, nil, loadErr)
			require.NoError(t, s.Start(context.Background()))
			require.ErrorIs(t, s.Track(1), uvmtools.ErrNoDevice)
			require.ErrorIs(t, s.Track(2), uvmtools.ErrNoDevice)
			assert.Equal(t, 1, *loads)
			assert.Equal(t, 2, *opens)
			assert.Equal(t, BackendTools, s.backend())
			why := logs.FilterMessage("UVM fentry backend cannot run here; using the UVM tools backend").All()
			require.Len(t, why, 1)
			assert.Equal(t, loadErr.Error(), why[0].ContextMap()["error"])
			started := logs.FilterMessage("UVM source started").All()
			require.Len(t, started, 1)
			assert.Equal(t, "tools", started[0].ContextMap()["backend"])
			assert.Equal(t, []string{"tools"}, backendPoints(t, s))
		})
	}
}

// TestBackendToolsNeverLoads: tools never tries fentry.
func TestBackendToolsNeverLoads(t *testing.T) {
	s, logs, loads, opens := backendSource(t, BackendTools, newFakeProbe(), nil)
	require.NoError(t, s.Start(context.Background()))
	require.ErrorIs(t, s.Track(1), uvmtools.ErrNoDevice)
	assert.Equal(t, 0, *loads)
	assert.Equal(t, 1, *opens)
	assert.Equal(t, 1, logs.FilterMessage("UVM source started").Len())
	assert.Equal(t, []string{"tools"}, backendPoints(t, s))
}

// TestBackendFentryFails: a forced fentry backend that cannot run fails
// Start with the reason, and the source stays off (no tools fallback).
func TestBackendFentryFails(t *testing.T) {
	for _, f := range fentryFailures {
		loadErr := f.err
		t.Run(f.name, func(t *testing.T) {
			s, logs, loads, opens := backendSource(t, BackendFentry, nil, loadErr)
			err := s.Start(context.Background())
			require.EqualError(t, err, "uvm::backend is fentry: "+loadErr.Error())
			require.ErrorIs(t, err, loadErr)
			require.EqualError(t, s.Track(1), err.Error(), "Track says the same")
			require.EqualError(t, s.Start(context.Background()), err.Error())
			assert.Equal(t, 1, *loads)
			assert.Equal(t, 0, *opens, "no fallback to the tools backend")
			assert.Equal(t, "", s.backend())
			assert.Equal(t, 1, logs.FilterMessage("UVM fentry backend cannot run; the UVM source is off").Len())
			assert.Equal(t, 0, logs.FilterMessage("UVM source started").Len())
			assert.Empty(t, backendPoints(t, s))
		})
	}
}

// TestBackendFentryRuns: with fentry running, Track opens nothing (the
// kernel is told to send the process's records), skipped hooks are
// logged, and the backend is reported.
func TestBackendFentryRuns(t *testing.T) {
	for _, backend := range []string{BackendAuto, BackendFentry} {
		t.Run(backend, func(t *testing.T) {
			probe := newFakeProbe()
			probe.skipped = []uvmfentry.Skipped{{Hook: uvmfentry.Hooks[2], Reason: "no symbol of its own in the module (inlined)"}}
			s, logs, loads, opens := backendSource(t, backend, probe, nil)
			require.NoError(t, s.Track(7), "Track starts the source when the receiver did not")
			require.NoError(t, s.Track(7))
			assert.Equal(t, 1, *loads)
			assert.Equal(t, 0, *opens)
			assert.True(t, probe.isTracked(7))
			assert.Equal(t, BackendFentry, s.backend())
			started := logs.FilterMessage("UVM source started").All()
			require.Len(t, started, 1)
			assert.Equal(t, "fentry", started[0].ContextMap()["backend"])
			skipped := logs.FilterMessage("UVM fentry backend: functions this driver does not let it trace").All()
			require.Len(t, skipped, 1)
			assert.Equal(t, []any{"uvm_tools_record_thrashing (uvm_thrashing): no symbol of its own in the module (inlined) (no gpu.uvm.thrashing)"},
				skipped[0].ContextMap()["skipped"])
			assert.Equal(t, []string{"fentry"}, backendPoints(t, s))

			s.Untrack(7)
			assert.False(t, probe.isTracked(7))
			require.NoError(t, s.Shutdown(context.Background()))
			assert.True(t, probe.wasClosed(), "Shutdown closes the probe")
		})
	}
}

func TestBackendConfig(t *testing.T) {
	cfg := NewDefaultConfig()
	assert.Equal(t, BackendAuto, cfg.Backend)
	assert.Equal(t, DefaultFentryRingSize, cfg.Fentry.RingBufferSize)
	for _, b := range []string{"", BackendAuto, BackendTools, BackendFentry} {
		cfg.Backend = b
		require.NoError(t, cfg.Validate(), b)
	}
	cfg.Backend = "kprobe"
	cfg.Fentry.RingBufferSize = 3 << 20
	cfg.Histograms.ServiceDuration.Buckets = []float64{2, 1}
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`uvm::backend: unknown backend "kprobe"; allowed: auto, tools, fentry`,
		"uvm::fentry::ring_buffer_size: must be a power of two from 4096 to 1073741824, got 3145728",
		"uvm::histograms::gpu.uvm.fault.service.duration::buckets: must be strictly increasing",
	} {
		assert.Contains(t, err.Error(), want)
	}
	def := Config{}.withDefaults()
	assert.Equal(t, BackendAuto, def.Backend)
	assert.Equal(t, DefaultFentryRingSize, def.Fentry.RingBufferSize)
}

// backendPoints returns the backends gpu.uvm.backend.active reports.
func backendPoints(t *testing.T, s *Source) []string {
	t.Helper()
	md, err := s.Scrape(context.Background())
	require.NoError(t, err)
	var out []string
	for _, p := range points(md, "gpu.uvm.backend.active") {
		require.Equal(t, float64(1), p.value)
		require.Zero(t, p.pid, "on the host's resource")
		out = append(out, attr(p, "gpu.uvm.backend"))
	}
	return out
}

var (
	gpuA = uvmtools.UUID{0x94, 0x8a, 0xd2, 0x4a, 0xc6, 0x2e, 0x62, 0xf7, 0xd2, 0xbd, 0xad, 0x21, 0x81, 0x9f, 0x9f, 0x3d}
	gpuB = uvmtools.UUID{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00}
)

const (
	hwA = "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d"
	hwB = "GPU-11223344-5566-7788-99aa-bbccddeeff00"
)

// TestFentryAccounting: the fentry backend's records land in the same
// metrics as the tools backend's events, and its own ones on per-GPU and
// host resources. Exact values throughout.
func TestFentryAccounting(t *testing.T) {
	probe := newFakeProbe()
	s, _, _, _ := backendSource(t, BackendFentry, probe, nil)
	require.NoError(t, s.Track(100))
	require.NoError(t, s.Track(200))
	probe.drops = uvmfentry.Drops{RingFull: 5, Unmatched: 2}
	probe.malformed = 1

	const t0 = 1_000_000_000
	gf := func(pid uint32, batch uint32, at uint64, count uint32, access uvmfentry.Access) uvmfentry.Record {
		return uvmfentry.Record{Type: uvmfentry.TypeGPUFault, PID: pid, Start: at, End: at, GPU: gpuA, Src: 1,
			Address: 0x7f00_0000_0000 + uint64(at-t0)*4096, Batch: batch, Count: count, Access: access,
			FaultType: uvmtools.FaultInvalidPTE, Value: at + 5}
	}
	probe.send(
		// Batch 9 on GPU 1 (A): 2 faults of pid 100 (one merged with another:
		// 3 instances), 1 of pid 200, 1 of an untracked pid; then serviced.
		gf(100, 9, t0, 1, uvmfentry.AccessRead),
		gf(100, 9, t0+10_000, 2, uvmfentry.AccessWrite),
		gf(200, 9, t0+20_000, 1, uvmfentry.AccessAtomicWeak),
		gf(300, 9, t0+30_000, 1, uvmfentry.AccessRead),
		uvmfentry.Record{Type: uvmfentry.TypeFaultBatch, Start: t0, End: t0 + 40_000, GPU: gpuA, Batch: 9, Count: 5,
			Aux: [3]uint32{4, 1, 0}},
		uvmfentry.Record{Type: uvmfentry.TypeReplay, Start: t0 + 50_000, End: t0 + 50_000, GPU: gpuA, Src: 1, Batch: 9},
		uvmfentry.Record{Type: uvmfentry.TypeFaultService, Start: t0 - 5_000, End: t0 + 55_000, GPU: gpuA, Count: 1, Batch: 9},
		// Migrations of pid 100: 2 MiB to GPU A for the faults, 64 KiB of
		// them prefetched, 1 MiB evicted back, and 4 KiB between NUMA nodes.
		uvmfentry.Record{Type: uvmfentry.TypeMigration, PID: 100, Start: t0 + 60_000, GPU: gpuA, Src: 0, Dst: 1,
			Bytes: 2 << 20, Cause: uvmfentry.CauseReplayableFault, SrcNUMA: -1, DstNUMA: -1},
		uvmfentry.Record{Type: uvmfentry.TypeMigration, PID: 100, Start: t0 + 61_000, GPU: gpuA, Src: 0, Dst: 1,
			Bytes: 64 << 10, Cause: uvmfentry.CausePrefetch, SrcNUMA: -1, DstNUMA: -1},
		uvmfentry.Record{Type: uvmfentry.TypeMigration, PID: 100, Start: t0 + 62_000, GPU: gpuA, Src: 1, Dst: 0,
			Bytes: 1 << 20, Cause: uvmfentry.CauseEviction, SrcNUMA: -1, DstNUMA: -1},
		uvmfentry.Record{Type: uvmfentry.TypeMigration, PID: 100, Start: t0 + 63_000, Src: 0, Dst: 0,
			Bytes: 4096, Cause: uvmfentry.CauseAPIMigrate, SrcNUMA: 0, DstNUMA: 1},
		// pid 200 prefetches explicitly to GPU B (id 9), which no fault named.
		uvmfentry.Record{Type: uvmfentry.TypeMigration, PID: 200, Start: t0 + 64_000, GPU: gpuB, Src: 0, Dst: 9,
			Bytes: 8 << 20, Cause: uvmfentry.CauseAPIMigrate, SrcNUMA: -1, DstNUMA: -1},
		uvmfentry.Record{Type: uvmfentry.TypePrefetch, PID: 100, Start: t0 + 65_000, GPU: gpuA, Dst: 1, Count: 16, Bytes: 16 * 4096},
		uvmfentry.Record{Type: uvmfentry.TypeEviction, PID: 100, Start: t0 + 66_000, GPU: gpuA, Src: 1},
		uvmfentry.Record{Type: uvmfentry.TypeEviction, PID: 100, Start: t0 + 66_500, GPU: gpuA, Src: 1, Status: 0x51},
		uvmfentry.Record{Type: uvmfentry.TypeRootEviction, Start: t0 + 66_000, End: t0 + 67_000, GPU: gpuA, Src: 1, Bytes: 2 << 20},
		uvmfentry.Record{Type: uvmfentry.TypeRootEviction, Start: t0 + 66_000, End: t0 + 67_000, GPU: gpuA, Src: 1, Status: 0x51},
		uvmfentry.Record{Type: uvmfentry.TypeThrashing, PID: 100, Start: t0 + 68_000, Address: 0x7f00_0000_0000, Bytes: 4096, Value: 0b11},
		uvmfentry.Record{Type: uvmfentry.TypeThrottling, PID: 100, Start: t0 + 69_000, GPU: gpuA, Src: 1, Address: 0x7f00_0000_0000},
		uvmfentry.Record{Type: uvmfentry.TypeCPUFault, PID: 200, TID: 201, Start: t0 + 70_000, Address: 0x1000, Access: uvmfentry.AccessWrite},
		// Memory of no process.
		uvmfentry.Record{Type: uvmfentry.TypeMigration, Flags: uvmfentry.FlagNoOwner, Start: t0 + 71_000, Src: 0, Dst: 1, Bytes: 4096},
	)

	md, err := s.Scrape(context.Background())
	require.NoError(t, err)
	key := func(p point) string { return fmt.Sprintf("%d %s %v", p.pid, p.hwid, p.attrs) }
	assert.Equal(t, map[string]uint64{
		"100 " + hwA + " map[gpu.uvm.access.type:read gpu.uvm.fault.type:invalid_pte gpu.uvm.processor:gpu]":   1,
		"100 " + hwA + " map[gpu.uvm.access.type:write gpu.uvm.fault.type:invalid_pte gpu.uvm.processor:gpu]":  2,
		"200 " + hwA + " map[gpu.uvm.access.type:atomic gpu.uvm.fault.type:invalid_pte gpu.uvm.processor:gpu]": 1,
		"200  map[gpu.uvm.access.type:write gpu.uvm.processor:cpu]":                                            1,
	}, sumBy(md, "gpu.uvm.faults", key))
	assert.Equal(t, map[string]uint64{
		"100 " + hwA + " map[gpu.uvm.migration.cause:fault gpu.uvm.migration.direction:htod]":    2 << 20,
		"100 " + hwA + " map[gpu.uvm.migration.cause:prefetch gpu.uvm.migration.direction:htod]": 64 << 10,
		"100 " + hwA + " map[gpu.uvm.migration.cause:eviction gpu.uvm.migration.direction:dtoh]": 1 << 20,
		"100  map[gpu.uvm.migration.cause:other gpu.uvm.migration.direction:htoh]":               4096,
		"200 " + hwB + " map[gpu.uvm.migration.cause:explicit gpu.uvm.migration.direction:htod]": 8 << 20,
	}, sumBy(md, "gpu.uvm.migrated", key))
	assert.Equal(t, map[string]uint64{"100 " + hwA + " map[gpu.uvm.migration.direction:htod]": 64 << 10}, sumBy(md, "gpu.uvm.prefetch", key))
	assert.Equal(t, map[string]uint64{"100 " + hwA + " map[]": 16 * 4096}, sumBy(md, "gpu.uvm.prefetch.hinted", key))
	assert.Equal(t, map[string]uint64{"100 " + hwA + " map[]": 1}, sumBy(md, "gpu.uvm.evictions", key), "the failed eviction does not count")
	assert.Equal(t, map[string]uint64{"100  map[]": 1}, sumBy(md, "gpu.uvm.thrashing", key))
	assert.Equal(t, map[string]uint64{"100 " + hwA + " map[]": 1}, sumBy(md, "gpu.uvm.throttling", key))
	assert.Equal(t, map[string]uint64{"100 " + hwA + " map[]": 1, "200 " + hwA + " map[]": 1}, sumBy(md, "gpu.uvm.fault.replays", key))

	// Batch 9: pid 100 had 3 faults from 1 s, pid 200 one from 1 s + 20 µs;
	// the replay at 1 s + 50 µs ends both.
	for pid, want := range map[int64]struct {
		size float64
		dur  float64
	}{100: {3, 50e-6}, 200: {1, 30e-6}} {
		size := histogramOfPID(t, md, "gpu.uvm.fault.batch.size", pid, hwA)
		assert.Equal(t, uint64(1), size.Count())
		assert.Equal(t, want.size, size.Sum())
		dur := histogramOfPID(t, md, "gpu.uvm.fault.batch.duration", pid, hwA)
		assert.Equal(t, uint64(1), dur.Count())
		assert.InDelta(t, want.dur, dur.Sum(), 1e-12)
	}

	// Per GPU, all processes together.
	assert.Equal(t, map[string]uint64{"0 " + hwA + " map[]": 1}, sumBy(md, "gpu.uvm.fault.batches", key))
	assert.Equal(t, map[string]uint64{
		"0 " + hwA + " map[gpu.uvm.fault.entry.kind:fetched]":   5,
		"0 " + hwA + " map[gpu.uvm.fault.entry.kind:duplicate]": 1,
	}, sumBy(md, "gpu.uvm.fault.batch.entries", key))
	assert.Equal(t, map[string]uint64{"0 " + hwA + " map[]": 1}, sumBy(md, "gpu.uvm.root_chunk.evictions", key))
	svc := histogramOfPID(t, md, "gpu.uvm.fault.service.duration", 0, hwA)
	assert.Equal(t, uint64(1), svc.Count())
	assert.InDelta(t, 60e-6, svc.Sum(), 1e-12)

	// The host: backend and losses.
	assert.Equal(t, map[string]uint64{
		"0  map[gpu.uvm.drop.reason:ring_full]":    5,
		"0  map[gpu.uvm.drop.reason:decode_error]": 1,
		"0  map[gpu.uvm.drop.reason:no_owner]":     1,
	}, sumBy(md, "gpu.uvm.events.dropped", key))
	assert.Equal(t, []string{"fentry"}, backendPoints(t, s))
}

// TestFentryUntrack: an untracked process is reported once more, then
// forgotten; its late records are ignored.
func TestFentryUntrack(t *testing.T) {
	probe := newFakeProbe()
	s, _, _, _ := backendSource(t, BackendFentry, probe, nil)
	require.NoError(t, s.Track(100))
	cpuFault := uvmfentry.Record{Type: uvmfentry.TypeCPUFault, PID: 100, Start: 1e9, Address: 0x1000, Access: uvmfentry.AccessRead}
	probe.send(cpuFault)
	s.Untrack(100)
	probe.send(cpuFault)
	md, err := s.Scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"100": 1}, sumBy(md, "gpu.uvm.faults", func(p point) string { return fmt.Sprint(p.pid) }))
	md, err = s.Scrape(context.Background())
	require.NoError(t, err)
	assert.Empty(t, points(md, "gpu.uvm.faults"))
	s.mu.Lock()
	assert.Empty(t, s.procs)
	s.mu.Unlock()
}

// TestFentryClock: record times (CLOCK_MONOTONIC) are moved to the
// driver's clock (CLOCK_MONOTONIC_RAW) with the offset measured again each
// second of record time.
func TestFentryClock(t *testing.T) {
	offsets := []int64{-500, -700}
	calls := 0
	c := monoRaw{now: func() int64 { o := offsets[min(calls, len(offsets)-1)]; calls++; return o }}
	assert.Equal(t, uint64(1e9-500), c.raw(1e9))
	assert.Equal(t, uint64(1.5e9-500), c.raw(1.5e9), "within a second: the same offset")
	assert.Equal(t, uint64(2e9-700), c.raw(2e9), "a second later: measured again")
	assert.Equal(t, 2, calls)
}

// histogramOfPID returns the one data point of histogram name on the
// resource of pid (0: none) and hwid.
func histogramOfPID(t *testing.T, md pmetric.Metrics, name string, pid int64, hwid string) pmetric.HistogramDataPoint {
	t.Helper()
	var found []pmetric.HistogramDataPoint
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		h, _ := rm.Resource().Attributes().Get("hw.id")
		p, _ := rm.Resource().Attributes().Get("process.pid")
		if h.Str() != hwid || p.Int() != pid {
			continue
		}
		ms := rm.ScopeMetrics().At(0).Metrics()
		for k := 0; k < ms.Len(); k++ {
			if ms.At(k).Name() == name {
				found = append(found, ms.At(k).Histogram().DataPoints().At(0))
			}
		}
	}
	require.Len(t, found, 1, "histogram %s of pid %d on %q", name, pid, hwid)
	return found[0]
}
