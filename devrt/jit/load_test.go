package jit

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

func TestParseSection(t *testing.T) {
	for _, c := range []struct {
		sec    string
		site   Site
		kernel string
		err    string
	}{
		{"gpu/entry/_Z6vecAddPfS_S_i", SiteEntry, "_Z6vecAddPfS_S_i", ""},
		{"gpu/exit/*", SiteExit, "*", ""},
		{"gpu/load/triton_*", SiteLoad, "triton_*", ""},
		{"gpu/store/k", SiteStore, "k", ""},
		{"gpu/entry_block0/*", SiteEntry, "*", ""},
		{"gpu/entry_thread/k*", SiteEntry, "k*", ""},
		{"kprobe/_Z3foov", SiteEntry, "_Z3foov", ""},
		{"kretprobe/_Z3foov", SiteExit, "_Z3foov", ""},
		{"gpu/entry/", 0, "", `section "gpu/entry/" names no kernel (use * for every kernel)`},
		{"gpu/enter/k", 0, "", `section "gpu/enter/k": unknown site "enter" (entry, entry_block0, entry_thread, exit, load, store)`},
		{"gpu/entry", 0, "", `section "gpu/entry": want gpu/<entry|entry_block0|entry_thread|exit|load|store>/<kernel>`},
		{"gpu/exit/[", 0, "", `section "gpu/exit/[": bad kernel glob: syntax error in pattern`},
		{"uprobe/x", 0, "", `section "uprobe/x" is not a device probe (gpu/<site>/<kernel>, kprobe/<kernel>, kretprobe/<kernel>)`},
	} {
		site, k, err := ParseSection(c.sec)
		if c.err != "" {
			require.EqualError(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.site, site)
		require.Equal(t, c.kernel, k)
		require.Equal(t, c.sec == "gpu/entry_block0/*", FirstBlockSection(c.sec), c.sec)
		require.Equal(t, c.sec == "gpu/entry_thread/k*", ThreadSection(c.sec), c.sec)
	}
	p := Program{Kernel: "triton_*"}
	require.True(t, p.MatchKernel("triton_poi_fused_add_0"))
	require.False(t, p.MatchKernel("_Z6vecAddPfS_S_i"))
}

func TestLoadObject(t *testing.T) {
	f, err := os.Open("check/progs/classes.bpf.o")
	require.NoError(t, err)
	defer f.Close()
	o, err := LoadObject(f)
	require.NoError(t, err)
	var names []string
	for _, p := range o.Programs {
		require.Equal(t, SiteEntry, p.Site)
		require.Equal(t, "*", p.Kernel)
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"alu32", "alu64", "array_ops", "atomics", "atomics_fetch", "bswap", "ctx_read", "ctx_var", "dims", "divmod",
		"hash_ops", "jumps", "ldimm64", "per_copy", "props", "ring_claim", "ring_map", "ring_out", "ring_out4", "stack_loop", "weight"}, names)
	require.Equal(t, []gpumap.Def{
		{Name: ".bss", Type: gpumap.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		{Name: "t_arr", Type: gpumap.Array, KeySize: 4, ValueSize: 8, MaxEntries: 8},
		{Name: "t_hash", Type: gpumap.Hash, KeySize: 8, ValueSize: 24, MaxEntries: 256},
		{Name: "t_mrec", Type: gpumap.PerThreadArray, KeySize: 4, ValueSize: 15, MaxEntries: 1, Copies: 1024},
		{Name: "t_ring", Type: gpumap.Ringbuf, MaxEntries: 4096},
		{Name: "t_ring4", Type: gpumap.Ringbuf, MaxEntries: 4096, Shards: 4},
		{Name: "t_sm", Type: gpumap.PerSMArray, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		{Name: "t_thread", Type: gpumap.PerThreadArray, KeySize: 4, ValueSize: 8, MaxEntries: 1, Copies: 1024},
		{Name: "t_warp", Type: gpumap.PerWarpArray, KeySize: 4, ValueSize: 8, MaxEntries: 2, Copies: 64},
	}, o.Maps)
	_, err = o.Only("nope")
	require.EqualError(t, err, `object has no program "nope"`)

	_, err = LoadObject(readerOf([]byte("not an elf")))
	require.ErrorContains(t, err, "read eBPF object: not an ELF object")
}

type readerOf []byte

func (r readerOf) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r)) {
		return 0, os.ErrInvalid
	}
	n := copy(p, r[off:])
	if n < len(p) {
		return n, os.ErrInvalid
	}
	return n, nil
}
