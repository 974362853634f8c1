package gpuebpfreceiver

import (
	"context"
	"fmt"
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
	cfg.CollectionInterval = 20 * time.Millisecond
	sink := new(consumertest.MetricsSink)
	r, err := createMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	host := &statusHost{}
	require.NoError(t, r.Start(context.Background(), host))
	require.Eventually(t, func() bool { return len(sink.AllMetrics()) >= 2 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, r.Shutdown(context.Background()))

	require.Len(t, host.events, 1)
	require.Equal(t, componentstatus.StatusRecoverableError, host.events[0].Status())
	require.ErrorIs(t, host.events[0].Err(), cudaprobe.ErrPermission)

	md := sink.AllMetrics()[0]
	rm := md.ResourceMetrics().At(0)
	n, ok := metricSum(rm, "gpu.ebpf.probes.attached", nil)
	require.True(t, ok)
	require.Zero(t, n)
}
