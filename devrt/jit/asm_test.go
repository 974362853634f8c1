package jit

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// testMaps are the maps the hand-written programs of the tests may use.
var testMaps = []gpumap.Def{
	{Name: "arr", Type: gpumap.Array, KeySize: 4, ValueSize: 16, MaxEntries: 4},
	{Name: "hash", Type: gpumap.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 8},
	{Name: "ring", Type: gpumap.Ringbuf, ValueSize: 16, MaxEntries: 4},
	{Name: "sm", Type: gpumap.PerSMArray, KeySize: 4, ValueSize: 8, MaxEntries: 1, Copies: 4},
}

// asmObject builds an object of one program from cilium/ebpf assembly (map
// loads name their map with WithReference) through the same encode/decode
// path as an ELF object.
func asmObject(t testing.TB, insns asm.Instructions) *Object {
	t.Helper()
	raw, refs, err := marshal(insns)
	require.NoError(t, err)
	decoded, err := Decode(raw, refs)
	require.NoError(t, err)
	return &Object{Programs: []Program{{Name: "p", Section: "gpu/entry/*", Site: SiteEntry, Kernel: "*", Insns: decoded}},
		Maps: testMaps, ringBytes: map[string]uint32{}}
}

func mapLoad(dst asm.Register, name string) asm.Instruction {
	return asm.LoadMapPtr(dst, 0).WithReference(name)
}

func ctxEnv(addr, kid uint64) *Env {
	e := &Env{BlockDim: [3]uint32{64, 1, 1}, GridDim: [3]uint32{2, 1, 1}, NSMID: 4, ActiveLanes: 32}
	binary.LittleEndian.PutUint32(e.Ctx[0:], 1)
	binary.LittleEndian.PutUint32(e.Ctx[4:], 9)
	binary.LittleEndian.PutUint64(e.Ctx[8:], addr)
	binary.LittleEndian.PutUint64(e.Ctx[16:], kid)
	return e
}

// run compiles insns at warp and thread level (PTX must come out) and
// returns the interpreter's r0 and region.
func run(t testing.TB, insns asm.Instructions, env *Env) (uint64, []byte) {
	t.Helper()
	o := asmObject(t, insns)
	var c *Compiled
	for _, per := range []bool{false, true} {
		var err error
		c, err = Compile([]*Object{o}, Options{PerThread: per, Harness: true})
		require.NoError(t, err)
		require.Contains(t, c.PTX, ".func __gpuext_probe_0(.param .u64 __gx_c0, .param .u64 __gx_c1, .param .u64 __gx_c2)")
	}
	region := make([]byte, c.Layout.Size)
	require.NoError(t, c.Layout.Init(region))
	if env == nil {
		env = ctxEnv(0, 0)
	}
	r0, err := c.Run(0, region, env)
	require.NoError(t, err)
	return r0, region
}

func imm64(r asm.Register, v uint64) asm.Instruction { return asm.LoadImm(r, int64(v), asm.DWord) }

// TestInstructionClasses checks the exact eBPF semantics of each class,
// including the edges the GPU code must reproduce.
func TestInstructionClasses(t *testing.T) {
	R0, R1, R2, R10 := asm.R0, asm.R1, asm.R2, asm.R10
	ret := asm.Return()
	cases := []struct {
		name  string
		insns asm.Instructions
		want  uint64
	}{
		{"add64 wraps", asm.Instructions{imm64(R0, ^uint64(0)), asm.Add.Imm(R0, 2), ret}, 1},
		{"sub32 zero-extends", asm.Instructions{imm64(R0, 0xffffffff00000001), asm.Sub.Imm32(R0, 2), ret}, 0xffffffff},
		{"mul32", asm.Instructions{imm64(R0, 0x100000003), imm64(R1, 0x80000001), asm.Mul.Reg32(R0, R1), ret}, 0x80000003},
		{"mul64", asm.Instructions{imm64(R0, 0x100000003), asm.Mul.Imm(R0, -1), ret}, 0xfffffffefffffffd},
		{"div64 by 0 is 0", asm.Instructions{asm.Mov.Imm(R0, 10), asm.Mov.Imm(R1, 0), asm.Div.Reg(R0, R1), ret}, 0},
		{"div64 by imm", asm.Instructions{imm64(R0, ^uint64(0)), asm.Div.Imm(R0, 3), ret}, 0x5555555555555555},
		{"mod64 by 0 keeps", asm.Instructions{asm.Mov.Imm(R0, 10), asm.Mov.Imm(R1, 0), asm.Mod.Reg(R0, R1), ret}, 10},
		{"mod32 by 0 keeps low half", asm.Instructions{imm64(R0, 0xffffffff0000000a), asm.Mov.Imm(R1, 0), asm.Mod.Reg32(R0, R1), ret}, 10},
		{"div32 by 0 is 0", asm.Instructions{imm64(R0, 0xffffffff0000000a), asm.Mov.Imm(R1, 0), asm.Div.Reg32(R0, R1), ret}, 0},
		{"div32 ignores high halves", asm.Instructions{imm64(R0, 0x700000064), imm64(R1, 0x900000007), asm.Div.Reg32(R0, R1), ret}, 14},
		{"sdiv64 INT_MIN/-1", asm.Instructions{imm64(R0, 1<<63), asm.Mov.Imm(R1, -1), asm.SDiv.Reg(R0, R1), ret}, 1 << 63},
		{"sdiv64 truncates", asm.Instructions{asm.Mov.Imm(R0, -7), asm.SDiv.Imm(R0, 2), ret}, 0xfffffffffffffffd},
		{"sdiv64 by 0", asm.Instructions{asm.Mov.Imm(R0, -7), asm.Mov.Imm(R1, 0), asm.SDiv.Reg(R0, R1), ret}, 0},
		{"smod64", asm.Instructions{asm.Mov.Imm(R0, -7), asm.SMod.Imm(R0, 2), ret}, 0xffffffffffffffff},
		{"smod64 by -1", asm.Instructions{asm.Mov.Imm(R0, -7), asm.SMod.Imm(R0, -1), ret}, 0},
		{"smod64 by 0 keeps", asm.Instructions{asm.Mov.Imm(R0, -7), asm.Mov.Imm(R1, 0), asm.SMod.Reg(R0, R1), ret}, 0xfffffffffffffff9},
		{"sdiv32", asm.Instructions{asm.Mov.Imm32(R0, -7), asm.SDiv.Imm32(R0, 2), ret}, 0xfffffffd},
		{"sdiv32 INT_MIN/-1", asm.Instructions{asm.Mov.Imm32(R0, -1<<31), asm.SDiv.Imm32(R0, -1), ret}, 0x80000000},
		{"smod32 by 0 keeps low half", asm.Instructions{imm64(R0, 0x5fffffff9), asm.Mov.Imm(R1, 0), asm.SMod.Reg32(R0, R1), ret}, 0xfffffff9},
		{"lsh64 masks the count", asm.Instructions{asm.Mov.Imm(R0, 1), asm.Mov.Imm(R1, 65), asm.LSh.Reg(R0, R1), ret}, 2},
		{"lsh32 masks the count", asm.Instructions{asm.Mov.Imm(R0, 1), asm.Mov.Imm(R1, 33), asm.LSh.Reg32(R0, R1), ret}, 2},
		{"rsh64", asm.Instructions{imm64(R0, 1<<63), asm.RSh.Imm(R0, 63), ret}, 1},
		{"rsh32 zero-extends", asm.Instructions{imm64(R0, 0xffffffff80000000), asm.RSh.Imm32(R0, 4), ret}, 0x08000000},
		{"arsh64", asm.Instructions{imm64(R0, 1<<63), asm.ArSh.Imm(R0, 63), ret}, ^uint64(0)},
		{"arsh32", asm.Instructions{asm.Mov.Imm32(R0, -1<<31), asm.ArSh.Imm32(R0, 31), ret}, 0xffffffff},
		{"neg64", asm.Instructions{asm.Mov.Imm(R0, 5), asm.Neg.Imm(R0, 0), ret}, 0xfffffffffffffffb},
		{"neg32", asm.Instructions{asm.Mov.Imm(R0, 5), asm.Neg.Imm32(R0, 0), ret}, 0xfffffffb},
		{"or xor and", asm.Instructions{asm.Mov.Imm(R0, 0xf0), asm.Or.Imm(R0, 0x0f), asm.Xor.Imm(R0, 0x3c), asm.And.Imm(R0, 0x7e), ret}, 0x42},
		{"mov32 zero-extends", asm.Instructions{imm64(R1, ^uint64(0)), asm.Mov.Reg32(R0, R1), ret}, 0xffffffff},
		{"mov imm sign-extends", asm.Instructions{asm.Mov.Imm(R0, -2), ret}, 0xfffffffffffffffe},
		{"movsx8", asm.Instructions{asm.Mov.Imm(R1, 0x80), asm.MovSX8.Reg(R0, R1), ret}, 0xffffffffffffff80},
		{"movsx16 32-bit", asm.Instructions{asm.Mov.Imm(R1, 0x8000), asm.MovSX16.Reg32(R0, R1), ret}, 0xffff8000},
		{"movsx32", asm.Instructions{imm64(R1, 0x180000000), asm.MovSX32.Reg(R0, R1), ret}, 0xffffffff80000000},
		{"to big endian 16", asm.Instructions{asm.Mov.Imm(R0, 0x12345678), asm.HostTo(asm.BE, R0, asm.Half), ret}, 0x7856},
		{"to big endian 32", asm.Instructions{imm64(R0, 0xaabbccdd11223344), asm.HostTo(asm.BE, R0, asm.Word), ret}, 0x44332211},
		{"to little endian 32 truncates", asm.Instructions{imm64(R0, 0xaabbccdd11223344), asm.HostTo(asm.LE, R0, asm.Word), ret}, 0x11223344},
		{"to little endian 16 truncates", asm.Instructions{imm64(R0, 0xaabbccdd11223344), asm.HostTo(asm.LE, R0, asm.Half), ret}, 0x3344},
		{"bswap64", asm.Instructions{imm64(R0, 0x0102030405060708), asm.BSwap(R0, asm.DWord), ret}, 0x0807060504030201},
		{"bswap16", asm.Instructions{imm64(R0, 0x0102030405060708), asm.BSwap(R0, asm.Half), ret}, 0x0807},
		{"ld_imm64", asm.Instructions{imm64(R0, 0x123456789abcdef0), ret}, 0x123456789abcdef0},
		{"jsgt is signed", asm.Instructions{asm.Mov.Imm(R0, 0), asm.Mov.Imm(R1, -1), asm.JSGT.Imm(R1, 1, "out"), asm.Mov.Imm(R0, 7), asm.Return().WithSymbol("out")}, 7},
		{"jgt is unsigned", asm.Instructions{asm.Mov.Imm(R0, 0), asm.Mov.Imm(R1, -1), asm.JGT.Imm(R1, 1, "out"), asm.Mov.Imm(R0, 7), asm.Return().WithSymbol("out")}, 0},
		{"jmp32 ignores the high half", asm.Instructions{asm.Mov.Imm(R0, 1), imm64(R1, 1<<32), asm.JEq.Imm32(R1, 0, "out"), asm.Mov.Imm(R0, 7), asm.Return().WithSymbol("out")}, 1},
		{"jsge32 signed low half", asm.Instructions{asm.Mov.Imm(R0, 1), imm64(R1, 0x80000000), asm.JSGE.Imm32(R1, 0, "out"), asm.Mov.Imm(R0, 7), asm.Return().WithSymbol("out")}, 7},
		{"jset", asm.Instructions{asm.Mov.Imm(R0, 1), asm.Mov.Imm(R1, 6), asm.JSet.Imm(R1, 4, "out"), asm.Mov.Imm(R0, 7), asm.Return().WithSymbol("out")}, 1},
		{"bounded loop", asm.Instructions{asm.Mov.Imm(R0, 0), asm.Mov.Imm(R1, 0),
			asm.Add.Reg(R0, R1).WithSymbol("loop"), asm.Add.Imm(R1, 1), asm.JLT.Imm(R1, 100, "loop"), ret}, 4950},
		{"stack widths", asm.Instructions{
			asm.StoreImm(R10, -8, 0x55667788, asm.Word), asm.StoreImm(R10, -4, 0x11223344, asm.Word),
			asm.StoreImm(R10, -16, -1, asm.Byte), asm.StoreImm(R10, -14, 0x1234, asm.Half),
			asm.LoadMem(R0, R10, -8, asm.DWord), asm.LoadMem(R1, R10, -14, asm.Half), asm.Add.Reg(R0, R1),
			asm.LoadMem(R1, R10, -16, asm.Byte), asm.Add.Reg(R0, R1), ret}, 0x1122334455667788 + 0x1234 + 0xff},
		{"sign-extending loads", asm.Instructions{asm.StoreImm(R10, -8, -2, asm.Byte), asm.StoreImm(R10, -6, -3, asm.Half),
			asm.StoreImm(R10, -4, -4, asm.Word), asm.LoadMemSX(R0, R10, -8, asm.Byte), asm.LoadMemSX(R1, R10, -6, asm.Half), asm.Add.Reg(R0, R1),
			asm.LoadMemSX(R1, R10, -4, asm.Word), asm.Add.Reg(R0, R1), ret}, uint64(0xfffffffffffffff7)},
		{"spill and fill a pointer", asm.Instructions{asm.StoreMem(R10, -8, R1, asm.DWord), asm.Mov.Imm(R1, 0),
			asm.LoadMem(R2, R10, -8, asm.DWord), asm.LoadMem(R0, R2, 8, asm.DWord), ret}, 0xabcdef},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := run(t, c.insns, ctxEnv(0xabcdef, 0))
			require.Equal(t, c.want, got, "r0 %#x, want %#x", got, c.want)
		})
	}
}

// atomicInsn is a BPF_ATOMIC instruction (cilium/ebpf v0.20 encodes the
// fetch forms with imm 0, so the tests write them directly).
func atomicInsn(size uint8, op int64, dst, src uint8, off int16) Insn {
	return Insn{Op: clsSTX | modeATOMIC | size, Dst: dst, Src: src, Off: off, Imm: op}
}

// TestAtomicsAndMaps checks atomics on a map value found by lookup.
func TestAtomicsAndMaps(t *testing.T) {
	R0, R1, R2, R10 := asm.R0, asm.R1, asm.R2, asm.R10
	o := asmObject(t, asm.Instructions{
		asm.StoreImm(R10, -4, 2, asm.Word), mapLoad(R1, "arr"), asm.Mov.Reg(R2, R10), asm.Add.Imm(R2, -4),
		asm.FnMapLookupElem.Call(), asm.JNE.Imm(R0, 0, "ok"), asm.Return(),
		asm.Mov.Reg(asm.R6, R0).WithSymbol("ok"),
	})
	body := []Insn{
		{Op: clsALU64 | aluMOV | srcK, Dst: 1, Imm: 40}, {Op: clsSTX | modeMEM | sizeDW, Dst: 6, Src: 1},
		{Op: clsALU64 | aluMOV | srcK, Dst: 1, Imm: 2}, atomicInsn(sizeDW, atomADD, 6, 1, 0), // 42
		{Op: clsALU64 | aluMOV | srcK, Dst: 1, Imm: 8}, atomicInsn(sizeDW, atomADD, 6, 1, 0), // 50
		{Op: clsALU64 | aluMOV | srcK, Dst: 2, Imm: 0xcd}, atomicInsn(sizeDW, atomOR|atomFETCH, 6, 2, 0), // r2 = 50, v = 0xff
		{Op: clsALU64 | aluMOV | srcK, Dst: 0, Imm: 0xff}, {Op: clsALU64 | aluMOV | srcK, Dst: 3, Imm: 9},
		atomicInsn(sizeDW, atomCMPXCHG, 6, 3, 0), // r0 = 0xff, v = 9
		{Op: clsALU64 | aluADD | srcX, Dst: 0, Src: 2},
		{Op: clsALU64 | aluMOV | srcK, Dst: 4, Imm: 3}, atomicInsn(sizeW, atomADD|atomFETCH, 6, 4, 8), // word 8: 0 -> 3, r4 = 0
		{Op: clsALU64 | aluADD | srcX, Dst: 0, Src: 4},
		{Op: clsALU64 | aluMOV | srcK, Dst: 5, Imm: 7}, atomicInsn(sizeW, atomXCHG, 6, 5, 12), // word 12: 0 -> 7, r5 = 0
		{Op: clsALU64 | aluADD | srcX, Dst: 0, Src: 5},
		{Op: clsALU64 | aluMOV | srcK, Dst: 5, Imm: 0x0f}, atomicInsn(sizeW, atomAND, 6, 5, 8), // word 8: 3
		{Op: clsALU64 | aluMOV | srcK, Dst: 5, Imm: 0x10}, atomicInsn(sizeW, atomXOR|atomFETCH, 6, 5, 8), // word 8: 0x13, r5 = 3
		{Op: clsALU64 | aluADD | srcX, Dst: 0, Src: 5},
		{Op: clsJMP | jmpEXIT},
	}
	p := &o.Programs[0]
	raw := p.Insns[len(p.Insns)-1].Raw + 1
	for _, in := range body {
		in.Raw = raw
		raw++
		p.Insns = append(p.Insns, in)
	}
	c, err := Compile([]*Object{o}, Options{})
	require.NoError(t, err)
	require.Contains(t, c.PTX, "atom.global.cas.b64")
	require.Contains(t, c.PTX, "atom.global.exch.b32")
	require.Contains(t, c.PTX, "atom.global.xor.b32")
	region := make([]byte, c.Layout.Size)
	require.NoError(t, c.Layout.Init(region))
	r0, err := c.Run(0, region, ctxEnv(0, 0))
	require.NoError(t, err)
	require.Equal(t, uint64(0xff+50+3), r0)
	vals, err := c.Layout.Maps[0].ArrayCopy(region, 0)
	require.NoError(t, err)
	require.Equal(t, []byte{9, 0, 0, 0, 0, 0, 0, 0, 0x13, 0, 0, 0, 7, 0, 0, 0}, vals[2])
}

func testMapLayout(t testing.TB) gpumap.Map {
	l, err := gpumap.NewLayout(testMaps)
	require.NoError(t, err)
	return l.Maps[0]
}

// TestHelpers checks the GPU helpers against the injected thread values.
func TestHelpers(t *testing.T) {
	R0, R1, R2, R3, R6, R10 := asm.R0, asm.R1, asm.R2, asm.R3, asm.R6, asm.R10
	call := func(id int64) asm.Instruction { return asm.BuiltinFunc(id).Call() }
	env := ctxEnv(0, 0)
	env.BlockIdx, env.ThreadIdx, env.GridDim, env.BlockDim = [3]uint32{1, 0, 0}, [3]uint32{37, 0, 0}, [3]uint32{2, 1, 1}, [3]uint32{64, 1, 1}
	env.SMID, env.NSMID, env.WarpID, env.LaneID, env.ActiveLanes = 3, 132, 5, 5, 17
	env.GridID = 0x1_0000_0007
	tm := uint64(100)
	env.Timer = func() uint64 { tm += 10; return tm }
	for _, c := range []struct {
		name  string
		insns asm.Instructions
		want  uint64
	}{
		{"globaltimer", asm.Instructions{call(HelperGlobaltimer), asm.Return()}, 110},
		{"ktime", asm.Instructions{call(HelperKtime), asm.Return()}, 120},
		{"smid", asm.Instructions{call(HelperSMID), asm.Return()}, 3},
		{"nsmid", asm.Instructions{call(HelperNSMID), asm.Return()}, 132},
		{"warpid", asm.Instructions{call(HelperWarpID), asm.Return()}, 5},
		{"laneid", asm.Instructions{call(HelperLaneID), asm.Return()}, 5},
		{"active lanes", asm.Instructions{call(HelperActiveLanes), asm.Return()}, 17},
		{"global warp", asm.Instructions{call(HelperGlobalWarp), asm.Return()}, 1*2 + 1},
		{"block linear", asm.Instructions{call(HelperBlockLinear), asm.Return()}, 1},
		{"grid id", asm.Instructions{call(HelperGridID), asm.Return()}, 0x1_0000_0007},
		{"thread idx", asm.Instructions{asm.Mov.Reg(R1, R10), asm.Add.Imm(R1, -8), asm.Mov.Reg(R2, R10), asm.Add.Imm(R2, -16),
			asm.Mov.Reg(R3, R10), asm.Add.Imm(R3, -24), call(HelperThreadIdx), asm.LoadMem(R0, R10, -8, asm.DWord),
			asm.LoadMem(R6, R10, -16, asm.DWord), asm.Add.Reg(R0, R6), asm.Return()}, 37},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := run(t, c.insns, env)
			require.Equal(t, c.want, got)
		})
	}
}
