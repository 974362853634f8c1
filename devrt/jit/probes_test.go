package jit

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/device"
)

func loadProbe(t testing.TB, name string) *Object {
	t.Helper()
	b, err := device.Object(name)
	require.NoError(t, err)
	o, err := LoadObject(bytes.NewReader(b))
	require.NoError(t, err)
	return o
}

func TestShippedProbesCompile(t *testing.T) {
	for _, name := range device.Names() {
		t.Run(name, func(t *testing.T) {
			o := loadProbe(t, name)
			for _, per := range []bool{false, true} {
				c, err := Compile([]*Object{o}, Options{PerThread: per})
				require.NoError(t, err)
				require.NotEmpty(t, c.PTX)
				if !per {
					t.Log(c.PTX)
				}
			}
		})
	}
}
