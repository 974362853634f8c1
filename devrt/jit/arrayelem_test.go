package jit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// TestArrayElemIndexWidth: a plain or per-SM array whose elements all have
// 32-bit indexes is indexed in 32-bit registers with one widening multiply
// for the address; a per-warp or per-thread array (copies counted in 64
// bits), or one whose copies times entries reach 2^32, keeps the 64-bit
// arithmetic. Both check the key and the copy against the map's bounds and
// count a copy beyond the slots as a drop.
func TestArrayElemIndexWidth(t *testing.T) {
	for _, c := range []struct {
		name string
		m    gpumap.Map
		want []string
		not  []string
	}{
		{
			name: "per-SM array",
			m:    gpumap.Map{Def: gpumap.Def{Type: gpumap.PerSMArray, MaxEntries: 64}, Slots: 256, Stride: 24, Offset: 128},
			want: []string{
				"mov.u32 %gw3, %smid;",
				"setp.ge.u32 %gp1, %gw2, 64;",
				"setp.ge.u32 %gp0, %gw3, 256;",
				fmt.Sprintf("@%%gp0 red.global.add.u64 [%%gbase+%d], 1;", 128+gpumap.OffDrops),
				"mad.lo.u32 %gw3, %gw3, 64, %gw2;",
				"mul.wide.u32 %gt3, %gw3, 24;",
				"@%gp0 mov.b64 %gt3, 0;",
			},
			not: []string{"mul.lo.u64"},
		},
		{
			name: "plain array",
			m:    gpumap.Map{Def: gpumap.Def{Type: gpumap.Array, MaxEntries: 4}, Slots: 1, Stride: 8},
			want: []string{"mov.u32 %gw3, 0;", "setp.ge.u32 %gp1, %gw2, 4;", "mul.wide.u32 %gt3, %gw3, 8;"},
			not:  []string{"mul.lo.u64"},
		},
		{
			name: "per-SM array of 2^32 elements",
			m:    gpumap.Map{Def: gpumap.Def{Type: gpumap.PerSMArray, MaxEntries: 1 << 24}, Slots: 512, Stride: 8},
			want: []string{"setp.ge.u64 %gp1, %gt1, 16777216;", "mul.lo.u64 %gt3, %gt2, 16777216;"},
			not:  []string{"mad.lo.u32"},
		},
		{
			name: "per-warp array",
			m:    gpumap.Map{Def: gpumap.Def{Type: gpumap.PerWarpArray, MaxEntries: 1}, Slots: 1024, Stride: 8},
			want: []string{"setp.ge.u64 %gp0, %gt2, 1024;", "mul.lo.u64 %gt3, %gt3, 8;"},
			not:  []string{"mad.lo.u32"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var g gen
			g.arrayElem(c.m)
			out := g.b.String()
			for _, w := range c.want {
				require.Contains(t, out, w)
			}
			for _, n := range c.not {
				require.NotContains(t, out, n)
			}
			require.Equal(t, 1, strings.Count(out, "red.global.add.u64"), "one drop count")
		})
	}
}
