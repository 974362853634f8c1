package xidprobe

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

// TestProgramLoads runs the program through the verifier; attaching needs
// NVIDIA's module, which only the GPU machine has (bench/device).
func TestProgramLoads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	var objs bpf.XidObjects
	require.NoError(t, bpf.LoadXidObjects(&objs, nil))
	require.NoError(t, objs.Close())
}

// TestNoTracepoint: without NVIDIA's module New says so, and nothing leaks.
func TestNoTracepoint(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat(filepath.Join(Tracefs, "events", "nvidia")); err == nil {
		t.Skip("this machine has NVIDIA's module")
	}
	p, err := New()
	require.Nil(t, p)
	require.True(t, errors.Is(err, ErrNoTracepoint), "got %v", err)
}
