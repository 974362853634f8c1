package faultpattern

// table is an open-addressing hash table from uint64 keys to uint32 values,
// sized once for the most entries it will ever hold and reused by every
// Classify call, so that counting distinct pages or gaps allocates nothing.
// A value of 0 marks an empty slot: callers store only non-zero values.
type table struct {
	keys  []uint64
	vals  []uint32
	mask  uint64
	shift uint // 64 - log2(len(keys))
}

// init sizes t for up to maxEntries keys at a load factor of at most 1/2,
// which keeps linear-probe chains short whatever the keys are.
func (t *table) init(maxEntries int) {
	size, bits := 2, uint(1)
	for size < 2*maxEntries {
		size <<= 1
		bits++
	}
	t.keys = make([]uint64, size)
	t.vals = make([]uint32, size)
	t.mask = uint64(size - 1)
	t.shift = 64 - bits
}

// reset empties t without releasing memory.
func (t *table) reset() { clear(t.vals) }

// slot returns the slot that holds key, or the empty slot where key belongs
// if t does not hold it (found false). The caller inserts by writing
// keys[i] and a non-zero vals[i].
func (t *table) slot(key uint64) (i uint64, found bool) {
	// Fibonacci hashing: the multiplication spreads runs of consecutive
	// page numbers, and the top bits are the best mixed.
	i = (key * 0x9E3779B97F4A7C15) >> t.shift
	for {
		if t.vals[i] == 0 {
			return i, false
		}
		if t.keys[i] == key {
			return i, true
		}
		i = (i + 1) & t.mask
	}
}
