package nvml

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

func TestDefaultConfig(t *testing.T) {
	cfg := NewDefaultConfig()
	if !cfg.Enabled || !cfg.ProcessUsage || !cfg.Events || !cfg.MIG || cfg.LibraryPath != "" || cfg.XIDStatusHold != 10*time.Minute {
		t.Errorf("defaults: %+v", cfg)
	}
	if !cfg.Metrics.HwGpuUtilization.Enabled || !cfg.ResourceAttributes.HwID.Enabled || cfg.ResourceAttributes.HwSerialNumber.Enabled {
		t.Error("metric/resource attribute defaults not from metadata.yaml")
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("default config invalid: %v", err)
	}
}

func TestConfigUnmarshal(t *testing.T) {
	cm := confmap.NewFromStringMap(map[string]any{
		"library_path":    "/run/nvidia/driver/usr/lib64/libnvidia-ml.so.1",
		"process_usage":   false,
		"events":          false,
		"mig":             false,
		"xid_status_hold": "30s",
		"metrics": map[string]any{
			"hw.power":             map[string]any{"enabled": false},
			"gpu.throttle.reasons": map[string]any{"enabled": false},
		},
		"resource_attributes": map[string]any{
			"pci.bus.id":       map[string]any{"enabled": false},
			"hw.serial_number": map[string]any{"enabled": true},
		},
	})
	cfg := NewDefaultConfig()
	if err := cm.Unmarshal(&cfg); err != nil {
		t.Fatal(err)
	}
	if !cfg.Enabled || cfg.ProcessUsage || cfg.Events || cfg.MIG || cfg.XIDStatusHold != 30*time.Second ||
		cfg.LibraryPath != "/run/nvidia/driver/usr/lib64/libnvidia-ml.so.1" {
		t.Errorf("config: %+v", cfg)
	}
	m := cfg.Metrics
	if m.HwPower.Enabled || m.GpuThrottleReasons.Enabled || !m.HwEnergy.Enabled {
		t.Error("metrics section not applied")
	}
	ra := cfg.ResourceAttributes
	if ra.PciBusID.Enabled || !ra.HwSerialNumber.Enabled || !ra.HwID.Enabled {
		t.Error("resource_attributes section not applied")
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}

	typo := confmap.NewFromStringMap(map[string]any{"libary_path": "/x"})
	cfg = NewDefaultConfig()
	if err := typo.Unmarshal(&cfg); err == nil || !strings.Contains(err.Error(), "libary_path") {
		t.Errorf("unknown key accepted: %v", err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"relative library", func(c *Config) { c.LibraryPath = "libnvidia-ml.so.1" },
			[]string{`nvml::library_path: must be an absolute path, got "libnvidia-ml.so.1"`}},
		{"directory", func(c *Config) { c.LibraryPath = "/usr/lib64/" },
			[]string{`nvml::library_path: must name a file, not a directory, got "/usr/lib64/"`}},
		{"negative hold", func(c *Config) { c.XIDStatusHold = -time.Second },
			[]string{"nvml::xid_status_hold: must not be negative, got -1s"}},
		{"metric attribute", func(c *Config) {
			c.Metrics.HwGpuIo.EnabledAttributes = []metadata.HwGpuIoMetricAttributeKey{"pcie"}
		}, []string{"nvml::metrics::hw.gpu.io: metric hw.gpu.io doesn't have an attribute pcie"}},
		{"aggregation", func(c *Config) { c.Metrics.HwStatus.AggregationStrategy = "median" },
			[]string{`nvml::metrics::hw.status: invalid aggregation strategy "median"`}},
		{"several", func(c *Config) {
			c.LibraryPath = "lib"
			c.XIDStatusHold = -1
		}, []string{"nvml::library_path", "nvml::xid_status_hold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
