package uvm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// TestFaultStreamCarriesEveryPhase replays each recorded GPU phase and
// reads it back from the hub registered under the receiver's ID, as the
// gpupolicy processor does: the stream holds exactly the phase's faults,
// in order, and classifies as the source's own gauge does.
func TestFaultStreamCarriesEveryPhase(t *testing.T) {
	want := map[string]faultpattern.Pattern{
		"gpu_seq": faultpattern.Sequential, "gpu_stride": faultpattern.Strided, "gpu_random": faultpattern.Random,
	}
	for _, f := range loadFixtures(t) {
		table := tableOf(t, f.meta.Processors)
		for _, ph := range f.phases {
			pat, ok := want[ph.Name]
			if !ok {
				continue
			}
			t.Run(f.name+"/"+ph.Name, func(t *testing.T) {
				id := component.MustNewIDWithName("gpuebpf", t.Name())
				set := receivertest.NewNopSettings(component.MustNewType("gpuebpf"))
				set.ID = id
				s := New(NewDefaultConfig(), set, nil)
				var gpuFaults, cpuFaults []uvmtools.Event
				for _, e := range f.events {
					if e.Time < ph.StartNS || e.Time > ph.EndNS {
						continue
					}
					s.Consume(f.meta.PID, table, e)
					switch e.Type {
					case uvmtools.EventGPUFault:
						gpuFaults = append(gpuFaults, e)
					case uvmtools.EventCPUFault:
						cpuFaults = append(cpuFaults, e)
					}
				}
				hub, ok := faultstream.Lookup(id.String())
				require.True(t, ok, "hub registered under %s", id)
				require.Same(t, s.Hub(), hub)

				k := faultstream.Key{PID: f.meta.PID, HWID: f.gpuHWID()}
				got, total, ok := hub.Recent(k, nil)
				require.True(t, ok)
				assert.Equal(t, uint64(len(gpuFaults)), total)
				n := min(len(gpuFaults), hub.Capacity())
				require.Len(t, got, n)
				for i, e := range gpuFaults[len(gpuFaults)-n:] {
					require.Equal(t, faultstream.Sample{TimeNs: e.TimeGPU, Addr: e.Address, Access: streamAccess(e.Access)}, got[i], "sample %d", i)
				}
				_, cpuTotal, _ := hub.Recent(faultstream.Key{PID: f.meta.PID}, nil)
				assert.Equal(t, uint64(len(cpuFaults)), cpuTotal)

				// The reader's analysis of the window agrees with the
				// source's classifier over the same window.
				window := got[max(0, len(got)-faultpattern.DefaultWindow):]
				r := faultstream.Classify(window, faultpattern.Options{Window: faultpattern.DefaultWindow})
				own, ok := s.Pattern(f.meta.PID)
				require.True(t, ok)
				assert.Equal(t, pat, r.Pattern)
				assert.Equal(t, own, r)

				require.NoError(t, s.Shutdown(context.Background()))
				_, ok = faultstream.Lookup(id.String())
				assert.False(t, ok, "unregistered at shutdown")
			})
		}
	}
}

func TestFaultStreamOff(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.FaultStream.Enabled = false
	s := newTestSource(t, cfg)
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	feedFaults(s, 42, tableOf(t, nil), 1, 1000, 10)
	assert.Nil(t, s.Hub())
}

// TestPatternIdleReset: faults that resume after pattern_idle_reset are a
// new phase, classified on their own; with the reset off, the window still
// holds the last phase and the new pattern does not show.
func TestPatternIdleReset(t *testing.T) {
	strided := func(s *Source, t0 uint64) {
		for i := range 256 {
			s.Consume(42, gpuTable(t), uvmtools.Event{
				Type: uvmtools.EventGPUFault, Processor: 1, Access: uvmtools.AccessRead, FaultType: uvmtools.FaultInvalidPTE,
				Address: 0x7f4000000000 + uint64(i)*65536, Batch: 9, Time: t0 + uint64(i)*1000, TimeGPU: t0 + uint64(i)*1000,
			})
		}
	}
	tests := []struct {
		name  string
		reset time.Duration
		gap   uint64
		want  faultpattern.Pattern
	}{
		{"resumed after the idle time: a new phase", time.Second, 2e9, faultpattern.Strided},
		{"resumed within it: one window", time.Second, 5e8, faultpattern.Sequential},
		{"reset off", 0, 2e9, faultpattern.Sequential},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			cfg.PatternIdleReset = tt.reset
			s := newTestSource(t, cfg)
			defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
			feedFaults(s, 42, gpuTable(t), 1, 1e9, 1024)
			r, ok := s.Pattern(42)
			require.True(t, ok)
			require.Equal(t, faultpattern.Sequential, r.Pattern)
			strided(s, 1e9+1024*1000+tt.gap)
			r, _ = s.Pattern(42)
			assert.Equal(t, tt.want, r.Pattern)
			if tt.want == faultpattern.Strided {
				assert.Equal(t, int64(65536), r.Stride)
				assert.Equal(t, 256, r.Samples)
			}
		})
	}
	cfg := NewDefaultConfig()
	cfg.PatternIdleReset = -time.Second
	assert.ErrorContains(t, cfg.Validate(), "uvm::pattern_idle_reset: must not be negative, got -1s")
}
