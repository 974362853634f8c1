package uvm

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmfentry"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// failingTracker is a tracker whose Wait fails at once, as uvmtools'
// does when poll(2) reports POLLERR on the tools fd: nvidia-uvm's
// uvm_tools_poll returns POLLERR for every tracker once the driver is in
// a global fatal state (uvm_global_get_status() != NV_OK), which lasts.
type failingTracker struct {
	fakeTracker
	waits atomic.Int64
	err   error
}

func (f *failingTracker) Wait(time.Duration) (bool, error) {
	f.waits.Add(1)
	return false, f.err
}

// TestReaderDoesNotSpinOnWaitErrors: a Wait that fails at once must not
// turn the reader into a busy loop (one per tracked process); it still
// reads every poll interval and stops when untracked.
func TestReaderDoesNotSpinOnWaitErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"driver reports an error", errors.New("uvmtools: poll: the driver reports an error on the tools fd")},
		{"poll fails", errors.New("uvmtools: poll: bad file descriptor")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &failingTracker{fakeTracker: fakeTracker{table: gpuTable(t)}, err: tc.err}
			cfg := NewDefaultConfig()
			cfg.PollInterval = 50 * time.Millisecond
			s := newTestSource(t, cfg, WithOpener(func(int, uvmtools.Options) (Tracker, error) { return ft, nil }))
			require.NoError(t, s.Track(7))
			ft.mu.Lock()
			ft.events = []uvmtools.Event{{Type: uvmtools.EventGPUFault, Processor: 1, Access: uvmtools.AccessRead, Batch: 1, Time: 1e9}}
			ft.mu.Unlock()
			time.Sleep(500 * time.Millisecond) // 10 poll intervals
			waits := ft.waits.Load()
			md, err := s.Scrape(context.Background())
			require.NoError(t, err)
			require.Equal(t, map[string]uint64{"": 1}, sumBy(md, "gpu.uvm.faults", func(point) string { return "" }), "still read")
			require.LessOrEqual(t, waits, int64(20), "Wait calls in 10 poll intervals")
			s.Untrack(7)
			require.Eventually(t, ft.closed.Load, 5*time.Second, time.Millisecond, "the reader stops")
			require.NoError(t, s.Shutdown(context.Background()))
		})
	}
}

// TestRetrackAfterUntrackKeepsSeriesMonotonic: the receiver untracks a
// process at execve and tracks it again at the new program's first CUDA
// call. The old tracking's end (its reader's final read, or fentry's
// Untrack) must not mark the re-tracked process gone: a Scrape would then
// forget it while it is traced, and its cumulative counts would start
// again from zero under the same pid and start time.
func TestRetrackAfterUntrackKeepsSeriesMonotonic(t *testing.T) {
	fault := uvmtools.Event{Type: uvmtools.EventGPUFault, Processor: 1, Access: uvmtools.AccessRead, Batch: 1, Time: 1e9}
	faults := func(s *Source) uint64 {
		md, err := s.Scrape(context.Background())
		require.NoError(t, err)
		return sumBy(md, "gpu.uvm.faults", func(point) string { return "" })[""]
	}
	t.Run("tools", func(t *testing.T) {
		old := &fakeTracker{table: gpuTable(t)}
		cur := &fakeTracker{table: gpuTable(t)}
		var opens atomic.Int32
		cfg := NewDefaultConfig()
		cfg.PollInterval = 20 * time.Millisecond
		s := newTestSource(t, cfg, WithOpener(func(int, uvmtools.Options) (Tracker, error) {
			if opens.Add(1) == 1 {
				return old, nil
			}
			return cur, nil
		}))
		defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
		counted := func() uint64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			var n uint64
			if p := s.procs[7]; p != nil {
				for _, st := range p.gpus {
					for _, a := range st.faults[procGPU] {
						for _, c := range a {
							n += c
						}
					}
				}
			}
			return n
		}
		old.events = []uvmtools.Event{fault, fault, fault}
		require.NoError(t, s.Track(7))
		require.Eventually(t, func() bool { return counted() == 3 }, 5*time.Second, time.Millisecond)
		// execve: untracked, and tracked again for the new program before
		// the old reader's final read.
		s.Untrack(7)
		cur.events = []uvmtools.Event{fault, fault}
		require.NoError(t, s.Track(7))
		require.Eventually(t, old.closed.Load, 5*time.Second, time.Millisecond)
		require.Eventually(t, func() bool { return counted() == 5 }, 5*time.Second, time.Millisecond)
		var got []uint64
		got = append(got, faults(s))
		cur.mu.Lock()
		cur.events = []uvmtools.Event{fault}
		cur.mu.Unlock()
		require.Eventually(t, func() bool { cur.mu.Lock(); defer cur.mu.Unlock(); return len(cur.events) == 0 }, 5*time.Second, time.Millisecond)
		time.Sleep(5 * cfg.PollInterval) // the read is accounted
		got = append(got, faults(s))
		require.Equal(t, []uint64{5, 6}, got, "cumulative faults of pid 7 at two Scrapes")
		require.False(t, cur.closed.Load(), "the new program is still traced")
		// Each tracker's driver reported 3 drops (fakeTracker.Stats): the
		// process lost 6.
		md, err := s.Scrape(context.Background())
		require.NoError(t, err)
		require.Equal(t, map[string]uint64{"driver_queue_full": 6},
			sumBy(md, "gpu.uvm.events.dropped", func(p point) string { return attr(p, "gpu.uvm.drop.reason") }))
	})
	t.Run("fentry", func(t *testing.T) {
		probe := newFakeProbe()
		s, _, _, _ := backendSource(t, BackendFentry, probe, nil)
		cpuFault := uvmfentry.Record{Type: uvmfentry.TypeCPUFault, PID: 100, Start: 1e9, Address: 0x1000, Access: uvmfentry.AccessRead}
		require.NoError(t, s.Track(100))
		probe.send(cpuFault, cpuFault)
		s.Untrack(100)
		require.NoError(t, s.Track(100))
		probe.send(cpuFault)
		var got []uint64
		got = append(got, faults(s))
		probe.send(cpuFault)
		got = append(got, faults(s))
		require.Equal(t, []uint64{3, 4}, got, "cumulative faults of pid 100 at two Scrapes")
		require.True(t, probe.isTracked(100))
		// Untracked for good: reported once more, then forgotten.
		s.Untrack(100)
		require.Equal(t, uint64(4), faults(s))
		require.Zero(t, faults(s))
		s.mu.Lock()
		require.Empty(t, s.procs)
		s.mu.Unlock()
	})
}

// TestHugeSizesSaturate: a byte count no driver event can carry (a
// corrupt entry, a record read from the wrong field) must not wrap the
// cumulative, monotonic byte sums negative: they stop at 2^63-1.
func TestHugeSizesSaturate(t *testing.T) {
	mig := uvmtools.Event{Type: uvmtools.EventMigration, Src: uvmtools.CPU, Dst: 1, Cause: uvmtools.CauseCoherence, Time: 1e9}
	remote := uvmtools.Event{Type: uvmtools.EventMapRemote, Src: 1, MapCause: 1, Time: 1e9}
	dup := uvmtools.Event{Type: uvmtools.EventReadDuplicate, Time: 1e9}
	for _, tc := range []struct {
		name  string
		sizes []uint64
		want  float64
	}{
		{"plausible", []uint64{4096, 2 << 20}, 4096 + 2<<20},
		{"three of 2^62", []uint64{1 << 62, 1 << 62, 1 << 62}, math.MaxInt64},
		{"one of 2^64-1", []uint64{4096, math.MaxUint64}, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSource(t, NewDefaultConfig())
			defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
			table := gpuTable(t)
			for _, n := range tc.sizes {
				for _, e := range []uvmtools.Event{mig, remote, dup} {
					e.Size = n
					s.Consume(7, table, e)
				}
			}
			md, err := s.Scrape(context.Background())
			require.NoError(t, err)
			for _, name := range []string{"gpu.uvm.migrated", "gpu.uvm.remote_mapped", "gpu.uvm.read_duplicated"} {
				require.Len(t, points(md, name), 1)
				require.Equal(t, tc.want, points(md, name)[0].value, name)
			}
		})
	}
}
