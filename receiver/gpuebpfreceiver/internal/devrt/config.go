package devrt

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes"
)

// Config configures the devrt source.
type Config struct {
	Enabled bool `mapstructure:"enabled"`
	// Directories are where devrt creates its rings ($GPUEXT_DEVRT_DIR of
	// the traced programs), on the host and inside each container that
	// maps the library.
	Directories []string `mapstructure:"directories"`
	// PollInterval is how often each ring is drained; a ring must hold
	// what its process writes in that time.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Classes are what devrt reports: launch, memory, copy, sync, module,
	// exec (GPU execution timing). Empty: all.
	Classes []string `mapstructure:"classes"`
	// NestedCalls also reports the driver launch or copy that the CUDA
	// runtime makes inside a reported runtime launch or copy
	// (cudaLaunchKernel -> cuLaunchKernel). Off: the runtime call's record
	// stands for both, one record per launch instead of two.
	NestedCalls bool `mapstructure:"nested_calls"`
	// SampleEvery times the GPU execution of 1 in N launches and copies
	// per thread; 0 turns timing off.
	SampleEvery int `mapstructure:"sample_every"`
	// SampleMinInterval is the least time between two timed calls of a
	// thread: a sample due sooner is skipped (the next is sample_every
	// calls on). A timed call costs its thread 5-20 µs (two event records
	// and the poller's queries); the interval bounds that share of a
	// launch-bound thread's time (50 ms: about 0.1%; 10 ms cost a
	// launch-bound loop 0.2 points more on the H200 host). 0: no minimum.
	// Whole microseconds.
	SampleMinInterval time.Duration `mapstructure:"sample_min_interval"`
	// MaxRings bounds the rings read at once.
	MaxRings int `mapstructure:"max_rings"`
	// Probes injects device probes into the GPU kernels of the processes
	// devrt runs in (off by default): devrt::probes.
	Probes devprobes.Config `mapstructure:"probes"`
}

// NewDefaultConfig returns the defaults.
func NewDefaultConfig() Config {
	return Config{
		Enabled:      true,
		Directories:  []string{"/dev/shm"},
		PollInterval: 50 * time.Millisecond,
		SampleEvery:  32,
		// devrt's own default (GPUEXT_DEVRT_SAMPLE_GAP_US).
		SampleMinInterval: 50 * time.Millisecond,
		MaxRings:          1024,
		Probes:            devprobes.NewDefaultConfig(),
	}
}

// classBits maps the names accepted in classes to the control page's bits.
var classBits = []struct {
	name string
	bit  uint32
}{
	{"launch", devring.ClassLaunch}, {"memory", devring.ClassMemory}, {"copy", devring.ClassCopy},
	{"sync", devring.ClassSync}, {"module", devring.ClassModule}, {"exec", devring.ClassExec},
}

// Bounds of the settings.
const (
	minPoll        = time.Millisecond
	maxPoll        = 10 * time.Second
	maxSampleEvery = 1 << 20
	maxSampleGap   = devring.MaxSampleGapUS * time.Microsecond
	maxRingsLimit  = 65536
)

// Validate checks the configuration; errors name the field (devrt::...).
func (c *Config) Validate() error {
	var errs []error
	if len(c.Directories) == 0 && c.Enabled {
		errs = append(errs, errors.New("devrt::directories: needs at least one directory"))
	}
	for i, d := range c.Directories {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d {
			errs = append(errs, fmt.Errorf("devrt::directories[%d]: must be a clean absolute path, got %q", i, d))
		}
	}
	if c.PollInterval < minPoll || c.PollInterval > maxPoll {
		errs = append(errs, fmt.Errorf("devrt::poll_interval: must be between %v and %v, got %v", minPoll, maxPoll, c.PollInterval))
	}
	names := make([]string, len(classBits))
	for i, cb := range classBits {
		names[i] = cb.name
	}
	for i, name := range c.Classes {
		if classBit(name) == 0 {
			errs = append(errs, fmt.Errorf("devrt::classes[%d]: %q is not one of %s", i, name, strings.Join(names, ", ")))
		}
	}
	if c.SampleEvery < 0 || c.SampleEvery > maxSampleEvery {
		errs = append(errs, fmt.Errorf("devrt::sample_every: must be between 0 (no timing) and %d, got %d", maxSampleEvery, c.SampleEvery))
	}
	if c.SampleMinInterval < 0 || c.SampleMinInterval > maxSampleGap || c.SampleMinInterval%time.Microsecond != 0 {
		errs = append(errs, fmt.Errorf("devrt::sample_min_interval: must be whole microseconds between 0 (no minimum) and %v, got %v", maxSampleGap, c.SampleMinInterval))
	}
	if c.MaxRings < 1 || c.MaxRings > maxRingsLimit {
		errs = append(errs, fmt.Errorf("devrt::max_rings: must be between 1 and %d, got %d", maxRingsLimit, c.MaxRings))
	}
	errs = append(errs, c.Probes.Validate())
	if c.Probes.Enabled && !c.Enabled {
		errs = append(errs, errors.New("devrt::probes::enabled: needs devrt::enabled (the probes reach processes through devrt)"))
	}
	return errors.Join(errs...)
}

func classBit(name string) uint32 {
	for _, cb := range classBits {
		if cb.name == name {
			return cb.bit
		}
	}
	return 0
}

// Control is what the configuration tells every ring's control page.
func (c *Config) Control(consumerPID uint32) devring.Control {
	ctl := devring.Control{SampleEvery: uint32(c.SampleEvery),
		SampleGapUS: uint32(c.SampleMinInterval / time.Microsecond), ConsumerPID: consumerPID}
	for _, name := range c.Classes {
		ctl.Classes |= classBit(name)
	}
	if len(c.Classes) == 0 {
		ctl.Classes = devring.ClassAll
	}
	if c.NestedCalls {
		ctl.Classes |= devring.ClassNested
	}
	return ctl
}

// Reports tells whether devrt is configured to report calls of class c
// (devrt's module class holds contexts and modules).
func (c *Config) Reports(cl ev.Class) bool {
	if len(c.Classes) == 0 {
		return cl != ev.ClassNone
	}
	name := cl.String()
	if cl == ev.ClassContext {
		name = "module"
	}
	return name != "" && classBit(name) != 0 && slices.Contains(c.Classes, name)
}

// ReportsAllCalls tells whether devrt is configured to report every call:
// only then can the uprobes leave a devrt process alone entirely.
func (c *Config) ReportsAllCalls() bool {
	for _, cl := range []ev.Class{ev.ClassLaunch, ev.ClassMemory, ev.ClassCopy, ev.ClassSync, ev.ClassModule, ev.ClassContext} {
		if !c.Reports(cl) {
			return false
		}
	}
	return true
}
