package jit

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"
)

// The ctx arrives as three .u64 parameters (site<<32 | kind, addr,
// kernel_id). These tests pin how a probe reads them: not at all when the
// program never reads the ctx, straight from the parameter for reads at a
// constant offset, through a .local copy made after the warp-leader
// election when some read has a variable offset; the interpreter gives the
// program's view of the ctx in every case.

const ctxSignature = "(.param .u64 __gx_c0, .param .u64 __gx_c1, .param .u64 __gx_c2)"

// probeBody returns the lines of function name in ptx after its signature.
func probeBody(t *testing.T, ptx, name string) string {
	t.Helper()
	head := ".func " + name + ctxSignature + "\n{\n"
	if strings.HasPrefix(name, "__gpuext_run_") {
		head = ".func (.param .b64 __gx_ret) " + name + ctxSignature + "\n{\n"
	}
	i := strings.Index(ptx, head)
	require.GreaterOrEqual(t, i, 0, "no %s in\n%s", head, ptx)
	body := ptx[i+len(head):]
	end := strings.Index(body, "\n}\n")
	require.GreaterOrEqual(t, end, 0)
	return body[:end+1]
}

// compileBodies compiles insns at warp and thread level with the harness
// function and returns the four bodies (probe and run, warp then thread).
func compileBodies(t *testing.T, insns asm.Instructions) []string {
	t.Helper()
	o := asmObject(t, insns)
	var bodies []string
	for _, per := range []bool{false, true} {
		c, err := Compile([]*Object{o}, Options{PerThread: per, Harness: true})
		require.NoError(t, err)
		bodies = append(bodies, probeBody(t, c.PTX, ProbeFunc(0)), probeBody(t, c.PTX, RunFunc(0)))
	}
	return bodies
}

// ctxTestEnv: kind 3, site 0x8000_0007, addr and kernel_id with every byte
// distinct and their top bits set (sign extension shows).
func ctxTestEnv() *Env {
	e := ctxEnv(0xf1e2d3c4b5a69788, 0x8877665544332211)
	binary.LittleEndian.PutUint32(e.Ctx[0:], 3)
	binary.LittleEndian.PutUint32(e.Ctx[4:], 0x80000007)
	return e
}

func TestCtxNotReadTouchesNoParameter(t *testing.T) {
	R0, R1, R2, R10 := asm.R0, asm.R1, asm.R2, asm.R10
	// r1 is copied, spilled, filled and checked against NULL, never read through
	insns := asm.Instructions{
		asm.Mov.Reg(R2, R1), asm.StoreMem(R10, -8, R2, asm.DWord), asm.LoadMem(R2, R10, -8, asm.DWord),
		asm.Mov.Imm(R0, 5), asm.JEq.Imm(R2, 0, "out"), asm.Mov.Imm(R0, 7), asm.Return().WithSymbol("out"),
	}
	for _, body := range compileBodies(t, insns) {
		require.NotContains(t, body, "__gx_c")
		require.NotContains(t, body, "ld.param")
		require.NotContains(t, body, ctxLocal)
		require.Contains(t, body, "\tmov.b64 %gr1, 0x700000000000; // ctx stand-in, never dereferenced\n")
		// both edges of the NULL check are reachable, so the code compares:
		// the stand-in must not be 0, as the verifier assumed
		require.Contains(t, body, "\tmov.b64 %gt9, 0;\n\tsetp.eq.u64 %gp0, %gr2, %gt9;\n")
	}
	r0, _ := run(t, insns, ctxTestEnv())
	require.Equal(t, uint64(7), r0)

	for _, body := range compileBodies(t, asm.Instructions{asm.Mov.Imm(R0, 7), asm.Return()}) {
		require.NotContains(t, body, "__gx_c")
		require.NotContains(t, body, ".local")
	}
}

func TestCtxConstantReadsUseTheParameters(t *testing.T) {
	R0, R1, R2, R3, R10 := asm.R0, asm.R1, asm.R2, asm.R3, asm.R10
	ret := asm.Return()
	for _, c := range []struct {
		name  string
		insns asm.Instructions
		want  uint64
		code  string // the PTX of the read, exactly
	}{
		{"kind", asm.Instructions{asm.LoadMem(R0, R1, 0, asm.Word), ret}, 3,
			"ld.param.u64 %gr0, [__gx_c0];\n\tbfe.u64 %gr0, %gr0, 0, 32;\n"},
		{"site", asm.Instructions{asm.LoadMem(R0, R1, 4, asm.Word), ret}, 0x80000007,
			"ld.param.u64 %gr0, [__gx_c0];\n\tbfe.u64 %gr0, %gr0, 32, 32;\n"},
		{"site sign-extended", asm.Instructions{asm.LoadMemSX(R0, R1, 4, asm.Word), ret}, 0xffffffff80000007,
			"ld.param.u64 %gr0, [__gx_c0];\n\tbfe.s64 %gr0, %gr0, 32, 32;\n"},
		{"addr", asm.Instructions{asm.LoadMem(R0, R1, 8, asm.DWord), ret}, 0xf1e2d3c4b5a69788,
			"ld.param.u64 %gr0, [__gx_c1];\n"},
		{"addr byte 1", asm.Instructions{asm.LoadMem(R0, R1, 9, asm.Byte), ret}, 0x97,
			"ld.param.u64 %gr0, [__gx_c1];\n\tbfe.u64 %gr0, %gr0, 8, 8;\n"},
		{"addr half 1", asm.Instructions{asm.LoadMem(R0, R1, 10, asm.Half), ret}, 0xb5a6,
			"ld.param.u64 %gr0, [__gx_c1];\n\tbfe.u64 %gr0, %gr0, 16, 16;\n"},
		{"addr top byte sign-extended", asm.Instructions{asm.LoadMemSX(R0, R1, 15, asm.Byte), ret}, 0xfffffffffffffff1,
			"ld.param.u64 %gr0, [__gx_c1];\n\tbfe.s64 %gr0, %gr0, 56, 8;\n"},
		{"kernel_id", asm.Instructions{asm.LoadMem(R0, R1, 16, asm.DWord), ret}, 0x8877665544332211,
			"ld.param.u64 %gr0, [__gx_c2];\n"},
		{"kernel_id high half sign-extended", asm.Instructions{asm.LoadMemSX(R0, R1, 20, asm.Word), ret}, 0xffffffff88776655,
			"ld.param.u64 %gr0, [__gx_c2];\n\tbfe.s64 %gr0, %gr0, 32, 32;\n"},
		// the verifier follows the pointer through arithmetic and a spill:
		// ctx+8 spilled, filled, read at +4 is offset 12
		{"through a spilled pointer", asm.Instructions{asm.Mov.Reg(R2, R1), asm.Add.Imm(R2, 8), asm.StoreMem(R10, -8, R2, asm.DWord),
			asm.Mov.Imm(R2, 0), asm.LoadMem(R3, R10, -8, asm.DWord), asm.LoadMem(R0, R3, 4, asm.Word), ret}, 0xf1e2d3c4,
			"ld.param.u64 %gr0, [__gx_c1];\n\tbfe.u64 %gr0, %gr0, 32, 32;\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, body := range compileBodies(t, c.insns) {
				require.Contains(t, body, "\t"+c.code)
				require.NotContains(t, body, ctxLocal)
				require.NotContains(t, body, "cvta.local")
				require.Equal(t, 1, strings.Count(body, "ld.param"), "the one read")
			}
			r0, _ := run(t, c.insns, ctxTestEnv())
			require.Equal(t, c.want, r0, "r0 %#x, want %#x", r0, c.want)
		})
	}
}

// ctxCopy is the .local copy of the ctx and r1 pointing to it.
const ctxCopy = "\tld.param.u64 %gt0, [__gx_c0];\n\tst.local.u64 [__gx_ctxv], %gt0;\n" +
	"\tld.param.u64 %gt0, [__gx_c1];\n\tst.local.u64 [__gx_ctxv+8], %gt0;\n" +
	"\tld.param.u64 %gt0, [__gx_c2];\n\tst.local.u64 [__gx_ctxv+16], %gt0;\n" +
	"\tmov.u64 %gr1, __gx_ctxv;\n\tcvta.local.u64 %gr1, %gr1;\n"

func TestCtxVariableOffsetReadsGoThroughALocalCopy(t *testing.T) {
	R0, R1, R2 := asm.R0, asm.R1, asm.R2
	// r0 = *(u64 *)(ctx + 8 + (kind & 8)): addr for kind 3, kernel_id for kind 11
	insns := asm.Instructions{
		asm.LoadMem(R2, R1, 0, asm.Word), asm.And.Imm(R2, 8), asm.Add.Reg(R1, R2),
		asm.LoadMem(R0, R1, 8, asm.DWord), asm.Return(),
	}
	bodies := compileBodies(t, insns)
	for i, body := range bodies {
		require.Contains(t, body, "\t.local .align 8 .b8 __gx_ctxv[24];\n")
		require.Equal(t, 1, strings.Count(body, ctxCopy), "one copy")
		require.NotContains(t, body, "0x700000000000", "r1 is the copy's address")
		// the kind: a constant offset, from the parameter; the other read through r1
		require.Contains(t, body, "\tld.param.u64 %gr2, [__gx_c0];\n\tbfe.u64 %gr2, %gr2, 0, 32;\n")
		require.Contains(t, body, "\tld.u64 %gr0, [%gr1+8];\n")
		copyAt := strings.Index(body, ctxCopy)
		if i < 2 { // warp level: only the leader copies
			elect := strings.Index(body, "\t@%gp0 bra $GX0_DONE;\n")
			require.True(t, elect >= 0 && elect < copyAt, "the copy follows the election")
		} else {
			require.NotContains(t, body, "%laneid")
		}
	}
	env := ctxTestEnv()
	r0, _ := run(t, insns, env)
	require.Equal(t, uint64(0xf1e2d3c4b5a69788), r0)
	binary.LittleEndian.PutUint32(env.Ctx[0:], 11)
	r0, _ = run(t, insns, env)
	require.Equal(t, uint64(0x8877665544332211), r0)
}

// TestCtxReadAtOffsetsDifferingByPath: one load reaches two constant
// offsets on two paths (a range for the verifier): it reads the copy.
func TestCtxReadAtOffsetsDifferingByPath(t *testing.T) {
	R0, R1, R2, R3 := asm.R0, asm.R1, asm.R2, asm.R3
	insns := asm.Instructions{
		asm.LoadMem(R3, R1, 0, asm.Word), asm.Mov.Reg(R2, R1), asm.JEq.Imm(R3, 3, "read"), asm.Add.Imm(R2, 8),
		asm.LoadMem(R0, R2, 8, asm.DWord).WithSymbol("read"), asm.Return(),
	}
	for _, body := range compileBodies(t, insns) {
		require.Equal(t, 1, strings.Count(body, ctxCopy))
		require.Contains(t, body, "\tld.u64 %gr0, [%gr2+8];\n")
	}
	env := ctxTestEnv()
	r0, _ := run(t, insns, env)
	require.Equal(t, uint64(0xf1e2d3c4b5a69788), r0)
	binary.LittleEndian.PutUint32(env.Ctx[0:], 4)
	r0, _ = run(t, insns, env)
	require.Equal(t, uint64(0x8877665544332211), r0)
}
