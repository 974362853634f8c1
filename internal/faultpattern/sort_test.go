package faultpattern

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSortPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	inputs := map[string][]uint64{
		"empty":      {},
		"one":        {5},
		"ascending":  {1, 2, 2, 3, 9},
		"descending": {9, 3, 2, 1},
		"desc ties":  {9, 3, 3, 1},
		"extremes":   {math.MaxUint64, 0, math.MaxUint64, 1 << 63, 0},
	}
	for _, spread := range []uint64{4, 1 << 12, 1 << 30, math.MaxUint64} {
		k := make([]uint64, 1000)
		for i := range k {
			k[i] = 1<<40 + rng.Uint64N(spread)
			if spread == math.MaxUint64 {
				k[i] = rng.Uint64()
			}
		}
		inputs["random"+string(rune('a'+len(inputs)))] = k
	}
	for name, keys := range inputs {
		vals := make([]uint32, len(keys))
		type pair struct {
			k uint64
			v uint32
		}
		want := make([]pair, len(keys))
		for i := range keys {
			vals[i] = uint32(i)
			want[i] = pair{keys[i], uint32(i)}
		}
		slices.SortStableFunc(want, func(a, b pair) int { return cmp.Compare(a.k, b.k) })
		sortPairs(keys, vals, make([]uint64, len(keys)), make([]uint32, len(keys)))
		got := make([]pair, len(keys))
		for i := range keys {
			got[i] = pair{keys[i], vals[i]}
		}
		assert.Equal(t, want, got, name)
	}
}
