package nvml

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metricsconfig"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

// Config configures the NVML source. Every field is optional.
type Config struct {
	// Enabled turns the source on. Off, Start does nothing and Scrape
	// returns no metrics.
	Enabled bool `mapstructure:"enabled"`
	// LibraryPath is the absolute path of libnvidia-ml.so.1 when it is not
	// where the dynamic loader looks (a driver mounted into a container at
	// an unusual place). Empty means the loader's search (ld.so.cache,
	// LD_LIBRARY_PATH).
	LibraryPath string `mapstructure:"library_path"`
	// ProcessUsage emits per-process memory and utilization, on resources
	// that carry both the GPU and the process, container and pod.
	ProcessUsage bool `mapstructure:"process_usage"`
	// Events waits on NVML events (XID critical errors, double-bit ECC,
	// page retirement, ...) and turns them into log records.
	Events bool `mapstructure:"events"`
	// MIG enumerates MIG devices of GPUs in MIG mode and emits them as
	// children of their GPU (hw.parent).
	MIG bool `mapstructure:"mig"`
	// XIDStatusHold is how long an XID keeps hw.status at the state the XID
	// table gives it (degraded or failed). 0: XIDs are logged and counted
	// but do not change hw.status. Persistent conditions (a lost GPU,
	// pending row remapping, ...) are read from NVML at every scrape and
	// need no hold.
	XIDStatusHold time.Duration `mapstructure:"xid_status_hold"`

	metadata.MetricsBuilderConfig `mapstructure:",squash"`
}

// NewDefaultConfig returns the configuration used when none is given:
// everything on, every metric and resource attribute at its default.
func NewDefaultConfig() Config {
	return Config{
		Enabled:              true,
		ProcessUsage:         true,
		Events:               true,
		MIG:                  true,
		XIDStatusHold:        10 * time.Minute,
		MetricsBuilderConfig: metadata.NewDefaultMetricsBuilderConfig(),
	}
}

// fieldPrefix is how errors name this configuration inside the receiver's.
const fieldPrefix = "nvml::"

// Validate checks the configuration; each error names its field.
func (c *Config) Validate() error {
	var errs []error
	if p := c.LibraryPath; p != "" {
		switch {
		case !filepath.IsAbs(p):
			errs = append(errs, fmt.Errorf("%slibrary_path: must be an absolute path, got %q", fieldPrefix, p))
		case strings.HasSuffix(p, "/"):
			errs = append(errs, fmt.Errorf("%slibrary_path: must name a file, not a directory, got %q", fieldPrefix, p))
		}
	}
	if c.XIDStatusHold < 0 {
		errs = append(errs, fmt.Errorf("%sxid_status_hold: must not be negative, got %v", fieldPrefix, c.XIDStatusHold))
	}
	errs = append(errs, metricsconfig.Validate(fieldPrefix, &c.Metrics)...)
	return errors.Join(errs...)
}
