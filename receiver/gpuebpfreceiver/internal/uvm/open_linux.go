//go:build linux

package uvm

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// defaultOpener is uvmtools.Open on procRoot.
func defaultOpener(procRoot string) Opener {
	return func(pid int, opts uvmtools.Options) (Tracker, error) {
		t, err := uvmtools.Open(procRoot, pid, opts)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return t, nil
	}
}

// rawClockOffset measures Unix time minus CLOCK_MONOTONIC_RAW, the clock
// of the driver's CPU timestamps.
func rawClockOffset(now func() time.Time) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts); err != nil {
		return 0
	}
	return now().UnixNano() - ts.Nano()
}

// monoRawOffset measures CLOCK_MONOTONIC_RAW minus CLOCK_MONOTONIC.
func monoRawOffset() int64 {
	var raw, mono unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono) != nil || unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &raw) != nil {
		return 0
	}
	return raw.Nano() - mono.Nano()
}
