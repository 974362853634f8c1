package jit

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"
)

// TestRejectAsm: every unsafe program is refused before code generation,
// with its reason and the index of the instruction at fault.
func TestRejectAsm(t *testing.T) {
	R0, R1, R2, R3, R4, R5, R10 := asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R5, asm.R10
	ret := asm.Return()
	lookupArr := asm.Instructions{asm.StoreImm(R10, -4, 0, asm.Word), mapLoad(R1, "arr"), asm.Mov.Reg(R2, R10), asm.Add.Imm(R2, -4), asm.FnMapLookupElem.Call()}
	cases := []struct {
		name  string
		insns asm.Instructions
		insn  int
		why   string
	}{
		{"uninitialised register", asm.Instructions{asm.Mov.Reg(R0, R2), ret}, 0, "r2 is not initialised"},
		{"exit without r0", asm.Instructions{ret}, 0, "exit with r0 not initialised"},
		{"falls off the end", asm.Instructions{asm.Mov.Imm(R0, 0)}, 0, "execution falls off the end of the program"},
		{"r10 is read-only", asm.Instructions{asm.Mov.Imm(R10, 0), ret}, 0, "r10 is read-only"},
		{"stack below 512", asm.Instructions{asm.StoreImm(R10, -520, 0, asm.Word), asm.Mov.Imm(R0, 0), ret}, 0,
			"stack write of 4 bytes at fp-520 outside the 512-byte stack"},
		{"stack above the frame", asm.Instructions{asm.LoadMem(R0, R10, 0, asm.Word), ret}, 0,
			"stack read of 4 bytes at fp+0 outside the 512-byte stack"},
		{"uninitialised stack", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Half), asm.LoadMem(R0, R10, -8, asm.Word), ret}, 1,
			"read of uninitialised stack at fp-6"},
		{"variable stack offset", asm.Instructions{asm.LoadMem(R2, R1, 0, asm.Byte), asm.Mov.Reg(R3, R10), asm.Add.Imm(R3, -16),
			asm.Add.Reg(R3, R2), asm.LoadMem(R0, R3, 0, asm.Byte), ret}, 4, "stack access with a variable offset"},
		{"misaligned", asm.Instructions{asm.LoadMem(R0, R1, 2, asm.Word), ret}, 0,
			"read of 4 bytes at a ctx pointer+2 is not 4-byte aligned"},
		{"ctx write", asm.Instructions{asm.StoreImm(R1, 0, 1, asm.Word), asm.Mov.Imm(R0, 0), ret}, 0,
			"write into the ctx (struct gpuext_dev_ctx is read-only)"},
		{"ctx beyond 24 bytes", asm.Instructions{asm.LoadMem(R0, R1, 24, asm.DWord), ret}, 0,
			"ctx read of 8 bytes at offset 24 outside struct gpuext_dev_ctx (24 bytes)"},
		{"ctx before 0", asm.Instructions{asm.Add.Imm(R1, -8), asm.LoadMem(R0, R1, 0, asm.DWord), ret}, 1,
			"ctx read of 8 bytes at offset -8 outside struct gpuext_dev_ctx (24 bytes)"},
		{"map value without NULL check", append(append(asm.Instructions{}, lookupArr...), asm.LoadMem(R0, R0, 0, asm.DWord), ret), 6,
			"read through a map value pointer that may be NULL (check it first)"},
		{"map value out of bounds", append(append(asm.Instructions{}, lookupArr...), asm.JEq.Imm(R0, 0, "out"),
			asm.LoadMem(R0, R0, 16, asm.DWord), asm.Return().WithSymbol("out")), 7,
			`map "arr" value read of 8 bytes at offset [16,16] outside value_size 16`},
		{"map value variable offset unbounded", append(append(asm.Instructions{}, lookupArr...), asm.JEq.Imm(R0, 0, "out"),
			asm.LoadMem(R2, R1, 8, asm.DWord), asm.Add.Reg(R0, R2), asm.LoadMem(R0, R0, 0, asm.Byte), asm.Return().WithSymbol("out")), 7,
			"r1 is not initialised"},
		{"map value variable offset too far", append(append(asm.Instructions{}, asm.Mov.Reg(asm.R6, R1)), append(append(asm.Instructions{}, lookupArr...),
			asm.JEq.Imm(R0, 0, "out"), asm.LoadMem(R2, asm.R6, 8, asm.Byte), asm.Add.Reg(R0, R2), asm.LoadMem(R0, R0, 0, asm.Byte),
			asm.Return().WithSymbol("out"))...), 10, `map "arr" value read of 1 bytes at offset [0,255] outside value_size 16`},
		{"pointer stored in a map", append(append(asm.Instructions{asm.Mov.Reg(asm.R6, R1)}, lookupArr...), asm.JEq.Imm(R0, 0, "out"),
			asm.StoreMem(R0, 0, asm.R6, asm.DWord), asm.Return().WithSymbol("out")), 8,
			"storing a ctx pointer into map value pointer leaks a pointer"},
		{"pointer returned", asm.Instructions{asm.Mov.Reg(R0, R10), ret}, 1,
			"exit with a stack pointer in r0 (a pointer must not leave the probe)"},
		{"pointer multiplied", asm.Instructions{asm.Mul.Imm(R1, 2), asm.Mov.Imm(R0, 0), ret}, 0, "mul on a ctx pointer is not allowed"},
		{"pointer compared", asm.Instructions{asm.Mov.Imm(R0, 0), asm.JGT.Reg(R1, R10, "out"), asm.Return().WithSymbol("out")}, 1,
			"comparison of a ctx pointer (only a NULL check of a map value is allowed)"},
		{"32-bit pointer move", asm.Instructions{asm.Mov.Reg32(R0, R1), ret}, 0, "32-bit move of a ctx pointer"},
		{"atomic on the stack", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Word), asm.StoreImm(R10, -4, 0, asm.Word), asm.Mov.Imm(R2, 1),
			asm.AddAtomic.Mem(R10, R2, asm.DWord, -8), asm.Mov.Imm(R0, 0), ret}, 3,
			"atomic operation on the stack is not supported (only on map values)"},
		{"unknown helper", asm.Instructions{asm.FnGetSmpProcessorId.Call(), ret}, 0,
			"unknown helper 8 (device probes may call: see gpuext_dev_helper)"},
		{"tail call", asm.Instructions{asm.FnTailCall.Call(), ret}, 0, "tail calls are not supported"},
		{"helper gets a scalar for a map", asm.Instructions{asm.Mov.Imm(R1, 0), asm.Mov.Reg(R2, R10), asm.FnMapLookupElem.Call(), ret}, 2,
			"r1 must be a map pointer, is a scalar"},
		{"key on uninitialised stack", asm.Instructions{mapLoad(R1, "arr"), asm.Mov.Reg(R2, R10), asm.Add.Imm(R2, -4),
			asm.FnMapLookupElem.Call(), asm.Mov.Imm(R0, 0), ret}, 4, "r2: read of uninitialised stack at fp-4"},
		{"delete on an array", append(append(asm.Instructions{}, lookupArr[:4]...), asm.FnMapDeleteElem.Call(), ret), 5,
			`map_delete_elem on array "arr" (hash only)`},
		{"ringbuf size not constant", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Word), asm.StoreImm(R10, -4, 0, asm.Word),
			asm.LoadMem(R3, R1, 0, asm.Byte), mapLoad(R1, "ring"), asm.Mov.Reg(R2, R10), asm.Add.Imm(R2, -8), asm.Mov.Imm(R4, 0),
			asm.FnRingbufOutput.Call(), ret}, 8, "ringbuf_output size must be a constant in 1..4096"},
		{"ringbuf record too large", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Word), asm.StoreImm(R10, -4, 0, asm.Word), mapLoad(R1, "ring"), asm.Mov.Reg(R2, R10),
			asm.Add.Imm(R2, -8), asm.Mov.Imm(R3, 32), asm.Mov.Imm(R4, 0), asm.FnRingbufOutput.Call(), ret}, 8,
			`ringbuf_output of 32 bytes into ring "ring" of 16-byte records`},
		{"claim on an array", asm.Instructions{mapLoad(R1, "arr"), asm.Mov.Imm(R2, 0), asm.BuiltinFunc(HelperRingClaim).Call(), ret}, 3,
			`ring_claim on array "arr"`},
		{"claim sm a pointer", asm.Instructions{mapLoad(R1, "ring"), asm.Mov.Reg(R2, R10), asm.BuiltinFunc(HelperRingClaim).Call(), ret}, 3,
			"r2 (sm) must be a scalar"},
		{"output_at sm a pointer", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Word), asm.StoreImm(R10, -4, 0, asm.Word), mapLoad(R1, "ring"), asm.Mov.Reg(R2, R10),
			asm.Mov.Imm(R3, 0), asm.Mov.Reg(R4, R10), asm.Add.Imm(R4, -8), asm.Mov.Imm(R5, 8), asm.BuiltinFunc(HelperRingOutputAt).Call(), ret}, 9,
			"r2 (sm) must be a scalar"},
		{"output_at size not constant", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Word), asm.StoreImm(R10, -4, 0, asm.Word), asm.LoadMem(R5, R1, 0, asm.Byte),
			mapLoad(R1, "ring"), asm.Mov.Imm(R2, 0), asm.Mov.Imm(R3, 0), asm.Mov.Reg(R4, R10), asm.Add.Imm(R4, -8), asm.BuiltinFunc(HelperRingOutputAt).Call(), ret}, 9,
			"ring_output_at size must be a constant in 1..4096"},
		{"output_at index a pointer", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Word), asm.StoreImm(R10, -4, 0, asm.Word), mapLoad(R1, "ring"), asm.Mov.Imm(R2, 0),
			asm.Mov.Reg(R3, R10), asm.Mov.Reg(R4, R10), asm.Add.Imm(R4, -8), asm.Mov.Imm(R5, 8), asm.BuiltinFunc(HelperRingOutputAt).Call(), ret}, 9,
			"r3 (index) must be a scalar"},
		{"output_at sm uninitialised", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Word), asm.StoreImm(R10, -4, 0, asm.Word), mapLoad(R1, "ring"),
			asm.Mov.Imm(R3, 0), asm.Mov.Reg(R4, R10), asm.Add.Imm(R4, -8), asm.Mov.Imm(R5, 8), asm.BuiltinFunc(HelperRingOutputAt).Call(), ret}, 8,
			"r2 is not initialised"},
		{"output_at record too large", asm.Instructions{asm.StoreImm(R10, -8, 0, asm.Word), asm.StoreImm(R10, -4, 0, asm.Word), mapLoad(R1, "ring"), asm.Mov.Imm(R2, 0),
			asm.Mov.Imm(R3, 0), asm.Mov.Reg(R4, R10), asm.Add.Imm(R4, -8), asm.Mov.Imm(R5, 32), asm.BuiltinFunc(HelperRingOutputAt).Call(), ret}, 9,
			`ring_output_at of 32 bytes into ring "ring" of 16-byte records`},
		{"output_at data uninitialised", asm.Instructions{mapLoad(R1, "ring"), asm.Mov.Imm(R2, 0),
			asm.Mov.Imm(R3, 0), asm.Mov.Reg(R4, R10), asm.Add.Imm(R4, -8), asm.Mov.Imm(R5, 8), asm.BuiltinFunc(HelperRingOutputAt).Call(), ret}, 7,
			"r4: read of uninitialised stack at fp-8"},
		{"infinite loop", asm.Instructions{asm.Mov.Imm(R0, 0), asm.Ja.Label("top").WithSymbol("top"), ret}, 1,
			"loop not bounded (more than 1000000 instructions explored)"},
		{"unbounded counter", asm.Instructions{asm.LoadMem(R2, R1, 8, asm.DWord), asm.Mov.Imm(R0, 0),
			asm.Add.Imm(R0, 1).WithSymbol("top"), asm.JLT.Reg(R0, R2, "top"), ret}, 3,
			"loop not bounded (more than 1000000 instructions explored)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := asmObject(t, c.insns)
			_, err := Compile([]*Object{o}, Options{})
			var ve *VerifyError
			require.True(t, errors.As(err, &ve), "got %v", err)
			require.Equal(t, c.why, ve.Reason)
			require.Equal(t, c.insn, ve.Insn)
			require.Equal(t, "p", ve.Program)
		})
	}
}

// TestRejectELF: programs written in C, compiled by clang, refused for the
// same reasons (check/progs/reject.bpf.c).
func TestRejectELF(t *testing.T) {
	f, err := os.Open("check/progs/reject.bpf.o")
	require.NoError(t, err)
	defer f.Close()
	o, err := LoadObject(f)
	require.NoError(t, err)
	want := map[string]string{
		"unbounded_loop": "loop not bounded (more than 1000000 instructions explored)",
		"no_null_check":  "read through a map value pointer that may be NULL (check it first)",
		"value_oob":      `map "r_arr" value read of 8 bytes at offset [0,24] outside value_size 8`,
		"ctx_write":      "write into the ctx (struct gpuext_dev_ctx is read-only)",
		"ctx_oob":        "ctx read of 4 bytes at offset 24 outside struct gpuext_dev_ctx (24 bytes)",
		"unknown_helper": "unknown helper 8 (device probes may call: see gpuext_dev_helper)",
		"pointer_leak":   "storing a ctx pointer into map value pointer leaks a pointer",
	}
	got := map[string]string{}
	for _, p := range o.Programs {
		one, err := o.Only(p.Name)
		require.NoError(t, err)
		_, err = Compile([]*Object{one}, Options{})
		var ve *VerifyError
		require.True(t, errors.As(err, &ve), "%s: got %v", p.Name, err)
		got[p.Name] = ve.Reason
	}
	require.Equal(t, want, got)
}
