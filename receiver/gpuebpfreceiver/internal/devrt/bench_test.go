package devrt

import (
	"path/filepath"
	"testing"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// BenchmarkSourcePoll: what one Poll costs per record, 8 rings of 4096
// slots refilled with call records (168 bytes) between polls (refilling
// is not timed): drain, heartbeat and counters of every ring.
func BenchmarkSourcePoll(b *testing.B) {
	const rings, per = 8, 4096
	dir := b.TempDir()
	cfg := NewDefaultConfig()
	cfg.Directories = []string{dir}
	var n int
	src := New(cfg, Options{ProcRoot: "/proc", Handle: func(uint32, []byte) { n++ },
		Alive: func(int, uint64) bool { return true }})
	defer src.Shutdown()
	var ps []*devring.Producer
	for i := 0; i < rings; i++ {
		pid := uint32(1000 + i)
		p, err := devring.Create(filepath.Join(dir, "gpuext-devrt-"+u(pid)+"-1.ring"),
			devring.Header{Capacity: per, PID: pid, StartTime: 7, CreatedNS: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		ps = append(ps, p)
	}
	src.scanHostDirs()
	src.Poll()
	if src.Rings() != rings {
		b.Fatalf("%d rings", src.Rings())
	}
	rec := ev.AppendRecord(nil, &ev.Event{Kind: ev.KindCall, API: ev.APICuLaunchKernel, Source: ev.SourceDevrt})
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		b.StopTimer()
		batch := min(rings*per, b.N-done)
		for i := 0; i < batch; i++ {
			ps[i%rings].Write(rec)
		}
		n = 0
		b.StartTimer()
		src.Poll()
		if n != batch {
			b.Fatalf("polled %d of %d", n, batch)
		}
		done += batch
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
