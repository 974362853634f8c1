package injecttest

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

const ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry a(\n)\n{\n\tret;\n}\n.visible .entry b()\n{\n\tret;\n}\n"

func TestPatch(t *testing.T) {
	tests := []struct {
		name    string
		p       *Patcher
		kernels []string
		status  devrtinject.Status
		want    []string // patched kernels
		marks   int
	}{
		{"all", &Patcher{}, []string{"a", "b"}, devrtinject.StatusPatched, []string{"a", "b"}, 0},
		{"only b, marked", &Patcher{Only: map[string]bool{"b": true}, Mark: true}, []string{"a", "b"},
			devrtinject.StatusPatched, []string{"b"}, 2},
		{"only none", &Patcher{Only: map[string]bool{"c": true}}, []string{"a"}, devrtinject.StatusUnchanged, nil, 0},
		{"rejected", &Patcher{Reject: map[string]bool{"b": true}}, []string{"a", "b"}, devrtinject.StatusRejected, nil, 0},
		{"no kernels", &Patcher{}, nil, devrtinject.StatusUnchanged, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.p.Patch(context.Background(), &devrtinject.Module{PTX: []byte(ptx), Kernels: tc.kernels})
			require.NoError(t, err)
			require.Equal(t, tc.status, r.Status)
			require.Equal(t, tc.want, r.Kernels)
			if r.Status != devrtinject.StatusPatched {
				return
			}
			out := string(r.PTX)
			require.True(t, strings.HasPrefix(out, ".version 8.0\n.target sm_90\n.address_size 64\n"+Marker+
				"\n.visible .const .align 8 .u64 __gpuext_shared;\n.visible .entry a(\n)\n{"), out)
			require.Equal(t, tc.marks, strings.Count(out, "st.global.u64 [%gxd1], %gxd2;"))
			require.Equal(t, tc.marks, strings.Count(out, "mov.u64 %gxd2, 0x214b4f5f54584547;"))
			if tc.marks > 0 {
				require.Contains(t, out, "@%gxp bra $GX_SKIP_1;")
				require.Contains(t, out, "$GX_SKIP_1:\n}\n\n\tret;\n}\n")
			}
			require.Equal(t, int64(1), tc.p.Calls())
		})
	}
}

// TestPatchGrid1D: each patched kernel's copy named with the suffix, after
// the module, as Mark and MaxNTID left it, with the copies' own bounds;
// none for a kernel whose copy's name the module has.
func TestPatchGrid1D(t *testing.T) {
	const (
		hdr      = ".version 8.0\n.target sm_90\n.address_size 64\n"
		patched  = hdr + Marker + "\n.visible .const .align 8 .u64 __gpuext_shared;\n"
		prefixed = ".visible .entry ab(\n)\n{\n\tret;\n}\n.visible .entry a(\n\t.param .u64 x\n)\n{\n\t{\n\tret;\n\t}\n}\n"
		// the program's own a__gx1d: no copy of a, a copy of it
		named = ".visible .entry a(\n)\n{\n\tret;\n}\n.visible .entry a__gx1d(\n\t.param .u32 n\n)\n{\n\tret;\n}\n"
	)
	tests := []struct {
		name    string
		p       *Patcher
		ptx     string
		kernels []string
		want    string // the patched PTX
		err     string
	}{
		{"every kernel", &Patcher{Grid1D: true}, ptx, []string{"a", "b"},
			patched + ".visible .entry a(\n)\n{\n\tret;\n}\n.visible .entry b()\n{\n\tret;\n}\n" +
				"\n.visible .entry a__gx1d(\n)\n{\n\tret;\n}\n" +
				"\n.visible .entry b__gx1d()\n{\n\tret;\n}\n", ""},
		{"only b, bounded", &Patcher{Grid1D: true, Only: map[string]bool{"b": true}, MaxNTID: 16,
			Grid1DMaxNTID: 8, Grid1DStaticShared: 4096}, ptx, []string{"a", "b"},
			patched + ".visible .entry a(\n)\n.maxntid 16, 1, 1\n{\n\tret;\n}\n" +
				".visible .entry b()\n.maxntid 16, 1, 1\n{\n\tret;\n}\n" +
				"\n.visible .entry b__gx1d()\n.maxntid 16, 1, 1\n.maxntid 8, 1, 1\n" +
				"{\n\t.shared .align 8 .b8 __gpuext_test_grid1d[4096];\n\tret;\n}\n", ""},
		{"a name that prefixes another, nested braces", &Patcher{Grid1D: true}, hdr + prefixed, []string{"a"},
			patched + prefixed + "\n.visible .entry a__gx1d(\n\t.param .u64 x\n)\n{\n\t{\n\tret;\n\t}\n}\n", ""},
		{"a kernel named as a copy would be", &Patcher{Grid1D: true}, hdr + named, []string{"a", "a__gx1d"},
			patched + named + "\n.visible .entry a__gx1d__gx1d(\n\t.param .u32 n\n)\n{\n\tret;\n}\n", ""},
		{"not in the module", &Patcher{Grid1D: true}, ptx, []string{"c"}, "", "kernel c: no .entry with a body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.p.Patch(context.Background(), &devrtinject.Module{PTX: []byte(tc.ptx), Kernels: tc.kernels})
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, devrtinject.StatusPatched, r.Status)
			require.Equal(t, tc.want, string(r.PTX))
		})
	}
}

// TestPatchGrid1DMark: marked, each kernel stores MarkValue and its 1-D
// copy Grid1DMarkValue, once each.
func TestPatchGrid1DMark(t *testing.T) {
	p := &Patcher{Mark: true, Grid1D: true, Grid1DMark: Grid1DMarkValue}
	r, err := p.Patch(context.Background(), &devrtinject.Module{PTX: []byte(ptx), Kernels: []string{"a", "b"}})
	require.NoError(t, err)
	out := string(r.PTX)
	mark, mark1 := "mov.u64 %gxd2, 0x214b4f5f54584547;", "mov.u64 %gxd2, 0x2144315f54584547;"
	require.Equal(t, 2, strings.Count(out, mark))
	require.Equal(t, 2, strings.Count(out, mark1))
	copies := out[strings.Index(out, ".entry a__gx1d"):]
	require.NotContains(t, copies, mark)
	require.Equal(t, 2, strings.Count(copies, mark1))
}
