package proberegion

import (
	"encoding/binary"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/probeset"
)

// simBlock is one thread block of a simulated launch: it runs on SM from
// Start to End (%globaltimer ns), its warps entering 100 ns apart and
// leaving so that the last leaves at End.
type simBlock struct {
	Block      uint32
	SM         uint32
	Start, End uint64
}

type simEvent struct {
	t     uint64
	exit  bool
	b     simBlock
	warp  uint32
	slot  uint32
	order int
}

const simThreads = 64 // 2 warps per block

func warpTimes(b simBlock, w uint32) (uint64, uint64) {
	nw := uint64(simThreads / 32)
	return b.Start + uint64(w)*100, b.End - (nw-1-uint64(w))*100
}

// simulate runs the compiled probes on the interpreter for every warp of
// the blocks of one launch of kernel, in time order, as the GPU would call
// them (warp level: one run per warp standing for its 32 lanes).
func simulate(t testing.TB, c *jit.Compiled, region []byte, kernel string, grid uint32, nsm uint32, blocks []simBlock) {
	kid := ptx.KernelID(kernel)
	var evs []simEvent
	perSM := map[uint32]uint32{}
	for _, b := range blocks {
		slot := perSM[b.SM]
		perSM[b.SM] += simThreads / 32
		for w := uint32(0); w < simThreads/32; w++ {
			in, out := warpTimes(b, w)
			evs = append(evs, simEvent{t: in, b: b, warp: w, slot: (slot + w) % 64, order: len(evs)},
				simEvent{t: out, exit: true, b: b, warp: w, slot: (slot + w) % 64, order: len(evs) + 1})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	for _, e := range evs {
		site := jit.SiteEntry
		if e.exit {
			site = jit.SiteExit
		}
		for _, p := range c.Probes {
			if p.Site != site {
				continue
			}
			env := &jit.Env{
				BlockIdx: [3]uint32{e.b.Block, 0, 0}, BlockDim: [3]uint32{simThreads, 1, 1},
				GridDim: [3]uint32{grid, 1, 1}, ThreadIdx: [3]uint32{e.warp * 32, 0, 0},
				SMID: e.b.SM, NSMID: nsm, WarpID: e.slot, LaneID: 0, ActiveLanes: 32,
			}
			tm := e.t
			env.Timer = func() uint64 { return tm }
			binary.LittleEndian.PutUint32(env.Ctx[0:], uint32(site))
			binary.LittleEndian.PutUint64(env.Ctx[16:], kid)
			_, err := c.Run(p.Index, region, env)
			require.NoError(t, err)
		}
	}
}

// base is a %globaltimer value at the start of an occupancy bucket.
const base = uint64(1_700_000_000_000_000_000) >> OccShift << OccShift

// imbalanced is the bench kernel's pattern: every 8th block does 8x the work.
// 16 blocks on 4 SMs (block b on SM b%4), started 1 µs apart; heavy blocks
// run 2.4 ms, the others 0.3 ms.
func imbalancedBlocks(t0 uint64) []simBlock {
	var bs []simBlock
	for b := uint32(0); b < 16; b++ {
		d := uint64(300_000)
		if b%8 == 0 {
			d = 2_400_000
		}
		s := t0 + uint64(b)*1000
		bs = append(bs, simBlock{Block: b, SM: b % 4, Start: s, End: s + d})
	}
	return bs
}

func newSet(t testing.TB, probes ...string) *probeset.Set {
	s, err := probeset.New(probeset.Config{Probes: probes})
	require.NoError(t, err)
	return s
}
