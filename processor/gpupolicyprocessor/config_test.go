package gpupolicyprocessor

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-gpu/otelcol-gpu/processor/gpupolicyprocessor/internal/metadata"
)

func TestCreateDefaultConfig(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	assert.Equal(t, &Config{
		Mode:                "observe",
		SignalsFrom:         "gpuebpf",
		Advise:              AdviseConfig{Interval: 10 * time.Second, MinConfidence: 0.5, Window: 1024, IdleReset: time.Second},
		Enforce:             EnforceConfig{Attach: true, PolicyName: "gpuext_mem", Eviction: "lru", StableRounds: 3, ForgetAfter: 5 * time.Minute},
		PinPath:             "/sys/fs/bpf/gpuext",
		MaxActionsPerSecond: 10,
	}, cfg)
	assert.NoError(t, cfg.(*Config).Validate())
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(*Config)
		wantErr string // empty: valid
	}{
		{name: "default", modify: func(*Config) {}},
		{name: "max actions at upper bound", modify: func(c *Config) { c.MaxActionsPerSecond = 1000 }},
		{name: "max actions fractional", modify: func(c *Config) { c.MaxActionsPerSecond = 0.5 }},
		{name: "pin path not clean but absolute", modify: func(c *Config) { c.PinPath = "/sys/fs/bpf/../bpf/gpuext/" }},
		{
			name:    "mode empty",
			modify:  func(c *Config) { c.Mode = "" },
			wantErr: `mode: "" is not one of observe, advise, enforce`,
		},
		{
			name:    "mode unknown",
			modify:  func(c *Config) { c.Mode = "x" },
			wantErr: `mode: "x" is not one of observe, advise, enforce`,
		},
		{
			name:    "mode wrong case",
			modify:  func(c *Config) { c.Mode = "Observe" },
			wantErr: `mode: "Observe" is not one of observe, advise, enforce`,
		},
		{name: "mode advise", modify: func(c *Config) { c.Mode = "advise" }},
		{name: "mode enforce", modify: func(c *Config) { c.Mode = "enforce" }},
		{name: "enforce every eviction", modify: func(c *Config) {
			c.Enforce.Eviction, c.Enforce.PolicyName, c.Enforce.StableRounds = "priority", "a_15_chars_name", 100
		}},
		{name: "enforce forget after at its bounds", modify: func(c *Config) { c.Enforce.ForgetAfter = c.Advise.Interval }},
		{name: "enforce forget after a day", modify: func(c *Config) { c.Enforce.ForgetAfter = 24 * time.Hour }},
		{
			name:    "enforce policy name empty",
			modify:  func(c *Config) { c.Enforce.PolicyName = "" },
			wantErr: `enforce::policy_name: want 1 to 15 of a-z, 0-9, _, got ""`,
		},
		{
			name:    "enforce policy name too long",
			modify:  func(c *Config) { c.Enforce.PolicyName = "a_16_chars_name_" },
			wantErr: `enforce::policy_name: want 1 to 15 of a-z, 0-9, _, got "a_16_chars_name_"`,
		},
		{
			name:    "enforce policy name upper case",
			modify:  func(c *Config) { c.Enforce.PolicyName = "LFU" },
			wantErr: `enforce::policy_name: want 1 to 15 of a-z, 0-9, _, got "LFU"`,
		},
		{
			name:    "enforce eviction unknown",
			modify:  func(c *Config) { c.Enforce.Eviction = "arc" },
			wantErr: `enforce::eviction: eviction "arc": want one of lru, lfu, mru, fifo, priority`,
		},
		{
			name:    "enforce stable rounds zero",
			modify:  func(c *Config) { c.Enforce.StableRounds = 0 },
			wantErr: `enforce::stable_rounds: must be between 1 and 100, got 0`,
		},
		{
			name:    "enforce stable rounds above limit",
			modify:  func(c *Config) { c.Enforce.StableRounds = 101 },
			wantErr: `enforce::stable_rounds: must be between 1 and 100, got 101`,
		},
		{
			name:    "enforce forget after shorter than a round",
			modify:  func(c *Config) { c.Enforce.ForgetAfter = 9 * time.Second },
			wantErr: `enforce::forget_after: must be between advise::interval (10s) and 24h0m0s, got 9s`,
		},
		{
			name:    "enforce forget after above a day",
			modify:  func(c *Config) { c.Enforce.ForgetAfter = 25 * time.Hour },
			wantErr: `enforce::forget_after: must be between advise::interval (10s) and 24h0m0s, got 25h0m0s`,
		},
		{name: "signals from a named receiver", modify: func(c *Config) { c.SignalsFrom = "gpuebpf/node" }},
		{
			name:    "signals from not an ID",
			modify:  func(c *Config) { c.SignalsFrom = "gpu ebpf" },
			wantErr: `signals_from: in "gpu ebpf" id: invalid character(s) in type "gpu ebpf"`,
		},
		{
			name:    "advise interval too short",
			modify:  func(c *Config) { c.Advise.Interval = time.Millisecond },
			wantErr: `advise::interval: must be between 100ms and 1h0m0s, got 1ms`,
		},
		{
			name:    "advise min confidence above one",
			modify:  func(c *Config) { c.Advise.MinConfidence = 1.5 },
			wantErr: `advise::min_confidence: must be between 0 and 1, got 1.5`,
		},
		{
			name:    "advise min confidence NaN",
			modify:  func(c *Config) { c.Advise.MinConfidence = math.NaN() },
			wantErr: `advise::min_confidence: must be between 0 and 1, got NaN`,
		},
		{
			name:    "advise idle reset negative",
			modify:  func(c *Config) { c.Advise.IdleReset = -time.Second },
			wantErr: `advise::idle_reset: must not be negative, got -1s`,
		},
		{
			name:    "advise window zero",
			modify:  func(c *Config) { c.Advise.Window = 0 },
			wantErr: `advise::window: must be between 1 and 1048576, got 0`,
		},
		{
			name:    "pin path empty",
			modify:  func(c *Config) { c.PinPath = "" },
			wantErr: `pin_path: must be an absolute path, got ""`,
		},
		{
			name:    "pin path relative",
			modify:  func(c *Config) { c.PinPath = "sys/fs/bpf/gpuext" },
			wantErr: `pin_path: must be an absolute path, got "sys/fs/bpf/gpuext"`,
		},
		{
			name:    "max actions zero",
			modify:  func(c *Config) { c.MaxActionsPerSecond = 0 },
			wantErr: `max_actions_per_second: must be greater than 0 and at most 1000, got 0`,
		},
		{
			name:    "max actions negative",
			modify:  func(c *Config) { c.MaxActionsPerSecond = -1 },
			wantErr: `max_actions_per_second: must be greater than 0 and at most 1000, got -1`,
		},
		{
			name:    "max actions above limit",
			modify:  func(c *Config) { c.MaxActionsPerSecond = 1000.5 },
			wantErr: `max_actions_per_second: must be greater than 0 and at most 1000, got 1000.5`,
		},
		{
			name:    "max actions NaN",
			modify:  func(c *Config) { c.MaxActionsPerSecond = math.NaN() },
			wantErr: `max_actions_per_second: must be greater than 0 and at most 1000, got NaN`,
		},
		{
			name:    "max actions infinite",
			modify:  func(c *Config) { c.MaxActionsPerSecond = math.Inf(1) },
			wantErr: `max_actions_per_second: must be greater than 0 and at most 1000, got +Inf`,
		},
		{
			name: "every field bad",
			modify: func(c *Config) {
				c.Mode = "x"
				c.PinPath = "rel"
				c.MaxActionsPerSecond = 0
			},
			wantErr: `mode: "x" is not one of observe, advise, enforce` + "\n" +
				`pin_path: must be an absolute path, got "rel"` + "\n" +
				`max_actions_per_second: must be greater than 0 and at most 1000, got 0`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			tt.modify(cfg)
			err := cfg.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, err.Error())
		})
	}
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id           component.ID
		want         *Config
		unmarshalErr string
		validateErr  string
	}{
		{
			id:   component.NewID(metadata.Type),
			want: createDefaultConfig(),
		},
		{
			id: component.NewIDWithName(metadata.Type, "custom"),
			want: &Config{
				Mode:                "advise",
				SignalsFrom:         "gpuebpf/node",
				Advise:              AdviseConfig{Interval: 30 * time.Second, MinConfidence: 0.7, Window: 512, IdleReset: 0},
				Enforce:             EnforceConfig{Attach: true, PolicyName: "gpuext_mem", Eviction: "lru", StableRounds: 3, ForgetAfter: 5 * time.Minute},
				PinPath:             "/run/gpuext/maps",
				MaxActionsPerSecond: 2.5,
			},
		},
		{
			id: component.NewIDWithName(metadata.Type, "enforce"),
			want: func() *Config {
				c := createDefaultConfig()
				c.Mode = "enforce"
				c.Enforce = EnforceConfig{Attach: false, PolicyName: "tuned", Eviction: "fifo", StableRounds: 5,
					ForgetAfter: time.Hour, DetachOnShutdown: true}
				return c
			}(),
		},
		{
			id: component.NewIDWithName(metadata.Type, "enforce_bad"),
			want: func() *Config {
				c := createDefaultConfig()
				c.Mode = "enforce"
				c.Enforce.Eviction = "random"
				c.Enforce.ForgetAfter = time.Second
				return c
			}(),
			validateErr: `enforce::eviction: eviction "random": want one of lru, lfu, mru, fifo, priority` + "\n" +
				`enforce::forget_after: must be between advise::interval (10s) and 24h0m0s, got 1s`,
		},
		{
			id:           component.NewIDWithName(metadata.Type, "unknown_key"),
			unmarshalErr: "decoding failed due to the following error(s):\n\n'gpupolicyprocessor.Config' has invalid keys: pinpath",
		},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			err = sub.Unmarshal(cfg)
			if tt.unmarshalErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.unmarshalErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
			err = cfg.(*Config).Validate()
			if tt.validateErr == "" {
				assert.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Equal(t, tt.validateErr, err.Error())
			}
		})
	}
}
