package gpuextsim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const base = 1 << 32

func TestSequentialAndStride(t *testing.T) {
	require.Equal(t, []Access{{VA: base, PID: 1}, {VA: base + 4096, PID: 1}, {VA: base + 8192, PID: 1}},
		Sequential(1, base, 3))
	require.Equal(t, []Access{{VA: base, PID: 2}, {VA: base + 3*4096, PID: 2}, {VA: base + 6*4096, PID: 2}},
		Stride(2, base, 3, 3))
	require.Empty(t, Sequential(1, base, 0))
}

func TestRandomDeterministic(t *testing.T) {
	a := Random(42, 1, base, 100, 1000)
	require.Equal(t, a, Random(42, 1, base, 100, 1000))
	require.NotEqual(t, a, Random(43, 1, base, 100, 1000))
	seen := map[uint64]bool{}
	for _, x := range a {
		require.GreaterOrEqual(t, x.VA, uint64(base))
		require.Less(t, x.VA, uint64(base+100*PageSize))
		require.Zero(t, x.VA%PageSize)
		seen[x.VA] = true
	}
	require.Len(t, seen, 100, "1000 draws from 100 pages cover them all with this seed")
}

func TestHotSet(t *testing.T) {
	tr := HotSet(1, 9, base, 4, 10, 3, 2, 5)
	// Per round: 4 hot blocks x 2 touches + 3 cold blocks.
	require.Len(t, tr, 5*(4*2+3))
	blocks := map[uint64]int{}
	for _, a := range tr {
		require.Equal(t, uint32(9), a.PID)
		blocks[(a.VA-base)/BlockSize]++
	}
	for b := uint64(0); b < 4; b++ {
		require.Equal(t, 10, blocks[b], "hot block %d: 2 touches x 5 rounds", b)
	}
	// 15 cold touches over 10 cold blocks in order: blocks 4..13, then 4..8 again.
	for b := uint64(4); b < 14; b++ {
		want := 1
		if b < 9 {
			want = 2
		}
		require.Equal(t, want, blocks[b], "cold block %d", b)
	}
	require.Equal(t, tr, HotSet(1, 9, base, 4, 10, 3, 2, 5))
}

func TestTwoTenants(t *testing.T) {
	tr := TwoTenants(1, 10, 20, base, 3, 100, 5, 2)
	var hi, lo int
	loBlocks := map[uint64]bool{}
	for _, a := range tr {
		switch a.PID {
		case 10:
			hi++
			require.Less(t, a.VA, uint64(base+3*BlockSize))
		case 20:
			lo++
			require.GreaterOrEqual(t, a.VA, uint64(base+1<<30))
			loBlocks[a.VA] = true
		}
	}
	require.Equal(t, 6, hi)
	require.Equal(t, 10, lo)
	require.Len(t, loBlocks, 10, "lo never reuses a block within 100")
}

func TestLCBE(t *testing.T) {
	tasks, jobs := LCBE(7, 100, 2, 10, 1_000_000, 50_000, 4_000_000)
	require.Equal(t, []Task{{PID: 100, Comm: "lc"}, {PID: 101, Comm: "be0"}, {PID: 102, Comm: "be1"}}, tasks)
	var lc, be int
	for _, j := range jobs {
		if j.Task == 0 {
			require.Equal(t, uint64(50_000), j.DurationNS)
			period := uint64(lc) * 1_000_000
			require.GreaterOrEqual(t, j.SubmitNS, period)
			require.Less(t, j.SubmitNS, period+100_000)
			lc++
		} else {
			require.Equal(t, uint64(0), j.SubmitNS)
			require.Equal(t, uint64(4_000_000), j.DurationNS)
			be++
		}
	}
	require.Equal(t, 10, lc)
	// 10 ms of LC periods: 10/4 + 1 = 3 BE jobs per BE task.
	require.Equal(t, 6, be)
	t2, j2 := LCBE(7, 100, 2, 10, 1_000_000, 50_000, 4_000_000)
	require.Equal(t, tasks, t2)
	require.Equal(t, jobs, j2)
}

func TestEncodeRejectsBadConfig(t *testing.T) {
	_, err := SchedConfig{}.encode(nil)
	require.ErrorContains(t, err, "0 tasks")
	_, err = SchedConfig{}.encode(make([]Task, MaxTasks+1))
	require.ErrorContains(t, err, "17 tasks")
	_, err = SchedConfig{}.encode([]Task{{PID: 1, Comm: "0123456789abcdef"}})
	require.ErrorContains(t, err, "longer than 15")
	b := encodeJobs([]Job{{Task: -1}, {Task: 1 << 40}, {Task: 3, SubmitNS: 5, DurationNS: 6}})
	require.Equal(t, uint32(0xffffffff), le.Uint32(b[0:]))
	require.Equal(t, uint32(0xffffffff), le.Uint32(b[jobSize:]))
	require.Equal(t, uint32(3), le.Uint32(b[2*jobSize:]))
	require.Equal(t, uint64(5), le.Uint64(b[2*jobSize+8:]))
}

func TestDecodeRejectsBadCounts(t *testing.T) {
	b := make([]byte, memResultSize)
	le.PutUint32(b[68:], MaxTenants+1)
	_, err := decodeMemResult(b)
	require.ErrorContains(t, err, "17 tenants")
	_, err = decodeMemResult(b[:10])
	require.ErrorContains(t, err, "10 bytes")
	s := make([]byte, schedResultSize)
	le.PutUint32(s[16:], MaxTasks+1)
	_, err = decodeSchedResult(s)
	require.ErrorContains(t, err, "17 tasks")
}
