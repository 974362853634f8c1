package gpuebpfreceiver

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devrt"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm"
)

// NewFactory returns the factory of the gpuebpf receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		createDefaultConfig,
		receiver.WithTraces(createTraces, metadata.TracesStability),
		receiver.WithMetrics(createMetrics, metadata.MetricsStability),
		receiver.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		CollectionInterval: 10 * time.Second,
		ProcRoot:           "/proc",
		CUDA: CUDAConfig{
			Enabled:        true,
			LibraryGlobs:   []string{"libcuda.so*", "libcudart.so*"},
			RescanInterval: 30 * time.Second,
			RingBufferSize: 16 << 20,
			MaxInflight:    65536,
			// Full spans by default; launch-bound services may turn this off.
			LaunchReturnProbes: true,
		},
		Spans: SpansConfig{
			Enabled:       true,
			FlushInterval: 200 * time.Millisecond,
			MaxBatch:      8192,
		},
		Histograms: HistogramsConfig{
			// Seconds, from 1 µs (a launch) to 10 s (a long synchronise).
			CallDuration: HistogramConfig{Enabled: true, Buckets: []float64{
				1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 0.1, 1, 10}},
			GridSize: HistogramConfig{Enabled: true, Buckets: []float64{
				1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576}},
			BlockSize: HistogramConfig{Enabled: true, Buckets: []float64{
				32, 64, 128, 256, 512, 1024}},
			// Seconds: kernels and copies from 1 µs to 10 s on the GPU.
			KernelExecution: HistogramConfig{Enabled: true, Buckets: []float64{
				1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 0.1, 1, 10}},
			// Seconds from the launch call to the GPU starting the work:
			// about 5 µs when the GPU is idle, up to whole seconds of
			// queued work.
			KernelQueueDelay: HistogramConfig{Enabled: true, Buckets: []float64{
				2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 1e-2, 0.1, 1, 10}},
			CopyExecution: HistogramConfig{Enabled: true, Buckets: []float64{
				1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 0.1, 1, 10}},
		},
		NVML:                 nvml.NewDefaultConfig(),
		UVM:                  uvm.NewDefaultConfig(),
		DevRT:                devrt.NewDefaultConfig(),
		MetricsBuilderConfig: metadata.DefaultMetricsBuilderConfig(),
	}
}

// receivers shares one receiver instance between the traces and metrics
// pipelines of the same configuration: there is one set of probes per config.
var receivers = sharedReceivers{m: map[*Config]*gpuReceiver{}}

type sharedReceivers struct {
	mu sync.Mutex
	m  map[*Config]*gpuReceiver
}

func (s *sharedReceivers) get(cfg *Config, set receiver.Settings) *gpuReceiver {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[cfg]
	if !ok {
		r = newReceiver(cfg, set, func() { s.remove(cfg) })
		s.m[cfg] = r
	}
	return r
}

func (s *sharedReceivers) remove(cfg *Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, cfg)
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	r := receivers.get(cfg.(*Config), set)
	r.setTraces(next)
	return r, nil
}

func createMetrics(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Metrics) (receiver.Metrics, error) {
	r := receivers.get(cfg.(*Config), set)
	r.setMetrics(next)
	return r, nil
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	r := receivers.get(cfg.(*Config), set)
	r.setLogs(next)
	return r, nil
}
