package uvm

import (
	"errors"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// Tracker is what the Source needs of a *uvmtools.Tracker; tests inject
// fakes through WithOpener.
type Tracker interface {
	Read(fn func(uvmtools.Event)) (n int, dropped uint64, err error)
	Wait(timeout time.Duration) (bool, error)
	Flush() error
	Processors() (uvmtools.ProcessorTable, error)
	Stats() uvmtools.Stats
	Exited() bool
	Close() error
}

// Opener attaches a Tracker to process pid, as uvmtools.Open does; its
// errors should wrap uvmtools' (ErrNotCUDA is retried).
type Opener func(pid int, opts uvmtools.Options) (Tracker, error)

// ErrProcessLimit is returned by Track when max_processes processes are
// tracked already.
var ErrProcessLimit = errors.New("uvm: max_processes reached")

// ErrStopped is returned by Track after Shutdown.
var ErrStopped = errors.New("uvm: source shut down")

// Option configures a Source beyond its Config, mostly for tests.
type Option func(*options)

type options struct {
	opener    Opener
	procRoot  string
	now       func() time.Time
	hostName  string
	logBuffer int
	// retry of Track on ErrNotCUDA: attempts after the first, the first
	// delay (doubled each time) and its cap.
	retries    int
	retryDelay time.Duration
	retryMax   time.Duration
	rawOffset  *int64 // ns to add to a CLOCK_MONOTONIC_RAW time to get Unix time
	// fentry backend: its loader, and CLOCK_MONOTONIC_RAW - CLOCK_MONOTONIC
	fentry        FentryLoader
	monoRawOffset func() int64
}

func defaultOptions() options {
	return options{
		procRoot:   "/proc",
		now:        time.Now,
		logBuffer:  defaultSampleLogsBuffered,
		retries:    5,
		retryDelay: 250 * time.Millisecond,
		retryMax:   4 * time.Second,

		fentry:        defaultFentryLoader,
		monoRawOffset: monoRawOffset,
	}
}

// WithOpener replaces uvmtools.Open (tests; a receiver that wraps it).
func WithOpener(o Opener) Option {
	return func(opts *options) {
		if o != nil {
			opts.opener = o
		}
	}
}

// WithProcRoot sets the /proc that uvmtools.Open reads (default "/proc").
func WithProcRoot(root string) Option {
	return func(o *options) {
		if root != "" {
			o.procRoot = root
		}
	}
}

// WithClock replaces time.Now (scrape timestamps, observed times).
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithHostName sets host.name instead of os.Hostname().
func WithHostName(name string) Option {
	return func(o *options) { o.hostName = name }
}

// WithLogBuffer sets how many plog.Logs the Logs channel holds before
// further fault samples are dropped and counted (default 64).
func WithLogBuffer(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.logBuffer = n
		}
	}
}

// WithRetry sets how Track retries a process that is not a CUDA process
// yet (uvmtools.ErrNotCUDA): up to attempts more times, waiting delay,
// then twice as long each time up to maxDelay (default 5 attempts, 250 ms
// to 4 s: about 8 s in all). attempts 0 disables retrying.
func WithRetry(attempts int, delay, maxDelay time.Duration) Option {
	return func(o *options) {
		o.retries = max(attempts, 0)
		if delay > 0 {
			o.retryDelay = delay
		}
		o.retryMax = max(maxDelay, o.retryDelay)
	}
}

// WithRawClockOffset sets the offset (ns) from the driver's clock
// (CLOCK_MONOTONIC_RAW) to Unix time used to time-stamp fault samples;
// by default it is measured at New.
func WithRawClockOffset(ns int64) Option {
	return func(o *options) { o.rawOffset = &ns }
}

// WithFentryLoader replaces uvmfentry.Open (tests).
func WithFentryLoader(l FentryLoader) Option {
	return func(o *options) {
		if l != nil {
			o.fentry = l
		}
	}
}
