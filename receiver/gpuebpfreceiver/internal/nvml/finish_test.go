//go:build cgo

package nvml

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// TestFinishScrapesOnceMore: Finish stops the event goroutine, scrapes
// every GPU one last time and releases NVML; what changed since the last
// Scrape (energy, an Xid from either path, the hw.status it holds) is in
// its metrics, and the Xids' log records are in Logs before it closes.
// Without NVML (or never started) there is nothing to scrape and nothing
// to release. Exact values.
func TestFinishScrapesOnceMore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initRet nvml.Return
		start   bool
		events  bool
		// what happens after the last Scrape; the bodies of the log records
		// it makes, in order
		after func(h *harness) []string
		want  map[string]float64 // points of gpu0 (by key without the hw.id)
		logs  []string           // bodies of the log records, in order
		// nvmlShutdown calls, event sets freed
		shutdowns, freed int
	}{
		{
			name: "started", start: true, events: true,
			after: func(h *harness) []string {
				h.lib.gpus[0].energyMJ += 10_000 // 10 J
				h.lib.events.ch <- xidEvent(h.lib.gpus[0], 79)
				first := h.nextLog().Body
				h.src.RecordXID(uuid0, 48, 0, "DBE") // the tracepoint
				return []string{first, h.nextLog().Body}
			},
			want: map[string]float64{
				"hw.energy":                 123466.789,
				"hw.errors{error.type=xid}": 2,
				"hw.status{gpu.status.reason=xid_79,hw.state=failed}": 1,
			},
			logs:      []string{"XID 79: GPU has fallen off the bus", "XID 48: Double-bit ECC error"},
			shutdowns: 1, freed: 1,
		},
		{
			name: "events off", start: true, events: false,
			after: func(h *harness) []string {
				h.lib.gpus[0].energyMJ += 1_000
				h.src.RecordXID("00000000:17:00.0", 31, 0, "")
				return []string{h.nextLog().Body}
			},
			want: map[string]float64{
				"hw.energy":                 123457.789,
				"hw.errors{error.type=xid}": 1,
				"hw.status{gpu.status.reason=none,hw.state=ok}": 1,
			},
			logs:      []string{"XID 31: GPU memory page fault (usually an application's illegal address access)"},
			shutdowns: 1,
		},
		{name: "NVML missing", initRet: nvml.ERROR_LIBRARY_NOT_FOUND, start: true, events: true},
		{name: "driver not loaded", initRet: nvml.ERROR_DRIVER_NOT_LOADED, start: true, events: true},
		{name: "never started", events: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := newTwoGPUs()
			lib.initRet = tc.initRet
			h := newHarness(t, lib, func(c *Config) { c.Events = tc.events })
			if tc.start {
				err := h.src.Start(t.Context())
				if tc.initRet != 0 {
					if !errors.Is(err, ErrUnavailable) {
						t.Fatalf("Start: %v", err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
			}
			if tc.initRet == 0 && tc.start {
				before := points(h.scrape())
				if before[uuid0+" hw.energy"] != 123456.789 || before[uuid0+" hw.errors{error.type=xid}"] != 0 {
					t.Fatalf("last scrape: energy %v, xids %v", before[uuid0+" hw.energy"], before[uuid0+" hw.errors{error.type=xid}"])
				}
			}
			var bodies []string
			if tc.after != nil {
				bodies = tc.after(h)
			}

			md, err := h.src.Finish(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			got := points(md)
			if tc.want == nil {
				if len(got) != 0 {
					t.Errorf("metrics without NVML: %v", got)
				}
			}
			for k, v := range tc.want {
				if got[uuid0+" "+k] != v {
					t.Errorf("%s = %v, want %v", k, got[uuid0+" "+k], v)
				}
			}
			if diff := cmp.Diff(tc.logs, bodies); diff != "" {
				t.Errorf("log records (-want +got):\n%s", diff)
			}
			if _, open := <-h.src.Logs(); open {
				t.Error("Logs open after Finish")
			}
			freed := 0
			if lib.events != nil {
				freed = lib.events.freedCount()
			}
			if lib.shutdowns != tc.shutdowns || freed != tc.freed {
				t.Errorf("nvmlShutdown %d times, event set freed %d times; want %d, %d", lib.shutdowns, freed, tc.shutdowns, tc.freed)
			}
			// Once only; Scrape and Shutdown afterwards do nothing.
			if md, err := h.src.Finish(t.Context()); err != nil || md.ResourceMetrics().Len() != 0 {
				t.Errorf("second Finish: %d resources, %v", md.ResourceMetrics().Len(), err)
			}
			if md := h.scrape(); md.ResourceMetrics().Len() != 0 {
				t.Errorf("Scrape after Finish: %v", points(md))
			}
			if err := h.src.Shutdown(t.Context()); err != nil || lib.shutdowns != tc.shutdowns {
				t.Errorf("Shutdown after Finish: %v, %d nvmlShutdown", err, lib.shutdowns)
			}
			goleak.VerifyNone(t)
		})
	}
}

// TestFinishBoundedByContext: a final scrape held up in NVML (a GPU that
// stopped answering) does not hold Finish past its context; NVML is
// released once the call returns, never under it.
func TestFinishBoundedByContext(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, nil)
	h.start()
	h.scrape()
	hang := make(chan struct{})
	lib.gpus[1].hang = map[string]chan struct{}{"GetPowerUsage": hang}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	begin := time.Now()
	md, err := h.src.Finish(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > time.Second {
		t.Fatalf("Finish: %v after %v", err, time.Since(begin))
	}
	if md.ResourceMetrics().Len() != 0 {
		t.Errorf("metrics from an unfinished scrape: %v", points(md))
	}
	if lib.shutdowns != 0 {
		t.Error("NVML shut down under a running call")
	}
	close(hang)
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-h.src.Logs():
		case <-deadline:
			t.Fatal("Logs never closed")
		}
	}
	if lib.shutdowns != 1 || lib.events.freedCount() != 1 {
		t.Errorf("nvmlShutdown %d times, event set freed %d times; want 1, 1", lib.shutdowns, lib.events.freedCount())
	}
	goleak.VerifyNone(t)
}
