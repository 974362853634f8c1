//go:build !linux

package uvm

import (
	"fmt"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

func defaultOpener(string) Opener {
	return func(int, uvmtools.Options) (Tracker, error) {
		return nil, fmt.Errorf("%w: the UVM tools interface exists on Linux only", uvmtools.ErrUnsupported)
	}
}

func rawClockOffset(func() time.Time) int64 { return 0 }

func monoRawOffset() int64 { return 0 }
