package devrttest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject/injecttest"
)

// gpuRun is bench/device/inject_check.py's JSON line.
type gpuRun struct {
	Mode     string   `json:"mode"`
	OK       bool     `json:"ok"`
	Bad      int      `json:"bad"`
	Value    float64  `json:"value"`
	LoadNS   float64  `json:"load_ns"`
	LaunchNS float64  `json:"launch_ns"`
	Marks    []uint64 `json:"marks"`
	Left     int      `json:"maps_left"`
	Error    string   `json:"error"`
}

// shmSocketDir is a short directory on tmpfs, as a ring directory must be
// for the region to be registered (devrt/src/inject.c, region_make).
func shmSocketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "inj")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestInjectOnGPU is device probe injection against the real driver: each
// loading path of bench/device/inject_check.py under devrt, without a
// collector and with the injecttest Patcher marking the region from the
// GPU (twice: a patch, then a cache hit). The kernel's results must be the
// same, the twin must have run (its mark is in the region), and the ring
// says what the patch cost. bench/device/inject_check.sh runs it on a GPU
// machine (GPUEXT_INJECT_GPU_PYTHON: the python to use); skipped elsewhere.
func TestInjectOnGPU(t *testing.T) {
	py := os.Getenv("GPUEXT_INJECT_GPU_PYTHON")
	if py == "" {
		t.Skip("not on a GPU machine: bench/device/inject_check.sh runs this there")
	}
	lib := filepath.Join(devrtDir(t), "libgpuext-devrt.so")
	script, err := filepath.Abs(filepath.Join("..", "..", "bench", "device", "inject_check.py"))
	require.NoError(t, err)
	run := func(t *testing.T, mode, dir string) gpuRun {
		cmd := exec.Command(py, script)
		cmd.Env = append(os.Environ(), "MODE="+mode, "LD_PRELOAD="+lib, "GPUEXT_DEVRT_DIR="+dir)
		out, err := cmd.Output()
		require.NoError(t, err, "%s", out)
		var r gpuRun
		require.NoError(t, json.Unmarshal(out, &r), "%s", out)
		return r
	}
	for _, mode := range []string{"ptx", "ptxex", "fatbin", "library"} {
		t.Run(mode, func(t *testing.T) {
			plain := run(t, mode, shmSocketDir(t))
			require.True(t, plain.OK, "%+v", plain)
			require.Empty(t, plain.Marks)

			dir := shmSocketDir(t)
			p := &injecttest.Patcher{SharedSize: 4096, Mark: true}
			serve(t, dir, p)
			var runs []gpuRun
			for range 2 {
				runs = append(runs, run(t, mode, dir))
			}
			evs := injectEvents(t, dir)
			require.Len(t, evs, 2)
			for i, r := range runs {
				e := evs[i]
				require.True(t, r.OK, "%+v", r)
				require.Equal(t, plain.Value, r.Value)
				require.Equal(t, devrtinject.OutPatched, e.Outcome, "%+v %q", e, e.Text)
				require.Equal(t, []uint64{injecttest.MarkValue}, r.Marks, "the twin ran and reached the region")
				require.Zero(t, r.Left, "the region goes with the module")
				require.Equal(t, uint32(1), e.Kernels)
				t.Logf("%s run %d: patched (cache %v): sm_%d, %d B PTX, ask %.3f ms, JIT %.3f ms, "+
					"injection total %.3f ms (load call %.3f ms; without devrt's patch %.3f ms); "+
					"cuLaunchKernel from Python %.0f ns (no collector: %.0f ns)",
					mode, i, e.Flags&devrtinject.FlagCollectorCache != 0, e.SMArch, e.PTXLen,
					float64(e.AskNS)/1e6, float64(e.LoadNS)/1e6, float64(e.TotalNS)/1e6,
					r.LoadNS/1e6, plain.LoadNS/1e6, r.LaunchNS, plain.LaunchNS)
			}
			require.Zero(t, evs[0].Flags&devrtinject.FlagCollectorCache)
			require.NotZero(t, evs[1].Flags&devrtinject.FlagCollectorCache)
			require.Equal(t, int64(1), p.Calls())
		})
	}
	// The 1-D twin (GPUEXT_INJ_GRID1D_SUFFIX) beside the twin, its mark
	// its own: inject_check.py's launches are of 1-D grids, so the real
	// driver found the 1-D twin and ran it, not the twin.
	for _, mode := range []string{"ptx", "library"} {
		t.Run(mode+"-grid1d", func(t *testing.T) {
			plain := run(t, mode, shmSocketDir(t))
			require.True(t, plain.OK, "%+v", plain)
			dir := shmSocketDir(t)
			serve(t, dir, &injecttest.Patcher{SharedSize: 4096, Mark: true, Grid1D: true,
				Grid1DMark: injecttest.Grid1DMarkValue})
			r := run(t, mode, dir)
			require.True(t, r.OK, "%+v", r)
			require.Equal(t, plain.Value, r.Value)
			require.Equal(t, []uint64{injecttest.Grid1DMarkValue}, r.Marks, "the 1-D twin ran and reached the region")
			evs := injectEvents(t, dir)
			require.Len(t, evs, 1)
			require.Equal(t, devrtinject.OutPatched, evs[0].Outcome, "%+v %q", evs[0], evs[0].Text)
		})
	}
}
