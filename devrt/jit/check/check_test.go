package check

import (
	"testing"

	"github.com/stretchr/testify/require"
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
		})
	}
}
