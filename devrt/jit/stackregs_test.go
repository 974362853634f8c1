package jit

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"
)

// TestStackInRegisters: a program whose every stack access has one constant
// offset keeps its stack in %gs registers (no .local array); a different
// offset on two paths, or a hash update whose value is on the stack, keeps
// the .local array. The interpreter's results are the same either way.
func TestStackInRegisters(t *testing.T) {
	for _, c := range []struct {
		name  string
		insns asm.Instructions
		regs  bool
		want  []string // PTX lines expected
		r0    uint64
	}{
		{
			name: "narrow stores and loads in one slot",
			insns: asm.Instructions{
				asm.Mov.Imm(asm.R1, 0),
				asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
				asm.Mov.Imm(asm.R1, 0x11223344),
				asm.StoreMem(asm.RFP, -8, asm.R1, asm.Word),
				asm.StoreImm(asm.RFP, -4, 0x55, asm.Byte),
				asm.LoadMem(asm.R0, asm.RFP, -8, asm.DWord),
				asm.Return(),
			},
			regs: true,
			want: []string{"bfi.b64 %gs63, %gr1, %gs63, 0, 32;", "bfi.b64 %gs63, %gt0, %gs63, 32, 8;", "mov.b64 %gr0, %gs63;"},
			r0:   0x5511223344,
		},
		{
			name: "sign-extending load",
			insns: asm.Instructions{
				asm.Mov.Imm(asm.R1, -2),
				asm.StoreMem(asm.RFP, -16, asm.R1, asm.Half),
				asm.LoadMemSX(asm.R0, asm.RFP, -16, asm.Half),
				asm.Return(),
			},
			regs: true,
			want: []string{"bfe.s64 %gr0, %gs62, 0, 16;"},
			r0:   0xfffffffffffffffe,
		},
		{
			name: "map key and ring record from the stack",
			insns: asm.Instructions{
				asm.StoreImm(asm.RFP, -4, 2, asm.Word),
				mapLoad(asm.R1, "arr"),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -4),
				asm.FnMapLookupElem.Call(),
				asm.Mov.Imm(asm.R5, 7),
				asm.StoreMem(asm.RFP, -16, asm.R5, asm.DWord),
				asm.StoreImm(asm.RFP, -12, 9, asm.Word),
				asm.Mov.Imm(asm.R5, 5),
				asm.StoreMem(asm.RFP, -24, asm.R5, asm.DWord),
				mapLoad(asm.R1, "ring"),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -24),
				asm.Mov.Imm(asm.R3, 16),
				asm.Mov.Imm(asm.R4, 0),
				asm.FnRingbufOutput.Call(),
				asm.Return(),
			},
			regs: true,
			want: []string{"bfe.u64 %gt0, %gs63, 32, 32;", "mov.b64 %gt0, %gs61;", "mov.b64 %gt12, %gs62;",
				"st.global.v2.u64 [%gt2+16], {%gt0, %gt12};"},
		},
		{
			name: "a different offset on each path",
			insns: asm.Instructions{
				asm.Mov.Imm(asm.R5, 1),
				asm.StoreMem(asm.RFP, -8, asm.R5, asm.DWord),
				asm.Mov.Imm(asm.R5, 2),
				asm.StoreMem(asm.RFP, -16, asm.R5, asm.DWord),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -8),
				asm.LoadMem(asm.R3, asm.R1, 0, asm.Word),
				asm.JEq.Imm(asm.R3, 0, "load"),
				asm.Add.Imm(asm.R2, -8),
				asm.LoadMem(asm.R0, asm.R2, 0, asm.DWord).WithSymbol("load"),
				asm.Return(),
			},
			regs: false,
			want: []string{".local .align 8 .b8 __gx_stk[512];"},
			r0:   2, // the ctx's kind is 1
		},
		{
			name: "a hash update's value on the stack",
			insns: asm.Instructions{
				asm.Mov.Imm(asm.R5, 3),
				asm.StoreMem(asm.RFP, -8, asm.R5, asm.DWord),
				asm.Mov.Imm(asm.R5, 4),
				asm.StoreMem(asm.RFP, -16, asm.R5, asm.DWord),
				mapLoad(asm.R1, "hash"),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -8),
				asm.Mov.Reg(asm.R3, asm.RFP),
				asm.Add.Imm(asm.R3, -16),
				asm.Mov.Imm(asm.R4, 0),
				asm.FnMapUpdateElem.Call(),
				asm.Return(),
			},
			regs: false,
			want: []string{".local .align 8 .b8 __gx_stk[512];", "cvta.local.u64 %gt8, %gr3;"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp, err := Compile([]*Object{asmObject(t, c.insns)}, Options{})
			require.NoError(t, err)
			_, inRegs := stackInRegs(&cp.progs[0], cp)
			require.Equal(t, c.regs, inRegs)
			require.Equal(t, c.regs, !strings.Contains(cp.PTX, "__gx_stk"))
			require.Equal(t, c.regs, strings.Contains(cp.PTX, ".reg .b64 %gs<64>;"))
			for _, w := range c.want {
				require.Contains(t, cp.PTX, "\t"+w+"\n")
			}
			r0, _ := run(t, c.insns, ctxEnv(0, 0))
			require.Equal(t, c.r0, r0)
		})
	}
}
