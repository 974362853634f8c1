package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// TestCasesOnInterpreter runs every GPU check case on the interpreter: the
// expected results compare equal to themselves under each case's modes and
// pass each case's property check, and the module text is built.
func TestCasesOnInterpreter(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			require.False(t, names[c.Name], "duplicate case name")
			names[c.Name] = true
			comp, err := c.Compile()
			require.NoError(t, err)
			out, region, err := c.Expected(comp)
			require.NoError(t, err)
			require.Empty(t, c.Compare(comp, out, region, out, region))
			require.Contains(t, c.Module(comp), ".entry "+HarnessKernel)
			require.Len(t, c.Ctxs(), c.Threads()*48)
			checkHarnessCalls(t, c.Module(comp), c.Exit != "", comp.BlockInit)
		})
	}
}

// checkHarnessCalls parses a case's module and checks that the harness
// kernel calls each run function with one argument per parameter it
// declares (the three ctx words), and the per-block init (if any) first,
// with none, followed by a barrier.
func checkHarnessCalls(t *testing.T, module string, exit bool, init string) {
	t.Helper()
	m, err := ptx.Parse(module)
	require.NoError(t, err)
	it, _ := m.Lookup(HarnessKernel)
	k, ok := it.(*ptx.Function)
	require.True(t, ok)
	calls := 0
	ins := k.Instructions()
	for i, in := range ins {
		target := in.CallTarget()
		if target == "" {
			continue
		}
		if init != "" && target == init {
			require.Zero(t, calls, "the per-block init comes before the probes")
			require.Empty(t, in.Operands[1:], "the per-block init takes no arguments")
			require.Equal(t, "bar.sync", ins[i+1].Opcode+strings.Join(ins[i+1].Modifiers, ""))
			require.Equal(t, "0", ptx.WriteExpr(ins[i+1].Operands[0]))
			init = ""
			continue
		}
		calls++
		f, _ := m.Lookup(target)
		callee, ok := f.(*ptx.Function)
		require.True(t, ok, "call to %s", target)
		require.Len(t, callee.Params, 3)
		args, ok := in.Operands[len(in.Operands)-1].(*ptx.Paren)
		require.True(t, ok)
		require.Equal(t, "(gx_p0, gx_p1, gx_p2)", ptx.WriteExpr(args))
	}
	want := 1
	if exit {
		want = 2
	}
	require.Equal(t, want, calls)
	require.Empty(t, init, "the per-block init is called")
}

// TestRingSetLapped: a lapped ring read from the GPU with one slot an
// earlier lap's writer wrote last compares equal (its record counted lost,
// the others read); in a ring that did not lap, a record not written does
// not.
func TestRingSetLapped(t *testing.T) {
	run := func(name string) (*Case, *jit.Compiled, []uint64, []byte, gpumap.Map) {
		var c *Case
		for _, k := range Cases() {
			if k.Name == name {
				c = k
			}
		}
		require.NotNil(t, c, name)
		comp, err := c.Compile()
		require.NoError(t, err)
		out, want, err := c.Expected(comp)
		require.NoError(t, err)
		var m gpumap.Map
		for _, x := range comp.Layout.Maps {
			if x.Name == "t_ring" {
				m = x
			}
		}
		return c, comp, out, want, m
	}
	c, comp, out, want, m := run("ring_out-full")
	head := m.RingHead(gpumap.Region(want))
	require.Greater(t, head, m.ShardSlots(), "the case laps its ring")
	got := append([]byte(nil), want...)
	// Record head-5's slot holds record head-5-slots, written last.
	i := head - 5
	s := m.ShardSlotOffset(0, i)
	old := i - m.ShardSlots()
	payload := append([]byte(nil), got[s+gpumap.RecHeaderSize:s+gpumap.RecHeaderSize+uint64(m.ValueSize)]...)
	payload[0] ^= 0xff
	g := gpumap.Region(got)
	require.NoError(t, g.PutU64(s+gpumap.RecSeq, gpumap.RecCommitted(old+1)))
	require.NoError(t, g.PutU32(s+gpumap.RecLen, uint32(len(payload))))
	require.NoError(t, g.PutU32(s+gpumap.RecCheckOff, gpumap.RecCheck(gpumap.RecCommitted(old+1), payload)))
	copy(got[s+gpumap.RecHeaderSize:], payload)
	require.Empty(t, c.Compare(comp, out, want, out, got))

	c, comp, out, want, m = run("ring_out-warp")
	head = m.RingHead(gpumap.Region(want))
	require.LessOrEqual(t, head, m.ShardSlots())
	got = append([]byte(nil), want...)
	require.NoError(t, gpumap.Region(got).PutU64(m.ShardSlotOffset(0, 0)+gpumap.RecSeq, 0))
	require.Equal(t, []string{fmt.Sprintf("map t_ring (ringset): %d records, want %d (or different ones)", head-1, head)},
		c.Compare(comp, out, want, out, got))
}
