package jit

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"
)

// TestCarry: an exit program that reads ctx->entry_ret gets the first entry
// program of its own object for the same kernels (whose function then
// returns r0); one that does not read it, or has no such entry, gets none.
func TestCarry(t *testing.T) {
	c, err := Compile([]*Object{loadProbe(t, "block_sched"), loadProbe(t, "sm_load"), loadProbe(t, "warp_occupancy"), loadProbe(t, "launch_latency")}, Options{})
	require.NoError(t, err)
	type got struct {
		Name, Carry        string
		Returns, PerThread bool
	}
	var g []got
	for _, p := range c.Probes {
		g = append(g, got{p.Name, p.Carry, p.Returns, p.PerThread})
	}
	require.Equal(t, []got{
		{"block_entry", "", true, true}, // gpu/entry_thread: its claim, per thread
		{"block_exit", "__gpuext_probe_0", false, false},
		{"sm_entry", "", true, false},
		{"sm_exit", "__gpuext_probe_2", false, false},
		{"occ_entry", "", true, false},
		{"occ_exit", "__gpuext_probe_4", false, false},
		{"launch_entry", "", false, false},
	}, g)
	require.Contains(t, c.PTX, ".func (.param .b64 __gx_ret) __gpuext_probe_2(")
	require.Contains(t, c.PTX, ".func (.param .b64 __gx_ret) __gpuext_probe_0(")
	require.Contains(t, c.PTX, ".func __gpuext_probe_1(")

	// another kernel glob: no pairing
	exitReads := asm.Instructions{asm.LoadMem(asm.R0, asm.R1, 8, asm.DWord), asm.Return()}
	o := asmObject(t, exitReads)
	o.Programs[0].Section, o.Programs[0].Site, o.Programs[0].Kernel = "gpu/exit/k", SiteExit, "k"
	e := asmObject(t, asm.Instructions{asm.Mov.Imm(asm.R0, 7), asm.Return()})
	e.Programs[0].Kernel = "other"
	o.Programs = append([]Program{e.Programs[0]}, o.Programs...)
	c, err = Compile([]*Object{o}, Options{})
	require.NoError(t, err)
	require.Equal(t, "", c.Probes[1].Carry)
	o.Programs[0].Kernel = "k"
	c, err = Compile([]*Object{o}, Options{})
	require.NoError(t, err)
	require.Equal(t, "__gpuext_probe_0", c.Probes[1].Carry)
	// an entry of block 0 only runs nowhere else: not carried (the exit
	// reads entry_ret 0)
	o.Programs[0].FirstBlock = true
	c, err = Compile([]*Object{o}, Options{})
	require.NoError(t, err)
	require.Equal(t, "", c.Probes[1].Carry)
}
