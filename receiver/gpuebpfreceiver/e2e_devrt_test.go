package gpuebpfreceiver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/cudaprobe"
)

// These tests run the fake workload with the real devrt library preloaded
// (LD_PRELOAD) and compare what the receiver reports with what the
// workload did, as e2e_test.go does for the uprobes: devrt alone (no root
// needed), and devrt with the uprobes attached too, where every call must
// still appear exactly once. They need the library: $DEVRT names its
// folder (make test sets it); without it they look in build/devrt.

const devrtSample = 32 // the library's default; the control page says the same

// devrtLibrary returns the path of libgpuext-devrt.so or skips the test.
func devrtLibrary(t *testing.T) string {
	dir := os.Getenv("DEVRT")
	if dir == "" {
		_, self, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(self), "..", "..", "build", "devrt")
	}
	lib := filepath.Join(dir, "libgpuext-devrt.so")
	if _, err := os.Stat(lib); err != nil {
		t.Skipf("devrt library not built (%v): run make -C devrt, or set DEVRT to the folder of libgpuext-devrt.so", err)
	}
	return lib
}

// devrtEnv preloads devrt writing its ring (and its own driver calls,
// GPUEXT_DEVRT_STATS) into ringDir. It reports nested driver calls too (as
// withDevrt's control page does), so that every call the fake driver
// counts has its span; TestEndToEndDevrtFoldsNested checks the default.
// Timed launches are counted exactly: no minimum interval between them.
func devrtEnv(lib, ringDir string, extra ...string) []string {
	return append([]string{"LD_PRELOAD=" + lib, "GPUEXT_DEVRT_DIR=" + ringDir, "GPUEXT_DEVRT_STATS=1",
		"GPUEXT_DEVRT_SAMPLE=" + strconv.Itoa(devrtSample), "GPUEXT_DEVRT_SAMPLE_GAP_US=0",
		"GPUEXT_DEVRT_CLASSES=all,nested"}, extra...)
}

func withDevrt(ringDir string) func(*Config) {
	return func(c *Config) {
		c.DevRT.Directories = []string{ringDir}
		c.DevRT.PollInterval = 10 * time.Millisecond
		c.DevRT.SampleEvery = devrtSample
		c.DevRT.SampleMinInterval = 0
		c.DevRT.NestedCalls = true
	}
}

// devrtOwnCalls is what devrt itself called in the driver (event pools,
// anchors), which the workload's driver counters include: its stats file.
func devrtOwnCalls(t *testing.T, ringDir string, pid int) map[string]int {
	files, err := filepath.Glob(filepath.Join(ringDir, "gpuext-devrt-"+strconv.Itoa(pid)+"-*.stats.json"))
	require.NoError(t, err)
	own := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var m map[string]int
		require.NoError(t, json.Unmarshal(data, &m), string(data))
		for k, v := range m {
			own[k] += v
		}
	}
	return own
}

// expectedDevrtSpans is one span per probed call the program made: the
// driver's counts less devrt's own calls, and the runtime's launches
// (__cudaRegisterFunction makes no span). devrt's poller may make its own
// calls (an anchor's cuEventSynchronize) after the workload printed the
// driver's counts, so the difference is never less than what the program
// itself called.
func expectedDevrtSpans(t *testing.T, res workloadResult, own map[string]int) (map[string]int, int) {
	out := map[string]int{}
	total := 0
	add := func(api ev.API, n int) {
		if n > 0 && api != ev.APICudaRegisterFunction {
			out[api.String()] += n
			total += n
		}
	}
	for sym, n := range res.DriverCalls {
		if api, ok := cudaprobe.APIOfSymbol(sym); ok {
			add(api, max(n-own[sym], res.Calls[sym]))
		}
	}
	for sym, n := range res.Calls {
		if api, ok := runtimeAPIOf(sym); ok {
			add(api, n)
		}
	}
	return out, total
}

func isGPUSpan(s ptrace.Span) bool { return strings.HasSuffix(s.Name(), " gpu") }

// checkGPUSpans checks each GPU execution span against its parent call and
// returns them by name.
func checkGPUSpans(t *testing.T, spans []ptrace.Span, kernelNS int64) map[string]int {
	byID := map[pcommon.SpanID]ptrace.Span{}
	for _, s := range spans {
		byID[s.SpanID()] = s
	}
	out := map[string]int{}
	for _, s := range spans {
		if !isGPUSpan(s) {
			continue
		}
		out[s.Name()]++
		call, ok := byID[s.ParentSpanID()]
		require.True(t, ok, "%s: its call is its parent", s.Name())
		require.Equal(t, call.TraceID(), s.TraceID())
		require.Equal(t, call.Name()+" gpu", s.Name())
		require.GreaterOrEqual(t, s.StartTimestamp(), call.StartTimestamp(), "the work starts after the call does")
		// The queue delay is the raw difference; span times go through
		// the wall-clock offset, recalibrated at each emission.
		delay, _ := s.Attributes().Get("gpu.cuda.queue.delay")
		require.InDelta(t, int64(s.StartTimestamp()-call.StartTimestamp()), delay.Int(), 1000)
		if kernelNS > 0 && strings.Contains(s.Name(), "Launch") {
			// The fake GPU runs each kernel kernelNS; event times come
			// from the host clock, so a loaded machine can add to it.
			d := int64(s.EndTimestamp() - s.StartTimestamp())
			require.GreaterOrEqual(t, d, kernelNS*95/100, "the fake GPU's kernel time")
			require.Less(t, d, kernelNS*50, "the fake GPU's kernel time")
			name, _ := s.Attributes().Get("gpu.cuda.kernel.name")
			require.NotEmpty(t, name.Str())
		}
	}
	return out
}

func histogramOf(rm pmetric.ResourceMetrics, name string, attrs map[string]string) uint64 {
	ms := rm.ScopeMetrics().At(0).Metrics()
	var n uint64
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() != name {
			continue
		}
		dps := ms.At(i).Histogram().DataPoints()
		for d := 0; d < dps.Len(); d++ {
			match := true
			for k, v := range attrs {
				if got, ok := dps.At(d).Attributes().Get(k); !ok || got.AsString() != v {
					match = false
				}
			}
			if match {
				n += dps.At(d).Count()
			}
		}
	}
	return n
}

// requireNoDevrtLoss: every devrt loss counter is zero.
func requireNoDevrtLoss(t *testing.T, self pmetric.ResourceMetrics) {
	t.Helper()
	for _, reason := range []string{"ring_full", "disabled", "timing_unavailable", "ring_corrupt", "decode_error", "process_limit"} {
		n, found := metricSum(self, "gpu.ebpf.events.dropped", map[string]string{"gpu.source": "devrt", "reason": reason})
		require.True(t, found, reason)
		require.Zero(t, n, "devrt dropped: %s", reason)
	}
	for _, reason := range []string{"invalid", "corrupt", "stale"} {
		n, _ := metricSum(self, "gpu.ebpf.devrt.rings.rejected", map[string]string{"reason": reason})
		require.Zero(t, n, "rings rejected: %s", reason)
	}
}

// ringsGone waits until the process's rings are drained and removed.
func ringsGone(t *testing.T, ringDir string, pid int) {
	require.Eventually(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(ringDir, "gpuext-devrt-"+strconv.Itoa(pid)+"-*.ring"))
		return len(m) == 0
	}, 10*time.Second, 10*time.Millisecond, "the rings of %d are removed after its exit", pid)
}

// TestEndToEndDevrt: devrt alone (the uprobe source off).
// By default (devrt::nested_calls off) a runtime launch is one span: the
// driver launch the runtime makes inside it has no record, and the GPU
// execution span of a timed launch hangs from the runtime launch, named.
func TestEndToEndDevrtFoldsNested(t *testing.T) {
	lib := devrtLibrary(t)
	ringDir := t.TempDir()
	cfg := devrtConfig(ringDir)
	withDevrt(ringDir)(cfg)
	cfg.DevRT.NestedCalls = false
	traces, metrics := startDevrtOnly(t, cfg)
	h := &harness{t: t, dir: fakeCUDA(t), traces: traces, metrics: metrics}

	env := []string{"LD_PRELOAD=" + lib, "GPUEXT_DEVRT_DIR=" + ringDir, "GPUEXT_DEVRT_STATS=1",
		"GPUEXT_DEVRT_SAMPLE=" + strconv.Itoa(devrtSample), "GPUEXT_DEVRT_SAMPLE_GAP_US=0"}
	res := h.run(env, "runtime-stub", "10")
	ringsGone(t, ringDir, res.PID)
	want, total := expectedDevrtSpans(t, res, devrtOwnCalls(t, ringDir, res.PID))
	require.Equal(t, 10, want["cudaLaunchKernel"])
	require.Equal(t, 10, want["cuLaunchKernel"], "the runtime's driver launches, which the driver counted")
	delete(want, "cuLaunchKernel")
	total -= 10
	want["cudaLaunchKernel gpu"] = 1 // the first of the thread's 10 launches
	spans := h.spansOf(res.PID, total+1)
	require.Equal(t, want, countBy(spans, ptrace.Span.Name))
	require.Equal(t, map[string]int{"cudaLaunchKernel gpu": 1}, checkGPUSpans(t, spans, 0))
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), "cudaLaunchKernel") {
			require.Equal(t, "saxpyKernel(float, float const*, float*)", attr(s, "gpu.cuda.kernel.name"), s.Name())
		}
	}
}

func TestEndToEndDevrt(t *testing.T) {
	lib := devrtLibrary(t)
	ringDir := t.TempDir()
	cfg := devrtConfig(ringDir)
	withDevrt(ringDir)(cfg)
	traces, metrics := startDevrtOnly(t, cfg)
	h := &harness{t: t, dir: fakeCUDA(t), traces: traces, metrics: metrics}

	t.Run("launch storm: every call once, 1 in 32 launches timed", func(t *testing.T) {
		h.t = t
		// 100 µs a kernel: the final synchronise waits for 100 ms of
		// queued work, so the process lives long enough for its ring to be
		// found while it runs, and it is attributed from /proc.
		res := h.run(devrtEnv(lib, ringDir, "FAKECUDA_KERNEL_NS=100000"), "launch-storm", "1000")
		ringsGone(t, ringDir, res.PID)
		want, total := expectedDevrtSpans(t, res, devrtOwnCalls(t, ringDir, res.PID))
		require.Equal(t, 1000, want["cuLaunchKernel"])
		timed := (1000 + devrtSample - 1) / devrtSample
		want["cuLaunchKernel gpu"] = timed
		spans := h.spansOf(res.PID, total+timed)
		require.Equal(t, want, countBy(spans, ptrace.Span.Name))
		require.Equal(t, map[string]int{"cuLaunchKernel gpu": 32}, checkGPUSpans(t, spans, 100000))
		for _, s := range spans {
			if s.Name() == "cuLaunchKernel" {
				require.Equal(t, "vecAdd(float*, float*, float*, int)", attr(s, "gpu.cuda.kernel.name"))
				require.Equal(t, "128x1x1", attr(s, "gpu.cuda.grid"))
				require.Equal(t, ptrace.StatusCodeUnset, s.Status().Code())
			}
		}
		proc, self := h.lastMetrics(res.PID)
		require.Equal(t, "workload", proc.Resource().Attributes().AsRaw()["process.executable.name"])
		n, _ := metricSum(proc, "gpu.cuda.launches", map[string]string{"gpu.cuda.api": "cuLaunchKernel"})
		require.Equal(t, int64(1000), n)
		n, _ = metricSum(proc, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": "cuLaunchKernel", "gpu.cuda.result": "CUDA_SUCCESS"})
		require.Equal(t, int64(1000), n)
		api := map[string]string{"gpu.cuda.api": "cuLaunchKernel"}
		require.Equal(t, uint64(32), histogramOf(proc, "gpu.kernel.execution.duration", api))
		require.Equal(t, uint64(32), histogramOf(proc, "gpu.kernel.queue.delay", api))
		requireNoDevrtLoss(t, self)
		n, _ = metricSum(self, "gpu.ebpf.devrt.rings", map[string]string{"gpu.devrt.ring.state": "active"})
		require.Zero(t, n, "no ring left")
	})

	t.Run("copies: bytes by direction, the first copy timed", func(t *testing.T) {
		h.t = t
		res := h.run(devrtEnv(lib, ringDir), "copies")
		ringsGone(t, ringDir, res.PID)
		want, total := expectedDevrtSpans(t, res, devrtOwnCalls(t, ringDir, res.PID))
		want["cuMemcpyHtoD gpu"] = 1 // the first of 13 copies and sets of the thread
		spans := h.spansOf(res.PID, total+1)
		require.Equal(t, want, countBy(spans, ptrace.Span.Name))
		checkGPUSpans(t, spans, 0)
		for _, s := range spans {
			if s.Name() == "cuMemcpyHtoD gpu" {
				require.Equal(t, "htod", attr(s, "gpu.cuda.copy.direction"))
				require.Equal(t, "4096", attr(s, "gpu.cuda.copy.bytes"))
			}
		}
		proc, self := h.lastMetrics(res.PID)
		for dir, key := range map[string]string{"htod": "htod", "dtoh": "dtoh", "dtod": "dtod", "peer": "peer"} {
			n, _ := metricSum(proc, "gpu.cuda.memory.copied", map[string]string{"gpu.cuda.copy.direction": dir})
			require.Equal(t, res.Bytes[key], n, dir)
		}
		require.Equal(t, uint64(1), histogramOf(proc, "gpu.cuda.copy.execution.duration",
			map[string]string{"gpu.cuda.api": "cuMemcpyHtoD", "gpu.cuda.copy.direction": "htod"}))
		requireNoDevrtLoss(t, self)
	})

	// The driver launches nest in the runtime launches, which are named from
	// the registered stub (geometry from cudaLaunchKernelExC's config;
	// __cudaLaunchKernel's launches reported as cudaLaunchKernel).
	for _, c := range []struct{ scenario, api, grid, block string }{
		{"runtime", "cudaLaunchKernel", "64x1x1", "128x1x1"},
		{"runtime-ex", "cudaLaunchKernelExC", "32x2x1", "64x2x1"},
		{"runtime-stub", "cudaLaunchKernel", "16x4x1", "32x4x1"},
	} {
		t.Run(c.scenario+": driver launches nest in "+c.api, func(t *testing.T) {
			h.t = t
			res := h.run(devrtEnv(lib, ringDir), c.scenario, "10")
			ringsGone(t, ringDir, res.PID)
			want, total := expectedDevrtSpans(t, res, devrtOwnCalls(t, ringDir, res.PID))
			require.Equal(t, 10, want[c.api])
			var spans []ptrace.Span
			require.Eventually(t, func() bool {
				spans = spansOfPID(h.traces, res.PID)
				calls := 0
				for _, s := range spans {
					if !isGPUSpan(s) {
						calls++
					}
				}
				return calls == total
			}, 10*time.Second, 10*time.Millisecond)
			calls := map[string]int{}
			byID := map[pcommon.SpanID]ptrace.Span{}
			for _, s := range spans {
				if !isGPUSpan(s) {
					calls[s.Name()]++
				}
				byID[s.SpanID()] = s
			}
			require.Equal(t, want, calls)
			checkGPUSpans(t, spans, 0)
			nested := 0
			for _, s := range spans {
				switch s.Name() {
				case c.api:
					require.Equal(t, "saxpyKernel(float, float const*, float*)", attr(s, "gpu.cuda.kernel.name"))
					require.Equal(t, c.grid, attr(s, "gpu.cuda.grid"))
					require.Equal(t, c.block, attr(s, "gpu.cuda.block"))
				case "cuLaunchKernel":
					parent, ok := byID[s.ParentSpanID()]
					require.True(t, ok)
					require.Equal(t, c.api, parent.Name())
					nested++
				}
			}
			require.Equal(t, 10, nested)
		})
	}

	t.Run("threads: 1 in 32 launches of each thread timed or counted", func(t *testing.T) {
		h.t = t
		untimedBefore := devrtUntimed(h)
		res := h.run(devrtEnv(lib, ringDir), "threads", "4", "500")
		ringsGone(t, ringDir, res.PID)
		want, total := expectedDevrtSpans(t, res, devrtOwnCalls(t, ringDir, res.PID))
		_, self := h.lastMetrics(res.PID)
		untimed, _ := metricSum(self, "gpu.ebpf.events.dropped", map[string]string{"gpu.source": "devrt", "reason": "timing_unavailable"})
		untimed -= untimedBefore
		// Every sampled launch is timed, or counted as not timed (devrt
		// had no event pair ready for it).
		sampled := 4 * ((500 + devrtSample - 1) / devrtSample)
		want["cuLaunchKernel gpu"] = sampled - int(untimed)
		if want["cuLaunchKernel gpu"] == 0 {
			delete(want, "cuLaunchKernel gpu")
		}
		spans := h.spansOf(res.PID, total+sampled-int(untimed))
		require.Equal(t, want, countBy(spans, ptrace.Span.Name))
		byTID := countBy(spans, func(s ptrace.Span) string {
			if s.Name() != "cuLaunchKernel gpu" {
				return ""
			}
			return attr(s, "thread.id")
		})
		delete(byTID, "")
		for _, n := range byTID {
			require.LessOrEqual(t, n, 16, "at most 1 in 32 of a thread's 500 launches")
		}
		if untimed == 0 {
			require.Len(t, byTID, 4)
		}
	})
}

// devrtUntimed is the receiver's latest count of sampled calls devrt
// could not time.
func devrtUntimed(h *harness) int64 {
	self, ok := latest(h.metrics, 0)
	if !ok {
		return 0
	}
	n, _ := metricSum(self, "gpu.ebpf.events.dropped", map[string]string{"gpu.source": "devrt", "reason": "timing_unavailable"})
	return n
}

// TestEndToEndDevrtWithUprobes: the uprobes are attached to the same
// driver; a process under devrt is reported once per call, by devrt, and
// the kernel is told to skip it; a process whose devrt is off is the
// uprobes' alone.
func TestEndToEndDevrtWithUprobes(t *testing.T) {
	lib := devrtLibrary(t)
	ringDir := t.TempDir()
	h := startHarness(t, func(c *Config) {
		withDevrt(ringDir)(c)
		c.UVM.Enabled = false // its own resources would blur "the receiver's metrics"
	})

	for _, sc := range []struct {
		name  string
		args  []string
		timed int
	}{
		{"launch-storm", []string{"launch-storm", "1000"}, 32},
		{"copies", []string{"copies"}, 1},
		{"every-api", []string{"every-api"}, -1},
	} {
		t.Run(sc.name, func(t *testing.T) {
			h.t = t
			before := h.rcv.devrtDups.Load()
			res := h.run(devrtEnv(lib, ringDir), sc.args...)
			ringsGone(t, ringDir, res.PID)
			want, total := expectedDevrtSpans(t, res, devrtOwnCalls(t, ringDir, res.PID))
			var spans []ptrace.Span
			if sc.timed >= 0 {
				spans = h.spansOf(res.PID, total+sc.timed)
			} else {
				require.Eventually(t, func() bool {
					spans = spansOfPID(h.traces, res.PID)
					n := 0
					for _, s := range spans {
						if !isGPUSpan(s) {
							n++
						}
					}
					return n >= total
				}, 10*time.Second, 10*time.Millisecond)
				time.Sleep(200 * time.Millisecond)
				spans = spansOfPID(h.traces, res.PID)
			}
			calls := map[string]int{}
			for _, s := range spans {
				if !isGPUSpan(s) {
					calls[s.Name()]++
				}
			}
			require.Equal(t, want, calls, "each call exactly once")
			checkGPUSpans(t, spans, 0)
			require.Greater(t, h.rcv.devrtDups.Load(), before, "the uprobes saw the process and were de-duplicated")
			proc, self := h.lastMetrics(res.PID)
			for api, n := range want {
				got, _ := metricSum(proc, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": api})
				require.Equal(t, int64(n), got, api)
			}
			// Not "unmatched": other test packages run fake workloads
			// too, and this receiver's /proc scan may probe their copies
			// of the driver mid-call.
			for _, reason := range []string{"ring_full", "inflight_full", "decode_error", "process_limit"} {
				n, found := metricSum(self, "gpu.ebpf.events.dropped", map[string]string{"gpu.source": "uprobe", "reason": reason})
				require.True(t, found, reason)
				require.Zero(t, n, "dropped: %s", reason)
			}
			requireNoDevrtLoss(t, self)
		})
	}

	t.Run("devrt off: the uprobes report everything", func(t *testing.T) {
		h.t = t
		res := h.run(devrtEnv(lib, ringDir, "GPUEXT_DEVRT_DISABLE=1"), "launch-storm", "200")
		want, total := expectedSpans(t, res.DriverCalls)
		spans := h.spansOf(res.PID, total)
		require.Equal(t, want, countBy(spans, ptrace.Span.Name))
		m, _ := filepath.Glob(filepath.Join(ringDir, "gpuext-devrt-"+strconv.Itoa(res.PID)+"-*.ring"))
		require.Empty(t, m, "no ring")
	})
}
