package check

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// InitRegion is the region the driver starts from: zero but for the map headers.
func InitRegion(comp *jit.Compiled) []byte {
	r := make([]byte, comp.Layout.Size)
	_ = comp.Layout.Init(r)
	return r
}

// Headers are the non-zero parts of InitRegion: [offset, hex bytes] per
// map header (what a GPU run writes into a zeroed region before launching).
func Headers(comp *jit.Compiled) [][2]any {
	r := InitRegion(comp)
	var out [][2]any
	for _, m := range comp.Layout.Maps {
		out = append(out, [2]any{m.Offset, hex.EncodeToString(r[m.Offset : m.Offset+gpumap.HeaderSize])})
	}
	return out
}

// SimSMs is how many SMs the simulation spreads blocks over.
const SimSMs = 8

// Expected runs the case on the interpreter: warps in block order, each
// warp's entry call then its exit call; at warp level the lowest active
// lane runs for the warp and every active lane gets its r0.
func (c *Case) Expected(comp *jit.Compiled) ([]uint64, []byte, error) {
	region := InitRegion(comp)
	n := c.Threads()
	out := make([]uint64, 2*n)
	for i := range out {
		out[i] = Sentinel
	}
	clock := uint64(1_000_000)
	timer := func() uint64 { clock += 1000; return clock }
	g, bd := c.Grid, c.Block
	tpb := bd[0] * bd[1] * bd[2]
	probes := []int{0}
	if c.Exit != "" {
		probes = append(probes, 1)
	}
	blin := uint32(0)
	for bz := uint32(0); bz < g[2]; bz++ {
		for by := uint32(0); by < g[1]; by++ {
			for bx := uint32(0); bx < g[0]; bx++ {
				block := make([]byte, comp.Layout.BlockSize) // zero at the block's start
				for w := uint32(0); w*32 < tpb; w++ {
					var lanes []uint32
					for t := w * 32; t < tpb && t < w*32+32; t++ {
						if c.active(t) {
							lanes = append(lanes, t)
						}
					}
					if len(lanes) == 0 {
						continue
					}
					env := func(t uint32, site uint32) *jit.Env {
						gtid := uint64(blin)*uint64(tpb) + uint64(t)
						return &jit.Env{
							Ctx:       c.Ctx(gtid, site),
							BlockIdx:  [3]uint32{bx, by, bz},
							BlockDim:  bd,
							GridDim:   g,
							ThreadIdx: [3]uint32{t % bd[0], (t / bd[0]) % bd[1], t / (bd[0] * bd[1])},
							SMID:      blin % SimSMs, NSMID: 132,
							WarpID: (t / 32) % 64, LaneID: t % 32,
							Timer: timer, Block: block, GridID: SimGridID,
						}
					}
					carried := func(e *jit.Env, t uint32) {
						if len(comp.Probes) > 1 && comp.Probes[1].Carry != "" {
							binary.LittleEndian.PutUint64(e.Ctx[8:], out[2*(int(blin)*int(tpb)+int(t))])
						}
					}
					for _, p := range probes {
						site := uint32(p + 1)
						// at warp level one run for the warp, but for a
						// gpu/entry_thread program, which runs per thread
						if !c.PerThread && !comp.Probes[p].PerThread {
							e := env(lanes[0], site)
							if p == 1 {
								carried(e, lanes[0])
							}
							e.ActiveLanes = uint32(len(lanes))
							r0, err := comp.Run(p, region, e)
							if err != nil {
								return nil, nil, fmt.Errorf("case %s: block %d warp %d: %w", c.Name, blin, w, err)
							}
							for _, t := range lanes {
								out[2*(int(blin)*int(tpb)+int(t))+p] = r0
							}
							continue
						}
						for _, t := range lanes {
							e := env(t, site)
							if p == 1 {
								carried(e, t)
							}
							e.ActiveLanes = 1
							r0, err := comp.Run(p, region, e)
							if err != nil {
								return nil, nil, fmt.Errorf("case %s: thread %d: %w", c.Name, int(blin)*int(tpb)+int(t), err)
							}
							out[2*(int(blin)*int(tpb)+int(t))+p] = r0
						}
					}
				}
				blin++
			}
		}
	}
	return out, region, nil
}

// Compare lists every difference between the expected and the actual
// results, under the case's modes, then runs its Check on the actual ones.
func (c *Case) Compare(comp *jit.Compiled, wantOut []uint64, wantRegion []byte, gotOut []uint64, gotRegion []byte) []string {
	var diffs []string
	add := func(f string, a ...any) {
		if len(diffs) < 20 {
			diffs = append(diffs, fmt.Sprintf(f, a...))
		}
	}
	if len(gotOut) != len(wantOut) {
		add("out has %d words, want %d", len(gotOut), len(wantOut))
	} else if c.R0 != Skip {
		for i := range wantOut {
			if gotOut[i] != wantOut[i] {
				add("thread %d %s r0 = %#x, want %#x", i/2, map[int]string{0: "entry", 1: "exit"}[i%2], gotOut[i], wantOut[i])
			}
		}
	}
	if uint64(len(gotRegion)) != comp.Layout.Size {
		add("region has %d bytes, want %d", len(gotRegion), comp.Layout.Size)
		return diffs
	}
	for _, m := range comp.Layout.Maps {
		mode := c.Maps[m.Name]
		if mode == "" {
			mode = Exact
		}
		for _, d := range compareMap(m, mode, wantRegion, gotRegion) {
			add("map %s (%s): %s", m.Name, mode, d)
		}
	}
	if c.Check != nil {
		if err := c.Check(c, comp.Layout, gotRegion, gotOut); err != nil {
			add("check: %v", err)
		}
	}
	return diffs
}

func compareMap(m gpumap.Map, mode Mode, want, got []byte) []string {
	var d []string
	w, g := gpumap.Region(append([]byte(nil), want...)), gpumap.Region(append([]byte(nil), got...))
	hw, err1 := m.ReadHeader(w)
	hg, err2 := m.ReadHeader(g)
	if err1 != nil || err2 != nil {
		return []string{fmt.Sprintf("header: want err %v, got err %v", err1, err2)}
	}
	switch mode {
	case Skip:
		return nil
	case Exact:
		lo, hi := m.Offset, m.Offset+gpumap.HeaderSize+m.DataSize
		for i := lo; i < hi; i++ {
			if want[i] != got[i] {
				d = append(d, fmt.Sprintf("byte %d (offset %d in the map) = %#02x, want %#02x", i, i-lo, got[i], want[i]))
				if len(d) > 4 {
					break
				}
			}
		}
	case RingSet:
		headW, headG := m.RingHead(w), m.RingHead(g)
		if headW != headG || hw.Drops != hg.Drops {
			d = append(d, fmt.Sprintf("head %d drops %d, want head %d drops %d", headG, hg.Drops, headW, hw.Drops))
		}
		rw, err1 := m.RingDrain(w, int(m.Slots))
		rg, err2 := m.RingDrain(g, int(m.Slots))
		if err2 == nil {
			// what a first drain left for max, if any (one drain gets
			// past a slot an earlier lap's writer wrote last:
			// gpumap.RingDrain)
			more, err := m.RingDrain(g, int(m.Slots))
			rg, err2 = append(rg, more...), err
		}
		if err1 != nil || err2 != nil {
			return append(d, fmt.Sprintf("drain: want err %v, got err %v", err1, err2))
		}
		lw, lg := uint64(0), uint64(0)
		if h, err := m.ReadHeader(w); err == nil {
			lw = h.Drops - hw.Drops
		}
		if h, err := m.ReadHeader(g); err == nil {
			lg = h.Drops - hg.Drops
		}
		switch {
		case headW <= m.ShardSlots():
			if s1, s2 := sorted(rw), sorted(rg); len(rw) != len(rg) || !equalStrings(s1, s2) {
				d = append(d, fmt.Sprintf("%d records, want %d (or different ones)", len(rg), len(rw)))
			}
		// Lapped: which records survive depends on the GPU's order (the
		// writers of two laps race for a slot, and an earlier lap's may
		// write it last): no more records than the interpreter's, none
		// counted twice, and some read. Stale slots after the last whole
		// record stay unresolved until the ring moves on.
		case len(rg) == 0 || len(rg) > len(rw) || uint64(len(rg))+lg > uint64(len(rw))+lw:
			d = append(d, fmt.Sprintf("%d records and %d lost, want %d records and %d lost (or fewer records)",
				len(rg), lg, len(rw), lw))
		}
	case HashSet:
		if hw.Count != hg.Count || hw.Drops != hg.Drops {
			d = append(d, fmt.Sprintf("count %d drops %d, want count %d drops %d", hg.Count, hg.Drops, hw.Count, hw.Drops))
		}
		ew, err1 := m.HashEntries(w)
		eg, err2 := m.HashEntries(g)
		if err1 != nil || err2 != nil {
			return append(d, fmt.Sprintf("entries: want err %v, got err %v", err1, err2))
		}
		kw, kg := entryStrings(ew), entryStrings(eg)
		if !equalStrings(kw, kg) {
			d = append(d, fmt.Sprintf("%d keys, want %d (or different values)", len(kg), len(kw)))
		}
	case SlotSum:
		if hw.Drops != hg.Drops {
			d = append(d, fmt.Sprintf("drops %d, want %d", hg.Drops, hw.Drops))
		}
		sw, sg := slotSums(m, w), slotSums(m, g)
		for i := range sw {
			if sw[i] != sg[i] {
				d = append(d, fmt.Sprintf("word %d summed over copies = %d, want %d", i, sg[i], sw[i]))
			}
		}
	}
	return d
}

func sorted(recs [][]byte) []string {
	s := make([]string, len(recs))
	for i, r := range recs {
		s[i] = string(r)
	}
	sort.Strings(s)
	return s
}

func entryStrings(es []gpumap.Entry) []string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = string(e.Key) + "=" + string(e.Value)
	}
	sort.Strings(s)
	return s
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// slotSums sums each 8-byte word of every key's value over the copies.
func slotSums(m gpumap.Map, r gpumap.Region) []uint64 {
	words := int(m.Stride / 8)
	out := make([]uint64, int(m.MaxEntries)*words)
	for s := uint32(0); s < m.Slots; s++ {
		vals, err := m.ArrayCopy(r, s)
		if err != nil {
			return nil
		}
		for k, v := range vals {
			for j := 0; j+8 <= len(v); j += 8 {
				out[k*words+j/8] += binary.LittleEndian.Uint64(v[j:])
			}
		}
	}
	return out
}
