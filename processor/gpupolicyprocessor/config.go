package gpupolicyprocessor

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Modes of the processor. Only ModeObserve is implemented; the others are
// accepted names reserved for the policy work and rejected by Validate until
// they exist, so a configuration never silently gets less than it asked for.
const (
	// ModeObserve passes every signal through and decides nothing.
	ModeObserve = "observe"
	// ModeAdvise will derive signals and decisions and report them as
	// telemetry without actuating them.
	ModeAdvise = "advise"
	// ModeEnforce will also write decisions into pinned BPF maps and device
	// runtime control blocks.
	ModeEnforce = "enforce"
)

// modes lists every mode name, in the order used in error messages.
var modes = []string{ModeObserve, ModeAdvise, ModeEnforce}

// Bounds of max_actions_per_second: the processor must never be able to flood
// the driver's policy maps, whatever the configuration says.
const maxActionsPerSecondLimit = 1000

// Config is the gpupolicy processor's configuration, validated in one place
// (Validate) with errors that name the offending field.
type Config struct {
	// Mode is one of observe, advise, enforce. Only observe is implemented.
	Mode string `mapstructure:"mode"`
	// PinPath is the bpffs directory where the gpu_ext policy maps are
	// pinned. It must be an absolute path. Unused in observe mode.
	PinPath string `mapstructure:"pin_path"`
	// MaxActionsPerSecond caps how many policy actions (map writes, control
	// block updates) the processor may take per second, in (0, 1000].
	MaxActionsPerSecond float64 `mapstructure:"max_actions_per_second"`

	// prevent unkeyed literal initialization
	_ struct{}
}

func createDefaultConfig() *Config {
	return &Config{
		Mode:                ModeObserve,
		PinPath:             "/sys/fs/bpf/gpuext",
		MaxActionsPerSecond: 10,
	}
}

// Validate checks the configuration and returns every problem found, each
// naming its field.
func (c *Config) Validate() error {
	var errs []error
	switch c.Mode {
	case ModeObserve:
	case ModeAdvise, ModeEnforce:
		errs = append(errs, fmt.Errorf("mode: %q is not implemented yet; only %q is supported", c.Mode, ModeObserve))
	default:
		errs = append(errs, fmt.Errorf("mode: %q is not one of %s", c.Mode, strings.Join(modes, ", ")))
	}
	if c.PinPath == "" || !filepath.IsAbs(c.PinPath) {
		errs = append(errs, fmt.Errorf("pin_path: must be an absolute path, got %q", c.PinPath))
	}
	// The negated comparison also rejects NaN.
	if !(c.MaxActionsPerSecond > 0 && c.MaxActionsPerSecond <= maxActionsPerSecondLimit) {
		errs = append(errs, fmt.Errorf("max_actions_per_second: must be greater than 0 and at most %d, got %v",
			maxActionsPerSecondLimit, c.MaxActionsPerSecond))
	}
	return errors.Join(errs...)
}
