package gpuebpfreceiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/cudaprobe"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmfentry"
)

type statusHost struct {
	component.Host
	mu     sync.Mutex
	events []*componentstatus.Event
}

func (h *statusHost) Report(e *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

// runUntilTwoEmissions starts a metrics receiver of cfg (collection every
// 20 ms) on a host that records status events, waits for two emissions and
// shuts it down.
func runUntilTwoEmissions(t *testing.T, cfg *Config) (*statusHost, *consumertest.MetricsSink) {
	t.Helper()
	cfg.CollectionInterval = 20 * time.Millisecond
	sink := new(consumertest.MetricsSink)
	r, err := createMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	host := &statusHost{}
	require.NoError(t, r.Start(context.Background(), host))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= 2 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Shutdown(context.Background()))
	return host, sink
}

// TestSourceFailureKeepsReceiverRunning: when the BPF programs cannot be
// loaded (no privileges, lockdown), Start succeeds, the reason is reported
// once through component status, and the receiver keeps emitting its own
// metrics.
func TestSourceFailureKeepsReceiverRunning(t *testing.T) {
	saved := newTracer
	defer func() { newTracer = saved }()
	loadErr := fmt.Errorf("%w: operation not permitted", cudaprobe.ErrPermission)
	newTracer = func(cudaprobe.Options) (*cudaprobe.Tracer, error) { return nil, loadErr }

	cfg := createDefaultConfig().(*Config)
	cfg.NVML.Enabled = false
	host, sink := runUntilTwoEmissions(t, cfg)

	require.Len(t, host.events, 1)
	require.Equal(t, componentstatus.StatusRecoverableError, host.events[0].Status())
	require.ErrorIs(t, host.events[0].Err(), cudaprobe.ErrPermission)

	// The receiver's own metrics, in whichever batches carry them (the UVM
	// source scrapes on a goroutine of its own and sends its own batches).
	found := false
	for _, md := range sink.AllMetrics() {
		for _, rm := range md.ResourceMetrics().All() {
			if n, ok := metricSum(rm, "gpu.ebpf.probes.attached", nil); ok {
				require.Zero(t, n)
				found = true
			}
		}
	}
	require.True(t, found, "gpu.ebpf.probes.attached reported")
}

// TestNVMLMissing: on a machine without the NVIDIA driver (this one) the
// NVML source reports why once, and the CUDA source and the receiver's own
// metrics run on.
func TestNVMLMissing(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has the NVIDIA driver")
	}
	cfg := createDefaultConfig().(*Config)
	cfg.CollectionInterval = 20 * time.Millisecond
	cfg.NVML.LibraryPath = filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	sink := new(consumertest.MetricsSink)
	logs := new(consumertest.LogsSink)
	set := receivertest.NewNopSettings(metadata.Type)
	r, err := createMetrics(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	_, err = createLogs(context.Background(), set, cfg, logs)
	require.NoError(t, err)
	host := &statusHost{}
	require.NoError(t, r.Start(context.Background(), host))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= 2 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Shutdown(context.Background()))

	var nvmlErrs []error
	for _, e := range host.events {
		if errors.Is(e.Err(), nvml.ErrUnavailable) {
			nvmlErrs = append(nvmlErrs, e.Err())
		}
	}
	require.Len(t, nvmlErrs, 1)
	require.ErrorContains(t, nvmlErrs[0], "libnvidia-ml.so.1")
	require.Zero(t, logs.LogRecordCount())
}

// TestForcedFentryBackendMissing: uvm::backend fentry on a machine without
// nvidia_uvm (this one) is reported once at Start, with the loader's
// reason; the receiver starts and its other sources run.
func TestForcedFentryBackendMissing(t *testing.T) {
	if _, err := os.Stat("/sys/module/nvidia_uvm"); err == nil {
		t.Skip("this machine has nvidia_uvm")
	}
	cfg := createDefaultConfig().(*Config)
	cfg.NVML.Enabled = false
	cfg.CUDA.Enabled = false
	cfg.DevRT.Enabled = false
	cfg.UVM.Backend = uvm.BackendFentry
	host, _ := runUntilTwoEmissions(t, cfg)

	require.Len(t, host.events, 1)
	require.Equal(t, componentstatus.StatusRecoverableError, host.events[0].Status())
	require.ErrorIs(t, host.events[0].Err(), uvmfentry.ErrModuleNotLoaded)
	require.ErrorContains(t, host.events[0].Err(), "the nvidia_uvm kernel module is not loaded")
}
