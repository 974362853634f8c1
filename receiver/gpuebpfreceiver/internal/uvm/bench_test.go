package uvm

import (
	"context"
	"testing"
)

// BenchmarkConsume accounts the events of the recorded capture (faults,
// migrations, replays; pattern classifier fed, fault samples off), one
// Consume per event: go test -bench Consume -benchmem ./receiver/gpuebpfreceiver/internal/uvm/
func BenchmarkConsume(b *testing.B) {
	fs := loadFixtures(b)
	f := fs[len(fs)-1]
	table := tableOf(b, f.meta.Processors)
	s := newTestSource(b, NewDefaultConfig())
	defer s.Shutdown(context.Background())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := f.events[i%len(f.events)]
		s.Consume(f.meta.PID, table, e)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
}
