//go:build !cgo

package nvml

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
)

// Source is the NVML source of a binary built without cgo: go-nvml needs
// cgo, so Start reports NVML unavailable and the rest is inert.
type Source struct {
	cfg  Config
	logs chan plog.Logs
	once sync.Once
}

// New returns a Source that cannot load NVML (built without cgo).
func New(cfg Config, _ receiver.Settings, _ Attributor, _ ...Option) *Source {
	return &Source{cfg: cfg, logs: make(chan plog.Logs)}
}

// Start returns an error wrapping ErrUnavailable when the source is enabled.
func (s *Source) Start(context.Context) error {
	if !s.cfg.Enabled {
		return nil
	}
	return fmt.Errorf("%w: this binary was built without cgo, which NVML needs", ErrUnavailable)
}

// Scrape returns no metrics.
func (s *Source) Scrape(context.Context) (pmetric.Metrics, error) { return pmetric.NewMetrics(), nil }

// Logs never delivers anything; it is closed by Finish or Shutdown.
func (s *Source) Logs() <-chan plog.Logs { return s.logs }

// RecordXID does nothing without NVML.
func (s *Source) RecordXID(string, uint64, uint32, string) {}

// Finish closes Logs; there are no metrics.
func (s *Source) Finish(ctx context.Context) (pmetric.Metrics, error) {
	return pmetric.NewMetrics(), s.Shutdown(ctx)
}

// Shutdown closes Logs.
func (s *Source) Shutdown(context.Context) error {
	s.once.Do(func() { close(s.logs) })
	return nil
}
