package gpuebpfreceiver

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/internal/histogram"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devrt"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm"
)

// Config is the gpuebpf receiver's configuration. Every field is validated in
// Validate, in one place, and every error names the field it is about.
type Config struct {
	// CollectionInterval is how often aggregated metrics are emitted.
	CollectionInterval time.Duration `mapstructure:"collection_interval"`
	// ProcRoot is where the host's /proc is visible (/host/proc in a container
	// that mounts it there). Attribution, discovery and library opening use it.
	ProcRoot string `mapstructure:"proc_root"`

	CUDA       CUDAConfig       `mapstructure:"cuda"`
	Spans      SpansConfig      `mapstructure:"spans"`
	Histograms HistogramsConfig `mapstructure:"histograms"`
	// NVML is device telemetry, per-process GPU usage and Xid errors.
	NVML nvml.Config `mapstructure:"nvml"`
	// UVM is unified-memory driver telemetry per process (faults,
	// migrations, evictions, thrashing, the fault pattern).
	UVM uvm.Config `mapstructure:"uvm"`
	// DevRT reads the rings of devrt, the in-process CUDA runtime library.
	DevRT devrt.Config `mapstructure:"devrt"`

	metadata.MetricsBuilderConfig `mapstructure:",squash"`
}

// CUDAConfig configures the uprobe source on the CUDA driver and runtime.
type CUDAConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Libraries are library files to attach to at start in addition to the
	// driver found through the ld.so cache and the usual driver paths.
	Libraries []string `mapstructure:"libraries"`
	// LibraryGlobs select, by file name, the libraries found in the memory maps
	// of running processes that get probes (once per inode).
	LibraryGlobs []string `mapstructure:"library_globs"`
	// Include and Exclude select processes; a process is traced when it
	// matches any include rule (or there are none) and no exclude rule.
	Include []ProcessRule `mapstructure:"include"`
	Exclude []ProcessRule `mapstructure:"exclude"`
	// RescanInterval is the period of the /proc backstop scan for processes
	// that map a CUDA library from a file not yet probed. 0 disables it.
	RescanInterval time.Duration `mapstructure:"rescan_interval"`
	// RingBufferSize is the size in bytes of the BPF ring buffer shared by all
	// CPUs: a power of two and a multiple of the page size.
	RingBufferSize int `mapstructure:"ring_buffer_size"`
	// MaxInflight bounds the calls that may be in progress at once across all
	// threads (the entry→return map). Calls beyond it are counted as dropped.
	MaxInflight int `mapstructure:"max_inflight"`
	// LaunchReturnProbes also probes the return of kernel and graph
	// launches, for their result and duration. Off, a launch costs one
	// uprobe trap instead of two; its span has no duration and its
	// gpu.cuda.calls result is "unknown".
	LaunchReturnProbes bool `mapstructure:"launch_return_probes"`
}

// ProcessRule matches a process. Empty fields match anything; set fields must
// all match.
type ProcessRule struct {
	// Executable is a shell glob on the executable's file name ("python*").
	Executable string `mapstructure:"executable"`
	// ContainerID is a full container id or a prefix of at least 12 characters.
	ContainerID string `mapstructure:"container_id"`
	// PodUID is a Kubernetes pod UID.
	PodUID string `mapstructure:"pod_uid"`
}

// SpansConfig configures the span per API call.
type SpansConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Classes limits spans to these API classes: launch, memory, copy, sync,
	// module, context. Empty means all.
	Classes []string `mapstructure:"classes"`
	// FlushInterval is the longest a finished call waits before its span is
	// handed to the pipeline.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// MaxBatch is the most spans handed to the pipeline in one batch.
	MaxBatch int `mapstructure:"max_batch"`
}

// HistogramsConfig configures the histogram metrics, which mdatagen cannot
// describe. Each can be disabled and given its own bucket boundaries.
type HistogramsConfig struct {
	CallDuration HistogramConfig `mapstructure:"gpu.cuda.call.duration"`
	GridSize     HistogramConfig `mapstructure:"gpu.cuda.launch.grid.size"`
	BlockSize    HistogramConfig `mapstructure:"gpu.cuda.launch.block.size"`
	// GPU execution of the work devrt times (devrt::sample_every).
	KernelExecution  HistogramConfig `mapstructure:"gpu.kernel.execution.duration"`
	KernelQueueDelay HistogramConfig `mapstructure:"gpu.kernel.queue.delay"`
	CopyExecution    HistogramConfig `mapstructure:"gpu.cuda.copy.execution.duration"`
}

// HistogramConfig enables a histogram metric and sets its explicit bounds.
type HistogramConfig = histogram.Config

// Span classes accepted in spans.classes.
var spanClasses = []string{"launch", "memory", "copy", "sync", "module", "context"}

var containerIDRe = regexp.MustCompile(`^[0-9a-f]{12,64}$`)
var podUIDRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Validate checks the configuration and names the offending field.
func (c *Config) Validate() error {
	var errs []error
	if c.CollectionInterval <= 0 {
		errs = append(errs, fmt.Errorf("collection_interval: must be positive, got %v", c.CollectionInterval))
	}
	if c.ProcRoot == "" || !strings.HasPrefix(c.ProcRoot, "/") {
		errs = append(errs, fmt.Errorf("proc_root: must be an absolute path, got %q", c.ProcRoot))
	}
	errs = append(errs, c.CUDA.validate()...)
	errs = append(errs, c.Spans.validate()...)
	errs = append(errs, c.Histograms.CallDuration.Validate("histograms::gpu.cuda.call.duration"))
	errs = append(errs, c.Histograms.GridSize.Validate("histograms::gpu.cuda.launch.grid.size"))
	errs = append(errs, c.Histograms.BlockSize.Validate("histograms::gpu.cuda.launch.block.size"))
	errs = append(errs, c.Histograms.KernelExecution.Validate("histograms::gpu.kernel.execution.duration"))
	errs = append(errs, c.Histograms.KernelQueueDelay.Validate("histograms::gpu.kernel.queue.delay"))
	errs = append(errs, c.Histograms.CopyExecution.Validate("histograms::gpu.cuda.copy.execution.duration"))
	errs = append(errs, c.NVML.Validate())
	errs = append(errs, c.UVM.Validate())
	errs = append(errs, c.DevRT.Validate())
	return errors.Join(errs...)
}

func (c *CUDAConfig) validate() []error {
	var errs []error
	for i, lib := range c.Libraries {
		if !strings.HasPrefix(lib, "/") {
			errs = append(errs, fmt.Errorf("cuda::libraries[%d]: must be an absolute path, got %q", i, lib))
		}
	}
	for i, g := range c.LibraryGlobs {
		if _, err := path.Match(g, ""); err != nil || g == "" || strings.Contains(g, "/") {
			errs = append(errs, fmt.Errorf("cuda::library_globs[%d]: %q is not a file-name glob", i, g))
		}
	}
	for i := range c.Include {
		errs = append(errs, c.Include[i].validate(fmt.Sprintf("cuda::include[%d]", i))...)
	}
	for i := range c.Exclude {
		errs = append(errs, c.Exclude[i].validate(fmt.Sprintf("cuda::exclude[%d]", i))...)
	}
	if c.RescanInterval < 0 {
		errs = append(errs, fmt.Errorf("cuda::rescan_interval: must not be negative, got %v", c.RescanInterval))
	}
	if n := c.RingBufferSize; n < 4096 || n&(n-1) != 0 || n > 1<<30 {
		errs = append(errs, fmt.Errorf("cuda::ring_buffer_size: must be a power of two between 4096 and 1073741824 bytes, got %d", n))
	}
	if c.MaxInflight < 64 || c.MaxInflight > 1<<22 {
		errs = append(errs, fmt.Errorf("cuda::max_inflight: must be between 64 and 4194304, got %d", c.MaxInflight))
	}
	return errs
}

func (r *ProcessRule) validate(field string) []error {
	var errs []error
	if r.Executable == "" && r.ContainerID == "" && r.PodUID == "" {
		errs = append(errs, fmt.Errorf("%s: a rule needs at least one of executable, container_id, pod_uid", field))
	}
	if _, err := path.Match(r.Executable, ""); err != nil {
		errs = append(errs, fmt.Errorf("%s::executable: %q is not a valid glob: %w", field, r.Executable, err))
	}
	if r.ContainerID != "" && !containerIDRe.MatchString(r.ContainerID) {
		errs = append(errs, fmt.Errorf("%s::container_id: %q must be 12 to 64 lowercase hex characters", field, r.ContainerID))
	}
	if r.PodUID != "" && !podUIDRe.MatchString(r.PodUID) {
		errs = append(errs, fmt.Errorf("%s::pod_uid: %q is not a lowercase dashed UUID", field, r.PodUID))
	}
	return errs
}

func (s *SpansConfig) validate() []error {
	var errs []error
	for i, c := range s.Classes {
		if !contains(spanClasses, c) {
			errs = append(errs, fmt.Errorf("spans::classes[%d]: %q is not one of %s", i, c, strings.Join(spanClasses, ", ")))
		}
	}
	if s.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("spans::flush_interval: must be positive, got %v", s.FlushInterval))
	}
	if s.MaxBatch < 1 || s.MaxBatch > 1<<20 {
		errs = append(errs, fmt.Errorf("spans::max_batch: must be between 1 and 1048576, got %d", s.MaxBatch))
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
