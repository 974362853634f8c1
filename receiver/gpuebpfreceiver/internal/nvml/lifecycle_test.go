//go:build cgo

package nvml

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/goleak"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

// The real go-nvml loader, pointed at a library that is not there (or is
// not a library): Start must say so, and nothing may call into NVML.
func TestLibraryMissingIsUnavailable(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "not-a-library.so.1")
	if err := os.WriteFile(notELF, []byte(strings.Repeat("not an ELF file\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want []string
	}{
		{"missing", filepath.Join(dir, "libnvidia-ml.so.1"), []string{
			filepath.Join(dir, "libnvidia-ml.so.1") + " not found", "No such file or directory", "ERROR_LIBRARY_NOT_FOUND"}},
		{"not a library", notELF, []string{notELF + " could not be loaded", "invalid ELF header"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultConfig()
			cfg.LibraryPath = tt.path
			src := New(cfg, receivertest.NewNopSettings(metadata.Type), nil)
			err := src.Start(t.Context())
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Start: %v, want ErrUnavailable", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			md, err := src.Scrape(t.Context())
			if err != nil || md.ResourceMetrics().Len() != 0 {
				t.Errorf("Scrape after failed Start: %d resources, %v", md.ResourceMetrics().Len(), err)
			}
			src.RecordXID("GPU-x", 79, 0, "") // the tracepoint path still works
			if l := <-src.Logs(); l.LogRecordCount() != 1 {
				t.Error("RecordXID without NVML did not log")
			}
			if err := src.Shutdown(t.Context()); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if _, ok := <-src.Logs(); ok {
				t.Error("Logs not closed by Shutdown")
			}
		})
	}
}

func TestInitFailuresSayWhy(t *testing.T) {
	tests := []struct {
		ret  nvml.Return
		want string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, "NVML unavailable: libnvidia-ml.so.1 not found; is the NVIDIA driver installed"},
		{nvml.ERROR_DRIVER_NOT_LOADED, "NVML unavailable: the NVIDIA kernel driver is not loaded [ERROR_DRIVER_NOT_LOADED]"},
		{nvml.ERROR_LIB_RM_VERSION_MISMATCH, "NVML unavailable: driver/library version mismatch"},
		{nvml.ERROR_NO_PERMISSION, "NVML unavailable: no permission to open the NVIDIA devices"},
		{nvml.ERROR_UNKNOWN, "NVML unavailable: nvmlInit failed [ERROR_UNKNOWN]"},
	}
	for _, tt := range tests {
		t.Run(tt.ret.Error(), func(t *testing.T) {
			lib := newTwoGPUs()
			lib.initRet = tt.ret
			h := newHarness(t, lib, nil)
			err := h.src.Start(t.Context())
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start: %v, want ErrUnavailable saying %q", err, tt.want)
			}
			if err := h.src.Shutdown(t.Context()); err != nil || lib.shutdowns != 0 {
				t.Errorf("Shutdown: %v; nvmlShutdown called %d times after a failed nvmlInit", err, lib.shutdowns)
			}
		})
	}
}

func TestNoGPUIsUnavailable(t *testing.T) {
	lib := &fakeLib{driver: "580.65.06"}
	h := newHarness(t, lib, nil)
	err := h.src.Start(t.Context())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "NVML sees no GPU") {
		t.Fatalf("Start: %v", err)
	}
	if lib.shutdowns != 1 {
		t.Errorf("nvmlShutdown called %d times, want 1", lib.shutdowns)
	}
}

func TestInaccessibleGPUSkipped(t *testing.T) {
	lib := newTwoGPUs()
	lib.handleRet = map[int]nvml.Return{0: nvml.ERROR_NO_PERMISSION} // not in this container's cgroup
	h := newHarness(t, lib, nil)
	h.start()
	res := resources(h.scrape())
	if _, ok := res[uuid0]; ok {
		t.Error("inaccessible GPU reported")
	}
	if _, ok := res[uuid1]; !ok {
		t.Error("accessible GPU missing")
	}
}

func TestGPUWithoutReadableUUIDKept(t *testing.T) {
	lib := newTwoGPUs()
	lib.gpus[0].fail = map[string]nvml.Return{"GetUUID": nvml.ERROR_UNKNOWN}
	h := newHarness(t, lib, nil)
	h.start()
	// Not lost: kept, named by hw.name only, and read.
	if pts := points(h.scrape()); pts["host hw.power"] != 312.5 {
		t.Errorf("GPU without UUID not read: %v", pts["host hw.power"])
	}
}

func TestShutdownStopsEventGoroutine(t *testing.T) {
	lib := newTwoGPUs()
	cfg := NewDefaultConfig()
	src := New(cfg, receivertest.NewNopSettings(metadata.Type), nil,
		WithInterface(lib), WithEventTimeout(50*time.Millisecond))
	if err := src.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if lib.events == nil {
		t.Fatal("no event set")
	}
	begin := time.Now()
	if err := src.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begin); d > 500*time.Millisecond {
		t.Errorf("Shutdown took %v with a 50 ms event wait", d)
	}
	if lib.events.freedCount() != 1 || lib.shutdowns != 1 {
		t.Errorf("event set freed %d times, nvmlShutdown %d times; want 1, 1", lib.events.freedCount(), lib.shutdowns)
	}
	if _, ok := <-src.Logs(); ok {
		t.Error("Logs open after Shutdown")
	}
	goleak.VerifyNone(t)
	// Idempotent; Start after Shutdown does nothing; late XIDs are ignored.
	if err := src.Shutdown(t.Context()); err != nil {
		t.Error(err)
	}
	if err := src.Start(t.Context()); err != nil || lib.inits != 1 {
		t.Errorf("Start after Shutdown: %v, %d inits", err, lib.inits)
	}
	src.RecordXID(uuid0, 79, 0, "")
}

func TestShutdownReturnsWhenContextEnds(t *testing.T) {
	lib := newTwoGPUs()
	src := New(NewDefaultConfig(), receivertest.NewNopSettings(metadata.Type), nil,
		WithInterface(lib), WithEventTimeout(300*time.Millisecond))
	if err := src.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let the goroutine enter a wait
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := src.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 200*time.Millisecond {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(begin))
	}
	// The release finishes once the wait returns: NVML is never shut down
	// under a running wait.
	deadline := time.Now().Add(2 * time.Second)
	for lib.events.freedCount() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if lib.events.freedCount() != 1 {
		t.Fatal("event set never freed")
	}
	for range src.Logs() { // closed by the background release
	}
	goleak.VerifyNone(t)
}
