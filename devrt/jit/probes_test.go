package jit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/device"
)

func loadProbe(t testing.TB, name string) *Object {
	t.Helper()
	b, err := device.Object(name)
	require.NoError(t, err)
	o, err := LoadObject(bytes.NewReader(b))
	require.NoError(t, err)
	return o
}

func TestShippedProbesCompile(t *testing.T) {
	for _, name := range device.Names() {
		t.Run(name, func(t *testing.T) {
			o := loadProbe(t, name)
			for _, per := range []bool{false, true} {
				c, err := Compile([]*Object{o}, Options{PerThread: per})
				require.NoError(t, err)
				require.Contains(t, c.PTX, ".visible .const .align 8 .u64 __gpuext_shared;")
				for _, p := range c.Probes {
					ret := ""
					if p.Returns {
						ret = "(.param .b64 __gx_ret) "
					}
					require.Contains(t, c.PTX, ".func "+ret+p.Func+"(.param .u64 __gx_c0, .param .u64 __gx_c1, .param .u64 __gx_c2)")
				}
				// ptxas makes a 64-bit division or remainder a call of
				// some 50 instructions, even by a constant power of two
				// (a ring slot's was one, in every block's last warp),
				// and a .local stack a store per warp: a shipped probe
				// has neither.
				for _, slow := range []string{"div.u64", "div.s64", "rem.u64", "rem.s64", ".local"} {
					if strings.Contains(c.PTX, slow) {
						t.Errorf("per thread %v: the PTX has %q", per, slow)
					}
				}
			}
		})
	}
}

// TestABIMatchesBTF checks the ctx layout and the helper ids against what
// clang made of gpuext_abi.h.
func TestABIMatchesBTF(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpec("check/progs/abi.bpf.o")
	require.NoError(t, err)
	var ctx *btf.Struct
	require.NoError(t, spec.Types.TypeByName("gpuext_dev_ctx", &ctx))
	require.Equal(t, uint32(CtxSize), ctx.Size)
	off := map[string]uint32{}
	for _, m := range ctx.Members {
		if u, ok := m.Type.(*btf.Union); ok && m.Name == "" {
			for _, um := range u.Members {
				off[um.Name] = m.Offset.Bytes() + um.Offset.Bytes()
			}
			continue
		}
		off[m.Name] = m.Offset.Bytes()
	}
	require.Equal(t, map[string]uint32{"kind": 0, "site": 4, "addr": 8, "entry_ret": 8, "kernel_id": 16}, off)

	var helpers *btf.Enum
	require.NoError(t, spec.Types.TypeByName("gpuext_dev_helper", &helpers))
	got := map[int64]bool{}
	for _, v := range helpers.Values {
		got[int64(v.Value)] = true
	}
	want := map[int64]bool{}
	for id := range helperNames {
		want[id] = true
	}
	require.Equal(t, want, got, "every helper the verifier accepts is in enum gpuext_dev_helper, and no other")

	var sites *btf.Enum
	require.NoError(t, spec.Types.TypeByName("gpuext_dev_site", &sites))
	s := map[string]uint64{}
	for _, v := range sites.Values {
		s[v.Name] = v.Value
	}
	require.Equal(t, map[string]uint64{"GPUEXT_DEV_SITE_ENTRY": uint64(SiteEntry), "GPUEXT_DEV_SITE_EXIT": uint64(SiteExit),
		"GPUEXT_DEV_SITE_LOAD": uint64(SiteLoad), "GPUEXT_DEV_SITE_STORE": uint64(SiteStore)}, s)
}
