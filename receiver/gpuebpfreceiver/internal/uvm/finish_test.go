package uvm

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmfentry"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// finalFault is GPU fault i of pid's last burst (batch 1, 1 µs apart).
func finalFault(i int) uvmtools.Event {
	return uvmtools.Event{Type: uvmtools.EventGPUFault, Processor: 1, Access: uvmtools.AccessRead,
		FaultType: uvmtools.FaultInvalidPTE, Address: 0x7f0000000000 + uint64(i)<<12, Batch: 1,
		Time: 1e9 + uint64(i)*1000, TimeGPU: 1e9 + uint64(i)*1000}
}

// TestFinishCountsTheFinalReads: Finish stops every tracker, lets its
// reader flush and read it one last time, and returns metrics that count
// what that read found, the fault samples it took handed to Logs before
// Logs closes. Exact values: 1 fault read and scraped before Finish, 49
// faults and a 2 MiB migration queued after that scrape, 3 events the
// driver dropped (the fake's Stats).
func TestFinishCountsTheFinalReads(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples bool
		// after the last burst was queued, before Finish: the process
		// exits, or is untracked
		exited, untracked bool
		// what Finish reports for pid 7
		faults, migrated, dropped uint64
		// fault samples Logs delivers after the last Scrape
		records int
	}{
		{name: "tracked", faults: 50, migrated: 2 << 20, dropped: 3},
		{name: "tracked, fault samples", samples: true, faults: 50, migrated: 2 << 20, dropped: 3, records: 49},
		{name: "untracked", untracked: true, faults: 50, migrated: 2 << 20, dropped: 3},
		{name: "exited", exited: true, faults: 50, migrated: 2 << 20, dropped: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTracker{table: gpuTable(t)}
			cfg := NewDefaultConfig()
			cfg.Backend = BackendTools
			cfg.PollInterval = 200 * time.Millisecond
			cfg.FaultSamples = FaultSamplesConfig{Enabled: tc.samples, MaxPerSecond: 1000}
			s := newTestSource(t, cfg, WithOpener(func(int, uvmtools.Options) (Tracker, error) { return ft, nil }))
			ft.mu.Lock()
			ft.events = []uvmtools.Event{finalFault(0)}
			ft.mu.Unlock()
			require.NoError(t, s.Track(7))
			var last pmetric.Metrics
			require.Eventually(t, func() bool {
				last, _ = s.Scrape(context.Background())
				return faultsOf(last, 7) == 1
			}, 5*time.Second, 5*time.Millisecond)
			if tc.samples {
				require.Len(t, drain(s), 1)
			}

			// The reader waits (poll_interval); meanwhile the last burst.
			ft.mu.Lock()
			for i := 1; i < 50; i++ {
				ft.events = append(ft.events, finalFault(i))
			}
			ft.events = append(ft.events, uvmtools.Event{Type: uvmtools.EventMigration, Src: uvmtools.CPU, Dst: 1,
				Cause: uvmtools.CauseCoherence, Size: 2 << 20, Time: 1e9 + 60_000})
			ft.mu.Unlock()
			if tc.exited {
				ft.exited.Store(true)
			}
			if tc.untracked {
				s.Untrack(7)
			}

			md, err := s.Finish(context.Background())
			require.NoError(t, err)
			assert.True(t, ft.closed.Load(), "the tracker is closed")
			assert.Equal(t, tc.faults, faultsOf(md, 7))
			assert.Equal(t, map[string]uint64{"htod/fault": tc.migrated},
				sumBy(md, "gpu.uvm.migrated", func(p point) string {
					return attr(p, "gpu.uvm.migration.direction") + "/" + attr(p, "gpu.uvm.migration.cause")
				}))
			assert.Equal(t, map[string]uint64{"driver_queue_full": tc.dropped},
				sumBy(md, "gpu.uvm.events.dropped", func(p point) string { return attr(p, "gpu.uvm.drop.reason") }))
			assert.Equal(t, []string{"tools"}, backendsIn(md))
			assert.Empty(t, points(md, "gpu.uvm.fault.samples.dropped"), "no sample dropped")

			recs := drainClosed(t, s)
			assert.Len(t, recs, tc.records)
			for i, r := range recs {
				assert.Equal(t, "gpu fault read "+hexAddr(finalFault(i+1).Address), r.Body().Str())
			}

			// Finished: once only.
			md, err = s.Finish(context.Background())
			require.NoError(t, err)
			assert.Zero(t, md.ResourceMetrics().Len())
			require.NoError(t, s.Shutdown(context.Background()))
			md, err = s.Scrape(context.Background())
			require.NoError(t, err)
			assert.Zero(t, md.ResourceMetrics().Len(), "Scrape after Finish")
			require.ErrorIs(t, s.Track(8), ErrStopped)
		})
	}
}

// TestFinishReportsProcessesOnce: a process that ended and was reported
// by the last Scrape (then forgotten) is not reported again by Finish; a
// process never scraped is.
func TestFinishReportsProcessesOnce(t *testing.T) {
	s := newTestSource(t, NewDefaultConfig())
	table := gpuTable(t)
	feedFaults(s, 1, table, 1, 1e9, 10)
	s.Untrack(1)
	md, err := s.Scrape(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(10), faultsOf(md, 1), "reported once more")
	feedFaults(s, 2, table, 2, 2e9, 5)
	md, err = s.Finish(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(0), faultsOf(md, 1), "forgotten")
	assert.Equal(t, uint64(5), faultsOf(md, 2))
}

// blockingTracker waits in Wait until released, as a real tracker waits
// in poll(2) for a whole poll_interval.
type blockingTracker struct {
	*fakeTracker
	waiting chan struct{} // closed at the first Wait
	once    sync.Once
	release chan struct{}
}

func (b *blockingTracker) Wait(time.Duration) (bool, error) {
	b.once.Do(func() { close(b.waiting) })
	<-b.release
	return false, nil
}

// TestFinishWithEndedContext: a reader still in its wait when Finish's
// context ends does not hold Finish up: it returns the context's error and
// no metrics; Logs closes once the reader is done, and its late read is
// not counted anywhere.
func TestFinishWithEndedContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bt := &blockingTracker{fakeTracker: &fakeTracker{table: gpuTable(t)}, waiting: make(chan struct{}), release: make(chan struct{})}
			cfg := NewDefaultConfig()
			cfg.Backend = BackendTools
			s := newTestSource(t, cfg, WithOpener(func(int, uvmtools.Options) (Tracker, error) { return bt, nil }))
			require.NoError(t, s.Track(7))
			feedFaults(s, 7, gpuTable(t), 1, 1e9, 4)
			bt.mu.Lock()
			bt.events = []uvmtools.Event{finalFault(0)}
			bt.mu.Unlock()
			<-bt.waiting

			ctx, cancel := tc.ctx()
			defer cancel()
			begin := time.Now()
			md, err := s.Finish(ctx)
			require.ErrorIs(t, err, tc.want)
			assert.Less(t, time.Since(begin), time.Second)
			assert.Zero(t, md.ResourceMetrics().Len())

			close(bt.release)
			assert.Empty(t, drainClosed(t, s))
			require.Eventually(t, bt.closed.Load, 5*time.Second, time.Millisecond)
			md, err = s.Scrape(context.Background())
			require.NoError(t, err)
			assert.Zero(t, md.ResourceMetrics().Len())
		})
	}
}

// ringProbe holds its records in a "ring" that Run reads only once
// drained, as records the kernel wrote before Finish that the reader has
// not reached yet: Close alone drops them.
type ringProbe struct {
	*fakeProbe
	mu      sync.Mutex
	ring    []uvmfentry.Record
	drained chan struct{}
	once    sync.Once
}

func (p *ringProbe) Run(handle func(uvmfentry.Record)) error {
	select {
	case <-p.drained:
		p.mu.Lock()
		ring := p.ring
		p.ring = nil
		p.mu.Unlock()
		for _, r := range ring {
			handle(r)
		}
	case <-p.closed:
	}
	return nil
}

func (p *ringProbe) Drain() error { p.once.Do(func() { close(p.drained) }); return nil }

// TestFinishReadsTheFentryRingToItsEnd: with the fentry backend, Finish
// reads what the ring holds before it closes the probe; the processes
// tracked then still own their records.
func TestFinishReadsTheFentryRingToItsEnd(t *testing.T) {
	probe := &ringProbe{fakeProbe: newFakeProbe(), drained: make(chan struct{})}
	s, _, _, _ := backendSource(t, BackendFentry, probe, nil)
	require.NoError(t, s.Track(100))
	require.NoError(t, s.Track(200))
	s.Untrack(200)
	for i := range 3 {
		probe.ring = append(probe.ring,
			uvmfentry.Record{Type: uvmfentry.TypeCPUFault, PID: 100, Start: 1e9 + uint64(i), Address: 0x1000, Access: uvmfentry.AccessWrite},
			uvmfentry.Record{Type: uvmfentry.TypeCPUFault, PID: 200, Start: 1e9 + uint64(i), Address: 0x1000, Access: uvmfentry.AccessWrite})
	}
	md, err := s.Finish(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"100/cpu/write": 3}, sumBy(md, "gpu.uvm.faults", func(p point) string {
		return strconv.FormatInt(p.pid, 10) + "/" + attr(p, "gpu.uvm.processor") + "/" + attr(p, "gpu.uvm.access.type")
	}), "pid 200 was untracked before: its records are not counted")
	assert.True(t, probe.wasClosed(), "then closed")
	assert.Empty(t, probe.ring)
}

func faultsOf(md pmetric.Metrics, pid int64) uint64 {
	var n uint64
	for _, p := range points(md, "gpu.uvm.faults") {
		if p.pid == pid {
			n += uint64(p.value)
		}
	}
	return n
}

func backendsIn(md pmetric.Metrics) []string {
	var out []string
	for _, p := range points(md, "gpu.uvm.backend.active") {
		out = append(out, attr(p, "gpu.uvm.backend"))
	}
	return out
}

func hexAddr(a uint64) string { return "0x" + strconv.FormatUint(a, 16) }

// drainClosed returns the log records left in Logs, failing unless it
// closes within 5 s.
func drainClosed(t *testing.T, s *Source) []plog.LogRecord {
	t.Helper()
	var out []plog.LogRecord
	timeout := time.After(5 * time.Second)
	for {
		select {
		case l, ok := <-s.Logs():
			if !ok {
				return out
			}
			for _, rl := range l.ResourceLogs().All() {
				for _, sl := range rl.ScopeLogs().All() {
					for _, r := range sl.LogRecords().All() {
						out = append(out, r)
					}
				}
			}
		case <-timeout:
			t.Fatal("Logs not closed")
			return out
		}
	}
}
