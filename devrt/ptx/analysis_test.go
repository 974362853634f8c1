package ptx

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVariables(t *testing.T) {
	const hdr = ".version 8.0\n.target sm_90\n.address_size 64\n"
	tests := []struct {
		name             string
		src              string
		own, unsupported []string
	}{
		{"none", ".visible .entry k()\n{\n\tret;\n}\n", nil, nil},
		{"device and constant", ".global .align 4 .u32 counter;\n.visible .const .align 4 .b8 coeffs[16];\n" +
			".visible .entry k()\n{\n\tret;\n}\n", []string{"counter", "coeffs"}, nil},
		{"initialized table", ".global .align 4 .b8 table[4] = {1, 2, 3, 4};\n", []string{"table"}, nil},
		{"extern and compiler strings", ".extern .global .align 4 .u32 other;\n" +
			".global .align 1 .b8 $str[3] = {104, 105, 0};\n.global .align 1 .b8 $str$1[2] = {33, 0};\n", nil, nil},
		{"reserved names", ".global .align 4 .b8 __cudart_i2opi_f[4] = {65, 144, 67, 60};\n" +
			".global .align 4 .u32 __nv_static_27__14_coords_cpp1_ii_count;\n.global .align 4 .u32 _x;\n",
			[]string{"__nv_static_27__14_coords_cpp1_ii_count", "_x"}, nil},
		{"shared and functions", ".shared .align 4 .b8 tile[256];\n.func f()\n{\n\tret;\n}\n", nil, nil},
		{"declared twice", ".weak .global .align 4 .u32 w;\n.weak .global .align 4 .u32 w;\n", []string{"w"}, nil},
		{"managed", ".global .attribute(.managed) .align 4 .u32 mv;\n.global .align 4 .u32 plain;\n",
			[]string{"plain"}, []string{"mv (a managed variable)"}},
		{"references", ".global .texref tr;\n.global .surfref sr;\n.global .samplerref smp;\n.tex .u32 old;\n", nil,
			[]string{"tr (a texture reference)", "sr (a surface reference)", "smp (a sampler reference)", "old (a texture reference)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(hdr + tc.src)
			require.NoError(t, err)
			own, unsupported := m.Variables()
			require.Equal(t, tc.own, own)
			require.Equal(t, tc.unsupported, unsupported)
		})
	}
}

// TestVariablesCorpus: nvcc's kernels.cu declares a __device__ counter and
// a __constant__ array (and a printf string); Triton's modules none.
func TestVariablesCorpus(t *testing.T) {
	for file, want := range map[string][]string{
		"nvcc_kernels.ptx": {"dev_counter", "coeffs"}, "nvcc_kernels_rdc.ptx": {"dev_counter", "coeffs"},
		"nvcc_kernels_debug.ptx": {"dev_counter", "coeffs"}, "nvcc_kernels_lineinfo.ptx": {"dev_counter", "coeffs"},
		"triton_add.ptx": nil, "triton_matmul.ptx": nil, "triton_softmax.ptx": nil,
	} {
		src, err := os.ReadFile("testdata/corpus/" + file)
		require.NoError(t, err)
		m, err := Parse(string(src))
		require.NoError(t, err, file)
		own, unsupported := m.Variables()
		require.Equal(t, want, own, file)
		require.Empty(t, unsupported, file)
	}
}
