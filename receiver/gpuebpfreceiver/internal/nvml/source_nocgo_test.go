//go:build !cgo

package nvml

import (
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

func TestWithoutCgoNVMLIsUnavailable(t *testing.T) {
	src := New(NewDefaultConfig(), receivertest.NewNopSettings(metadata.Type), nil)
	err := src.Start(t.Context())
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "without cgo") {
		t.Fatalf("Start: %v", err)
	}
	if md, err := src.Scrape(t.Context()); err != nil || md.ResourceMetrics().Len() != 0 {
		t.Error("Scrape returned data")
	}
	if err := src.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-src.Logs(); ok {
		t.Error("Logs not closed")
	}
}
