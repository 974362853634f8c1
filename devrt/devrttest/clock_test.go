package devrttest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// devrt's timestamps come from the TSC where the kernel's clocksource is the
// TSC, converted with a conversion measured again every 100 ms (clock.c).
// Over 400 ms of paced launches, crossing the first conversion (5 ms) and
// several new ones, the records must keep CLOCK_MONOTONIC's time: one
// thread's starts never go back, each end follows its start, and the span
// from the first start to the last equals what the program measured with
// clock_gettime around its loop, within 50 µs. Both clocks are checked.
func TestTimestampsFollowTheMonotonicClock(t *testing.T) {
	dir := devrtDir(t)
	fake := fakeDir(t)
	for _, clock := range []string{"tsc", "vdso"} {
		t.Run(clock, func(t *testing.T) {
			ringDir := t.TempDir()
			const calls, rate = 20000, 50000 // 400 ms
			cmd := exec.Command(filepath.Join(fake, "callbench"), "paced", strconv.Itoa(calls), strconv.Itoa(rate))
			cmd.Env = append(os.Environ(), "FAKECUDA_COUNT=0", "LD_LIBRARY_PATH="+fake,
				"LD_PRELOAD="+filepath.Join(dir, "libgpuext-devrt.so"), "GPUEXT_DEVRT_DIR="+ringDir,
				"GPUEXT_DEVRT_SAMPLE=0", "GPUEXT_DEVRT_RING_SLOTS=65536", "GPUEXT_DEVRT_CLOCK="+clock)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			cmd.Env = append(cmd.Env, "GPUEXT_DEVRT_DEBUG=1")
			out, err := cmd.Output()
			require.NoError(t, err, string(out)+stderr.String())
			usedTSC := strings.Contains(stderr.String(), "timestamps from the TSC")
			if clock == "vdso" {
				require.False(t, usedTSC)
			} else if src, _ := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); string(src) == "tsc\n" {
				require.True(t, usedTSC, "the kernel keeps time on the TSC: so does devrt\n%s", stderr.String())
			} else {
				t.Logf("clocksource %q: devrt keeps to clock_gettime", src)
			}
			var res struct {
				Calls     int     `json:"calls"`
				NsPerCall float64 `json:"ns_per_call"`
				LoopNS    uint64  `json:"loop_ns"`
			}
			require.NoError(t, json.Unmarshal(out, &res))
			paths, err := filepath.Glob(filepath.Join(ringDir, "gpuext-devrt-*.ring"))
			require.NoError(t, err)
			require.Len(t, paths, 1)
			rg := readRing(t, paths[0])
			launches := byAPI(rg, ev.APICuLaunchKernel)
			require.Len(t, launches, calls)
			for i := range launches {
				require.GreaterOrEqual(t, launches[i].End, launches[i].Start)
				if i > 0 {
					require.GreaterOrEqual(t, launches[i].Start, launches[i-1].Start, "launch %d", i)
				}
			}
			span := launches[calls-1].Start - launches[0].Start
			t.Logf("records' span %d ns, the program's %d ns", span, res.LoopNS)
			// The program's clock_gettime brackets all of its launches:
			// the records' span is inside it and short of it by at most the
			// time of one launch and of the clock reads.
			require.LessOrEqual(t, span, res.LoopNS+50000, "records' span %d, program's %d", span, res.LoopNS)
			require.GreaterOrEqual(t, span+50000, res.LoopNS, "records' span %d, program's %d", span, res.LoopNS)
		})
	}
}
