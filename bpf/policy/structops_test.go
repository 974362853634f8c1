package policy

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"
)

func TestMemSpecBindsEveryMember(t *testing.T) {
	spec, err := MemSpec("lfu_test")
	require.NoError(t, err)
	got := map[string]string{}
	for name, p := range spec.Programs {
		require.Equal(t, ebpf.StructOps, p.Type)
		got[name] = p.AttachTo
	}
	require.Equal(t, map[string]string{
		"mem_block_activate":     "gpu_mem_ops:block_activate",
		"mem_block_access":       "gpu_mem_ops:block_access",
		"mem_evict_prepare":      "gpu_mem_ops:evict_prepare",
		"mem_page_prefetch":      "gpu_mem_ops:page_prefetch",
		"mem_page_prefetch_iter": "gpu_mem_ops:page_prefetch_iter",
	}, got)

	ops := spec.Maps[OpsMap]
	require.Equal(t, ebpf.StructOpsMap, ops.Type)
	require.Equal(t, uint32(bpfFLink), ops.Flags)
	require.Equal(t, "lfu_test", ops.Name)
	st, ok := ops.Value.(*btf.Struct)
	require.True(t, ok)
	require.Equal(t, "gpu_mem_ops", st.Name)
	require.Equal(t, uint32(5*8+16), st.Size)
	value := ops.Contents[0].Value.([]byte)
	want := make([]byte, 56)
	copy(want[40:], "lfu_test")
	require.Equal(t, want, value)
}

func TestSchedSpecBindsEveryMember(t *testing.T) {
	spec, err := SchedSpec(DefaultSchedName)
	require.NoError(t, err)
	got := map[string]string{}
	for name, p := range spec.Programs {
		got[name] = p.AttachTo
	}
	require.Equal(t, map[string]string{
		"sched_task_init":    "gpu_sched_ops:task_init",
		"sched_task_bind":    "gpu_sched_ops:task_bind",
		"sched_task_destroy": "gpu_sched_ops:task_destroy",
	}, got)
	require.Equal(t, "gpuext_sched", spec.Maps[OpsMap].Name)
}

func TestPrepareRejects(t *testing.T) {
	for _, tc := range []struct {
		name, ops, policy, msg string
	}{
		{"empty name", MemOps, "", `policy name "": want 1 to 15 of a-z, 0-9, _`},
		{"long name", MemOps, "a_name_too_long_x", `policy name "a_name_too_long_x": want 1 to 15 of a-z, 0-9, _`},
		{"odd name", MemOps, "Mem-1", `policy name "Mem-1": want 1 to 15 of a-z, 0-9, _`},
		{"wrong ops", SchedOps, "x", "object has no BTF for struct gpu_sched_ops"},
		{"no btf", "gpu_other_ops", "x", "object has no BTF for struct gpu_other_ops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := LoadMem()
			require.NoError(t, err)
			err = Prepare(spec, tc.ops, tc.policy)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}
