package uvm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metricsconfig"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// Config configures the UVM source. Every field is optional.
type Config struct {
	// Enabled turns the source on. Off, Track does nothing and Scrape
	// returns no metrics.
	Enabled bool `mapstructure:"enabled"`
	// Backend is where events come from: tools (the driver's UVM tools
	// interface, one session per tracked process), fentry (eBPF programs
	// on nvidia_uvm's functions, package uvmfentry), or auto (default):
	// fentry where the kernel allows it, else tools, saying once why.
	Backend string `mapstructure:"backend"`
	// Fentry configures the fentry backend.
	Fentry FentryConfig `mapstructure:"fentry"`
	// Events are the UVM event types the driver queues for each tracked
	// process, by name (cpu_fault, migration, gpu_fault, gpu_fault_replay,
	// fatal_fault, read_duplicate, read_duplicate_invalidate,
	// thrashing_detected, throttling_start, throttling_end, map_remote,
	// eviction, fault_buffer_overflow, page_size_change). Empty means all.
	// Batch durations need gpu_fault and gpu_fault_replay.
	Events []string `mapstructure:"events"`
	// QueueEntries is the size of each process's event queue in the
	// driver (a power of two; 72 pinned bytes per entry). Events that do
	// not fit are dropped by the driver and counted in
	// gpu.uvm.events.dropped{reason=driver_queue_full}.
	QueueEntries uint32 `mapstructure:"queue_entries"`
	// PollInterval is how often each process's queue is read and the
	// driver asked to deliver the events it holds back (migrations and
	// replays are queued when the GPU work completes). A queue half full
	// is read at once.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// MaxProcesses bounds the processes tracked and accounted at once;
	// events of more are dropped and counted
	// (gpu.uvm.events.dropped{reason=process_limit}).
	MaxProcesses int `mapstructure:"max_processes"`
	// PatternWindow is the number of a process's most recent GPU faults
	// (per GPU) the fault-pattern classifier looks at; 0 turns the
	// classification (gpu.uvm.fault.pattern, .stride, Pattern) off.
	PatternWindow int `mapstructure:"pattern_window"`
	// PatternIdleReset starts a GPU's classification afresh when its
	// faults resume after this long without any (a new phase of the
	// program: its faults should not be judged with the last phase's);
	// 0: never.
	PatternIdleReset time.Duration `mapstructure:"pattern_idle_reset"`
	// FaultSamples emits fault addresses as log records.
	FaultSamples FaultSamplesConfig `mapstructure:"fault_samples"`
	// FaultStream keeps each process's latest faults for the gpupolicy
	// processor (package faultstream), whether or not they are exported.
	FaultStream FaultStreamConfig `mapstructure:"fault_stream"`
	// Histograms configures the histogram metrics mdatagen cannot
	// describe.
	Histograms HistogramsConfig `mapstructure:"histograms"`

	metadata.MetricsBuilderConfig `mapstructure:",squash"`
}

// FaultSamplesConfig configures fault samples: one log record per sampled
// GPU or CPU fault, with its address, access and fault type.
type FaultSamplesConfig struct {
	// Enabled turns fault samples on (default off: a fault storm is
	// hundreds of thousands of faults a second).
	Enabled bool `mapstructure:"enabled"`
	// MaxPerSecond is the most samples per process per second (a token
	// bucket on the driver's event clock, with a burst of one second's
	// worth). Faults over it are counted in
	// gpu.uvm.fault.samples.dropped{reason=rate_limited}.
	MaxPerSecond int `mapstructure:"max_per_second"`
}

// FaultStreamConfig configures the fault stream shared with the gpupolicy
// processor: a ring of the latest faults per process and GPU (and one of
// its CPU faults), 16 bytes per sample, nothing exported.
type FaultStreamConfig struct {
	// Enabled publishes the stream (default on).
	Enabled bool `mapstructure:"enabled"`
	// Capacity is the number of samples each ring keeps (default 4096).
	Capacity int `mapstructure:"capacity"`
}

// FentryConfig configures the fentry backend.
type FentryConfig struct {
	// RingBufferSize is the BPF ring buffer's size in bytes (a power of
	// two, 4 KiB to 1 GiB; 104 bytes per record). Records that do not fit
	// are counted in gpu.uvm.events.dropped{reason=ring_full}.
	RingBufferSize int `mapstructure:"ring_buffer_size"`
}

// Backends.
const (
	BackendAuto   = "auto"
	BackendTools  = "tools"
	BackendFentry = "fentry"
)

// HistogramsConfig configures the histograms of fault batches.
type HistogramsConfig struct {
	// BatchSize: faults of the process in each GPU fault batch.
	BatchSize HistogramConfig `mapstructure:"gpu.uvm.fault.batch.size"`
	// BatchDuration: service time of each GPU fault batch, in seconds (see
	// the package documentation for its exact definition).
	BatchDuration HistogramConfig `mapstructure:"gpu.uvm.fault.batch.duration"`
	// ServiceDuration: duration of each servicing pass of a GPU's fault
	// buffer, in seconds (fentry backend only).
	ServiceDuration HistogramConfig `mapstructure:"gpu.uvm.fault.service.duration"`
}

// HistogramConfig enables a histogram metric and sets its explicit bounds.
type HistogramConfig = histogram.Config

// Default values.
const (
	DefaultPollInterval       = time.Second
	DefaultPatternIdleReset   = time.Second
	DefaultMaxProcesses       = 1024
	DefaultSamplesPerSecond   = 100
	maxSamplesPerSecond       = 1_000_000
	maxProcessesLimit         = 65536
	minPollInterval           = time.Millisecond
	maxPollInterval           = time.Minute
	defaultSampleLogsBuffered = 64
	DefaultFentryRingSize     = 8 << 20
	minFentryRingSize         = 4 << 10
	maxFentryRingSize         = 1 << 30
)

// DefaultBatchSizeBuckets are the default bounds of gpu.uvm.fault.batch.size
// (the driver fetches at most 256 faults per batch by default).
var DefaultBatchSizeBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// DefaultBatchDurationBuckets are the default bounds of
// gpu.uvm.fault.batch.duration, 5 µs to 1 s.
var DefaultBatchDurationBuckets = []float64{
	5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1,
}

// NewDefaultConfig returns the configuration used when none is given:
// the source on, every event type, classification over 1024 faults, fault
// samples off, every histogram on, the backend chosen at start (auto).
func NewDefaultConfig() Config {
	return Config{
		Enabled:          true,
		Backend:          BackendAuto,
		Fentry:           FentryConfig{RingBufferSize: DefaultFentryRingSize},
		QueueEntries:     uvmtools.DefaultQueueEntries,
		PollInterval:     DefaultPollInterval,
		MaxProcesses:     DefaultMaxProcesses,
		PatternWindow:    faultpattern.DefaultWindow,
		PatternIdleReset: DefaultPatternIdleReset,
		FaultSamples:     FaultSamplesConfig{MaxPerSecond: DefaultSamplesPerSecond},
		FaultStream:      FaultStreamConfig{Enabled: true, Capacity: faultstream.DefaultCapacity},
		Histograms: HistogramsConfig{
			BatchSize:       HistogramConfig{Enabled: true, Buckets: slices.Clone(DefaultBatchSizeBuckets)},
			BatchDuration:   HistogramConfig{Enabled: true, Buckets: slices.Clone(DefaultBatchDurationBuckets)},
			ServiceDuration: HistogramConfig{Enabled: true, Buckets: slices.Clone(DefaultBatchDurationBuckets)},
		},
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
	}
}

// fieldPrefix is how errors name this configuration inside the receiver's.
const fieldPrefix = "uvm::"

// eventNames are the names accepted in events.
var eventNames = func() map[string]uvmtools.EventType {
	m := map[string]uvmtools.EventType{}
	for t := uvmtools.EventCPUFault; t <= uvmtools.EventEviction; t++ {
		m[t.String()] = t
	}
	return m
}()

func sortedEventNames() []string {
	names := make([]string, 0, len(eventNames))
	for n := range eventNames {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// eventMask is the mask of Events (0 = all).
func (c *Config) eventMask() uvmtools.EventMask {
	var m uvmtools.EventMask
	for _, n := range c.Events {
		if t, ok := eventNames[n]; ok {
			m |= t.Mask()
		}
	}
	return m
}

// Validate checks the configuration; each error names its field.
func (c *Config) Validate() error {
	var errs []error
	switch c.Backend {
	case "", BackendAuto, BackendTools, BackendFentry:
	default:
		errs = append(errs, fmt.Errorf("%sbackend: unknown backend %q; allowed: %s, %s, %s", fieldPrefix, c.Backend, BackendAuto, BackendTools, BackendFentry))
	}
	if r := c.Fentry.RingBufferSize; r != 0 && (r < minFentryRingSize || r > maxFentryRingSize || r&(r-1) != 0) {
		errs = append(errs, fmt.Errorf("%sfentry::ring_buffer_size: must be a power of two from %d to %d, got %d", fieldPrefix, minFentryRingSize, maxFentryRingSize, r))
	}
	for i, n := range c.Events {
		if _, ok := eventNames[n]; !ok {
			errs = append(errs, fmt.Errorf("%sevents[%d]: unknown event type %q; allowed: %s", fieldPrefix, i, n, strings.Join(sortedEventNames(), ", ")))
		}
	}
	if q := c.QueueEntries; q != 0 && (q < 2 || q > uvmtools.MaxQueueEntries || q&(q-1) != 0) {
		errs = append(errs, fmt.Errorf("%squeue_entries: must be a power of two from 2 to %d, got %d", fieldPrefix, uvmtools.MaxQueueEntries, q))
	}
	if c.PollInterval != 0 && (c.PollInterval < minPollInterval || c.PollInterval > maxPollInterval) {
		errs = append(errs, fmt.Errorf("%spoll_interval: must be between %v and %v, got %v", fieldPrefix, minPollInterval, maxPollInterval, c.PollInterval))
	}
	if c.MaxProcesses < 0 || c.MaxProcesses > maxProcessesLimit {
		errs = append(errs, fmt.Errorf("%smax_processes: must be between 0 (default %d) and %d, got %d", fieldPrefix, DefaultMaxProcesses, maxProcessesLimit, c.MaxProcesses))
	}
	if c.PatternWindow < 0 || c.PatternWindow > faultpattern.MaxWindow {
		errs = append(errs, fmt.Errorf("%spattern_window: must be between 0 (off) and %d, got %d", fieldPrefix, faultpattern.MaxWindow, c.PatternWindow))
	}
	if c.PatternIdleReset < 0 {
		errs = append(errs, fmt.Errorf("%spattern_idle_reset: must not be negative, got %v", fieldPrefix, c.PatternIdleReset))
	}
	if c.FaultSamples.MaxPerSecond < 0 || c.FaultSamples.MaxPerSecond > maxSamplesPerSecond {
		errs = append(errs, fmt.Errorf("%sfault_samples::max_per_second: must be between 0 (default %d) and %d, got %d", fieldPrefix, DefaultSamplesPerSecond, maxSamplesPerSecond, c.FaultSamples.MaxPerSecond))
	}
	if c.FaultStream.Capacity < 0 || c.FaultStream.Capacity > faultstream.MaxCapacity {
		errs = append(errs, fmt.Errorf("%sfault_stream::capacity: must be between 0 (default %d) and %d, got %d", fieldPrefix, faultstream.DefaultCapacity, faultstream.MaxCapacity, c.FaultStream.Capacity))
	}
	errs = append(errs, c.Histograms.BatchSize.Validate(fieldPrefix+"histograms::gpu.uvm.fault.batch.size"))
	errs = append(errs, c.Histograms.BatchDuration.Validate(fieldPrefix+"histograms::gpu.uvm.fault.batch.duration"))
	errs = append(errs, c.Histograms.ServiceDuration.Validate(fieldPrefix+"histograms::gpu.uvm.fault.service.duration"))
	errs = append(errs, metricsconfig.Validate(fieldPrefix, &c.Metrics)...)
	return errors.Join(errs...)
}

// withDefaults fills zero fields that mean "default".
func (c Config) withDefaults() Config {
	if c.Backend == "" {
		c.Backend = BackendAuto
	}
	if c.Fentry.RingBufferSize == 0 {
		c.Fentry.RingBufferSize = DefaultFentryRingSize
	}
	if c.QueueEntries == 0 {
		c.QueueEntries = uvmtools.DefaultQueueEntries
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.MaxProcesses == 0 {
		c.MaxProcesses = DefaultMaxProcesses
	}
	if c.FaultSamples.MaxPerSecond == 0 {
		c.FaultSamples.MaxPerSecond = DefaultSamplesPerSecond
	}
	if c.FaultStream.Capacity == 0 {
		c.FaultStream.Capacity = faultstream.DefaultCapacity
	}
	return c
}
