package gpuevent

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

// TestLayoutMatchesBTF checks the Go view of the wire records against the
// layout clang gave them in the compiled BPF object, so gpuext_abi.h stays
// the one definition.
func TestLayoutMatchesBTF(t *testing.T) {
	spec, err := bpf.LoadCuda()
	require.NoError(t, err)

	var ev *btf.Struct
	require.NoError(t, spec.Types.TypeByName("gpuext_event", &ev))
	require.Equal(t, uint32(EventSize), ev.Size)

	want := map[string]uint32{
		"kind": offKind, "api": offAPI, "source": offSource, "flags": offFlags,
		"pid": offPID, "tid": offTID, "start_ns": offStart, "end_ns": offEnd,
		"cgroup_id": offCgroupID, "result": offResult, "corr": offCorr, "args": offArgs,
		"out": offOut, "aux": offAux,
	}
	got := map[string]uint32{}
	for _, m := range ev.Members {
		if !strings.HasPrefix(m.Name, "_") {
			got[m.Name] = m.Offset.Bytes()
		}
	}
	require.Equal(t, want, got)

	var named *btf.Struct
	require.NoError(t, spec.Types.TypeByName("gpuext_named_event", &named))
	require.Equal(t, uint32(NamedSize), named.Size)

	var launch *btf.Struct
	require.NoError(t, spec.Types.TypeByName("gpuext_launch_aux", &launch))
	require.Equal(t, uint32(launchAuxLen), launch.Size)
	var cp *btf.Struct
	require.NoError(t, spec.Types.TypeByName("gpuext_copy_aux", &cp))
	require.Equal(t, uint32(auxRawWords*8), cp.Size)
}

// TestAPIEnumMatchesBTF checks that Go knows every API id of gpuext_abi.h by
// the same number and name, and no other.
func TestAPIEnumMatchesBTF(t *testing.T) {
	spec, err := bpf.LoadCuda()
	require.NoError(t, err)
	var enum *btf.Enum
	require.NoError(t, spec.Types.TypeByName("gpuext_api", &enum))

	fromC := map[string]uint64{}
	for _, v := range enum.Values {
		name := strings.TrimPrefix(v.Name, "GPUEXT_API_")
		if name == "NONE" || name == "MAX" {
			continue
		}
		fromC[name] = v.Value
	}
	fromGo := map[string]uint64{}
	for _, a := range APIs() {
		fromGo[a.EnumName()] = uint64(a)
	}
	require.Equal(t, fromC, fromGo)
}

func TestKindAndDropEnumsMatchBTF(t *testing.T) {
	spec, err := bpf.LoadCuda()
	require.NoError(t, err)
	var enum *btf.Enum
	require.NoError(t, spec.Types.TypeByName("gpuext_kind", &enum))
	got := map[string]uint64{}
	for _, v := range enum.Values {
		got[v.Name] = v.Value
	}
	require.Equal(t, map[string]uint64{
		"GPUEXT_KIND_CALL": uint64(KindCall), "GPUEXT_KIND_CALL_NAMED": uint64(KindCallNamed),
		"GPUEXT_KIND_EXEC": uint64(KindExec), "GPUEXT_KIND_EXIT": uint64(KindExit),
		"GPUEXT_KIND_XID": uint64(KindXID), "GPUEXT_KIND_GPU_EXEC": uint64(KindGPUExec),
		"GPUEXT_KIND_UVM": uint64(KindUVM),
	}, got)
}

// btfOffsets returns the byte offset of each named member of struct name in
// the ABI object's BTF (padding and reserved members, "_*", left out) and
// the struct's size.
func btfOffsets(t *testing.T, name string) (map[string]uint32, uint32) {
	t.Helper()
	spec, err := bpf.LoadAbi()
	require.NoError(t, err)
	var st *btf.Struct
	require.NoError(t, spec.Types.TypeByName(name, &st))
	got := map[string]uint32{}
	for _, m := range st.Members {
		if !strings.HasPrefix(m.Name, "_") {
			got[m.Name] = m.Offset.Bytes()
		}
	}
	return got, st.Size
}

func TestGPUExecLayoutMatchesBTF(t *testing.T) {
	got, size := btfOffsets(t, "gpuext_gpu_exec")
	require.Equal(t, uint32(GPUExecSize), size)
	require.Equal(t, map[string]uint32{
		"kind": gxOffKind, "api": gxOffAPI, "source": gxOffSource, "flags": gxOffFlags,
		"pid": gxOffPID, "tid": gxOffTID, "call_start_ns": gxOffCallStart,
		"gpu_start_ns": gxOffGPUStart, "gpu_end_ns": gxOffGPUEnd, "stream": gxOffStream,
		"handle": gxOffHandle, "bytes": gxOffBytes, "corr": gxOffCorr,
	}, got)
}

func TestSourceEnumMatchesBTF(t *testing.T) {
	spec, err := bpf.LoadAbi()
	require.NoError(t, err)
	var enum *btf.Enum
	require.NoError(t, spec.Types.TypeByName("gpuext_source", &enum))
	got := map[string]uint64{}
	for _, v := range enum.Values {
		got[v.Name] = v.Value
	}
	require.Equal(t, map[string]uint64{
		"GPUEXT_SOURCE_UPROBE": uint64(SourceUprobe), "GPUEXT_SOURCE_DEVRT": uint64(SourceDevrt),
	}, got)
}
