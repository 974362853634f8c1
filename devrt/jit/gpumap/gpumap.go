// Package gpumap is the one Go definition of how device-probe maps sit in
// the shared region (device memory whose pointer the probes read from
// __gpuext_shared, which devrt copies into a file the receiver maps):
// where each map lies, how an array element,
// a hash bucket or a ring slot is found, and how the host reads them back.
//
// The layout follows struct gpuext_gpumap_hdr and friends in
// bpf/include/gpuext_abi.h. The compiler (devrt/jit) chooses a Layout, emits
// PTX that does on the GPU what the device-side functions here do on a byte
// slice (the interpreter uses them to compute expected results), and the
// receiver reads the region bytes of a running process with the host-side
// readers. Every access is bounds-checked: a region that is short, foreign
// or corrupt gives an error, never a panic.
package gpumap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Type is enum gpuext_gpumap_type.
type Type uint32

// Map types (gpuext_abi.h).
const (
	Hash           Type = 1501
	PerThreadArray Type = 1502
	Array          Type = 1503
	Ringbuf        Type = 1527
	PerWarpArray   Type = 1540
	PerSMArray     Type = 1541
	PerBlockArray  Type = 1542
)

func (t Type) String() string {
	switch t {
	case Hash:
		return "hash"
	case PerThreadArray:
		return "per_thread_array"
	case Array:
		return "array"
	case Ringbuf:
		return "ringbuf"
	case PerWarpArray:
		return "per_warp_array"
	case PerSMArray:
		return "per_sm_array"
	case PerBlockArray:
		return "per_block_array"
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// IsArray reports whether t is one of the array kinds (elements found by index).
func (t Type) IsArray() bool {
	return t == Array || t == PerThreadArray || t == PerWarpArray || t == PerSMArray || t == PerBlockArray
}

// InBlock reports whether t's values live in each thread block's shared
// memory rather than in the region.
func (t Type) InBlock() bool { return t == PerBlockArray }

// Header layout (struct gpuext_gpumap_hdr, 128 bytes).
const (
	HeaderSize = 128
	Magic      = 0x32504d47 // "GMP2" (GPUEXT_GPUMAP_MAGIC; "GMAP" before block weights)

	OffMagic       = 0
	OffType        = 4
	OffKeySize     = 8
	OffValueSize   = 12
	OffMaxEntries  = 16
	OffSlots       = 20
	OffStride      = 24
	OffFlags       = 28
	OffDataSize    = 32
	OffHead        = 40
	OffDrops       = 48
	OffCount       = 56
	OffTail        = 64
	OffShards      = 72
	OffBlockSample = 76
	// OffBlocksPerLaunch is blocks_per_launch (then 4 bytes of padding).
	OffBlocksPerLaunch = 80
	OffReserved        = 88

	// RecHeaderSize is struct gpuext_gpuring_rec (seq, len, check).
	RecHeaderSize = 16
	// RecSeq, RecLen and RecCheckOff are the offsets of its fields.
	RecSeq      = 0
	RecLen      = 8
	RecCheckOff = 12
	// BucketHeaderSize is struct gpuext_gpuhash_bucket (state, pad).
	BucketHeaderSize = 8

	// Hash bucket states (enum gpuext_gpuhash_state).
	StateEmpty   = 0
	StateBusy    = 1
	StateFull    = 2
	StateDeleted = 3

	// MaxProbes bounds the buckets one hash operation looks at.
	MaxProbes = 64
	// MaxHashKey is the largest hash key in bytes.
	MaxHashKey = 64
	// MaxValue is the largest value (and ring payload) in bytes.
	MaxValue = 4096
	// MaxRegion is the largest region a Layout may ask for.
	MaxRegion = 1 << 30
	// DefaultSMCopies is the copies of a per-SM array when map_extra is 0.
	DefaultSMCopies = 256
	// DefaultCopies is the copies of a per-warp or per-thread array when
	// map_extra is 0.
	DefaultCopies = 1024
	// Align is the alignment of every map inside the region.
	Align = 128
	// MaxShards bounds a ring's shards (map_extra).
	MaxShards = 256
	// ShardHeadStride is the bytes of each shard's {head, tail} line when
	// a ring has more than one shard (at the start of its data).
	ShardHeadStride = 128
	// MaxBlock bounds the shared memory all per-block arrays of a probe set
	// take in each thread block (GPUEXT_GPUMAP_BLOCK_MAX): it comes out of
	// what the kernel itself may use.
	MaxBlock = 1024
)

// Errno values the device functions return (negated), as the kernel's helpers do.
const (
	ENOENT = 2
	E2BIG  = 7
	EEXIST = 17
	EINVAL = 22
	ENOSPC = 28
	EBUSY  = 16
)

// Def is a map as the program declares it.
type Def struct {
	Name       string
	Type       Type
	KeySize    uint32
	ValueSize  uint32 // ring: largest record payload
	MaxEntries uint32 // ring: slots
	Copies     uint32 // per-thread/warp/SM arrays: copies (0: the default)
	// Shards splits a ring (map_extra; 0 or 1: one): the probes of SM s
	// use shard s % Shards, each with its own head and MaxEntries/Shards
	// slots, so blocks ending together on many SMs do not all serialise on
	// one atomic.
	Shards uint32
}

// Map is one map placed in the region.
type Map struct {
	Def
	Offset uint64 // of the header in the region
	// BlockOffset is where a per-block array's values start in the probe
	// set's per-block area (Layout.BlockSize bytes of shared memory).
	BlockOffset uint32
	Slots       uint32 // arrays: copies; hash: buckets; ring: slots
	Stride      uint32 // bytes per element, bucket or ring slot
	DataSize    uint64
	// BlockSample: 1 in BlockSample thread blocks run the probes (0 or 1:
	// every block); BlocksPerLaunch, instead, samples each launch by its
	// size (devrt/ptx's Spec.BlocksPerLaunch). The same in every map of a
	// layout (Layout.WithSampling), in each header. The probes weigh their
	// counts themselves (the block weight helper): readers do not scale.
	BlockSample     uint32
	BlocksPerLaunch uint32
}

// Layout is every map of a probe set, placed in one region.
type Layout struct {
	Maps []Map
	Size uint64 // bytes the region needs
	// BlockSize is the bytes of shared memory each thread block needs for
	// the per-block arrays (zeroed when the block starts); 0: none.
	BlockSize uint32
	// BlockSample and BlocksPerLaunch are the maps' sampling (0 and 0:
	// every block).
	BlockSample     uint32
	BlocksPerLaunch uint32
}

// WithSampling returns l for probes that run in 1 of n thread blocks (n 0
// or 1: every block) or, with perLaunch > 0, in the blocks devrt/ptx's
// sampling by launch picks: every map's header says so. The maps are
// copied; l is unchanged.
func (l Layout) WithSampling(n, perLaunch uint32) Layout {
	n = max(n, 1)
	l.BlockSample, l.BlocksPerLaunch = n, perLaunch
	l.Maps = slices.Clone(l.Maps)
	for i := range l.Maps {
		l.Maps[i].BlockSample, l.Maps[i].BlocksPerLaunch = n, perLaunch
	}
	return l
}

// Round8 rounds n up to a multiple of 8.
func Round8(n uint32) uint32 { return (n + 7) &^ 7 }

// RingStride is the slot of a ring of records of up to vs bytes: the
// header and the payload rounded to 16 bytes, so that a probe writes a
// record with 16-byte stores (each store a request to memory the kernel's
// own wait behind).
func RingStride(vs uint32) uint32 { return RecHeaderSize + (vs+15)&^15 }

// NewLayout places defs one after the other at Align-aligned offsets.
func NewLayout(defs []Def) (Layout, error) {
	var l Layout
	off := uint64(0)
	seen := map[string]bool{}
	for _, d := range defs {
		if seen[d.Name] {
			return Layout{}, fmt.Errorf("map %q declared twice", d.Name)
		}
		seen[d.Name] = true
		m, err := place(d)
		if err != nil {
			return Layout{}, fmt.Errorf("map %q: %w", d.Name, err)
		}
		m.Offset = off
		if d.Type.InBlock() {
			m.BlockOffset = l.BlockSize
			l.BlockSize += m.MaxEntries * m.Stride
			if l.BlockSize > MaxBlock {
				return Layout{}, fmt.Errorf("per-block arrays need more than %d bytes of shared memory per block (map %q ends at %d)", MaxBlock, d.Name, l.BlockSize)
			}
		}
		off += HeaderSize + m.DataSize
		off = (off + Align - 1) &^ (Align - 1)
		if off > MaxRegion {
			return Layout{}, fmt.Errorf("maps need more than %d bytes (map %q ends at %d)", MaxRegion, d.Name, off)
		}
		l.Maps = append(l.Maps, m)
	}
	l.Size = off
	return l, nil
}

func place(d Def) (Map, error) {
	m := Map{Def: d}
	if d.ValueSize == 0 || d.ValueSize > MaxValue {
		return m, fmt.Errorf("value_size %d not in 1..%d", d.ValueSize, MaxValue)
	}
	if d.MaxEntries == 0 {
		return m, errors.New("max_entries is 0")
	}
	switch {
	case d.Type.IsArray():
		if d.KeySize != 4 {
			return m, fmt.Errorf("%s key_size %d: must be 4", d.Type, d.KeySize)
		}
		m.Slots = 1
		if d.Type == PerBlockArray {
			// the values are in shared memory: the region has the
			// header only
			if d.Copies != 0 {
				return m, fmt.Errorf("per_block_array has one copy per block: map_extra %d must be 0", d.Copies)
			}
			if uint64(d.MaxEntries)*uint64(Round8(d.ValueSize)) > MaxBlock {
				return m, fmt.Errorf("per_block_array of %d x %d bytes: more than %d bytes of shared memory", d.MaxEntries, Round8(d.ValueSize), MaxBlock)
			}
			m.Stride = Round8(d.ValueSize)
			return m, nil
		}
		if d.Type != Array {
			m.Slots = d.Copies
			if m.Slots == 0 {
				m.Slots = DefaultCopies
				if d.Type == PerSMArray {
					m.Slots = DefaultSMCopies
				}
			}
		}
		m.Stride = Round8(d.ValueSize)
		if d.Type == PerSMArray {
			m.Stride = smStride(d.MaxEntries, m.Stride)
		}
		m.DataSize = uint64(m.Slots) * uint64(d.MaxEntries) * uint64(m.Stride)
	case d.Type == Hash:
		if d.KeySize == 0 || d.KeySize > MaxHashKey {
			return m, fmt.Errorf("hash key_size %d not in 1..%d", d.KeySize, MaxHashKey)
		}
		nb := uint32(2)
		for nb < 2*d.MaxEntries {
			if nb >= 1<<24 {
				return m, fmt.Errorf("hash max_entries %d too large", d.MaxEntries)
			}
			nb <<= 1
		}
		m.Slots = nb
		m.Stride = BucketHeaderSize + Round8(d.KeySize) + Round8(d.ValueSize)
		m.DataSize = uint64(nb) * uint64(m.Stride)
	case d.Type == Ringbuf:
		if m.Shards == 0 {
			m.Shards = 1
		}
		if m.Shards > MaxShards || m.Shards&(m.Shards-1) != 0 {
			return m, fmt.Errorf("ring shards %d: a power of two up to %d", m.Shards, MaxShards)
		}
		per := d.MaxEntries / m.Shards
		if per == 0 {
			return m, fmt.Errorf("ring of %d slots cannot have %d shards", d.MaxEntries, m.Shards)
		}
		m.Slots = per * m.Shards
		m.Stride = RingStride(d.ValueSize)
		m.DataSize = m.shardHeads() + uint64(m.Slots)*uint64(m.Stride)
	default:
		return m, fmt.Errorf("unsupported map type %s", d.Type)
	}
	if m.DataSize > MaxRegion {
		return m, fmt.Errorf("needs %d bytes, more than %d", m.DataSize, MaxRegion)
	}
	return m, nil
}

// Find returns the map named name.
func (l Layout) Find(name string) (Map, bool) {
	for _, m := range l.Maps {
		if m.Name == name {
			return m, true
		}
	}
	return Map{}, false
}

// Init writes every map's header into region (the host does it once, before
// the probes run; the rest of the region must be zero).
func (l Layout) Init(region []byte) error {
	if uint64(len(region)) < l.Size {
		return fmt.Errorf("region has %d bytes, the layout needs %d", len(region), l.Size)
	}
	for _, m := range l.Maps {
		// The static fields only: head, drops and count are the device's.
		h := m.HeaderBytes()
		copy(region[m.Offset:m.Offset+OffHead], h)
		copy(region[m.Offset+OffShards:m.Offset+OffReserved], h[OffShards:OffReserved])
	}
	return nil
}

// HeaderBytes is m's header as Init writes it: what the collector sends
// devrt as the region's initial contents.
func (m Map) HeaderBytes() []byte {
	h := make([]byte, HeaderSize)
	le := binary.LittleEndian
	le.PutUint32(h[OffMagic:], Magic)
	le.PutUint32(h[OffType:], uint32(m.Type))
	le.PutUint32(h[OffKeySize:], m.KeySize)
	le.PutUint32(h[OffValueSize:], m.ValueSize)
	le.PutUint32(h[OffMaxEntries:], m.MaxEntries)
	le.PutUint32(h[OffSlots:], m.Slots)
	le.PutUint32(h[OffStride:], m.Stride)
	le.PutUint64(h[OffDataSize:], m.DataSize)
	if m.Type == Ringbuf {
		le.PutUint32(h[OffShards:], max(m.Shards, 1))
	}
	le.PutUint32(h[OffBlockSample:], max(m.BlockSample, 1))
	le.PutUint32(h[OffBlocksPerLaunch:], m.BlocksPerLaunch)
	return h
}

// DataOffset is where the map's data starts in the region.
func (m Map) DataOffset() uint64 { return m.Offset + HeaderSize }

// ElemOffset is the offset of element key of copy slot of an array in the
// memory that holds its values: the region, or for a per-block array the
// probe set's per-block area (one copy); false when either is out of range.
func (m Map) ElemOffset(slot, key uint64) (uint64, bool) {
	if !m.Type.IsArray() || slot >= uint64(m.Slots) || key >= uint64(m.MaxEntries) {
		return 0, false
	}
	if m.Type.InBlock() {
		return uint64(m.BlockOffset) + key*uint64(m.Stride), true
	}
	return m.DataOffset() + (slot*uint64(m.MaxEntries)+key)*uint64(m.Stride), true
}

// BucketOffset is the region offset of hash bucket i (i < Slots).
func (m Map) BucketOffset(i uint64) uint64 { return m.DataOffset() + i*uint64(m.Stride) }

// RingSlotOffset is the region offset of the slot of record index i (of
// shard 0).
func (m Map) RingSlotOffset(i uint64) uint64 { return m.ShardSlotOffset(0, i) }

// ShardSlots is the slots of each shard of a ring.
func (m Map) ShardSlots() uint64 { return uint64(m.Slots / max(m.Shards, 1)) }

// shardHeads is the bytes of the shards' {head, tail} lines (none for one).
func (m Map) shardHeads() uint64 {
	if m.Shards <= 1 {
		return 0
	}
	return uint64(m.Shards) * ShardHeadStride
}

// HeadOffset is the region offset of shard s's head: the header's for a
// ring of one shard.
func (m Map) HeadOffset(s uint64) uint64 {
	if m.Shards <= 1 {
		return m.Offset + OffHead
	}
	return m.DataOffset() + s*ShardHeadStride
}

// TailOffset is where RingDrain keeps shard s's tail (a region only the
// host reads, as tests and the GPU checks have).
func (m Map) TailOffset(s uint64) uint64 {
	if m.Shards <= 1 {
		return m.Offset + OffTail
	}
	return m.DataOffset() + s*ShardHeadStride + 8
}

// ShardSlotOffset is the region offset of the slot of record index i of
// shard s.
func (m Map) ShardSlotOffset(s, i uint64) uint64 {
	per := m.ShardSlots()
	return m.DataOffset() + m.shardHeads() + (s*per+i%per)*uint64(m.Stride)
}

// KeyWords splits a key into the little-endian 8-byte words it is stored
// and hashed as (the last word zero-padded).
func KeyWords(key []byte) []uint64 {
	w := make([]uint64, (len(key)+7)/8)
	for i, b := range key {
		w[i/8] |= uint64(b) << (8 * (i % 8))
	}
	return w
}

// HashWords is the hash of a key's words; the probe starts at hash & (buckets-1).
func HashWords(w []uint64) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, x := range w {
		h ^= x
		h *= 0x100000001b3
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

// smStride is the element stride of a per-SM array whose elements take
// stride bytes: a copy smaller than a cache line has its elements padded
// until it fills one (Align bytes), so that no two SMs share a line. Every
// warp of an SM updates its copy at once, and atomics on one line are
// serialised at L2: on an H200 a per-SM counter of 24-byte copies cost a
// 16M-element vector addition 1.44x, with 128-byte copies 1.26x
// (bench/device/jit_ablation.sh).
func smStride(entries, stride uint32) uint32 {
	if uint64(entries)*uint64(stride) >= Align {
		return stride
	}
	return max(stride, Round8((Align+entries-1)/entries))
}
