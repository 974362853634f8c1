// Package btftest checks Go's idea of a C record against the BTF clang
// wrote for it, so that the one definition of every shared record
// (bpf/include/gpuext_abi.h) is what each Go decoder assumes. Test code
// only.
package btftest

import (
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"
)

// Struct requires that struct name in spec has size bytes and exactly the
// members of offsets at those byte offsets.
func Struct(t *testing.T, spec *btf.Spec, name string, size uint32, offsets map[string]uint32) {
	t.Helper()
	var st *btf.Struct
	require.NoError(t, spec.TypeByName(name, &st))
	require.Equal(t, size, st.Size, "sizeof(struct %s)", name)
	got := map[string]uint32{}
	for _, m := range st.Members {
		got[m.Name] = m.Offset.Bytes()
	}
	require.Equal(t, offsets, got, "struct %s members", name)
}
