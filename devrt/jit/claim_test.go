package jit

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClaimNotWaited: block_sched's entry (gpu/entry_thread) claims its
// ring record with an atom.add whose result goes to r0 and is read by
// nothing before the function returns it: no election, no shfl of r0, no
// arithmetic on the index, so a warp never waits for the claim at entry
// (the GPU stalls at the first read of a pending register), and the
// add is predicated on the lane id of the lowest caller, which keeps
// ptxas from combining the lanes' adds with a shfl of the result. Its exit
// writes at the index it reads back, in the shard of the SM the entry
// recorded, with no atomic of its own.
func TestClaimNotWaited(t *testing.T) {
	for _, opt := range []Options{{}, {PerThread: true}} {
		c, err := Compile([]*Object{loadProbe(t, "block_sched")}, opt)
		require.NoError(t, err)
		require.True(t, c.Probes[0].PerThread)
		entry := funcBody(t, c.PTX, c.Probes[0].Func)
		require.NotContains(t, entry, "shfl")
		require.NotContains(t, entry, "%glead,") // no leader elected
		atom := strings.Index(entry, "@%xq atom.global.add.u64 %gr0, [%xb], 1;")
		require.GreaterOrEqual(t, atom, 0, entry)
		ret := strings.Index(entry, "st.param.b64 [__gx_ret], %gr0;")
		require.Greater(t, ret, atom)
		between := entry[atom+len("@%xq atom.global.add.u64 %gr0, [%xb], 1;") : ret]
		require.NotRegexp(t, regexp.MustCompile(`%gr0\b`), between, "r0 read before the return")
		require.Regexp(t, regexp.MustCompile(`setp\.eq\.u32 %xq, %xm, %xl;\n\tmov\.b64 %gr0, -1;\n\t@%xq atom`), entry, "one lane adds, the others get ~0")

		exit := funcBody(t, c.PTX, c.Probes[1].Func)
		require.Equal(t, 1, strings.Count(exit, "atom."), "the exit's only atomic is the lanes count") // atom.acq_rel.cta.shared.add
		require.Contains(t, exit, "atom.acq_rel.cta.shared.add.u32")
		require.Contains(t, exit, "cvt.u32.u64 %gw4, %gr2;") // the shard of the entry's SM
	}
}

// funcBody is the text of .func name in a fragment.
func funcBody(t *testing.T, ptx, name string) string {
	t.Helper()
	i := strings.Index(ptx, " "+name+"(")
	require.GreaterOrEqual(t, i, 0, "no function %s", name)
	j := strings.Index(ptx[i:], "\n}\n")
	require.Greater(t, j, 0)
	return ptx[i : i+j]
}
