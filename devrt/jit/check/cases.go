package check

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion"
)

// Cases is every GPU check case.
func Cases() []*Case {
	var cs []*Case
	add := func(c *Case) { cs = append(cs, c) }
	// Pure programs: r0 only, every thread different inputs; at warp level
	// with all lanes, a partial warp with a scattered pattern, and per thread.
	for _, p := range []string{"alu64", "alu32", "divmod", "bswap", "jumps", "stack_loop", "ctx_read", "ctx_var", "ldimm64", "dims", "props"} {
		add(&Case{Name: p + "-warp", Object: "classes", Entry: p, Grid: [3]uint32{2, 2, 1}, Block: [3]uint32{64, 1, 1}})
		add(&Case{Name: p + "-warp-mixed", Object: "classes", Entry: p, Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{40, 1, 1}, Active: "mixed"})
		add(&Case{Name: p + "-thread", Object: "classes", Entry: p, Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}, PerThread: true})
	}
	// Block sampling's weight: fixed, and by launch from grids of 128
	// blocks (1 in 8 at 16 a launch) and 4x4x4 (1 in 16 at 4), or of fewer
	// blocks than the rate (every block: 1).
	for _, w := range []struct {
		name       string
		every, per uint32
		grid       [3]uint32
	}{
		{"none", 0, 0, [3]uint32{2, 1, 1}}, {"every5", 5, 0, [3]uint32{2, 1, 1}}, {"launch16", 0, 16, [3]uint32{64, 2, 1}},
		{"launch4-3d", 0, 4, [3]uint32{4, 4, 4}}, {"launch256-small", 0, 256, [3]uint32{8, 2, 1}},
	} {
		add(&Case{Name: "weight-" + w.name, Object: "classes", Entry: "weight", Grid: w.grid, Block: [3]uint32{64, 1, 1},
			BlockSample: w.every, BlocksPerLaunch: w.per})
	}
	// Commutative atomics: exact map bytes whatever the order.
	add(&Case{Name: "atomics-warp", Object: "classes", Entry: "atomics", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{128, 1, 1}})
	add(&Case{Name: "atomics-thread", Object: "classes", Entry: "atomics", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{128, 1, 1}, PerThread: true})
	add(&Case{Name: "atomics-thread-odd", Object: "classes", Entry: "atomics", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}, PerThread: true, Active: "odd"})
	// Order-dependent ops: one thread.
	for base := uint64(0); base < 4; base++ {
		add(&Case{Name: fmt.Sprintf("atomics_fetch-%d", base), Object: "classes", Entry: "atomics_fetch", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, PerThread: true, CtxBase: base})
		add(&Case{Name: fmt.Sprintf("array_ops-%d", base), Object: "classes", Entry: "array_ops", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{1, 1, 1}, PerThread: true, CtxBase: base})
	}
	add(&Case{Name: "array_ops-warp", Object: "classes", Entry: "array_ops", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{32, 1, 1}, CtxBase: 5})
	// Hash and ring: distinct keys, placement and order free.
	hm := map[string]Mode{"t_hash": HashSet}
	add(&Case{Name: "hash_ops-thread", Object: "classes", Entry: "hash_ops", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{64, 1, 1}, PerThread: true, Unique: true, Maps: hm})
	add(&Case{Name: "hash_ops-warp", Object: "classes", Entry: "hash_ops", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{128, 1, 1}, Unique: true, Maps: hm})
	rm := map[string]Mode{"t_ring": RingSet}
	add(&Case{Name: "ring_out-thread", Object: "classes", Entry: "ring_out", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}, PerThread: true, Maps: rm})
	add(&Case{Name: "ring_out-warp", Object: "classes", Entry: "ring_out", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{96, 1, 1}, Maps: rm})
	// 200 records into a ring of 128 slots: the first 72 are overwritten
	// (which ones survive is up to the GPU: only the counts compare).
	add(&Case{Name: "ring_out-full", Object: "classes", Entry: "ring_out", Grid: [3]uint32{1, 1, 1}, Block: [3]uint32{200, 1, 1}, PerThread: true, Maps: rm})
	// The same records from a map value (global memory).
	mm := map[string]Mode{"t_ring": RingSet, "t_mrec": Skip}
	add(&Case{Name: "ring_map-thread", Object: "classes", Entry: "ring_map", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{64, 1, 1}, PerThread: true, Maps: mm})
	add(&Case{Name: "ring_map-warp", Object: "classes", Entry: "ring_map", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{96, 1, 1}, Maps: mm})
	// A ring of four shards, written from many SMs.
	add(&Case{Name: "ring_out-sharded", Object: "classes", Entry: "ring_out4", Grid: [3]uint32{16, 1, 1}, Block: [3]uint32{64, 1, 1}, Maps: map[string]Mode{"t_ring4": RingSet}})
	// The same records, each index claimed, then written at it.
	add(&Case{Name: "ring_claim-warp", Object: "classes", Entry: "ring_claim", Grid: [3]uint32{16, 1, 1}, Block: [3]uint32{64, 1, 1}, Maps: map[string]Mode{"t_ring4": RingSet}})
	add(&Case{Name: "ring_claim-thread", Object: "classes", Entry: "ring_claim", Grid: [3]uint32{8, 1, 1}, Block: [3]uint32{64, 1, 1}, PerThread: true, Maps: map[string]Mode{"t_ring4": RingSet}})
	// Per-warp, per-thread and per-SM copies.
	pm := map[string]Mode{"t_sm": SlotSum}
	add(&Case{Name: "per_copy-warp", Object: "classes", Entry: "per_copy", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{96, 1, 1}, Maps: pm})
	add(&Case{Name: "per_copy-thread-odd", Object: "classes", Entry: "per_copy", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{96, 1, 1}, PerThread: true, Active: "odd", Maps: pm})
	// A per-block array (shared memory): the blocks' sums, exactly.
	bm := map[string]Mode{"t_bsum": Exact, "t_blk": Exact}
	add(&Case{Name: "per_block-warp", Object: "per_block", Entry: "per_block", Grid: [3]uint32{4, 2, 1}, Block: [3]uint32{96, 1, 1}, Maps: bm})
	add(&Case{Name: "per_block-warp-3d", Object: "per_block", Entry: "per_block", Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{8, 4, 2}, Maps: bm})
	add(&Case{Name: "per_block-thread", Object: "per_block", Entry: "per_block", Grid: [3]uint32{3, 1, 1}, Block: [3]uint32{64, 1, 1}, PerThread: true, Maps: bm})
	// The shipped probes, entry and exit around an imbalanced spin.
	for _, per := range []bool{false, true} {
		lvl := map[bool]string{false: "warp", true: "thread"}[per]
		add(&Case{Name: "block_sched-" + lvl, Object: "device/block_sched", Entry: "block_entry", Exit: "block_exit",
			Grid: [3]uint32{64, 1, 1}, Block: [3]uint32{128, 1, 1}, PerThread: per, Kernel: true, Work: true,
			R0: Skip, Maps: map[string]Mode{"gx_block_ring": Skip}, Check: checkBlockSched})
		add(&Case{Name: "sm_load-" + lvl, Object: "device/sm_load", Entry: "sm_entry", Exit: "sm_exit",
			Grid: [3]uint32{64, 1, 1}, Block: [3]uint32{128, 1, 1}, PerThread: per, Kernel: true, Work: true,
			R0: Skip, Maps: map[string]Mode{"gx_sm": Skip}, Check: checkSMLoad})
		add(&Case{Name: "launch_latency-" + lvl, Object: "device/launch_latency", Entry: "launch_entry",
			Grid: [3]uint32{64, 1, 1}, Block: [3]uint32{128, 1, 1}, PerThread: per, Kernel: true,
			R0: Skip, Maps: map[string]Mode{"gx_launch_ring": Skip}, Check: checkLaunch})
		add(&Case{Name: "warp_occupancy-" + lvl, Object: "device/warp_occupancy", Entry: "occ_entry", Exit: "occ_exit",
			Grid: [3]uint32{64, 1, 1}, Block: [3]uint32{128, 1, 1}, PerThread: per, Kernel: true, Work: true,
			R0: Skip, Maps: map[string]Mode{"gx_occ": Skip}, Check: checkOcc})
	}
	// The same weighed: compiled for 16 blocks a launch, the 64 blocks
	// (all run here) stand for 4 each.
	add(&Case{Name: "block_sched-warp-launch16", Object: "device/block_sched", Entry: "block_entry", Exit: "block_exit",
		Grid: [3]uint32{64, 1, 1}, Block: [3]uint32{128, 1, 1}, Kernel: true, Work: true, BlocksPerLaunch: 16,
		R0: Skip, Maps: map[string]Mode{"gx_block_ring": Skip}, Check: checkBlockSched})
	add(&Case{Name: "sm_load-warp-launch16", Object: "device/sm_load", Entry: "sm_entry", Exit: "sm_exit",
		Grid: [3]uint32{64, 1, 1}, Block: [3]uint32{128, 1, 1}, Kernel: true, Work: true, BlocksPerLaunch: 16,
		R0: Skip, Maps: map[string]Mode{"gx_sm": Skip}, Check: checkSMLoad})
	for _, c := range cs {
		if c.R0 == "" {
			c.R0 = Exact
		}
	}
	return cs
}

func mapOf(l gpumap.Layout, name string) (gpumap.Map, error) {
	m, ok := l.Find(name)
	if !ok {
		return m, fmt.Errorf("no map %s", name)
	}
	return m, nil
}

func u64(b []byte, o int) uint64 { return binary.LittleEndian.Uint64(b[o:]) }
func u32(b []byte, o int) uint32 { return binary.LittleEndian.Uint32(b[o:]) }

// SimGridID is the %gridid of the interpreter's launches (a GPU numbers
// its own).
const SimGridID = 7

// checkBlockSched: one record per block, each block once, its threads,
// start <= end, all of one launch (one nonzero %gridid).
func checkBlockSched(c *Case, l gpumap.Layout, region []byte, _ []uint64) error {
	r := gpumap.Region(append([]byte(nil), region...))
	ring, err := mapOf(l, "gx_block_ring")
	if err != nil {
		return err
	}
	recs, err := ring.RingDrain(r, 1<<20)
	if err != nil {
		return err
	}
	nb := int(c.Grid[0] * c.Grid[1] * c.Grid[2])
	tpb := c.Block[0] * c.Block[1] * c.Block[2]
	if len(recs) != nb {
		return fmt.Errorf("%d block records, want %d", len(recs), nb)
	}
	seen := map[uint64]bool{}
	var first proberegion.Block
	for i, rec := range recs {
		b, ok := proberegion.ParseBlock(rec)
		if !ok {
			return fmt.Errorf("record of %d bytes, want %d", len(rec), proberegion.BlockSize)
		}
		if i == 0 {
			first = b
		}
		if b.KernelID != KernelID || b.Block >= uint64(nb) || seen[b.Block] || b.Threads != tpb || b.StartNS == 0 || b.EndNS < b.StartNS ||
			b.GridID == 0 || b.GridID != first.GridID || b.Weight != c.weight() || b.GridBlocks != uint64(nb) {
			return fmt.Errorf("bad record: kernel %#x block %d start %d end %d threads %d weight %d grid %d (first %d) of %d blocks",
				b.KernelID, b.Block, b.StartNS, b.EndNS, b.Threads, b.Weight, b.GridID, first.GridID, b.GridBlocks)
		}
		seen[b.Block] = true
	}
	return nil
}

// checkSMLoad: every block and thread counted on some SM.
func checkSMLoad(c *Case, l gpumap.Layout, region []byte, _ []uint64) error {
	m, err := mapOf(l, "gx_sm")
	if err != nil {
		return err
	}
	var blocks, threads, ns uint64
	for s := uint32(0); s < m.Slots; s++ {
		v, err := m.ArrayCopy(gpumap.Region(region), s)
		if err != nil {
			return err
		}
		blocks += u64(v[0], 0)
		threads += u64(v[0], 8)
		ns += u64(v[0], 16)
	}
	nb := uint64(c.Grid[0]*c.Grid[1]*c.Grid[2]) * uint64(c.weight())
	if blocks != nb || threads != nb*uint64(c.Block[0]*c.Block[1]*c.Block[2]) || ns == 0 {
		return fmt.Errorf("blocks %d threads %d lane_ns %d, want %d blocks, %d threads, lane_ns > 0 (weight %d)",
			blocks, threads, ns, nb, uint64(c.Threads())*uint64(c.weight()), c.weight())
	}
	return nil
}

// checkLaunch: exactly one launch record, this kernel's.
func checkLaunch(c *Case, l gpumap.Layout, region []byte, _ []uint64) error {
	m, err := mapOf(l, "gx_launch_ring")
	if err != nil {
		return err
	}
	recs, err := m.RingDrain(gpumap.Region(append([]byte(nil), region...)), 16)
	if err != nil {
		return err
	}
	if len(recs) != 1 || len(recs[0]) != 24 || u64(recs[0], 0) != KernelID || u64(recs[0], 8) == 0 {
		return fmt.Errorf("launch records %x, want one of kernel %#x with a start time", recs, uint64(KernelID))
	}
	return nil
}

// checkOcc: every thread that entered left again (the threads of all the
// slots add up to 0), every marked slot with counts marked with a bucket
// of its own (epoch % slots = its index; an unmarked one, epoch 0, may
// hold the counts of warps that left in the bucket they entered in, on an
// SM where no block's thread 0 entered in it: taken as its slot's bucket
// next to the SM's marked ones), and, each SM's buckets taken in
// order with the threads resident carried from one to the next as the
// receiver does, each bucket's lane-ns between 0 and the kernel's threads
// over the whole bucket, some of them more than 0.
func checkOcc(c *Case, l gpumap.Layout, region []byte, _ []uint64) error {
	m, err := mapOf(l, "gx_occ")
	if err != nil {
		return err
	}
	const bucketNS = 1 << 20 // GPUEXT_DEV_OCC_SHIFT
	var threads, unmarked uint64
	var total int64
	buckets := 0
	for s := uint32(0); s < m.Slots; s++ {
		vals, err := m.ArrayCopy(gpumap.Region(region), s)
		if err != nil {
			return err
		}
		type slot struct{ epoch, threads, laneNS uint64 }
		var marked, loose []slot
		lap := uint64(len(vals))
		for k, v := range vals {
			threads += u64(v, 8)
			if u64(v, 8) == 0 && u64(v, 16) == 0 {
				continue
			}
			e := u64(v, 0)
			switch {
			case e == 0:
				unmarked++
				loose = append(loose, slot{uint64(k), u64(v, 8), u64(v, 16)})
			case e%lap != uint64(k):
				return fmt.Errorf("SM %d slot %d: counts under epoch %d, a bucket of slot %d", s, k, e, e%lap)
			default:
				marked = append(marked, slot{e, u64(v, 8), u64(v, 16)})
			}
		}
		slices.SortFunc(marked, func(a, b slot) int { return cmp.Compare(a.epoch, b.epoch) })
		if len(loose) > 0 && len(marked) > 0 {
			first, last := marked[0].epoch, marked[len(marked)-1].epoch
			for _, l := range loose {
				// the slot's bucket in the lap that ends at the last,
				// unless that is before the first by more than one
				// (then the bucket after the last)
				if d := (last + lap - l.epoch%lap) % lap; d <= last-first+1 && d <= last {
					l.epoch = last - d
				} else {
					l.epoch = last + lap - d
				}
				marked = append(marked, l)
			}
			slices.SortFunc(marked, func(a, b slot) int { return cmp.Compare(a.epoch, b.epoch) })
		}
		var resident int64
		for _, b := range marked {
			buckets++
			lane := resident*bucketNS + int64(b.laneNS)
			if lane < 0 || lane > int64(c.Threads())*bucketNS {
				return fmt.Errorf("SM %d bucket %d: %d lane-ns with %d threads resident at its start; want 0 to %d threads' whole bucket",
					s, b.epoch, lane, resident, c.Threads())
			}
			total += lane
			resident += int64(b.threads)
		}
	}
	if threads != 0 || total <= 0 {
		return fmt.Errorf("%d threads still resident (want 0), %d lane-ns in %d (SM, bucket) slots, %d unmarked with counts",
			int64(threads), total, buckets, unmarked)
	}
	return nil
}
