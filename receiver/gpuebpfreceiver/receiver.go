package gpuebpfreceiver

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
)

// gpuReceiver owns the signal sources of one configuration and the single
// place where their events become pdata.
type gpuReceiver struct {
	cfg     *Config
	set     receiver.Settings
	release func()

	mu       sync.Mutex
	traces   consumer.Traces
	metrics  consumer.Metrics
	starts   int
	cancel   context.CancelFunc
	stopped  chan struct{}
}

func newReceiver(cfg *Config, set receiver.Settings, release func()) *gpuReceiver {
	return &gpuReceiver{cfg: cfg, set: set, release: release}
}

func (r *gpuReceiver) setTraces(c consumer.Traces)   { r.mu.Lock(); r.traces = c; r.mu.Unlock() }
func (r *gpuReceiver) setMetrics(c consumer.Metrics) { r.mu.Lock(); r.metrics = c; r.mu.Unlock() }

// Start starts the sources once, however many pipelines share the receiver.
func (r *gpuReceiver) Start(_ context.Context, host component.Host) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts++
	if r.starts > 1 {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.stopped = make(chan struct{})
	go func() {
		defer close(r.stopped)
		<-ctx.Done()
	}()
	return nil
}

// Shutdown stops the sources when the last pipeline using them shuts down.
func (r *gpuReceiver) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.starts--
	if r.starts > 0 {
		r.mu.Unlock()
		return nil
	}
	cancel, stopped := r.cancel, r.stopped
	r.mu.Unlock()
	if r.release != nil {
		r.release()
	}
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
