package devring

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// benchmarkDrain: the consumer's cost per record, the ring refilled
// between drains (refilling is not timed).
func benchmarkDrain(b *testing.B, size int) {
	h := testHeader
	h.Capacity = 1 << 14
	_, p, r := memRing(b, h)
	rec := record(1, size)
	per := int(h.Capacity / slotsFor(uint32(size)))
	var sum int
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		b.StopTimer()
		batch := min(per, b.N-done)
		for i := 0; i < batch; i++ {
			p.Write(rec)
		}
		b.StartTimer()
		n, err := r.Drain(func(rec []byte) error { sum += len(rec); return nil })
		if err != nil || n != batch {
			b.Fatalf("drained %d of %d: %v", n, batch, err)
		}
		done += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDrainCall: gpuext_event records (168 bytes, one slot), what
// devrt writes per API call.
func BenchmarkDrainCall(b *testing.B) { benchmarkDrain(b, ev.EventSize) }

// BenchmarkDrainGPUExec: GPU execution records (80 bytes, one slot).
func BenchmarkDrainGPUExec(b *testing.B) { benchmarkDrain(b, ev.GPUExecSize) }

// BenchmarkDrainNamed: named calls (680 bytes, four slots reassembled).
func BenchmarkDrainNamed(b *testing.B) { benchmarkDrain(b, ev.NamedSize) }

// BenchmarkDrainConcurrent: four producer goroutines write call records
// into a mapped file while the consumer drains it, as a multi-threaded
// program and the collector do; records/s is what the consumer took.
func BenchmarkDrainConcurrent(b *testing.B) {
	path := filepath.Join(b.TempDir(), "ring")
	h := testHeader
	h.Capacity = 1 << 16
	p, err := Create(path, h)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	r, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	rec := record(1, ev.EventSize)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				p.Write(rec)
			}
		}()
	}
	b.SetBytes(ev.EventSize)
	b.ResetTimer()
	for got := 0; got < b.N; {
		n, err := r.Drain(func([]byte) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
