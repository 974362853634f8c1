package jit

import (
	"encoding/binary"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// TestRingSlotCode: a record's slot is its index masked when the ring's
// slots are a power of two (ptxas compiles rem.u64 to a call of its 64-bit
// division, even by a constant), by rem.u64 otherwise; at warp level the
// leader takes its index with one atomic and no ranking or broadcast of
// lanes, per thread the lanes share one atomic. The interpreter, which the
// GPU check holds the PTX to, writes the same record in the same slot.
func TestRingSlotCode(t *testing.T) {
	prog := asm.Instructions{
		asm.Mov.Imm(asm.R5, 7),
		asm.StoreMem(asm.RFP, -8, asm.R5, asm.DWord),
		asm.Mov.Imm(asm.R5, 9),
		asm.StoreMem(asm.RFP, -16, asm.R5, asm.DWord),
		mapLoad(asm.R1, "ring"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -16),
		asm.Mov.Imm(asm.R3, 16),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnRingbufOutput.Call(),
		asm.Return(),
	}
	for _, c := range []struct {
		name      string
		slots     uint32
		perThread bool
		want      []string
		not       []string
	}{
		{"warp, 4 slots", 4, false,
			[]string{"atom.global.add.u64 %xbase, [%xb], 1;", "add.s64 %gt1, %xbase, 1;", "and.b64 %gt2, %gt2, 3;"},
			[]string{"rem.u64", "%lanemask_lt", "shfl.sync.idx.b32 %xlo"}},
		{"warp, 6 slots", 6, false,
			[]string{"atom.global.add.u64 %xbase, [%xb], 1;", "rem.u64 %gt2, %gt2, 6;"},
			[]string{"and.b64 %gt2", "%lanemask_lt"}},
		{"thread, 4 slots", 4, true,
			[]string{"@%xq atom.global.add.u64 %xbase, [%xb], %xd;", "mov.u32 %xl, %lanemask_lt;",
				"shfl.sync.idx.b32 %xlo, %xlo, %xlead, 31, %xm;", "and.b64 %gt2, %gt2, 3;"},
			[]string{"rem.u64"}},
		{"thread, 6 slots", 6, true,
			[]string{"@%xq atom.global.add.u64 %xbase, [%xb], %xd;", "rem.u64 %gt2, %gt2, 6;"},
			[]string{"and.b64 %gt2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := asmObject(t, prog)
			o.Maps = []gpumap.Def{{Name: "ring", Type: gpumap.Ringbuf, ValueSize: 16, MaxEntries: c.slots}}
			comp, err := Compile([]*Object{o}, Options{PerThread: c.perThread, Harness: true})
			require.NoError(t, err)
			for _, w := range c.want {
				require.Contains(t, comp.PTX, w)
			}
			for _, n := range c.not {
				require.NotContains(t, comp.PTX, n)
			}

			// Slots+1 records: the last goes round into slot 0.
			m := comp.Layout.Maps[0]
			region := make([]byte, comp.Layout.Size)
			require.NoError(t, comp.Layout.Init(region))
			for range c.slots + 1 {
				r0, err := comp.Run(0, region, ctxEnv(0, 0))
				require.NoError(t, err)
				require.Equal(t, uint64(0), r0)
			}
			rec := region[m.Offset+m.ShardSlotOffset(0, 0):]
			require.Equal(t, uint64(2*(c.slots+1)), binary.LittleEndian.Uint64(rec[gpumap.RecSeq:]), "slot 0 holds record %d", c.slots+1)
			require.Equal(t, uint64(9), binary.LittleEndian.Uint64(rec[gpumap.RecHeaderSize:]))
			require.Equal(t, uint64(7), binary.LittleEndian.Uint64(rec[gpumap.RecHeaderSize+8:]))
		})
	}
}
