package gpuext

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
	"github.com/otelcol-gpu/otelcol-gpu/internal/btftest"
)

// TestContextLayoutMatchesBTF pins the layout of the three gpu_ext contexts
// (gpuext_abi.h) as clang compiled them: the module, the sim, C's driver
// patches and the policies must agree on it, and a change here is a change
// of GPUEXT_KMOD_ABI_VERSION.
func TestContextLayoutMatchesBTF(t *testing.T) {
	spec, err := bpf.LoadAbi()
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		size    uint32
		offsets map[string]uint32
	}{
		{"gpuext_mem_ctx", 64, map[string]uint32{
			"chunk_id": 0, "va_start": 8, "cgroup_id": 16, "pid": 24, "gpu": 28, "hook": 32, "list": 36,
			"used_chunks": 40, "unused_chunks": 44, "capacity_chunks": 48, "skips": 52, "access_count": 56}},
		{"gpuext_prefetch_ctx", 72, map[string]uint32{
			"va_start": 0, "cgroup_id": 8, "pid": 16, "gpu": 20, "hook": 24, "page_index": 28, "max_first": 32,
			"max_outer": 36, "faulted_pages": 40, "resident_pages": 44, "iter_first": 48, "iter_outer": 52,
			"iter_count": 56, "iter_level": 60, "_reserved": 64}},
		{"gpuext_sched_ctx", 72, map[string]uint32{
			"tsg_id": 0, "cgroup_id": 8, "timeslice_us": 16, "pid": 24, "gpu": 28, "hook": 32, "engine_type": 36,
			"runlist_id": 40, "channel_count": 44, "interleave": 48, "_pad": 52, "comm": 56}},
	} {
		t.Run(tc.name, func(t *testing.T) { btftest.Struct(t, spec.Types, tc.name, tc.size, tc.offsets) })
	}
}
