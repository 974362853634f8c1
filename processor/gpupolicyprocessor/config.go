package gpupolicyprocessor

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"

	bpfpolicy "github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
)

// Modes of the processor.
const (
	// ModeObserve passes every signal through and decides nothing.
	ModeObserve = "observe"
	// ModeAdvise derives policy advice from the receiver's fault stream and
	// reports it as metrics (gpu.policy.advice) without actuating it.
	ModeAdvise = "advise"
	// ModeEnforce also applies that advice to the gpu_ext memory policy
	// through its pinned maps (per-process prefetch, eviction).
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
	// Mode is one of observe, advise, enforce.
	Mode string `mapstructure:"mode"`
	// SignalsFrom is the component ID of the gpuebpf receiver whose fault
	// stream the processor reads (advise mode).
	SignalsFrom string `mapstructure:"signals_from"`
	// Advise configures advise mode (and the advice enforce mode applies).
	Advise AdviseConfig `mapstructure:"advise"`
	// Enforce configures enforce mode.
	Enforce EnforceConfig `mapstructure:"enforce"`
	// PinPath is the bpffs directory where the gpu_ext policies are pinned
	// (<pin_path>/mem/ holds the memory policy's link and maps, as
	// gpuextctl pins them). It must be an absolute path. Used in enforce
	// mode.
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

// EnforceConfig configures enforce mode.
type EnforceConfig struct {
	// Attach: when no memory policy is pinned under pin_path, attach
	// bpf/policy's memory policy (named PolicyName, eviction Eviction). When
	// false, enforce mode only tunes a policy loaded beforehand (gpuextctl).
	Attach bool `mapstructure:"attach"`
	// PolicyName is the name of the memory policy the processor attaches
	// and the only one it tunes: a pinned policy of another name belongs to
	// someone else and the processor then runs as advise.
	PolicyName string `mapstructure:"policy_name"`
	// Eviction is the eviction algorithm the attached policy starts with,
	// and the one restored when no process is a hot set any more: lru, lfu,
	// mru, fifo or priority.
	Eviction string `mapstructure:"eviction"`
	// StableRounds is how many advice rounds in a row a stream's advice must
	// be the same before it is applied (hysteresis), in [1, 100].
	StableRounds int `mapstructure:"stable_rounds"`
	// ForgetAfter: a stream with no new faults for this long is forgotten
	// and the per-process entries set for it are cleared, in
	// [advise::interval, 24h].
	ForgetAfter time.Duration `mapstructure:"forget_after"`
	// DetachOnShutdown detaches the memory policy at shutdown. By default it
	// stays attached and pinned (the driver keeps using it) with the
	// processor's changes undone.
	DetachOnShutdown bool `mapstructure:"detach_on_shutdown"`
}

// Bounds of the enforce settings.
const (
	maxStableRounds = 100
	maxForgetAfter  = 24 * time.Hour
)

// policyName is what bpf/policy.Prepare accepts as a struct_ops name.
var policyName = regexp.MustCompile(`^[a-z0-9_]{1,15}$`)

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
		Enforce: EnforceConfig{
			Attach:       true,
			PolicyName:   bpfpolicy.DefaultMemName,
			Eviction:     "lru",
			StableRounds: 3,
			ForgetAfter:  5 * time.Minute,
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
	case ModeObserve, ModeAdvise, ModeEnforce:
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
	errs = append(errs, c.Enforce.validate(c.Advise.Interval)...)
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

func (e *EnforceConfig) validate(interval time.Duration) []error {
	var errs []error
	if !policyName.MatchString(e.PolicyName) {
		errs = append(errs, fmt.Errorf("enforce::policy_name: want 1 to 15 of a-z, 0-9, _, got %q", e.PolicyName))
	}
	if _, err := gpuext.ParseEviction(e.Eviction); err != nil {
		errs = append(errs, fmt.Errorf("enforce::eviction: %w", err))
	}
	if e.StableRounds < 1 || e.StableRounds > maxStableRounds {
		errs = append(errs, fmt.Errorf("enforce::stable_rounds: must be between 1 and %d, got %d", maxStableRounds, e.StableRounds))
	}
	if e.ForgetAfter < interval || e.ForgetAfter > maxForgetAfter {
		errs = append(errs, fmt.Errorf("enforce::forget_after: must be between advise::interval (%v) and %v, got %v",
			interval, maxForgetAfter, e.ForgetAfter))
	}
	return errs
}
