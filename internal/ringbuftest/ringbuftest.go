// Package ringbuftest writes records into a BPF ring buffer map from a
// test, as a BPF program would: user space cannot produce into a ring
// buffer, so a tiny socket filter copies the record from an array map with
// bpf_ringbuf_output and is run with BPF_PROG_TEST_RUN. Tests of readers
// (what they read, and that they read a ring to its end at shutdown) use
// it without the kernel module whose probes normally write. Needs root.
// Test code only.
package ringbuftest

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/stretchr/testify/require"
)

// Producer writes records of one size into a ring buffer map.
type Producer struct {
	size  int
	value *ebpf.Map
	prog  *ebpf.Program
}

// New returns a Producer of records of size bytes into ring; it is closed
// at the end of the test.
func New(t testing.TB, ring *ebpf.Map, size int) *Producer {
	t.Helper()
	value, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: uint32(size), MaxEntries: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = value.Close() })
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SocketFilter,
		License: "GPL",
		Instructions: asm.Instructions{
			// value = bpf_map_lookup_elem(&value, &(u32){0})
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, value.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			// bpf_ringbuf_output(&ring, value, size, 0)
			asm.LoadMapPtr(asm.R1, ring.FD()),
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.Mov.Imm(asm.R3, int32(size)),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnRingbufOutput.Call(),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = prog.Close() })
	return &Producer{size: size, value: value, prog: prog}
}

// Write puts each record (of the Producer's size) into the ring, in order.
func (p *Producer) Write(t testing.TB, records ...[]byte) {
	t.Helper()
	for _, r := range records {
		require.Len(t, r, p.size)
		require.NoError(t, p.value.Put(uint32(0), r))
		ret, err := p.prog.Run(&ebpf.RunOptions{Data: make([]byte, 64)})
		require.NoError(t, err)
		require.Zero(t, ret)
	}
}
