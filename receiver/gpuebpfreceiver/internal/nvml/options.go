package nvml

import (
	"errors"
	"time"
)

// ErrUnavailable is wrapped by the error Start returns when NVML cannot be
// used on this machine: the library is missing, the driver is not loaded,
// the library and the kernel driver differ, no GPU is visible, ... The
// message says which. The receiver logs it once and goes on without NVML.
var ErrUnavailable = errors.New("NVML unavailable")

// Option configures a Source beyond its Config, mostly for tests.
type Option func(*options)

type options struct {
	lib          any // an nvml.Interface (see WithInterface); any so that this file builds without cgo
	now          func() time.Time
	hostName     string
	eventTimeout time.Duration
	logBuffer    int
}

func defaultOptions() options {
	return options{
		now:          time.Now,
		eventTimeout: 500 * time.Millisecond,
		logBuffer:    256,
	}
}

// WithClock replaces time.Now: scrape timestamps, PCIe integration and
// the XID hold use it.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithHostName sets host.name instead of os.Hostname().
func WithHostName(name string) Option {
	return func(o *options) { o.hostName = name }
}

// WithEventTimeout sets how long one wait on the NVML event set lasts,
// which bounds how long Shutdown waits for the event goroutine
// (default 500 ms).
func WithEventTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.eventTimeout = d
		}
	}
}

// WithLogBuffer sets how many plog.Logs the Logs channel holds before
// further records are dropped and counted (default 256).
func WithLogBuffer(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.logBuffer = n
		}
	}
}
