//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/dl"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

// WithInterface makes the Source use lib instead of loading
// libnvidia-ml.so.1; tests pass a github.com/NVIDIA/go-nvml/pkg/nvml/mock.
func WithInterface(lib nvml.Interface) Option {
	return func(o *options) { o.lib = lib }
}

// Source reads NVIDIA GPUs through NVML: metrics on demand (Scrape) and
// critical events as they happen (Logs), and a last scrape when it ends
// (Finish). NVML is loaded at Start, so a binary with this source runs on
// machines without the driver; Start then says why NVML is unavailable and
// the rest of the receiver carries on.
//
// Scrape, RecordXID, Finish and the event goroutine may run concurrently.
type Source struct {
	cfg      Config
	set      receiver.Settings
	log      *zap.Logger
	attr     Attributor
	opts     options
	hostName string
	lib      nvml.Interface
	injected bool
	logs     chan plog.Logs

	mu          sync.Mutex
	started     bool
	stopped     bool
	initialized bool // nvmlInit succeeded: Finish (or Shutdown) owes an nvmlShutdown
	logsClosed  bool
	active      fieldSet // fields the configuration wants and the library exports
	devices     []*device
	mb          *metadata.MetricsBuilder
	rb          *metadata.ResourceBuilder
	hostRes     pcommon.Resource
	driver      string
	dropped     int64 // log records the Logs channel had no room for
	panics      int   // recovered panics while reading a device (a bug; tests want 0)
	eventSet    nvml.EventSet
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	scratch     scratch
}

// New returns a Source; it does not touch NVML until Start. attr describes
// the processes NVML names; nil attributes by pid only.
func New(cfg Config, set receiver.Settings, attr Attributor, opts ...Option) *Source {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	log := set.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if attr == nil {
		attr = pidOnly
	}
	host := o.hostName
	if host == "" {
		host, _ = os.Hostname()
	}
	s := &Source{
		cfg:      cfg,
		set:      set,
		log:      log,
		attr:     attr,
		opts:     o,
		hostName: host,
		logs:     make(chan plog.Logs, o.logBuffer),
		rb:       metadata.NewResourceBuilder(cfg.ResourceAttributes),
	}
	if lib, ok := o.lib.(nvml.Interface); ok && lib != nil {
		s.lib, s.injected = lib, true
	}
	s.rb.SetHostName(host)
	s.hostRes = s.rb.Emit()
	return s
}

// Logs delivers XIDs and other critical NVML events as log records, one
// plog.Logs per event. When the consumer falls behind, records are
// dropped and counted (gpu.nvml.log_records.dropped). The channel is
// closed by Finish or Shutdown, after the last record.
func (s *Source) Logs() <-chan plog.Logs { return s.logs }

// Start loads NVML, finds the GPUs and starts waiting for events. When
// NVML cannot be used it returns an error wrapping ErrUnavailable that
// says why; the Source then stays idle (Scrape returns nothing).
func (s *Source) Start(_ context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped || !s.cfg.Enabled {
		return nil
	}
	s.started = true
	if s.lib == nil {
		var lopts []nvml.LibraryOption
		if s.cfg.LibraryPath != "" {
			lopts = append(lopts, nvml.WithLibraryPath(s.cfg.LibraryPath))
		}
		s.lib = nvml.New(lopts...)
	}
	if ret := s.lib.Init(); ret != nvml.SUCCESS {
		return s.initError(ret)
	}
	s.initialized = true
	ok := false
	defer func() {
		if !ok {
			s.lib.Shutdown()
			s.initialized = false
			s.devices = nil
		}
	}()

	s.active = wantedFields(&s.cfg) &^ s.missingSymbols()
	if v, ret := s.lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		s.driver = v
	}
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("%w: nvmlDeviceGetCount: %v", ErrUnavailable, ret)
	}
	for i := 0; i < n; i++ {
		if d := s.discover(i); d != nil {
			s.devices = append(s.devices, d)
		}
	}
	if len(s.devices) == 0 {
		return fmt.Errorf("%w: NVML sees no GPU this process may use (%d present)", ErrUnavailable, n)
	}
	s.mb = metadata.NewMetricsBuilder(s.cfg.MetricsBuilderConfig, s.set,
		metadata.WithStartTime(pcommon.NewTimestampFromTime(s.opts.now())))
	if s.cfg.Events {
		s.startEvents()
	}
	ok = true
	s.log.Info("NVML source started", zap.Int("gpus", len(s.devices)), zap.String("driver", s.driver))
	return nil
}

// initError turns a failed nvmlInit into an error that says what to fix.
func (s *Source) initError(ret nvml.Return) error {
	var reason string
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		name := "libnvidia-ml.so.1"
		if s.cfg.LibraryPath != "" {
			name = s.cfg.LibraryPath
		}
		reason = name + " not found"
		if !s.injected {
			if detail := dlopenError(name); detail != "" {
				if !strings.Contains(detail, "No such file") {
					reason = name + " could not be loaded"
				}
				reason += " (" + detail + ")"
			}
		}
		reason += "; is the NVIDIA driver installed and its library visible to the collector?"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		reason = "the NVIDIA kernel driver is not loaded"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		reason = "driver/library version mismatch: libnvidia-ml and the loaded kernel driver are different versions (reload the driver or reboot after an upgrade)"
	case nvml.ERROR_NO_PERMISSION:
		reason = "no permission to open the NVIDIA devices (/dev/nvidiactl, /dev/nvidia*)"
	default:
		reason = "nvmlInit failed"
	}
	return fmt.Errorf("%w: %s [%s]", ErrUnavailable, reason, ret.Error())
}

// dlopenError is the dynamic loader's own words on why name does not load.
func dlopenError(name string) string {
	lib := dl.New(name, dl.RTLD_LAZY|dl.RTLD_GLOBAL)
	if err := lib.Open(); err != nil {
		return err.Error()
	}
	_ = lib.Close()
	return ""
}

// missingSymbols returns the fields whose NVML function the loaded library
// lacks (see fieldSymbols).
func (s *Source) missingSymbols() (missing fieldSet) {
	defer func() {
		if recover() != nil { // a mock without Extensions: assume a complete library
			missing = 0
		}
	}()
	ext := s.lib.Extensions()
	if ext == nil {
		return 0
	}
	found := map[string]bool{}
	for f, sym := range fieldSymbols {
		ok, seen := found[sym]
		if !seen {
			ok = ext.LookupSymbol(sym) == nil
			found[sym] = ok
		}
		if !ok {
			missing.add(f)
			s.log.Debug("NVML function missing from the library; its data is not read",
				zap.String("function", sym), zap.Stringer("field", f))
		}
	}
	return missing
}

// Finish ends the source and returns its last metrics: the event
// goroutine stops (within one event wait, WithEventTimeout), then every
// GPU is scraped one last time, then NVML is released and Logs closed.
// The last scrape is always taken when NVML is running, however recent
// the one before: it is what NVML's cumulative counters (energy, ECC,
// NVLink) and the Xids counted since then (hw.errors, hw.status, also
// those whose log records went out during Finish) come to at the end;
// without it they would be lost. It costs what a Scrape costs (tens of
// milliseconds per GPU). Without NVML (Start failed or never ran) there
// is nothing to scrape or release.
//
// If ctx ends first, Finish returns its error and no metrics; the scrape
// and the release finish in the background (NVML is never shut down under
// a running call). Only the first Finish or Shutdown does anything;
// afterwards Finish and Scrape return no metrics.
func (s *Source) Finish(ctx context.Context) (pmetric.Metrics, error) {
	return s.finish(ctx, true)
}

// Shutdown is Finish without the last scrape: it stops the event
// goroutine, releases NVML and closes Logs. It returns once the goroutine
// has stopped (within one event wait, WithEventTimeout) or ctx ends, in
// which case the release finishes in the background.
func (s *Source) Shutdown(ctx context.Context) error {
	_, err := s.finish(ctx, false)
	return err
}

func (s *Source) finish(ctx context.Context, scrape bool) (pmetric.Metrics, error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return pmetric.NewMetrics(), nil
	}
	s.stopped = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	md := pmetric.NewMetrics()
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.wg.Wait()
		if scrape {
			md = s.lastScrape(ctx)
		}
		err = s.release()
	}()
	select {
	case <-done:
		if ctx.Err() != nil {
			return pmetric.NewMetrics(), ctx.Err()
		}
		return md, err
	case <-ctx.Done():
		return pmetric.NewMetrics(), ctx.Err()
	}
}

// release frees what Start acquired, once no goroutine uses it.
func (s *Source) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.eventSet != nil {
		if ret := s.eventSet.Free(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("nvml: nvmlEventSetFree: %v", ret))
		}
		s.eventSet = nil
	}
	if s.initialized {
		if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
			errs = append(errs, fmt.Errorf("nvml: nvmlShutdown: %v", ret))
		}
		s.initialized = false
	}
	if !s.logsClosed {
		close(s.logs)
		s.logsClosed = true
	}
	return errors.Join(errs...)
}
