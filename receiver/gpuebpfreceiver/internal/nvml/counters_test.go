//go:build cgo

package nvml

import (
	"math"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// TestCumulativeCountersSurviveResets: NVML's counters behind the
// cumulative, monotonic hw.errors, hw.gpu.io{nvlink} and hw.energy are the
// driver's, and go back to zero while the collector runs: `nvidia-smi -p 0`
// (nvmlDeviceClearEccErrorCounts) clears the volatile ECC counts, a GPU
// reset clears the volatile ones. The series keep their start time, so
// they must not go backwards: a drop is a reset, counted from zero on top
// of what was reported. Values no counter can hold (≥ 2^63 as a count, or
// as bytes) are not reported.
func TestCumulativeCountersSurviveResets(t *testing.T) {
	const (
		ecc    = " hw.errors{error.type=ecc_corrected}"
		replay = " hw.errors{error.type=pcie_replay}"
		nvtx   = " hw.gpu.io{gpu.io.link=nvlink,network.io.direction=transmit}"
		energy = " hw.energy"
	)
	type reading struct {
		ecc    uint64
		replay int
		nvtxKB uint64
		mJ     uint64
	}
	for _, tc := range []struct {
		name  string
		reads []reading
		want  []map[string]float64 // metric -> value; absent: NaN
	}{
		{
			name:  "steady counters pass through",
			reads: []reading{{7, 1, 1000, 5000}, {9, 3, 3000, 8000}},
			want: []map[string]float64{
				{ecc: 7, replay: 1, nvtx: 1000 * kib, energy: 5},
				{ecc: 9, replay: 3, nvtx: 3000 * kib, energy: 8},
			},
		},
		{
			name:  "reset to zero, then more errors",
			reads: []reading{{7, 1, 1000, 5000}, {9, 3, 3000, 8000}, {0, 0, 10, 1000}, {2, 4, 20, 3000}},
			want: []map[string]float64{
				{ecc: 7, replay: 1, nvtx: 1000 * kib, energy: 5},
				{ecc: 9, replay: 3, nvtx: 3000 * kib, energy: 8},
				{ecc: 9, replay: 3, nvtx: 3010 * kib, energy: 9},
				{ecc: 11, replay: 7, nvtx: 3020 * kib, energy: 11},
			},
		},
		{
			name:  "absurd values are not reported",
			reads: []reading{{7, 1, 1000, 5000}, {math.MaxUint64, 1, math.MaxUint64, 6000}, {8, 2, 1001, 7000}},
			want: []map[string]float64{
				{ecc: 7, replay: 1, nvtx: 1000 * kib, energy: 5},
				{ecc: math.NaN(), replay: 1, nvtx: math.NaN(), energy: 6},
				{ecc: 8, replay: 2, nvtx: 1001 * kib, energy: 7},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := newTwoGPUs()
			g0 := lib.gpus[0]
			h := newHarness(t, lib, nil)
			h.start()
			for i, r := range tc.reads {
				g0.ecc[0], g0.replay, g0.energyMJ = r.ecc, r.replay, r.mJ
				g0.fields[nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX] = u64Field(r.nvtxKB)
				h.clock.add(10 * time.Second)
				got := points(h.scrape())
				for k, want := range tc.want[i] {
					v, ok := got[uuid0+k]
					if math.IsNaN(want) {
						if ok {
							t.Errorf("scrape %d: %s = %v, want no point", i, k, v)
						}
						continue
					}
					if !ok || v != want {
						t.Errorf("scrape %d: %s = %v (present %v), want %v", i, k, v, ok, want)
					}
				}
			}
		})
	}
}

// TestAbsurdMIGDeviceCount: the MIG slot count bounds a loop of NVML calls
// under the source's lock, every scrape; a driver that reports billions
// must not hold the scrape (and the event goroutine) for minutes.
func TestAbsurdMIGDeviceCount(t *testing.T) {
	for _, tc := range []struct {
		name      string
		count     int
		wantCalls int
	}{
		{"H100's 7 slots", 7, 7},
		{"absurd", 1 << 31, maxMIGDevices},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := newTwoGPUs()
			g1 := lib.gpus[1]
			g1.maxMIG = tc.count
			h := newHarness(t, lib, nil)
			h.start()
			done := make(chan struct{})
			go func() { defer close(done); h.src.Scrape(t.Context()) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("scrape still running after 10 s")
			}
			if got := g1.calls["GetMigDeviceHandleByIndex"]; got != tc.wantCalls {
				t.Errorf("GetMigDeviceHandleByIndex called %d times, want %d", got, tc.wantCalls)
			}
		})
	}
}
