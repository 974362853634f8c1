package devrttest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject/injecttest"
)

// callbenchNs runs callbench launch n with env and returns its ns/call.
func callbenchNs(b *testing.B, fake string, n int, env []string) float64 {
	b.Helper()
	cmd := exec.Command(filepath.Join(fake, "callbench"), "launch", strconv.Itoa(n))
	cmd.Env = append(append(os.Environ(), "FAKECUDA_COUNT=0", "LD_LIBRARY_PATH="+fake), env...)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("callbench: %v %s", err, out)
	}
	var r struct {
		NsPerCall float64 `json:"ns_per_call"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatal(err)
	}
	return r.NsPerCall
}

// BenchmarkInjectLaunch is what the redirect adds to cuLaunchKernel
// (scripts/bench.sh): devrt passing calls through (classes none, so only
// the redirect differs) with nothing patched, launching a patched kernel
// (lookup, then the twin), and launching an unpatched kernel of a module
// where another was patched (lookup that misses); and with calls reported.
func BenchmarkInjectLaunch(b *testing.B) {
	dir := devrtDir(b)
	fake := fakeDir(b)
	for _, bc := range []struct {
		name   string
		server bool
		env    []string
	}{
		{"without-devrt", false, nil},
		{"classes-none-nothing-patched", false, []string{"GPUEXT_DEVRT_CLASSES=none"}},
		{"classes-none-patched-kernel", true, []string{"GPUEXT_DEVRT_CLASSES=none"}},
		{"classes-none-unpatched-kernel", true, []string{"GPUEXT_DEVRT_CLASSES=none", "CALLBENCH_KERNEL=_Z5otherv"}},
		{"reported-nothing-patched", false, []string{"GPUEXT_DEVRT_SAMPLE=0"}},
		{"reported-patched-kernel", true, []string{"GPUEXT_DEVRT_SAMPLE=0"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			env := bc.env
			if bc.name != "without-devrt" {
				ringDir := shmDir(b)
				env = append(env, "LD_PRELOAD="+filepath.Join(dir, "libgpuext-devrt.so"),
					"GPUEXT_DEVRT_DIR="+ringDir, "GPUEXT_DEVRT_RING_SLOTS="+strconv.Itoa(ringSlots(b.N)))
				if bc.server {
					s, err := devrtinject.Listen(devrtinject.Config{
						Path:    filepath.Join(ringDir, devrtinject.SocketName),
						Patcher: &injecttest.Patcher{SharedSize: 4096, Only: map[string]bool{"_Z6vecAddPfS_S_i": true}}})
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
				}
			}
			b.ReportMetric(callbenchNs(b, fake, b.N, env), "ns/call")
		})
	}
}

// BenchmarkInjectModulePatch is the one-time cost devrt adds to loading
// each PTX module of the corpus (devrt/ptx/testdata/corpus, real nvcc and
// Triton output), from its injection record: asking the collector (hash,
// socket, the test Patcher, answer) on a cache miss and on a hit, and all
// of injection but the driver's load of the patched PTX (the fake driver's
// load costs nothing; on a GPU the JIT is the rest: bench/device).
func BenchmarkInjectModulePatch(b *testing.B) {
	dir := devrtDir(b)
	fake := fakeDir(b)
	// Relative to the package: go test's working directory, also for a
	// compiled test binary run from there on a GPU machine.
	corpus, _ := filepath.Glob(filepath.Join("..", "ptx", "testdata", "corpus", "*.ptx"))
	if len(corpus) == 0 {
		b.Skip("no PTX corpus")
	}
	for _, file := range corpus {
		data, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		kernel := firstEntry(string(data))
		b.Run(strings.TrimSuffix(filepath.Base(file), ".ptx"), func(b *testing.B) {
			var ask, askHit, total float64
			for i := 0; i < b.N; i++ {
				ringDir := shmDir(b)
				s, err := devrtinject.Listen(devrtinject.Config{
					Path: filepath.Join(ringDir, devrtinject.SocketName), Patcher: &injecttest.Patcher{SharedSize: 65536}})
				if err != nil {
					b.Fatal(err)
				}
				env := []string{"LD_PRELOAD=" + filepath.Join(dir, "libgpuext-devrt.so"),
					"GPUEXT_DEVRT_DIR=" + ringDir, "GPUEXT_DEVRT_CLASSES=none",
					"CALLBENCH_PTX=" + file, "CALLBENCH_KERNEL=" + kernel}
				for run := 0; run < 2; run++ {
					callbenchNs(b, fake, 1, env)
				}
				s.Close()
				evs := injectEvents(b, ringDir)
				if len(evs) != 2 || evs[0].Outcome != devrtinject.OutPatched ||
					evs[1].Flags&devrtinject.FlagCollectorCache == 0 {
					b.Fatalf("want a patch, then a cache hit: %+v", evs)
				}
				ask += float64(evs[0].AskNS)
				askHit += float64(evs[1].AskNS)
				total += float64(evs[0].TotalNS - evs[0].LoadNS)
				// Now, not at the end: b.N rings of 6 MiB on tmpfs
				// filled a GPU machine's memory.
				os.RemoveAll(ringDir)
			}
			b.ReportMetric(float64(len(data)), "ptx-bytes")
			b.ReportMetric(ask/float64(b.N), "ask-miss-ns")
			b.ReportMetric(askHit/float64(b.N), "ask-hit-ns")
			b.ReportMetric(total/float64(b.N), "patch-no-jit-ns")
		})
	}
}

func firstEntry(ptx string) string {
	i := strings.Index(ptx, ".entry ")
	if i < 0 {
		return ""
	}
	rest := ptx[i+len(".entry "):]
	return rest[:strings.IndexAny(rest, " \t\n(")]
}

// injectEvents reads the injection records of every ring in dir, in the
// order they were written.
func injectEvents(b testing.TB, dir string) []devrtinject.Event {
	paths, _ := filepath.Glob(filepath.Join(dir, "gpuext-devrt-*.ring"))
	var out []devrtinject.Event
	for _, p := range paths {
		ir := &injectRun{}
		ir.readRingTB(b, p)
		out = append(out, ir.events...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TS < out[j].TS })
	return out
}
