package proberegion

import (
	"encoding/binary"
	"fmt"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

// Record sizes (bpf/include/gpuext_abi.h, "device probes").
const (
	BlockSize  = 56 // struct gpuext_dev_block
	LaunchSize = 24 // struct gpuext_dev_launch
	SMSize     = 24 // struct gpuext_dev_sm
	OccSize    = 24 // struct gpuext_dev_occ
	// OccShift is GPUEXT_DEV_OCC_SHIFT: a bucket is %globaltimer >> 20.
	OccShift = 20
	// OccResetting is GPUEXT_DEV_OCC_RESETTING, the reset marker of earlier
	// probes (no longer written): such a slot is skipped.
	OccResetting = ^uint64(0)
	// MaxWeight is the largest block weight a probe writes (devrt/ptx's
	// MaxBlockSample, 1 << MaxLaunchShift; abi_test.go checks): a block
	// record of weight 0 or over MaxWeight is bad.
	MaxWeight = 1 << 16
)

// Block is struct gpuext_dev_block: one finished thread block.
type Block struct {
	KernelID       uint64
	Block          uint64 // linear block id
	StartNS, EndNS uint64 // %globaltimer: first warp's entry, last thread's exit
	SM             uint32
	Threads        uint32
	// Weight is the blocks of its launch it stands for (block sampling;
	// 1: every block ran the probes).
	Weight     uint32
	GridID     uint64 // %gridid: the launch
	GridBlocks uint64 // the launch's blocks
}

// ParseBlock decodes a struct gpuext_dev_block; false when b is not
// BlockSize bytes.
func ParseBlock(b []byte) (Block, bool) {
	if len(b) != BlockSize {
		return Block{}, false
	}
	le := binary.LittleEndian
	return Block{
		KernelID: le.Uint64(b), Block: le.Uint64(b[8:]),
		StartNS: le.Uint64(b[16:]), EndNS: le.Uint64(b[24:]),
		SM: uint32(le.Uint16(b[32:])), Threads: uint32(le.Uint16(b[34:])), Weight: le.Uint32(b[36:]),
		GridID: le.Uint64(b[40:]), GridBlocks: le.Uint64(b[48:]),
	}, true
}

// Launch is struct gpuext_dev_launch: thread 0 of block 0 of a launch started.
type Launch struct {
	KernelID uint64
	StartNS  uint64 // %globaltimer
	SM       uint32
}

// SMLoad is struct gpuext_dev_sm of one SM: totals since the region began.
type SMLoad struct {
	SM                      uint32
	Blocks, Threads, LaneNS uint64
}

// Occ is one slot of warp_occupancy (per SM a round robin of
// GPUEXT_DEV_OCC_BUCKETS slots, bucket b in slot b % the slots): the newest
// bucket it has held and its counts, cumulative over all the buckets it has
// held (threads that entered less lanes that exited, and their lane-ns
// from then to their bucket's end; mod 2^64: a bucket's share can be
// negative). A bucket's own counts are differences of two reads:
// Tracker.Occupancy.
type Occ struct {
	SM              uint32
	Slot            uint32
	Bucket          uint64 // %globaltimer >> OccShift
	Threads, LaneNS uint64
}

// ownBucket says whether slot of a map of lap slots per SM holds one of its
// own buckets (bucket % lap = slot; the probes' lap is a power of two,
// taken without a division).
func ownBucket(bucket uint64, slot, lap uint32) bool {
	if slot >= lap {
		return false
	}
	if lap&(lap-1) == 0 {
		return bucket&uint64(lap-1) == uint64(slot)
	}
	return bucket%uint64(lap) == uint64(slot)
}

// Snapshot is what one Read found. Blocks and Launches are new records
// (taken from the rings); SMs and Occupancy are the maps' totals.
type Snapshot struct {
	Blocks   []Block
	Launches []Launch
	SMs      []SMLoad // SMs with any work, by SM id
	// Occupancy is the slots ever marked, by SM, then slot; valid until
	// the region's next Read (its memory is reused).
	Occupancy []Occ
	// OccSlots is the slots per SM of the occupancy map (a lap is this
	// many buckets).
	OccSlots uint32
	// OccResident is, by SM, the threads resident (weighed) when the copy
	// was taken: the sum of the threads field of all the SM's slots,
	// marked or not (entries less exits since the region began, mod
	// 2^64), nil without the map; valid until the region's next Read.
	OccResident []uint64
	// Drops are the maps' drop counters (ring records overwritten before
	// they were read, per-SM copies beyond the array, a full hash).
	Drops map[string]uint64
	// Bad counts records of impossible sizes and occupancy slots holding
	// another slot's bucket (skipped).
	Bad int
	// BlockDone is the block ring's records this region's reader has
	// taken or counted lost so far, over its shards (each cursor's Tail
	// less its Pending): it moves when blocks end and their records are
	// read (or when claims run a lap ahead of the reader and records are
	// lost) (Tracker). Not the ring's head, which block_sched's claims
	// move when blocks start: a launch whose blocks started more than
	// QuietClose ago and end later would have been closed before its
	// records came.
	BlockDone uint64
	// BlockRunning is the block ring's records claimed but not yet
	// written, over its shards (the cursors' Pending): sampled blocks
	// that started and have not ended, or whose record was lost and is
	// not counted yet (Tracker: runs stay open while it is not 0).
	BlockRunning uint64
	// CopyStartNS and CopyEndNS are devrt's times (CLOCK_MONOTONIC) of the
	// copy of the device's memory this read began from: the contents are
	// at least as new as the GPU was at CopyStartNS. 0: unknown (no device
	// record, no copy yet, or read while devrt noted the next copy).
	CopyStartNS, CopyEndNS uint64
}

// Read drains the rings and reads the maps of the probes the layout has.
// An error means the region is broken (see Broken); a snapshot of what was
// read before comes with it.
func (r *Region) Read() (Snapshot, error) {
	var s Snapshot
	err := r.guard(func() error { return r.read(&s) })
	return s, err
}

func (r *Region) read(s *Snapshot) error {
	s.CopyStartNS, s.CopyEndNS = devrtinject.CopyTimes(r.info) // before the contents: they are at least that new
	reg := gpumap.Region(r.mem)
	le := binary.LittleEndian
	s.Drops = map[string]uint64{}
	for _, m := range r.layout.Maps {
		h, err := m.ReadHeader(reg)
		if err != nil {
			return err
		}
		switch m.Name {
		case MapBlockRing, MapLaunchRing:
			var recs [][]byte
			for sh := range uint64(max(m.Shards, 1)) {
				k := ringShard{m.Name, sh}
				rs, cur, lost, _ := m.RingRead(reg, sh, r.tail[k], MaxRecords) // its error: a skipped record, counted as lost
				r.tail[k] = cur
				if m.Name == MapBlockRing {
					s.BlockDone += cur.Tail - uint64(len(cur.Pending))
					s.BlockRunning += uint64(len(cur.Pending))
				}
				r.lost[m.Name] += lost
				recs = append(recs, rs...)
			}
			for _, b := range recs {
				blk, ok := ParseBlock(b)
				switch {
				case m.Name == MapBlockRing && ok && blk.Weight-1 < MaxWeight:
					s.Blocks = append(s.Blocks, blk)
				case m.Name == MapLaunchRing && len(b) == LaunchSize:
					s.Launches = append(s.Launches, Launch{KernelID: le.Uint64(b), StartNS: le.Uint64(b[8:]), SM: le.Uint32(b[16:])})
				default:
					s.Bad++
				}
			}
			h.Drops += r.lost[m.Name] // the device's, and what the reader lost
		case MapSM:
			if m.ValueSize != SMSize || m.MaxEntries < 1 {
				return fmt.Errorf("map %s: value of %d bytes, want %d", m.Name, m.ValueSize, SMSize)
			}
			for sm := uint32(0); sm < m.Slots; sm++ {
				off, _ := m.ElemOffset(uint64(sm), 0)
				b, err := reg.Bytes(off, SMSize)
				if err != nil {
					return err
				}
				l := SMLoad{SM: sm, Blocks: le.Uint64(b), Threads: le.Uint64(b[8:]), LaneNS: le.Uint64(b[16:])}
				if l.Blocks|l.Threads|l.LaneNS != 0 {
					s.SMs = append(s.SMs, l)
				}
			}
		case MapOcc:
			if m.ValueSize != OccSize || m.MaxEntries < 1 {
				return fmt.Errorf("map %s: value of %d bytes, want %d", m.Name, m.ValueSize, OccSize)
			}
			s.Occupancy = r.occ[:0]
			s.OccResident = r.resident[:0]
			// The whole array at once (slots of an SM in a row, SMs
			// after each other), its bounds checked once.
			stride := uint64(m.Stride)
			all, err := reg.Bytes(m.DataOffset(), uint64(m.Slots)*uint64(m.MaxEntries)*stride)
			if err != nil || stride < OccSize {
				return fmt.Errorf("map %s: %d SMs of %d slots of %d bytes: %v", m.Name, m.Slots, m.MaxEntries, stride, err)
			}
			for sm := uint32(0); sm < m.Slots; sm++ {
				s.OccResident = append(s.OccResident, 0)
				for k := uint32(0); k < m.MaxEntries; k++ {
					b := all[(uint64(sm)*uint64(m.MaxEntries)+uint64(k))*stride:]
					o := Occ{SM: sm, Slot: k, Bucket: le.Uint64(b), Threads: le.Uint64(b[8:]), LaneNS: le.Uint64(b[16:])}
					s.OccResident[sm] += o.Threads
					if o.Bucket == 0 {
						continue // never marked
					}
					if o.Bucket == OccResetting || !ownBucket(o.Bucket, k, m.MaxEntries) {
						s.Bad++ // not a bucket of this slot (an earlier design's reset marker too)
						continue
					}
					s.Occupancy = append(s.Occupancy, o)
				}
			}
			s.OccSlots = m.MaxEntries
			r.occ, r.resident = s.Occupancy, s.OccResident
		default:
			continue // a map private to a probe (slot arrays, warp start times)
		}
		s.Drops[m.Name] = h.Drops
	}
	return nil
}
