package proberegion

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/btftest"
)

// TestRecordsMatchBTF checks the records Read decodes against what clang
// made of gpuext_abi.h (the BTF of devrt/jit's check/progs/abi.bpf.o):
// each struct's size and every member's offset.
func TestRecordsMatchBTF(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpec("../../devrt/jit/check/progs/abi.bpf.o")
	require.NoError(t, err)
	for _, tt := range []struct {
		name    string
		size    uint32
		offsets map[string]uint32
	}{
		{"gpuext_dev_block", BlockSize, map[string]uint32{
			"kernel_id": 0, "block": 8, "start_ns": 16, "end_ns": 24, "smid": 32, "threads": 34, "weight": 36, "grid_id": 40, "grid_blocks": 48}},
		{"gpuext_dev_launch", LaunchSize, map[string]uint32{"kernel_id": 0, "start_ns": 8, "smid": 16, "_pad": 20}},
		{"gpuext_dev_sm", SMSize, map[string]uint32{"blocks": 0, "threads": 8, "lane_ns": 16}},
		{"gpuext_dev_occ", OccSize, map[string]uint32{"epoch": 0, "threads": 8, "lane_ns": 16}},
	} {
		t.Run(tt.name, func(t *testing.T) { btftest.Struct(t, spec.Types, tt.name, tt.size, tt.offsets) })
	}
}

// TestMaxWeight: the largest block weight the reader accepts is the
// largest the probes can be given, by either sampling.
func TestMaxWeight(t *testing.T) {
	require.Equal(t, uint32(MaxWeight), ptx.SampleWeight(ptx.MaxBlockSample, 0, 1))
	require.Equal(t, uint32(MaxWeight), ptx.SampleWeight(0, 1, 1<<40))
}
