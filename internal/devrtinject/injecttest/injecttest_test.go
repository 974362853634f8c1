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
