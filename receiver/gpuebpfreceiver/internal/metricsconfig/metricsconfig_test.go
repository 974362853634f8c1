package metricsconfig

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

type metric struct{ bad bool }

func (m *metric) Validate() error {
	if m.bad {
		return errors.New("unknown attribute")
	}
	return nil
}

type config struct {
	Good  metric `mapstructure:"hw.power"`
	Bad   metric `mapstructure:"hw.gpu.io"`
	Other int
}

func TestValidate(t *testing.T) {
	errs := Validate("nvml::", &config{Bad: metric{bad: true}})
	require.Len(t, errs, 1)
	require.EqualError(t, errs[0], "nvml::metrics::hw.gpu.io: unknown attribute")
	require.Empty(t, Validate("uvm::", &config{}))
}
