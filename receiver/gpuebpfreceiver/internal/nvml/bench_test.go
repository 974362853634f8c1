//go:build cgo

package nvml

import (
	"fmt"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

// BenchmarkScrape measures the source's own cost of one scrape against
// the mock: what the collector spends per GPU besides NVML. On hardware
// the NVML calls dominate (each is an ioctl into the driver, tens of µs
// for some, and nvmlDeviceGetPcieThroughput samples for 20 ms per
// direction), so this is the floor, not the scrape time.
//
//	go test -run '^$' -bench BenchmarkScrape -benchmem ./receiver/gpuebpfreceiver/internal/nvml/
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("gpus=%d", n), func(b *testing.B) {
			lib := &fakeLib{driver: "580.65.06"}
			for i := range n {
				g := newH100(fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i), fmt.Sprintf("00000000:%02X:00.0", 0x17+i))
				g.procs = []nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 4 << 30}, {Pid: 200, UsedGpuMemory: 1 << 30}}
				g.fail = map[string]nvml.Return{"GetMigMode": nvml.ERROR_NOT_SUPPORTED}
				lib.gpus = append(lib.gpus, g)
			}
			clock := &fakeClock{t: t0}
			cfg := NewDefaultConfig()
			cfg.Events = false
			src := New(cfg, receivertest.NewNopSettings(metadata.Type), testAttributor,
				WithInterface(lib), WithClock(clock.now), WithHostName("node-1"))
			if err := src.Start(b.Context()); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = src.Shutdown(b.Context()) }()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				clock.add(10 * time.Second)
				if _, err := src.Scrape(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1000, "µs/gpu")
		})
	}
}

// BenchmarkScrapeNVML is one scrape against the real NVML library, with and
// without the PCIe throughput sampling of hw.gpu.io; it is skipped where
// NVML cannot start (no driver). bench/device/nvml.sh runs it on a GPU.
func BenchmarkScrapeNVML(b *testing.B) {
	for _, io := range []bool{true, false} {
		b.Run(fmt.Sprintf("hw.gpu.io=%v", io), func(b *testing.B) {
			cfg := NewDefaultConfig()
			cfg.Events = false
			cfg.Metrics.HwGpuIo.Enabled = io
			src := New(cfg, receivertest.NewNopSettings(metadata.Type), testAttributor)
			if err := src.Start(b.Context()); err != nil {
				b.Skipf("NVML: %v", err)
			}
			defer func() { _ = src.Shutdown(b.Context()) }()
			gpus := 0
			if md, err := src.Scrape(b.Context()); err == nil {
				rms := md.ResourceMetrics()
				for i := 0; i < rms.Len(); i++ {
					if id, ok := rms.At(i).Resource().Attributes().Get("hw.id"); ok && len(id.Str()) > 4 && id.Str()[:4] == "GPU-" {
						if _, proc := rms.At(i).Resource().Attributes().Get("process.pid"); !proc {
							gpus++
						}
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := src.Scrape(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			if gpus > 0 {
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(gpus), "µs/gpu")
			}
		})
	}
}
