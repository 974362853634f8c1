package uvm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

func TestConfigValidate(t *testing.T) {
	def := NewDefaultConfig()
	require.NoError(t, def.Validate())
	zero := Config{MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig()}
	require.NoError(t, zero.Validate(), "zero fields mean defaults")

	cfg := NewDefaultConfig()
	cfg.Events = []string{"gpu_fault", "page_fault"}
	cfg.QueueEntries = 1000
	cfg.PollInterval = time.Microsecond
	cfg.MaxProcesses = -1
	cfg.PatternWindow = -3
	cfg.FaultSamples.MaxPerSecond = -1
	cfg.FaultStream.Capacity = 1<<20 + 1
	cfg.Histograms.BatchSize.Buckets = []float64{1, 1}
	cfg.Histograms.BatchDuration.Buckets = nil
	err := cfg.Validate()
	require.Error(t, err)
	for _, field := range []string{
		`uvm::events[1]: unknown event type "page_fault"`,
		"uvm::queue_entries:", "uvm::poll_interval:", "uvm::max_processes:", "uvm::pattern_window:",
		"uvm::fault_samples::max_per_second:",
		"uvm::fault_stream::capacity: must be between 0 (default 4096) and 1048576, got 1048577",
		"uvm::histograms::gpu.uvm.fault.batch.size::buckets: must be strictly increasing",
		"uvm::histograms::gpu.uvm.fault.batch.duration::buckets: an enabled histogram needs",
	} {
		assert.Contains(t, err.Error(), field)
	}
	assert.Contains(t, err.Error(), "gpu_fault_replay", "the error lists the allowed names")

	cfg = NewDefaultConfig()
	cfg.Events = []string{"gpu_fault", "migration"}
	require.NoError(t, cfg.Validate())
	assert.Equal(t, uvmtools.EventGPUFault.Mask()|uvmtools.EventMigration.Mask(), cfg.eventMask())
}

// feedFaults consumes n GPU faults of one batch, 1 µs apart from t0, then
// its replay.
func feedFaults(s *Source, pid int, table uvmtools.ProcessorTable, batch uint32, t0 uint64, n int) {
	for i := range n {
		s.Consume(pid, table, uvmtools.Event{
			Type: uvmtools.EventGPUFault, Processor: 1, Access: uvmtools.AccessWrite, FaultType: uvmtools.FaultInvalidPTE,
			Address: 0x7f0000000000 + uint64(i)*4096, Batch: batch, Time: t0 + uint64(i)*1000, TimeGPU: t0 + uint64(i)*1000,
		})
	}
	s.Consume(pid, table, uvmtools.Event{Type: uvmtools.EventGPUFaultReplay, Processor: 1, Batch: batch, Time: t0 + uint64(n)*1000})
}

func TestDisabledMetricsAbsent(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Metrics.GpuUvmFaults.Enabled = false
	cfg.Metrics.GpuUvmFaultPattern.Enabled = false
	cfg.Histograms.BatchDuration.Enabled = false
	s := newTestSource(t, cfg)
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	feedFaults(s, 42, gpuTable(t), 1, 1e9, 100)
	md, err := s.Scrape(context.Background())
	require.NoError(t, err)
	names := metricNames(md)
	assert.False(t, names["gpu.uvm.faults"])
	assert.False(t, names["gpu.uvm.fault.pattern"])
	assert.False(t, names["gpu.uvm.fault.batch.duration"])
	assert.True(t, names["gpu.uvm.fault.replays"])
	assert.True(t, names["gpu.uvm.fault.batch.size"])

	cfg.Enabled = false
	off := newTestSource(t, cfg)
	feedFaults(off, 42, gpuTable(t), 1, 1e9, 10)
	md, err = off.Scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, md.ResourceMetrics().Len())
	require.NoError(t, off.Track(42))
	require.NoError(t, off.Shutdown(context.Background()))
}

func TestAttributionAndBounds(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.MaxProcesses = 2
	attributor := AttributorFunc(func(pid uint32) Process {
		return Process{PID: pid, ExecutableName: "python" + strconv.Itoa(int(pid)), ContainerID: "c0ffee", PodUID: "pod-" + strconv.Itoa(int(pid))}
	})
	s := New(cfg, newTestSource(t, cfg).set, attributor, WithHostName("h"), WithRawClockOffset(0))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	table := gpuTable(t)
	for pid := 1; pid <= 3; pid++ {
		feedFaults(s, pid, table, 1, 1e9, 10)
		s.Consume(pid, table, uvmtools.Event{Type: uvmtools.EventCPUFault, Access: uvmtools.AccessRead, Time: 2e9})
	}
	md, err := s.Scrape(context.Background())
	require.NoError(t, err)
	rs := md.ResourceMetrics()
	seen := map[string]bool{}
	for i := 0; i < rs.Len(); i++ {
		a := rs.At(i).Resource().Attributes().AsRaw()
		if a["process.pid"] == nil {
			assert.Equal(t, map[string]any{"host.name": "h"}, a)
			continue
		}
		pid := a["process.pid"].(int64)
		assert.Equal(t, "python"+strconv.Itoa(int(pid)), a["process.executable.name"])
		assert.Equal(t, "c0ffee", a["container.id"])
		assert.Equal(t, "pod-"+strconv.Itoa(int(pid)), a["k8s.pod.uid"])
		hw, _ := a["hw.id"].(string)
		seen[strconv.Itoa(int(pid))+"/"+hw] = true
	}
	assert.Equal(t, map[string]bool{"1/": true, "1/" + testHWID: true, "2/": true, "2/" + testHWID: true}, seen)
	drops := points(md, "gpu.uvm.events.dropped")
	require.Len(t, drops, 1)
	assert.Equal(t, "process_limit", attr(drops[0], "gpu.uvm.drop.reason"))
	assert.Equal(t, float64(12), drops[0].value, "10 faults, a replay and a CPU fault of pid 3")

	// Untracked processes are reported once more, then forgotten.
	s.Untrack(1)
	md, _ = s.Scrape(context.Background())
	assert.NotEmpty(t, pointsOfPID(md, 1))
	md, _ = s.Scrape(context.Background())
	assert.Empty(t, pointsOfPID(md, 1))
}

func pointsOfPID(md pmetric.Metrics, pid int64) []point {
	var out []point
	for _, name := range []string{"gpu.uvm.faults", "gpu.uvm.fault.replays"} {
		for _, p := range points(md, name) {
			if p.pid == pid {
				out = append(out, p)
			}
		}
	}
	return out
}

func TestFaultSamplesRateLimited(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.FaultSamples = FaultSamplesConfig{Enabled: true, MaxPerSecond: 10}
	s := newTestSource(t, cfg, WithRawClockOffset(1_700_000_000e9))
	table := gpuTable(t)
	// 1000 faults within 1 ms: a burst of 10, the rest rate limited.
	feedFaults(s, 7, table, 1, 5e9, 1000)
	md, err := s.Scrape(context.Background())
	require.NoError(t, err)
	recs := drain(s)
	require.Len(t, recs, 10)
	r := recs[0]
	assert.Equal(t, "gpu fault write 0x7f0000000000", r.Body().Str())
	a := r.Attributes().AsRaw()
	assert.Equal(t, "0x7f0000000000", a["gpu.uvm.fault.address"])
	assert.Equal(t, "write", a["gpu.uvm.access.type"])
	assert.Equal(t, "invalid_pte", a["gpu.uvm.fault.type"])
	assert.Equal(t, testHWID, a["hw.id"])
	assert.Equal(t, "gpu", a["gpu.uvm.processor"])
	assert.Equal(t, int64(1_700_000_005e9), int64(r.Timestamp()))
	drops := points(md, "gpu.uvm.fault.samples.dropped")
	require.Len(t, drops, 1)
	assert.Equal(t, "rate_limited", attr(drops[0], "gpu.uvm.drop.reason"))
	assert.Equal(t, float64(990), drops[0].value)

	// Half a second later: 5 more tokens.
	feedFaults(s, 7, table, 2, 5.5e9, 100)
	s.Consume(7, table, uvmtools.Event{Type: uvmtools.EventCPUFault, Access: uvmtools.AccessRead, Address: 0x1000, Time: 5.5e9 + 200e3, TID: 9})
	md, _ = s.Scrape(context.Background())
	assert.Len(t, drain(s), 5)
	drops = points(md, "gpu.uvm.fault.samples.dropped")
	assert.Equal(t, float64(990+95+1), drops[0].value)
	require.NoError(t, s.Shutdown(context.Background()))
	_, open := <-s.Logs()
	assert.False(t, open, "Shutdown closes Logs")
}

func TestFaultSamplesBufferFull(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.FaultSamples = FaultSamplesConfig{Enabled: true, MaxPerSecond: 1_000_000}
	s := newTestSource(t, cfg, WithLogBuffer(1))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	// 3 × maxPendingSamples samples: the first batch fits the channel,
	// the other two are dropped.
	feedFaults(s, 7, gpuTable(t), 1, 1e9, 3*maxPendingSamples)
	md, err := s.Scrape(context.Background())
	require.NoError(t, err)
	assert.Len(t, drain(s), maxPendingSamples)
	full := sumBy(md, "gpu.uvm.fault.samples.dropped", func(p point) string { return attr(p, "gpu.uvm.drop.reason") })
	assert.Equal(t, map[string]uint64{"buffer_full": 2 * maxPendingSamples}, full)
}

func drain(s *Source) []plog.LogRecord {
	var out []plog.LogRecord
	for {
		select {
		case l, ok := <-s.Logs():
			if !ok {
				return out
			}
			for i := 0; i < l.ResourceLogs().Len(); i++ {
				rl := l.ResourceLogs().At(i)
				for j := 0; j < rl.ScopeLogs().Len(); j++ {
					rs := rl.ScopeLogs().At(j).LogRecords()
					for k := 0; k < rs.Len(); k++ {
						out = append(out, rs.At(k))
					}
				}
			}
		default:
			return out
		}
	}
}

// TestTrackErrors runs the real uvmtools.Open against a fake /proc: this
// machine has no /dev/nvidia-uvm-tools.
func TestTrackErrors(t *testing.T) {
	if _, err := os.Stat(uvmtools.ToolsDevicePath); err == nil {
		t.Skip("this machine has the UVM tools device")
	}
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "123", "fd"), 0o755))
	cfg := NewDefaultConfig()
	set := newTestSource(t, cfg).set
	s := New(cfg, set, nil, WithProcRoot(root), WithHostName("h"))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()

	err := s.Track(123)
	require.ErrorIs(t, err, uvmtools.ErrNoDevice)
	err = s.Track(456)
	require.ErrorIs(t, err, uvmtools.ErrNoProcess)
	s.mu.Lock()
	assert.Empty(t, s.tracks, "failed tracks are forgotten")
	assert.Empty(t, s.procs, "and leave no state")
	s.mu.Unlock()
}

// fakeTracker hands out its events once.
type fakeTracker struct {
	mu     sync.Mutex
	events []uvmtools.Event
	table  uvmtools.ProcessorTable
	closed atomic.Bool
	exited atomic.Bool
}

func (f *fakeTracker) Read(fn func(uvmtools.Event)) (int, uint64, error) {
	f.mu.Lock()
	evs := f.events
	f.events = nil
	f.mu.Unlock()
	for _, e := range evs {
		fn(e)
	}
	return len(evs), 0, nil
}

func (f *fakeTracker) Wait(d time.Duration) (bool, error) { time.Sleep(d); return false, nil }
func (f *fakeTracker) Flush() error                       { return nil }
func (f *fakeTracker) Processors() (uvmtools.ProcessorTable, error) {
	return f.table, nil
}
func (f *fakeTracker) Stats() uvmtools.Stats { return uvmtools.Stats{Dropped: 3} }
func (f *fakeTracker) Exited() bool          { return f.exited.Load() }
func (f *fakeTracker) Close() error          { f.closed.Store(true); return nil }

func TestTrackRetriesNotCUDA(t *testing.T) {
	ft := &fakeTracker{table: gpuTable(t)}
	for i := range 100 {
		ft.events = append(ft.events, uvmtools.Event{Type: uvmtools.EventGPUFault, Processor: 1, Access: uvmtools.AccessRead, Address: uint64(i) << 12, Batch: 1, Time: 1e9})
	}
	var calls atomic.Int32
	opener := func(pid int, o uvmtools.Options) (Tracker, error) {
		require.Equal(t, uvmtools.DefaultQueueEntries, int(o.QueueEntries))
		if calls.Add(1) < 3 {
			return nil, errors.New("wrapped: " + uvmtools.ErrNotCUDA.Error())
		}
		return ft, nil
	}
	// A plain error (not ErrNotCUDA) is not retried.
	cfg := NewDefaultConfig()
	cfg.PollInterval = time.Millisecond
	s := newTestSource(t, cfg, WithOpener(opener), WithRetry(4, time.Millisecond, 2*time.Millisecond))
	require.Error(t, s.Track(5))
	assert.EqualValues(t, 1, calls.Load())

	// ErrNotCUDA is: the second and third attempts happen on their own.
	calls.Store(1)
	opener2 := func(pid int, o uvmtools.Options) (Tracker, error) {
		if calls.Add(1) < 4 {
			return nil, uvmtools.ErrNotCUDA
		}
		return ft, nil
	}
	s2 := newTestSource(t, cfg, WithOpener(opener2), WithRetry(4, time.Millisecond, 2*time.Millisecond))
	require.ErrorIs(t, s2.Track(5), uvmtools.ErrNotCUDA)
	require.NoError(t, s2.Track(5), "idempotent while retrying or tracked")
	require.Eventually(t, func() bool {
		md, _ := s2.Scrape(context.Background())
		return sumMap(sumBy(md, "gpu.uvm.faults", func(point) string { return "" })) == 100
	}, 5*time.Second, time.Millisecond)
	assert.EqualValues(t, 4, calls.Load())
	md, _ := s2.Scrape(context.Background())
	drops := sumBy(md, "gpu.uvm.events.dropped", func(p point) string { return attr(p, "gpu.uvm.drop.reason") })
	assert.Equal(t, map[string]uint64{"driver_queue_full": 3}, drops)

	// The process exits: its tracker is closed and its state reported once more.
	ft.exited.Store(true)
	require.Eventually(t, ft.closed.Load, 5*time.Second, time.Millisecond)
	require.NoError(t, s2.Shutdown(context.Background()))
	require.ErrorIs(t, s2.Track(6), ErrStopped)
	require.NoError(t, s.Shutdown(context.Background()))
}

func TestTrackRetryIsBounded(t *testing.T) {
	var calls atomic.Int32
	opener := func(int, uvmtools.Options) (Tracker, error) { calls.Add(1); return nil, uvmtools.ErrNotCUDA }
	s := newTestSource(t, NewDefaultConfig(), WithOpener(opener), WithRetry(3, time.Millisecond, time.Millisecond))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	require.ErrorIs(t, s.Track(9), uvmtools.ErrNotCUDA)
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.tracks) == 0
	}, 5*time.Second, time.Millisecond)
	assert.EqualValues(t, 4, calls.Load(), "the first attempt and 3 retries")
	// A later Track starts over.
	require.ErrorIs(t, s.Track(9), uvmtools.ErrNotCUDA)
}

func TestShutdownStopsRetry(t *testing.T) {
	opener := func(int, uvmtools.Options) (Tracker, error) { return nil, uvmtools.ErrNotCUDA }
	s := newTestSource(t, NewDefaultConfig(), WithOpener(opener), WithRetry(5, time.Hour, time.Hour))
	require.ErrorIs(t, s.Track(9), uvmtools.ErrNotCUDA)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
}

// TestUntrackCountsTheLastEvents: a process untracked while its reader
// waits (it ended right after its last burst) is not forgotten by a Scrape
// before the reader's final read; its last events count in its series.
func TestUntrackCountsTheLastEvents(t *testing.T) {
	ft := &fakeTracker{table: gpuTable(t)}
	opener := func(int, uvmtools.Options) (Tracker, error) { return ft, nil }
	cfg := NewDefaultConfig()
	cfg.PollInterval = 100 * time.Millisecond
	s := newTestSource(t, cfg, WithOpener(opener))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	fault := func(i int) uvmtools.Event {
		return uvmtools.Event{Type: uvmtools.EventGPUFault, Processor: 1, Access: uvmtools.AccessRead, Address: uint64(i) << 12, Batch: 1, Time: 1e9}
	}
	ft.mu.Lock()
	ft.events = append(ft.events, fault(0))
	ft.mu.Unlock()
	require.NoError(t, s.Track(7))
	faults := func() uint64 {
		md, _ := s.Scrape(context.Background())
		return sumMap(sumBy(md, "gpu.uvm.faults", func(point) string { return "" }))
	}
	require.Eventually(t, func() bool { return faults() == 1 }, 5*time.Second, 5*time.Millisecond)

	// The last burst is queued while the reader waits; then the process is
	// untracked, and a Scrape comes before the reader wakes.
	ft.mu.Lock()
	for i := 1; i < 50; i++ {
		ft.events = append(ft.events, fault(i))
	}
	ft.mu.Unlock()
	s.Untrack(7)
	require.Equal(t, uint64(1), faults(), "still tracked: the reader has not read the burst yet")
	require.Eventually(t, ft.closed.Load, 5*time.Second, time.Millisecond)
	require.Equal(t, uint64(50), faults(), "the final read counted in the same series")
	require.Zero(t, faults(), "then the process is forgotten")
}
