package devrt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no timing", func(c *Config) { c.SampleEvery = 0 }, ""},
		{"every class", func(c *Config) { c.Classes = []string{"launch", "memory", "copy", "sync", "module", "exec"} }, ""},
		{"disabled without directories", func(c *Config) { c.Enabled = false; c.Directories = nil }, ""},
		{"no directory", func(c *Config) { c.Directories = nil }, "devrt::directories: needs at least one directory"},
		{"relative directory", func(c *Config) { c.Directories = []string{"/dev/shm", "shm"} },
			`devrt::directories[1]: must be a clean absolute path, got "shm"`},
		{"unclean directory", func(c *Config) { c.Directories = []string{"/dev/../shm"} },
			`devrt::directories[0]: must be a clean absolute path, got "/dev/../shm"`},
		{"poll too fast", func(c *Config) { c.PollInterval = time.Microsecond },
			"devrt::poll_interval: must be between 1ms and 10s, got 1µs"},
		{"poll too slow", func(c *Config) { c.PollInterval = time.Minute },
			"devrt::poll_interval: must be between 1ms and 10s, got 1m0s"},
		{"unknown class", func(c *Config) { c.Classes = []string{"launch", "context"} },
			`devrt::classes[1]: "context" is not one of launch, memory, copy, sync, module, exec`},
		{"negative sampling", func(c *Config) { c.SampleEvery = -1 },
			"devrt::sample_every: must be between 0 (no timing) and 1048576, got -1"},
		{"sampling too sparse", func(c *Config) { c.SampleEvery = 1<<20 + 1 },
			"devrt::sample_every: must be between 0 (no timing) and 1048576, got 1048577"},
		{"no minimum sampling interval", func(c *Config) { c.SampleMinInterval = 0 }, ""},
		{"longest sampling interval", func(c *Config) { c.SampleMinInterval = 10 * time.Second }, ""},
		{"negative sampling interval", func(c *Config) { c.SampleMinInterval = -time.Millisecond },
			"devrt::sample_min_interval: must be whole microseconds between 0 (no minimum) and 10s, got -1ms"},
		{"sampling interval too long", func(c *Config) { c.SampleMinInterval = 11 * time.Second },
			"devrt::sample_min_interval: must be whole microseconds between 0 (no minimum) and 10s, got 11s"},
		{"sampling interval below a microsecond", func(c *Config) { c.SampleMinInterval = 1500 * time.Nanosecond },
			"devrt::sample_min_interval: must be whole microseconds between 0 (no minimum) and 10s, got 1.5µs"},
		{"no rings", func(c *Config) { c.MaxRings = 0 }, "devrt::max_rings: must be between 1 and 65536, got 0"},
		{"too many rings", func(c *Config) { c.MaxRings = 65537 }, "devrt::max_rings: must be between 1 and 65536, got 65537"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewDefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestConfigControl(t *testing.T) {
	c := NewDefaultConfig()
	require.Equal(t, devring.Control{Classes: devring.ClassAll, SampleEvery: 32, SampleGapUS: 50000, ConsumerPID: 9}, c.Control(9))
	c.Classes = []string{"sync", "exec"}
	c.SampleEvery = 0
	c.SampleMinInterval = 0
	require.Equal(t, devring.Control{Classes: devring.ClassSync | devring.ClassExec, ConsumerPID: 9}, c.Control(9))
	c.NestedCalls = true
	require.Equal(t, devring.Control{Classes: devring.ClassSync | devring.ClassExec | devring.ClassNested, ConsumerPID: 9}, c.Control(9))
}

func TestConfigReports(t *testing.T) {
	c := NewDefaultConfig()
	require.True(t, c.ReportsAllCalls())
	require.True(t, c.Reports(ev.ClassContext))
	require.False(t, c.Reports(ev.ClassNone))
	c.Classes = []string{"launch", "copy", "exec"}
	require.False(t, c.ReportsAllCalls())
	for cl, want := range map[ev.Class]bool{ev.ClassLaunch: true, ev.ClassCopy: true, ev.ClassMemory: false,
		ev.ClassSync: false, ev.ClassModule: false, ev.ClassContext: false} {
		require.Equal(t, want, c.Reports(cl), cl.String())
	}
	c.Classes = []string{"launch", "memory", "copy", "sync", "module"}
	require.True(t, c.ReportsAllCalls(), "contexts are in devrt's module class")
	require.True(t, c.Reports(ev.ClassContext))
}
