package gpupolicyprocessor

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
)

// Modes of the processor. ModeEnforce is a name reserved for the policy
// work and rejected by Validate until it exists, so a configuration never
// silently gets less than it asked for.
const (
	// ModeObserve passes every signal through and decides nothing.
	ModeObserve = "observe"
	// ModeAdvise derives policy advice from the receiver's fault stream and
	// reports it as metrics (gpu.policy.advice) without actuating it.
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
	// Mode is one of observe, advise, enforce. enforce is not implemented.
	Mode string `mapstructure:"mode"`
	// SignalsFrom is the component ID of the gpuebpf receiver whose fault
	// stream the processor reads (advise mode).
	SignalsFrom string `mapstructure:"signals_from"`
	// Advise configures advise mode.
	Advise AdviseConfig `mapstructure:"advise"`
	// PinPath is the bpffs directory where the gpu_ext policy maps are
	// pinned. It must be an absolute path. Unused in observe mode.
	PinPath string `mapstructure:"pin_path"`
	// MaxActionsPerSecond caps how many policy actions (map writes, control
	// block updates) the processor may take per second, in (0, 1000].
	MaxActionsPerSecond float64 `mapstructure:"max_actions_per_second"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// AdviseConfig configures advise mode.
type AdviseConfig struct {
	// Interval is the least time between two rounds of advice; each round
	// advises every process and GPU that faulted since the last.
	Interval time.Duration `mapstructure:"interval"`
	// MinConfidence is the confidence of the fault pattern below which no
	// advice is given, in [0, 1].
	MinConfidence float64 `mapstructure:"min_confidence"`
	// Window is the number of a stream's most recent faults classified.
	Window int `mapstructure:"window"`
	// IdleReset: faults before a pause longer than this are a past phase
	// and left out of the classification; 0: never.
	IdleReset time.Duration `mapstructure:"idle_reset"`
}

// Bounds of the advise settings.
const (
	minAdviseInterval = 100 * time.Millisecond
	maxAdviseInterval = time.Hour
	maxAdviseWindow   = 1 << 20
)

func createDefaultConfig() *Config {
	return &Config{
		Mode:        ModeObserve,
		SignalsFrom: "gpuebpf",
		Advise: AdviseConfig{
			Interval:      10 * time.Second,
			MinConfidence: 0.5,
			Window:        faultpattern.DefaultWindow,
			IdleReset:     time.Second,
		},
		PinPath:             "/sys/fs/bpf/gpuext",
		MaxActionsPerSecond: 10,
	}
}

// Validate checks the configuration and returns every problem found, each
// naming its field.
func (c *Config) Validate() error {
	var errs []error
	switch c.Mode {
	case ModeObserve, ModeAdvise:
	case ModeEnforce:
		errs = append(errs, fmt.Errorf("mode: %q is not implemented yet; %q and %q are", c.Mode, ModeObserve, ModeAdvise))
	default:
		errs = append(errs, fmt.Errorf("mode: %q is not one of %s", c.Mode, strings.Join(modes, ", ")))
	}
	var from component.ID
	if err := from.UnmarshalText([]byte(c.SignalsFrom)); err != nil {
		errs = append(errs, fmt.Errorf("signals_from: %w", err))
	}
	if c.Advise.Interval < minAdviseInterval || c.Advise.Interval > maxAdviseInterval {
		errs = append(errs, fmt.Errorf("advise::interval: must be between %v and %v, got %v", minAdviseInterval, maxAdviseInterval, c.Advise.Interval))
	}
	if !(c.Advise.MinConfidence >= 0 && c.Advise.MinConfidence <= 1) {
		errs = append(errs, fmt.Errorf("advise::min_confidence: must be between 0 and 1, got %v", c.Advise.MinConfidence))
	}
	if c.Advise.IdleReset < 0 {
		errs = append(errs, fmt.Errorf("advise::idle_reset: must not be negative, got %v", c.Advise.IdleReset))
	}
	if c.Advise.Window < 1 || c.Advise.Window > maxAdviseWindow {
		errs = append(errs, fmt.Errorf("advise::window: must be between 1 and %d, got %d", maxAdviseWindow, c.Advise.Window))
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
