package check

import (
	"testing"

	"github.com/stretchr/testify/require"

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
			checkHarnessCalls(t, c.Module(comp), c.Exit != "")
		})
	}
}

// checkHarnessCalls parses a case's module and checks that the harness
// kernel calls each run function with one argument per parameter it
// declares (the three ctx words).
func checkHarnessCalls(t *testing.T, module string, exit bool) {
	t.Helper()
	m, err := ptx.Parse(module)
	require.NoError(t, err)
	it, _ := m.Lookup(HarnessKernel)
	k, ok := it.(*ptx.Function)
	require.True(t, ok)
	calls := 0
	for _, in := range k.Instructions() {
		target := in.CallTarget()
		if target == "" {
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
}
