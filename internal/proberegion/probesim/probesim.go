// Package probesim runs compiled device probes on devrt/jit's interpreter
// as a GPU would call them for the thread blocks of a launch, so tests
// without a GPU get the region contents a real run of the shipped probes
// writes (exact records, SM totals, occupancy buckets) from a timeline they
// choose, an imbalanced one included.
package probesim

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// Block is one thread block of a simulated launch: it runs on SM from
// Start to End (%globaltimer ns). Its warps enter WarpGap ns apart and
// leave so that the last leaves at End.
type Block struct {
	Block      uint32
	SM         uint32
	Start, End uint64
}

// Launch is a simulated launch of one kernel.
type Launch struct {
	Kernel  string // mangled name (the probes see its FNV-1a 64)
	Grid    uint32 // blocks (x only)
	Threads uint32 // per block, a multiple of 32
	NSM     uint32
	Blocks  []Block
	// GridID is the launch's %gridid; 0 takes the next of a counter, as
	// a GPU numbers the launches of a context.
	GridID uint64
	// From and Until: only the probes that run at times in [From, Until)
	// (Until 0: no end) write region, so that a reader can look between
	// two parts of a launch; the entries before From run on a copy of
	// region, for what their exits carry and their blocks' shared state.
	// Both 0: the whole launch.
	From, Until uint64
}

var gridIDs atomic.Uint64

// WarpGap is the time between the entries (and exits) of a block's warps.
const WarpGap = 100

// WarpTimes are the entry and exit times of warp w of a block of threads.
func WarpTimes(b Block, threads, w uint32) (uint64, uint64) {
	nw := uint64(threads / 32)
	return b.Start + uint64(w)*WarpGap, b.End - (nw-1-uint64(w))*WarpGap
}

type event struct {
	t    uint64
	exit bool
	b    Block
	warp uint32
	slot uint32
}

// Run calls the entry and exit probes of c for every warp of l, in time
// order, at warp level (one run per warp standing for its 32 lanes), on
// region; an entry probe of block 0 only (jit.Probe.FirstBlock) in block
// 0's warps alone, as the patched kernel's other blocks branch around it;
// a per-thread entry probe (jit.Probe.PerThread) in each of a warp's 32
// lanes, and the exits, which run in lane 0, carry lane 0's value. Warps get hardware slots per SM in order of their blocks. An exit
// probe that carries an entry probe (jit.Probe.Carry) gets that probe's
// return value for the same warp as ctx->entry_ret, as a patched kernel
// passes it.
func Run(c *jit.Compiled, region []byte, l Launch) error {
	if l.Threads == 0 || l.Threads%32 != 0 {
		return fmt.Errorf("threads per block %d: want a multiple of 32", l.Threads)
	}
	kid := ptx.KernelID(l.Kernel)
	grid := l.GridID
	if grid == 0 {
		grid = gridIDs.Add(1)
	}
	var evs []event
	perSM := map[uint32]uint32{}
	for _, b := range l.Blocks {
		slot := perSM[b.SM]
		perSM[b.SM] += l.Threads / 32
		for w := uint32(0); w < l.Threads/32; w++ {
			in, out := WarpTimes(b, l.Threads, w)
			evs = append(evs, event{t: in, b: b, warp: w, slot: (slot + w) % 64},
				event{t: out, exit: true, b: b, warp: w, slot: (slot + w) % 64})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].t < evs[j].t })
	type warpProbe struct {
		block, warp uint32
		fn          string
	}
	rets := map[warpProbe]uint64{}
	var scratch []byte
	if l.From != 0 {
		scratch = slices.Clone(region)
	}
	shared := map[uint32][]byte{} // each block's per-block arrays, zero at its start
	for _, e := range evs {
		if l.Until != 0 && e.t >= l.Until {
			break
		}
		mem := region
		if e.t < l.From {
			mem = scratch
		}
		if shared[e.b.Block] == nil {
			shared[e.b.Block] = make([]byte, c.Layout.BlockSize)
		}
		site := jit.SiteEntry
		if e.exit {
			site = jit.SiteExit
		}
		for _, p := range c.Probes {
			if p.Site != site || !(jit.Program{Kernel: p.Kernel}).MatchKernel(l.Kernel) || p.FirstBlock && e.b.Block != 0 {
				continue // (a first-block probe: the other blocks branch around its site)
			}
			tm := e.t
			// a gpu/entry_thread probe runs in each lane; the exits,
			// at warp level, run in lane 0 and carry its value
			lanes, active := uint32(1), uint32(32)
			if p.PerThread {
				lanes, active = 32, 1
			}
			for lane := lanes - 1; lane < lanes; lane-- {
				env := &jit.Env{
					BlockIdx: [3]uint32{e.b.Block, 0, 0}, BlockDim: [3]uint32{l.Threads, 1, 1},
					GridDim: [3]uint32{l.Grid, 1, 1}, ThreadIdx: [3]uint32{e.warp*32 + lane, 0, 0},
					SMID: e.b.SM, NSMID: l.NSM, WarpID: e.slot, LaneID: lane, ActiveLanes: active, GridID: grid,
					Timer: func() uint64 { return tm }, Block: shared[e.b.Block],
				}
				binary.LittleEndian.PutUint32(env.Ctx[0:], uint32(site))
				binary.LittleEndian.PutUint64(env.Ctx[16:], kid)
				if p.Carry != "" {
					binary.LittleEndian.PutUint64(env.Ctx[8:], rets[warpProbe{e.b.Block, e.warp, p.Carry}])
				}
				r0, err := c.Run(p.Index, mem, env)
				if err != nil {
					return fmt.Errorf("%s at block %d warp %d lane %d: %w", p.Name, e.b.Block, e.warp, lane, err)
				}
				if p.Returns && lane == 0 {
					rets[warpProbe{e.b.Block, e.warp, p.Func}] = r0
				}
			}
		}
	}
	return nil
}

// Imbalanced is the bench kernel's pattern: every 8th block does 8x the
// work. blocks blocks on nsm SMs (block b on SM b % nsm), started 1 µs
// apart from t0; heavy blocks run 2.4 ms, the others 0.3 ms.
func Imbalanced(t0 uint64, blocks, nsm uint32) []Block {
	var bs []Block
	for b := uint32(0); b < blocks; b++ {
		d := uint64(300_000)
		if b%8 == 0 {
			d = 2_400_000
		}
		s := t0 + uint64(b)*1000
		bs = append(bs, Block{Block: b, SM: b % nsm, Start: s, End: s + d})
	}
	return bs
}
