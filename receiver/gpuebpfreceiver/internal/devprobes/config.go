package devprobes

import (
	"errors"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
	"github.com/otelcol-gpu/otelcol-gpu/internal/probeset"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes/internal/metadata"
)

// Config is the receiver's devrt::probes block.
type Config struct {
	// Which probes go into which kernels, at warp or thread level, and
	// whether the injection server runs at all (enabled, off by default).
	probeset.Config `mapstructure:",squash"`
	// ScheduleDelay is gpu.kernel.block.schedule.delay: each block's start
	// minus its launch's first block start, by kernel (seconds).
	ScheduleDelay histogram.Config `mapstructure:"schedule_delay"`
	// LaunchLatency is gpu.kernel.launch.latency: the launch call's start
	// to the first block's start, by kernel (seconds).
	LaunchLatency histogram.Config `mapstructure:"launch_latency"`
	// Spans emits one span per finished launch seen by block_sched,
	// "<kernel> blocks", with block count and duration attributes.
	Spans bool `mapstructure:"spans"`

	metadata.MetricsBuilderConfig `mapstructure:",squash"`
}

// NewDefaultConfig returns the defaults: disabled; when enabled, every
// shipped probe in every kernel at warp level.
func NewDefaultConfig() Config {
	return Config{
		Config: probeset.Config{Mode: probeset.ModeWarp, BlocksPerLaunch: probeset.DefaultBlocksPerLaunch},
		ScheduleDelay: histogram.Config{Enabled: true, Buckets: []float64{
			1e-6, 2e-6, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 5e-3, 10e-3, 50e-3, 100e-3, 1}},
		LaunchLatency: histogram.Config{Enabled: true, Buckets: []float64{
			1e-6, 2e-6, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 5e-3, 10e-3, 100e-3, 1}},
		Spans:                true,
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
	}
}

// Validate checks the block; errors name the field (devrt::probes::...).
func (c *Config) Validate() error {
	return errors.Join(c.Config.Validate(),
		c.ScheduleDelay.Validate("devrt::probes::schedule_delay"),
		c.LaunchLatency.Validate("devrt::probes::launch_latency"))
}

// Factory names this source for mdatagen's generated tests (the gpuebpf
// receiver runs it; there is nothing to create).
type Factory struct{}

// NewFactory returns the source's factory.
func NewFactory() Factory { return Factory{} }

// Type is the source's type, "devprobes".
func (Factory) Type() component.Type { return metadata.Type }

// CreateDefaultConfig returns a *Config holding NewDefaultConfig.
func (Factory) CreateDefaultConfig() component.Config {
	cfg := NewDefaultConfig()
	return &cfg
}
