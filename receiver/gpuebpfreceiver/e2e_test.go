package gpuebpfreceiver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/internal/fakecudatest"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/cudaprobe"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
)

// These tests load the real BPF programs, attach real uprobes to the fake
// CUDA driver (testdata/fakecuda), run its workload and compare what the
// receiver reports with what the workload did. They need root.

// fakeCUDA returns a private copy of the fake driver, runtime and programs.
func fakeCUDA(t testing.TB) string { return fakecudatest.Dir(t) }

func requireRoot(t testing.TB) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root")
	}
}

type harness struct {
	t       testing.TB
	dir     string
	traces  *consumertest.TracesSink
	metrics *consumertest.MetricsSink
	rcv     *gpuReceiver
}

func startHarness(t testing.TB, mutate func(*Config)) *harness {
	return startHarnessWrapped(t, mutate, nil)
}

// startHarnessWrapped is startHarness with the traces consumer wrapped
// (wrap nil: none); h.traces still counts what gets through.
func startHarnessWrapped(t testing.TB, mutate func(*Config), wrap func(consumer.Traces) consumer.Traces) *harness {
	t.Helper()
	requireRoot(t)
	dir := fakeCUDA(t)
	cfg := createDefaultConfig().(*Config)
	cfg.CollectionInterval = 100 * time.Millisecond
	cfg.Spans.FlushInterval = 20 * time.Millisecond
	cfg.CUDA.Libraries = []string{dir + "/libcuda.so.1", dir + "/libcudart.so.12"}
	cfg.CUDA.RescanInterval = 0
	cfg.NVML.Enabled = false // no NVIDIA driver here; TestNVMLMissing covers that path
	// Other tests may run fake workloads at the same time: only ours count.
	cfg.CUDA.Include = []ProcessRule{{Executable: "workload"}}
	// Nor are other programs' devrt rings ours: a ring left in /dev/shm
	// by anything run on this machine before (a benchmark that overflowed
	// its ring) would add its drops to the counts the tests expect zero
	// of. Tests of the devrt source set their own directory.
	cfg.DevRT.Directories = []string{t.TempDir()}
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	h := &harness{t: t, dir: dir, traces: new(consumertest.TracesSink), metrics: new(consumertest.MetricsSink)}
	set := receivertest.NewNopSettings(metadata.Type)
	var next consumer.Traces = h.traces
	if wrap != nil {
		next = wrap(next)
	}
	tr, err := createTraces(context.Background(), set, cfg, next)
	require.NoError(t, err)
	_, err = createMetrics(context.Background(), set, cfg, h.metrics)
	require.NoError(t, err)
	h.rcv = tr.(*gpuReceiver)
	require.NoError(t, h.rcv.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, h.rcv.Start(context.Background(), componenttest.NewNopHost()))
	require.NotNil(t, h.rcv.tracer, "the CUDA source must have started")
	t.Cleanup(func() {
		require.NoError(t, h.rcv.Shutdown(context.Background()))
		require.NoError(t, h.rcv.Shutdown(context.Background()))
	})
	return h
}

// workloadResult is the JSON line the fake workload prints.
type workloadResult struct {
	Scenario    string           `json:"scenario"`
	PID         int              `json:"pid"`
	OK          bool             `json:"ok"`
	Calls       map[string]int   `json:"calls"`
	DriverCalls map[string]int   `json:"driver_calls"`
	Launches    int              `json:"launches"`
	Bytes       map[string]int64 `json:"bytes"`
	Memory      map[string]int64 `json:"memory"`
	TIDs        []int            `json:"tids"`
	Child       *childResult     `json:"child"`
}

// childResult is how fork-child reports the program it started.
type childResult struct {
	PID    int            `json:"pid"`
	Result workloadResult `json:"result"`
}

func (h *harness) run(env []string, args ...string) workloadResult {
	h.t.Helper()
	return h.runAs("workload", env, args...)
}

// alias links h.dir/prog to a name only this test process uses (prefix
// and its pid: at most 15 characters, so it is the whole comm) and returns
// the name. Tests that count everything that reaches the consumers trace
// that name only: other packages' tests run the same programs at the same
// time, and the receiver probes their copies of the driver too once it
// sees them mapped.
func (h *harness) alias(prefix, prog string) string {
	h.t.Helper()
	name := prefix + strconv.Itoa(os.Getpid())
	require.NoError(h.t, os.Link(h.dir+"/"+prog, h.dir+"/"+name))
	return name
}

// runAs runs the workload from the file name in h.dir (a link to it).
func (h *harness) runAs(name string, env []string, args ...string) workloadResult {
	h.t.Helper()
	cmd := exec.Command(h.dir+"/"+name, args...)
	cmd.Env = append(os.Environ(), append(env, "LD_LIBRARY_PATH="+h.dir)...)
	out, err := cmd.Output()
	require.NoError(h.t, err, "workload %v: %s", args, out)
	var res workloadResult
	require.NoError(h.t, json.Unmarshal(out, &res), string(out))
	require.True(h.t, res.OK, string(out))
	return res
}

// spansOf returns the spans of process pid, waiting until want of them
// arrived (and a little longer, to catch extra ones).
func (h *harness) spansOf(pid, want int) []ptrace.Span {
	h.t.Helper()
	var got []ptrace.Span
	deadline := time.Now().Add(15 * time.Second)
	for {
		got = got[:0]
		for _, td := range h.traces.AllTraces() {
			rss := td.ResourceSpans()
			for i := 0; i < rss.Len(); i++ {
				rs := rss.At(i)
				if p, _ := rs.Resource().Attributes().Get("process.pid"); p.Int() != int64(pid) {
					continue
				}
				ss := rs.ScopeSpans().At(0).Spans()
				for j := 0; j < ss.Len(); j++ {
					got = append(got, ss.At(j))
				}
			}
		}
		if len(got) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(h.t, want, len(got), "spans of pid %d", pid)
	// Nothing more may arrive: each call is reported once.
	time.Sleep(100 * time.Millisecond)
	n := 0
	for _, td := range h.traces.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			if p, _ := rss.At(i).Resource().Attributes().Get("process.pid"); p.Int() == int64(pid) {
				n += rss.At(i).ScopeSpans().At(0).Spans().Len()
			}
		}
	}
	require.Equal(h.t, want, n, "spans of pid %d after settling", pid)
	return got
}

// lastMetrics returns the latest metrics emitted for process pid, waiting
// for two emissions of the receiver's own metrics after its exit, and the
// receiver's own latest metrics. Those are told by their scope: other
// sources hand over batches of their own on their own schedule, some with
// resources that have no process.pid either (the UVM source's host
// resource), and such a batch may be the latest.
func (h *harness) lastMetrics(pid int) (proc, self pmetric.ResourceMetrics) {
	h.t.Helper()
	selfOf := func(md pmetric.Metrics) (pmetric.ResourceMetrics, bool) {
		rms := md.ResourceMetrics()
		for j := 0; j < rms.Len(); j++ {
			rm := rms.At(j)
			if _, ok := rm.Resource().Attributes().Get("process.pid"); ok {
				continue
			}
			if sms := rm.ScopeMetrics(); sms.Len() > 0 && sms.At(0).Scope().Name() == metadata.ScopeName {
				return rm, true
			}
		}
		return pmetric.ResourceMetrics{}, false
	}
	emissions := func(all []pmetric.Metrics) int {
		n := 0
		for _, md := range all {
			if _, ok := selfOf(md); ok {
				n++
			}
		}
		return n
	}
	n := emissions(h.metrics.AllMetrics())
	deadline := time.Now().Add(5 * time.Second)
	for emissions(h.metrics.AllMetrics()) < n+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	all := h.metrics.AllMetrics()
	for i := len(all) - 1; i >= 0; i-- {
		if self == (pmetric.ResourceMetrics{}) {
			self, _ = selfOf(all[i])
		}
		rms := all[i].ResourceMetrics()
		for j := 0; j < rms.Len(); j++ {
			rm := rms.At(j)
			if p, ok := rm.Resource().Attributes().Get("process.pid"); ok && p.Int() == int64(pid) && proc == (pmetric.ResourceMetrics{}) {
				proc = rm
			}
		}
		if proc != (pmetric.ResourceMetrics{}) && self != (pmetric.ResourceMetrics{}) {
			return proc, self
		}
	}
	h.t.Fatalf("no metrics for pid %d", pid)
	return
}

func metricSum(rm pmetric.ResourceMetrics, name string, attrs map[string]string) (int64, bool) {
	var total int64
	found := false
	ms := rm.ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i)
		if m.Name() != name || m.Type() != pmetric.MetricTypeSum {
			continue
		}
		for d := 0; d < m.Sum().DataPoints().Len(); d++ {
			dp := m.Sum().DataPoints().At(d)
			ok := true
			for k, v := range attrs {
				if got, has := dp.Attributes().Get(k); !has || got.AsString() != v {
					ok = false
				}
			}
			if ok {
				total += dp.IntValue()
				found = true
			}
		}
	}
	return total, found
}

func countBy(spans []ptrace.Span, key func(ptrace.Span) string) map[string]int {
	out := map[string]int{}
	for _, s := range spans {
		out[key(s)]++
	}
	return out
}

func attr(s ptrace.Span, k string) string {
	v, _ := s.Attributes().Get(k)
	return v.AsString()
}

// expectedSpans maps the driver's own call counts to the API names our
// probes report, keeping only probed functions.
// trampolines are the fake runtime's exported trampolines, with the probed
// function each enters: CUDA 13's __cudaLaunchKernel[_ptsz], which nvcc's
// host stubs call. The uprobe on cudaLaunchKernel sees their launches, and
// devrt reports them as cudaLaunchKernel.
var trampolines = map[string]string{
	"__cudaLaunchKernel":      "cudaLaunchKernel",
	"__cudaLaunchKernel_ptsz": "cudaLaunchKernel_ptsz",
}

// runtimeAPIOf is the API a call of a runtime symbol is reported as, through
// a trampoline or not.
func runtimeAPIOf(sym string) (ev.API, bool) {
	if to, ok := trampolines[sym]; ok {
		sym = to
	}
	api, ok := cudaprobe.APIOfSymbol(sym)
	return api, ok && api.Runtime()
}

func expectedSpans(t *testing.T, calls map[string]int) (map[string]int, int) {
	out := map[string]int{}
	total := 0
	for sym, n := range calls {
		if api, ok := cudaprobe.APIOfSymbol(sym); ok {
			out[api.String()] += n
			total += n
		}
	}
	return out, total
}

func requireNoLoss(t *testing.T, self pmetric.ResourceMetrics) {
	t.Helper()
	for _, reason := range []string{"ring_full", "inflight_full", "unmatched", "decode_error", "process_limit"} {
		n, found := metricSum(self, "gpu.ebpf.events.dropped", map[string]string{"reason": reason})
		require.True(t, found, reason)
		require.Zero(t, n, "dropped: %s", reason)
	}
}

func TestEndToEndFakeDriver(t *testing.T) {
	// Only this test's copies of the driver and runtime (cuda::libraries)
	// are probed, not those the scans find mapped by other programs: the
	// drop counters are the receiver's, over every process it probes, and
	// another test's workload probed mid-run has calls that enter between
	// the attachment of the return and the entry probes (cudaprobe's
	// attachMulti), which count as unmatched returns.
	h := startHarness(t, func(c *Config) { c.CUDA.LibraryGlobs = nil })
	if runtime.NumCPU() < 1 {
		t.Skip()
	}

	t.Run("launch storm: names, geometry, attribution, no loss", func(t *testing.T) {
		res := h.run(nil, "launch-storm", "1000")
		want, total := expectedSpans(t, res.DriverCalls)
		spans := h.spansOf(res.PID, total)
		require.Equal(t, want, countBy(spans, ptrace.Span.Name))
		require.Equal(t, 1000, want["cuLaunchKernel"])
		for _, s := range spans {
			if s.Name() != "cuLaunchKernel" {
				continue
			}
			require.Equal(t, "vecAdd(float*, float*, float*, int)", attr(s, "gpu.cuda.kernel.name"))
			require.Equal(t, "128x1x1", attr(s, "gpu.cuda.grid"))
			require.Equal(t, "256x1x1", attr(s, "gpu.cuda.block"))
			require.Equal(t, "1024", attr(s, "gpu.cuda.shared_memory"))
			require.NotEmpty(t, attr(s, "gpu.cuda.stream"))
			require.Equal(t, ptrace.StatusCodeUnset, s.Status().Code())
		}
		proc, self := h.lastMetrics(res.PID)
		attrs := proc.Resource().Attributes().AsRaw()
		require.Equal(t, "workload", attrs["process.executable.name"])
		require.Equal(t, int64(res.PID), attrs["process.pid"])
		n, _ := metricSum(proc, "gpu.cuda.launches", map[string]string{"gpu.cuda.api": "cuLaunchKernel"})
		require.Equal(t, int64(1000), n)
		n, _ = metricSum(proc, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": "cuLaunchKernel", "gpu.cuda.result": "CUDA_SUCCESS"})
		require.Equal(t, int64(1000), n)
		requireNoLoss(t, self)
	})

	t.Run("alloc-leak: frees matched, leak found", func(t *testing.T) {
		res := h.run(nil, "alloc-leak")
		_, total := expectedSpans(t, res.DriverCalls)
		h.spansOf(res.PID, total)
		proc, _ := h.lastMetrics(res.PID)
		for _, tt := range []struct {
			metric, kind string
			want         int64
		}{
			{"gpu.cuda.memory.allocated", "device", 10 << 20},
			{"gpu.cuda.memory.freed", "device", 7 << 20},
			{"gpu.cuda.memory.outstanding", "device", 3 << 20},
			{"gpu.cuda.memory.allocated", "managed", 4 << 20},
			{"gpu.cuda.memory.outstanding", "managed", 0},
			{"gpu.cuda.memory.allocated", "host", 64 << 10},
			{"gpu.cuda.memory.freed", "host", 64 << 10},
			{"gpu.cuda.memory.allocated", "pool", 2 << 20},
			{"gpu.cuda.memory.freed", "pool", 2 << 20},
		} {
			n, found := metricSum(proc, tt.metric, map[string]string{"gpu.cuda.memory.kind": tt.kind})
			require.True(t, found, "%s %s", tt.metric, tt.kind)
			require.Equal(t, tt.want, n, "%s %s", tt.metric, tt.kind)
		}
		require.Equal(t, res.Memory["device_alloc"]-res.Memory["device_free"], int64(3<<20))
	})

	t.Run("copies: bytes by direction", func(t *testing.T) {
		res := h.run(nil, "copies")
		want, total := expectedSpans(t, res.DriverCalls)
		spans := h.spansOf(res.PID, total)
		require.Equal(t, want, countBy(spans, ptrace.Span.Name))
		proc, _ := h.lastMetrics(res.PID)
		for dir, key := range map[string]string{"htod": "htod", "dtoh": "dtoh", "dtod": "dtod", "peer": "peer"} {
			n, _ := metricSum(proc, "gpu.cuda.memory.copied", map[string]string{"gpu.cuda.copy.direction": dir})
			require.Equal(t, res.Bytes[key], n, dir)
		}
		n, _ := metricSum(proc, "gpu.cuda.memory.set", nil)
		require.Equal(t, res.Bytes["memset"], n)
		require.Equal(t, int64(14312), res.Bytes["htod"])
	})

	t.Run("errors: CUresult names on spans and metrics", func(t *testing.T) {
		res := h.run(nil, "errors")
		_, total := expectedSpans(t, res.DriverCalls)
		spans := h.spansOf(res.PID, total)
		failed := map[string]string{}
		for _, s := range spans {
			if s.Status().Code() == ptrace.StatusCodeError {
				failed[s.Name()] = s.Status().Message()
			}
		}
		require.Equal(t, map[string]string{
			"cuMemAlloc":          "CUDA_ERROR_INVALID_VALUE",
			"cuMemFree":           "CUDA_ERROR_INVALID_VALUE",
			"cuModuleGetFunction": "CUDA_ERROR_NOT_FOUND",
			"cuCtxDestroy":        "CUDA_ERROR_INVALID_CONTEXT",
			"cuLaunchKernel":      "CUDA_ERROR_INVALID_HANDLE",
		}, failed)
		proc, _ := h.lastMetrics(res.PID)
		n, _ := metricSum(proc, "gpu.cuda.calls", map[string]string{"gpu.cuda.result": "CUDA_ERROR_INVALID_VALUE"})
		require.Equal(t, int64(2), n)
	})

	t.Run("delay: span durations cover the driver's time", func(t *testing.T) {
		res := h.run([]string{"FAKECUDA_DELAY_US=300"}, "copies")
		_, total := expectedSpans(t, res.DriverCalls)
		for _, s := range h.spansOf(res.PID, total) {
			d := s.EndTimestamp() - s.StartTimestamp()
			require.GreaterOrEqual(t, d, pcommon.Timestamp(300*time.Microsecond), s.Name())
			require.Less(t, d, pcommon.Timestamp(time.Second), s.Name())
		}
	})

	// A runtime launch is named from its registered stub, with the geometry
	// of its arguments (cudaLaunchKernel) or of its config
	// (cudaLaunchKernelExC); shmem "" is not checked. __cudaLaunchKernel's
	// launches are the probed cudaLaunchKernel's, which its trampoline enters.
	for _, c := range []struct{ scenario, api, grid, block, shmem string }{
		{"runtime", "cudaLaunchKernel", "64x1x1", "128x1x1", ""},
		{"runtime-ex", "cudaLaunchKernelExC", "32x2x1", "64x2x1", "256"},
		{"runtime-stub", "cudaLaunchKernel", "16x4x1", "32x4x1", "128"},
	} {
		t.Run(c.scenario+": "+c.api+" named from the registered stub", func(t *testing.T) {
			res := h.run(nil, c.scenario, "10")
			want, total := expectedSpans(t, res.DriverCalls)
			want[c.api] = 10 // __cudaRegisterFunction makes no span
			total += 10
			spans := h.spansOf(res.PID, total)
			require.Equal(t, want, countBy(spans, ptrace.Span.Name))
			byID := map[pcommon.SpanID]ptrace.Span{}
			for _, s := range spans {
				byID[s.SpanID()] = s
			}
			children := map[string]int{}
			for _, s := range spans {
				if s.Name() == c.api {
					require.Equal(t, "saxpyKernel(float, float const*, float*)", attr(s, "gpu.cuda.kernel.name"))
					require.Equal(t, c.grid, attr(s, "gpu.cuda.grid"))
					require.Equal(t, c.block, attr(s, "gpu.cuda.block"))
					if c.shmem != "" {
						require.Equal(t, c.shmem, attr(s, "gpu.cuda.shared_memory"))
					}
					require.True(t, s.ParentSpanID().IsEmpty())
				}
				// The driver calls the runtime makes are the runtime span's
				// children: each launch, and the lookup of the function at
				// the first launch of the stub.
				if parent, ok := byID[s.ParentSpanID()]; ok {
					require.Equal(t, c.api, parent.Name())
					require.Equal(t, parent.TraceID(), s.TraceID())
					if s.Name() == "cuLaunchKernel" {
						require.Equal(t, attr(parent, "gpu.cuda.kernel.name"), attr(s, "gpu.cuda.kernel.name"))
					}
					children[s.Name()]++
				}
			}
			require.Equal(t, map[string]int{"cuLaunchKernel": 10, "cuModuleGetFunction": 1}, children)
		})
	}

	t.Run("threads: thread ids on spans", func(t *testing.T) {
		res := h.run(nil, "threads", "4", "500")
		_, total := expectedSpans(t, res.DriverCalls)
		spans := h.spansOf(res.PID, total)
		byTID := countBy(spans, func(s ptrace.Span) string {
			if s.Name() != "cuLaunchKernel" {
				return ""
			}
			return attr(s, "thread.id")
		})
		delete(byTID, "")
		require.Len(t, byTID, 4)
		for _, tid := range res.TIDs {
			require.Equal(t, 500, byTID[itoa(tid)], "tid %d", tid)
		}
	})

	t.Run("procaddr: calls through cuGetProcAddress pointers", func(t *testing.T) {
		res := h.run(nil, "procaddr", "50")
		want, total := expectedSpans(t, res.DriverCalls)
		spans := h.spansOf(res.PID, total)
		got := countBy(spans, ptrace.Span.Name)
		require.Equal(t, want, got)
		require.Equal(t, 50, got["cuLaunchKernel"])
		require.Equal(t, 50, got["cuMemAlloc"])
	})

	t.Run("fork-child: a process started later is traced from its first call", func(t *testing.T) {
		res := h.run(nil, "fork-child", "100")
		require.NotNil(t, res.Child)
		require.Equal(t, res.Child.PID, res.Child.Result.PID)
		_, total := expectedSpans(t, res.Child.Result.DriverCalls)
		require.Positive(t, total)
		spans := h.spansOf(res.Child.PID, total)
		require.Equal(t, 100, countBy(spans, ptrace.Span.Name)["cuLaunchKernel"])
	})

	t.Run("every-api: each probed function reported as often as the driver saw it", func(t *testing.T) {
		res := h.run(nil, "every-api")
		want, total := expectedSpans(t, res.DriverCalls)
		// The runtime's probed functions, and the trampolines into them.
		for sym, n := range res.Calls {
			if api, ok := runtimeAPIOf(sym); ok && n > 0 && api != ev.APICudaRegisterFunction {
				want[api.String()] += n
				total += n
			}
		}
		require.Equal(t, 8, want["cudaLaunchKernel"]+want["cudaLaunchKernelExC"]+want["cudaGraphLaunch"],
			"every runtime launch, 2 of them through __cudaLaunchKernel[_ptsz]")
		spans := h.spansOf(res.PID, total)
		require.Equal(t, want, countBy(spans, ptrace.Span.Name))
	})
}

// TestExcludedProcessIsNotReported: an excluded process is dropped in the
// kernel after its first call (its pid_filter entry says skip), not only in
// the translator, and none of its calls is reported.
func TestExcludedProcessIsNotReported(t *testing.T) {
	h := startHarness(t, func(c *Config) {
		c.CUDA.Include = nil
		c.CUDA.Exclude = []ProcessRule{{Executable: "workload"}}
		c.CollectionInterval = time.Hour // no emission: the ended process keeps its filter entry
	})
	res := h.run([]string{"FAKECUDA_DELAY_US=1000"}, "launch-storm", "200")
	require.Eventually(t, func() bool {
		traced, known := h.rcv.tracer.Traced(uint32(res.PID))
		return known && !traced
	}, 2*time.Second, 10*time.Millisecond, "the kernel filter skips the excluded process")
	time.Sleep(300 * time.Millisecond)
	for _, td := range h.traces.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			p, _ := rss.At(i).Resource().Attributes().Get("process.pid")
			require.NotEqual(t, int64(res.PID), p.Int())
		}
	}
}

func itoa(v int) string { return pcommon.NewValueInt(int64(v)).AsString() }

// TestRuntimeLibraryFoundAtFirstCall: the receiver knows only the driver; the
// process loads the runtime from a copy elsewhere (a different inode, as in a
// container image or a Python wheel). At the process's first driver call the
// receiver scans its maps, probes that copy, and later runtime calls appear.
func TestRuntimeLibraryFoundAtFirstCall(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.CUDA.Libraries = c.CUDA.Libraries[:1] })
	private := t.TempDir()
	data, err := os.ReadFile(h.dir + "/libcudart.so.12")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(private+"/libcudart.so.12", data, 0o755))

	cmd := exec.Command(h.dir+"/workload", "runtime", "4000")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+private+":"+h.dir, "FAKECUDA_DELAY_US=200")
	out, err := cmd.Output()
	require.NoError(t, err, string(out))
	var res workloadResult
	require.NoError(t, json.Unmarshal(out, &res))

	found := false
	for _, l := range h.rcv.tracer.Libraries() {
		if k, _ := cudaprobe.StatKey(private + "/libcudart.so.12"); l.Key == k {
			found = true
		}
	}
	require.True(t, found, "the private runtime copy was probed")
	time.Sleep(300 * time.Millisecond)
	n := 0
	for _, td := range h.traces.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			if p, _ := rss.At(i).Resource().Attributes().Get("process.pid"); p.Int() != int64(res.PID) {
				continue
			}
			ss := rss.At(i).ScopeSpans().At(0).Spans()
			for j := 0; j < ss.Len(); j++ {
				if ss.At(j).Name() == "cudaLaunchKernel" {
					n++
				}
			}
		}
	}
	// The first launches happen before the scan; the rest are seen.
	require.Greater(t, n, 1000)
	require.LessOrEqual(t, n, 4000)
}

// TestShutdownHandsOverOnFirstCall: the receiver serves two pipelines; the
// first Shutdown stops it after handing the pending spans and a final
// metrics emission to both, and nothing reaches a consumer afterwards.
func TestShutdownHandsOverOnFirstCall(t *testing.T) {
	// The counts are of all that reaches the consumers (h.alias). Other
	// tests' workloads could otherwise even fill a batch before Shutdown.
	name := "wl-" + strconv.Itoa(os.Getpid())
	h := startHarness(t, func(c *Config) {
		c.CUDA.Include = []ProcessRule{{Executable: name}}
		c.Spans.FlushInterval = time.Hour
		c.CollectionInterval = time.Hour
	})
	require.Equal(t, name, h.alias("wl-", "workload"))
	res := h.runAs(name, nil, "launch-storm", "50")
	time.Sleep(200 * time.Millisecond)
	require.Zero(t, h.traces.SpanCount(), "nothing flushed before shutdown")
	require.NoError(t, h.rcv.Shutdown(context.Background()))
	spans, metrics := h.traces.SpanCount(), len(h.metrics.AllMetrics())
	_, total := expectedSpans(t, res.DriverCalls)
	require.Equal(t, total, spans)
	require.Equal(t, 1, metrics)
	require.NoError(t, h.rcv.Shutdown(context.Background()))
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, spans, h.traces.SpanCount())
	require.Equal(t, metrics, len(h.metrics.AllMetrics()))
}

// TestShutdownReadsTheRingToItsEnd: a pipeline slow to take the batches
// leaves the loop far behind the programs; Shutdown comes when the workload
// has ended and its calls are still in the ring. They are read, translated
// and handed over before Shutdown returns: none is lost.
func TestShutdownReadsTheRingToItsEnd(t *testing.T) {
	name := "ws-" + strconv.Itoa(os.Getpid()) // the count is of all spans: h.alias
	var batches atomic.Int64
	h := startHarnessWrapped(t, func(c *Config) {
		c.CUDA.Include = []ProcessRule{{Executable: name}}
		c.Spans.MaxBatch = 50
		c.Spans.FlushInterval = time.Hour
		c.CollectionInterval = time.Hour
	}, func(next consumer.Traces) consumer.Traces {
		f, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
			batches.Add(1)
			time.Sleep(20 * time.Millisecond)
			return next.ConsumeTraces(ctx, td)
		})
		require.NoError(t, err)
		return f
	})
	require.Equal(t, name, h.alias("ws-", "workload"))
	res := h.runAs(name, nil, "launch-storm", "2000")
	_, total := expectedSpans(t, res.DriverCalls)
	require.Greater(t, total, 2000)
	// At 20 ms a batch of 50 the loop needs over 800 ms for these spans:
	// most are still in the ring now.
	require.Less(t, h.traces.SpanCount(), total/2, "the pipeline is behind")
	require.NoError(t, h.rcv.Shutdown(context.Background()))
	require.Equal(t, total, h.traces.SpanCount())
	require.GreaterOrEqual(t, batches.Load(), int64(total/50))
}

// TestLeaderExitsFirst: the main thread calls pthread_exit and a worker goes
// on calling. The process keeps one series (no reset when its leader's exit
// event arrives), and its state is released once the whole group has gone.
// The waits are 15 s, as spansOf's: on a loaded 2-core machine the
// series took 7 s to reach its count (a clean-clone CI failed at 5).
func TestLeaderExitsFirst(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.CUDA.Include = []ProcessRule{{Executable: "leaderexit"}} })
	bin := h.dir + "/leaderexit"
	out, err := exec.Command("gcc", "-O1", "-pthread", "-I../../testdata/fakecuda", "-o", bin,
		"testdata/leaderexit.c", h.dir+"/libcuda.so.1", "-Wl,-rpath,"+h.dir).CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command(bin).Output() // returns when the worker, the last thread, ends
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	require.NoError(t, err)

	// 1 retain + 1 + 30 synchronises, all in one series.
	require.Eventually(t, func() bool {
		starts := map[pcommon.Timestamp]int64{}
		for _, md := range h.metrics.AllMetrics() {
			rms := md.ResourceMetrics()
			for i := 0; i < rms.Len(); i++ {
				if p, ok := rms.At(i).Resource().Attributes().Get("process.pid"); !ok || p.Int() != int64(pid) {
					continue
				}
				ms := rms.At(i).ScopeMetrics().At(0).Metrics()
				for k := 0; k < ms.Len(); k++ {
					if ms.At(k).Name() != "gpu.cuda.calls" {
						continue
					}
					dps := ms.At(k).Sum().DataPoints()
					for d := 0; d < dps.Len(); d++ {
						if api, _ := dps.At(d).Attributes().Get("gpu.cuda.api"); api.Str() == "cuCtxSynchronize" {
							starts[dps.At(d).StartTimestamp()] = dps.At(d).IntValue()
						}
					}
				}
			}
		}
		if len(starts) != 1 {
			return false
		}
		for _, n := range starts {
			return n == 31
		}
		return false
	}, 15*time.Second, 50*time.Millisecond, "one series reaching 31")

	// Gone from /proc: released at the next emission.
	require.Eventually(t, func() bool {
		_, self := h.lastMetrics(pid)
		n, ok := metricSum(self, "gpu.ebpf.processes.tracked", nil)
		return ok && n == 0
	}, 15*time.Second, 50*time.Millisecond)
}
