package jit

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"
)

// TestLaneUniform: at warp level an entry program that touches no map, no
// ctx and no memory but a stack in registers, and calls only helpers whose values
// are the same in every lane, runs in every lane with no leader elected and
// no r0 shared (so nothing waits for r0 before the kernel's first
// instruction); any other program keeps the election and the shfl of r0.
// Per thread, nothing is elected either way.
func TestLaneUniform(t *testing.T) {
	call := func(id int64) asm.Instruction { return asm.BuiltinFunc(id).Call() }
	R0, R1, R2, R3, R10 := asm.R0, asm.R1, asm.R2, asm.R3, asm.R10
	// dim3 calls a helper that writes x, y, z to the stack and returns x.
	dim3 := func(id int64) asm.Instructions {
		return asm.Instructions{
			asm.Mov.Reg(R1, R10), asm.Add.Imm(R1, -8),
			asm.Mov.Reg(R2, R10), asm.Add.Imm(R2, -16),
			asm.Mov.Reg(R3, R10), asm.Add.Imm(R3, -24),
			call(id),
			asm.LoadMem(R0, R10, -8, asm.DWord), asm.Return()}
	}
	for _, c := range []struct {
		name    string
		site    Site
		insns   asm.Instructions
		uniform bool
	}{
		{"globaltimer", SiteEntry, asm.Instructions{call(HelperGlobaltimer), asm.Return()}, true},
		{"kernel id from the ctx", SiteEntry, asm.Instructions{asm.LoadMem(R0, R1, 16, asm.DWord), asm.Return()}, false},
		{"block index through the stack", SiteEntry, dim3(HelperBlockIdx), true},
		{"SM id and active lanes", SiteEntry, asm.Instructions{
			call(HelperSMID), asm.Mov.Reg(asm.R6, R0), call(HelperActiveLanes), asm.Add.Reg(R0, asm.R6), asm.Return()}, true},
		{"thread index: the lane's own", SiteEntry, dim3(HelperThreadIdx), false},
		{"lane id", SiteEntry, asm.Instructions{call(HelperLaneID), asm.Return()}, false},
		{"a map", SiteEntry, asm.Instructions{
			asm.StoreImm(R10, -4, 0, asm.Word),
			mapLoad(R1, "arr"), asm.Mov.Reg(R2, R10), asm.Add.Imm(R2, -4),
			call(HelperMapLookup), asm.Mov.Imm(R0, 0), asm.Return()}, false},
		{"an exit", SiteExit, asm.Instructions{call(HelperGlobaltimer), asm.Return()}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := asmObject(t, c.insns)
			if c.site == SiteExit {
				o.Programs[0].Section, o.Programs[0].Site = "gpu/exit/*", SiteExit
			}
			for _, per := range []bool{false, true} {
				comp, err := Compile([]*Object{o}, Options{PerThread: per})
				require.NoError(t, err)
				elected := strings.Contains(comp.PTX, "bfind.u32 %glead, %gw0;")
				shared := strings.Contains(comp.PTX, "shfl.sync.idx.b32 %gw0, %gw0, %glead, 31, %gmask;")
				want := !per && !c.uniform
				require.Equal(t, want, elected, "per thread %v: leader elected", per)
				require.Equal(t, want, shared, "per thread %v: r0 shared", per)
			}
		})
	}
}
