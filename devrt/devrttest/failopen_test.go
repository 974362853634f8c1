package devrttest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// gpuext_ring_hdr.disabled_reason values (devrt/src/devrt.h).
const reasonInjected = 1

// Whatever fails inside devrt, the program computes the same and exits
// the same; devrt turns off what failed and says so in the ring if it has
// one.
func TestFailOpen(t *testing.T) {
	h := newHarness(t)
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	storm := []string{"launch-storm", "100"}
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		check func(t *testing.T, plain, r *run)
	}{
		{"ring directory is a file", []string{"GPUEXT_DEVRT_DIR=" + file}, storm, noRing},
		{"ring directory missing", []string{"GPUEXT_DEVRT_DIR=/nonexistent/devrt"}, storm, noRing},
		{"ring cannot be created", []string{"GPUEXT_DEVRT_FAULT_INJECT=ring"}, storm, noRing},
		{"turned off by configuration", []string{"GPUEXT_DEVRT_DISABLE=1"}, storm, noRing},
		{"turns itself off after 10 records", []string{"GPUEXT_DEVRT_FAULT_INJECT=disable-after=10"}, storm,
			func(t *testing.T, _, r *run) {
				rg := r.only(t)
				require.Equal(t, uint32(2), rg.ctr.State, "disabled, not closed: devrt stopped reporting")
				require.Equal(t, uint32(reasonInjected), rg.ctr.DisabledReason)
				require.Len(t, rg.calls, 10)
				require.Equal(t, uint64(104-10), rg.ctr.Drops[1], "drops[GPUEXT_RDROP_DISABLED]: every call let through")
			}},
		{"no poller thread", []string{"GPUEXT_DEVRT_SAMPLE=1", "GPUEXT_DEVRT_FAULT_INJECT=poller"}, storm, untimed},
		{"no events", []string{"GPUEXT_DEVRT_SAMPLE=1", "GPUEXT_DEVRT_FAULT_INJECT=events"}, storm, untimed},
		{"driver functions missing", []string{"GPUEXT_DEVRT_SAMPLE=1", "GPUEXT_DEVRT_FAULT_INJECT=driver"}, storm, untimed},
		{"entry points handed out unwrapped", []string{"GPUEXT_DEVRT_FAULT_INJECT=procaddr"}, []string{"runtime", "20"},
			func(t *testing.T, _, r *run) {
				// Only the runtime's exported functions are seen; its
				// driver calls go through unwrapped pointers.
				rg := r.only(t)
				require.Equal(t, map[ev.API]int{ev.APICudaRegisterFunction: 1, ev.APICudaLaunchKernel: 20}, countByAPI(rg.calls))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := h.run(opts{}, tc.args...)
			r := h.run(opts{devrt: true, env: tc.env}, tc.args...)
			require.Equal(t, comparable(t, plain.raw), comparable(t, r.raw), "the program's output")
			tc.check(t, plain, r)
		})
	}
}

// noRing: devrt passed every call through and made no driver call.
func noRing(t *testing.T, plain, r *run) {
	require.Empty(t, r.rings(t))
	require.Equal(t, plain.final[plain.res.PID], r.final[r.res.PID])
}

// untimed: every call reported, none timed, each sampled one counted as
// a timing drop.
func untimed(t *testing.T, _, r *run) {
	rg := r.only(t)
	require.Equal(t, uint32(3), rg.ctr.State)
	require.Len(t, rg.calls, 104)
	require.Empty(t, rg.execs)
	require.Equal(t, uint64(100), rg.ctr.Drops[2], "drops[GPUEXT_RDROP_TIMING]")
}
