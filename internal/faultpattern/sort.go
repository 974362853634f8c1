package faultpattern

// sortPairs sorts keys ascending and permutes vals alike, stably (equal keys
// keep their order). tmpKeys and tmpVals are scratch of at least the same
// length. Input already in order, or in strictly descending order, costs one
// pass; anything else is sorted by an LSD radix sort on the key minus the
// smallest key, one pass per significant byte of the range: a window of
// pages within 1 GiB takes 3 passes, of timestamps within 1 s 4. It
// allocates nothing.
func sortPairs(keys []uint64, vals []uint32, tmpKeys []uint64, tmpVals []uint32) {
	n := len(keys)
	if n < 2 {
		return
	}
	ascending, descending := true, true
	lo, hi := keys[0], keys[0]
	for i := 1; i < n; i++ {
		k, prev := keys[i], keys[i-1]
		if k < prev {
			ascending = false
		}
		if k >= prev {
			descending = false
		}
		lo, hi = min(lo, k), max(hi, k)
	}
	if ascending {
		return
	}
	if descending {
		for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
			vals[i], vals[j] = vals[j], vals[i]
		}
		return
	}
	srcK, srcV := keys, vals
	dstK, dstV := tmpKeys[:n], tmpVals[:n]
	span := hi - lo
	for shift := uint(0); shift < 64 && span>>shift != 0; shift += 8 {
		var count [256]int
		for _, k := range srcK {
			count[byte((k-lo)>>shift)]++
		}
		if count[byte((srcK[0]-lo)>>shift)] == n {
			continue // every key has this byte: nothing to move
		}
		pos := 0
		for b, c := range count {
			count[b] = pos
			pos += c
		}
		for i, k := range srcK {
			b := byte((k - lo) >> shift)
			dstK[count[b]] = k
			dstV[count[b]] = srcV[i]
			count[b]++
		}
		srcK, dstK = dstK, srcK
		srcV, dstV = dstV, srcV
	}
	if &srcK[0] != &keys[0] {
		copy(keys, srcK)
		copy(vals, srcV)
	}
}
