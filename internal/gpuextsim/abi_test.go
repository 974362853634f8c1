package gpuextsim

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

// members returns a struct's size and the byte offsets of its named
// (non-padding) members, as clang laid out gpuext_abi.h.
func members(t *testing.T, spec *btf.Spec, name string) (uint32, map[string]uint32) {
	t.Helper()
	var s *btf.Struct
	require.NoError(t, spec.TypeByName(name, &s), name)
	off := map[string]uint32{}
	for _, m := range s.Members {
		if !strings.HasPrefix(m.Name, "_") {
			off[m.Name] = m.Offset.Bytes()
		}
	}
	return s.Size, off
}

// TestLayoutMatchesBTF checks every offset the encoders and decoders of
// abi.go use against the BTF of bpf/abi.bpf.c.
func TestLayoutMatchesBTF(t *testing.T) {
	spec, err := bpf.LoadAbi()
	require.NoError(t, err)
	tests := []struct {
		name string
		size uint32
		off  map[string]uint32
	}{
		{"gpuext_sim_access", accessSize, map[string]uint32{"va": 0, "pid": 8, "flags": 12}},
		{"gpuext_sim_mem_config", memConfigSize, map[string]uint32{"capacity_chunks": 0, "flags": 4}},
		{"gpuext_sim_tenant", tenantSize, map[string]uint32{"pid": 0, "accesses": 8, "faults": 16,
			"hits": 24, "evictions": 32, "prefetched_bytes": 40, "migrated_bytes": 48}},
		{"gpuext_sim_mem_result", memResultSize, map[string]uint32{"accesses": 0, "faults": 8, "hits": 16,
			"evictions": 24, "prefetched_bytes": 32, "migrated_bytes": 40, "evict_skips": 48,
			"used_chunks": 56, "unused_chunks": 60, "blocks": 64, "ntenants": 68, "tenants": memResultTenantsOff}},
		{"gpuext_sim_task", taskSize, map[string]uint32{"pid": 0, "comm": 8}},
		{"gpuext_sim_sched_config", schedConfigSize, map[string]uint32{"switch_ns": 0,
			"default_timeslice_us": 8, "ntasks": 16, "tasks": schedConfigTasksOff}},
		{"gpuext_sim_job", jobSize, map[string]uint32{"task": 0, "submit_ns": 8, "duration_ns": 16}},
		{"gpuext_sim_task_result", taskResultSize, map[string]uint32{"pid": 0, "interleave": 4,
			"timeslice_us": 8, "jobs": 16, "dropped": 24, "mean_latency_ns": 32, "p99_latency_ns": 40,
			"mean_wait_ns": 48, "p99_wait_ns": 56, "busy_ns": 64, "rejected": 72}},
		{"gpuext_sim_sched_result", schedResultSize, map[string]uint32{"makespan_ns": 0, "switches": 8,
			"ntasks": 16, "tasks": schedResultTasksOff}},
		{"gpuext_sim_bench", benchSize, map[string]uint32{"hook": 0, "calls": 8, "elapsed_ns": 16}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size, off := members(t, spec.Types, tt.name)
			require.Equal(t, tt.size, size)
			require.Equal(t, tt.off, off)
		})
	}
}

func enumValues(t *testing.T, spec *btf.Spec, name string) map[string]uint64 {
	t.Helper()
	var e *btf.Enum
	require.NoError(t, spec.TypeByName(name, &e), name)
	out := map[string]uint64{}
	for _, v := range e.Values {
		out[v.Name] = v.Value
	}
	return out
}

func TestEnumsMatchBTF(t *testing.T) {
	spec, err := bpf.LoadAbi()
	require.NoError(t, err)

	hooks := map[string]uint64{"GPUEXT_HOOK_MAX": uint64(HookMax)}
	for i, n := range HookNames {
		hooks["GPUEXT_HOOK_"+strings.ToUpper(n)] = uint64(i)
	}
	require.Equal(t, hooks, enumValues(t, spec.Types, "gpuext_hook"))
	require.Equal(t, map[string]uint64{"GPUEXT_SIM_ACCESS_WRITE": accessFlagWrite,
		"GPUEXT_SIM_ACCESS_RELEASE": accessFlagRelease}, enumValues(t, spec.Types, "gpuext_sim_access_flags"))
	require.Equal(t, map[string]uint64{"GPUEXT_SIM_MEM_NO_PREFETCH": memFlagNoPrefetch},
		enumValues(t, spec.Types, "gpuext_sim_mem_flags"))

	// Array bounds of the records are the MAX constants of the header.
	var res *btf.Struct
	require.NoError(t, spec.Types.TypeByName("gpuext_sim_mem_result", &res))
	for _, m := range res.Members {
		if m.Name == "tenants" {
			require.Equal(t, uint32(MaxTenants), m.Type.(*btf.Array).Nelems)
		}
	}
}

// TestIoctlNumbers pins the numbers to what the C macros _IOW('G', 1,
// struct gpuext_sim_mem_config) etc. give on x86-64 (gcc, gpuext_abi.h).
func TestIoctlNumbers(t *testing.T) {
	require.Equal(t, []uintptr{0x40204701, 0x83c84702, 0x41984703, 0x85184704, 0xc0184705},
		[]uintptr{iocMemReset, iocMemResult, iocSchedReset, iocSchedRun, iocBench})
}
