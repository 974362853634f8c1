package cudaprobe

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// devrtAliases are the symbols devrt interposes that have no probe of their
// own, each with the probed symbol it reports as (same API and flags).
// CUDA 13's nvcc host stubs call __cudaLaunchKernel[_ptsz], libcudart's
// trampoline into cudaLaunchKernel[_ptsz]: the uprobe on cudaLaunchKernel
// sees those launches through it, but the trampoline's internal call never
// reaches a preloaded library, so devrt interposes the trampoline itself.
var devrtAliases = map[string]string{
	"__cudaLaunchKernel":      "cudaLaunchKernel",
	"__cudaLaunchKernel_ptsz": "cudaLaunchKernel_ptsz",
}

// devrt (the in-process runtime, devrt/) interposes the same functions and
// writes the same records as these probes; its devrt-symbols program prints
// its table as "symbol api flags class" lines. The two tables must be equal,
// and devrt's class of each API must be the control-page bit of the API's
// class (launch, memory, copy, sync; contexts and modules share one bit).
// The only exceptions are devrtAliases.
func TestDevrtTableMatchesProbes(t *testing.T) {
	dir := os.Getenv("DEVRT")
	if dir == "" {
		_, self, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(self), "..", "..", "..", "..", "build", "devrt")
	}
	prog := filepath.Join(dir, "devrt-symbols")
	if _, err := os.Stat(prog); err != nil {
		t.Skipf("devrt-symbols not built (%v): run make devrt, or set DEVRT to devrt's build folder", err)
	}
	out, err := exec.Command(prog).Output()
	require.NoError(t, err)

	classBit := map[ev.Class]uint64{
		ev.ClassLaunch: 1 << 0, ev.ClassMemory: 1 << 1, ev.ClassCopy: 1 << 2,
		ev.ClassSync: 1 << 3, ev.ClassModule: 1 << 4, ev.ClassContext: 1 << 4,
	}
	got := map[string]probe{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		require.Len(t, f, 4, sc.Text())
		n := make([]uint64, 3)
		for i := range n {
			n[i], err = strconv.ParseUint(f[i+1], 10, 64)
			require.NoError(t, err, sc.Text())
		}
		require.NotContains(t, got, f[0], "listed twice")
		api := ev.API(n[0])
		got[f[0]] = probe{api, n[1]}
		require.Equal(t, classBit[api.Class()], n[2], "%s: class of %s", f[0], api)
	}
	require.NoError(t, sc.Err())
	for alias, sym := range devrtAliases {
		require.NotContains(t, symbols, alias, "an alias is not probed")
		require.Contains(t, got, alias, "devrt interposes the alias")
		require.Contains(t, symbols, sym)
		require.Equal(t, symbols[sym], got[alias], "%s reported as %s", alias, sym)
		delete(got, alias)
	}
	require.Equal(t, symbols, got)
}
