package faultpattern

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAddClassify measures one Add followed by one Classify of the
// full default window (1024 samples): the cost of classifying after every
// fault, an upper bound on what the receiver spends.
func BenchmarkAddClassify(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	// GPU timestamps in sweep order, reports in address-sorted batches:
	// Classify sorts the window by TimeNs.
	gpuTime := driverBatches(strided(base+gib, 4096, -page), 256, true)
	for _, bm := range []struct {
		name    string
		samples []Sample
	}{
		{"sequential", stream(strided(base, 4096, page))},
		{"sequential_shuffled32", stream(shuffled(strided(base, 4096, page), 32, rng))},
		{"strided_64KiB", stream(strided(base, 4096, 64*kib))},
		{"random_1GiB", stream(uniform(base, gib, 4096, rng))},
		{"hot_set_64", stream(sampled(hotSetPages(64, rng), 4096, rng))},
		{"gpu_timestamps_sorted_batches", gpuTime},
	} {
		b.Run(bm.name, func(b *testing.B) {
			c := New(Options{})
			for _, s := range bm.samples[:1024] {
				c.Add(s)
			}
			b.ReportAllocs()
			// Replay the stream with time moving on, so that TimeNs
			// does not jump back when the stream starts over.
			n := uint64(len(bm.samples))
			i := uint64(1024)
			for b.Loop() {
				s := bm.samples[i%n]
				s.TimeNs += i / n * n * 1000
				c.Add(s)
				i++
				c.Classify()
			}
		})
	}
}

func BenchmarkAdd(b *testing.B) {
	c := New(Options{})
	samples := stream(strided(base, 4096, page))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c.Add(samples[i&4095])
		i++
	}
}
