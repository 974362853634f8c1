package jit_test

import (
	"bytes"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// TestBlockWeightCode runs the PTX the block weight helper compiles to
// (its few instruction forms, interpreted here) on random grids, grids
// past 2^32 blocks and grids at the rates' boundaries, and checks it
// returns what ptx.SampleWeight says: the weight devrt/ptx's own sampling
// code gives the blocks it picks (TestLaunchSampleCodeMatchesLaunchSampled
// checks that code), so the two copies of the rule cannot drift apart.
func TestBlockWeightCode(t *testing.T) {
	b, err := os.ReadFile("check/progs/classes.bpf.o")
	require.NoError(t, err)
	all, err := jit.LoadObject(bytes.NewReader(b))
	require.NoError(t, err)
	weight, err := all.Only("weight")
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, opt := range []jit.Options{{}, {BlockSample: 7}, {BlocksPerLaunch: 1}, {BlocksPerLaunch: 256}, {BlocksPerLaunch: 1 << 12}, {BlocksPerLaunch: ptx.MaxBlocksPerLaunch}} {
		c, err := jit.Compile([]*jit.Object{weight}, opt)
		require.NoError(t, err)
		code := weightCode(t, c.PTX)
		check := func(g [3]uint32) {
			blocks := uint64(g[0]) * uint64(g[1]) * uint64(g[2])
			require.Equal(t, uint64(ptx.SampleWeight(opt.BlockSample, opt.BlocksPerLaunch, blocks)), runWeight(t, code, g),
				"%+v, grid %v", opt, g)
		}
		for range 3000 {
			g := [3]uint32{1 + rng.Uint32N(1<<31-1), 1 + rng.Uint32N(65535), 1 + rng.Uint32N(65535)}
			if rng.IntN(2) == 0 {
				g = [3]uint32{1 + rng.Uint32N(5000), 1 + rng.Uint32N(4), 1 + rng.Uint32N(4)}
			}
			check(g)
		}
		for s := range uint32(20) {
			if x := uint64(max(opt.BlocksPerLaunch, 1)) << s; x < 1<<31 {
				check([3]uint32{uint32(x), 1, 1})
				check([3]uint32{uint32(x) + 1, 1, 1})
			}
		}
	}
}

// weightCode is the helper's code in the fragment: from the call's source
// line to the label after it.
func weightCode(t *testing.T, frag string) []string {
	t.Helper()
	var out []string
	in := false
	for _, l := range strings.Split(frag, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "// 0: return gpuext_block_weight();"):
			in = true
		case in && strings.HasSuffix(l, ":"):
			return out
		case in && l != "" && !strings.HasPrefix(l, "//"):
			out = append(out, l)
		}
	}
	t.Fatal("no block weight code in the fragment")
	return nil
}

// runWeight interprets code for a launch of grid g; its result is %gr0.
func runWeight(t *testing.T, code []string, g [3]uint32) uint64 {
	t.Helper()
	regs := map[string]uint64{"%nctaid.x": uint64(g[0]), "%nctaid.y": uint64(g[1]), "%nctaid.z": uint64(g[2])}
	val := func(s string) uint64 {
		if v, ok := regs[s]; ok {
			return v
		}
		v, err := strconv.ParseInt(s, 0, 64)
		require.NoError(t, err, "operand %q", s)
		return uint64(v)
	}
	for _, l := range code {
		op, rest, _ := strings.Cut(strings.TrimSuffix(l, ";"), " ")
		a := strings.Split(rest, ", ")
		d := strings.TrimSpace(a[0])
		u32 := func(i int) uint32 { return uint32(val(strings.TrimSpace(a[i]))) }
		switch op {
		case "mov.u32":
			regs[d] = uint64(u32(1))
		case "mov.b64":
			regs[d] = val(a[1])
		case "mul.lo.u32":
			regs[d] = uint64(u32(1) * u32(2))
		case "mul.hi.u32":
			regs[d] = uint64(u32(1)) * uint64(u32(2)) >> 32
		case "mad.lo.u32":
			regs[d] = uint64(u32(1)*u32(2) + u32(3))
		case "set.ne.u32.u32":
			var v uint64
			if u32(1) != u32(2) {
				v = 0xFFFFFFFF
			}
			regs[d] = v
		case "or.b32":
			regs[d] = uint64(u32(1) | u32(2))
		case "clz.b32":
			regs[d] = uint64(bits.LeadingZeros32(u32(1)))
		case "sub.s32":
			regs[d] = uint64(u32(1) - u32(2))
		case "max.s32":
			regs[d] = uint64(uint32(max(int32(u32(1)), int32(u32(2)))))
		case "min.s32":
			regs[d] = uint64(uint32(min(int32(u32(1)), int32(u32(2)))))
		case "shl.b64": // PTX clamps the shift at 64
			regs[d] = val(a[1]) << min(u32(2), 64)
		default:
			t.Fatalf("unexpected %q", l)
		}
	}
	return regs["%gr0"]
}
