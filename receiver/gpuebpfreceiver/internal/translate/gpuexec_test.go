package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
)

func execConfig() Config {
	cfg := testConfig()
	cfg.KernelExecution = HistogramConfig{Enabled: true, Buckets: []float64{1e-6, 1e-3}}
	cfg.KernelQueueDelay = HistogramConfig{Enabled: true, Buckets: []float64{1e-6, 1e-3}}
	cfg.CopyExecution = HistogramConfig{Enabled: true, Buckets: []float64{1e-6, 1e-3}}
	return cfg
}

func newExecTranslator(t *testing.T, cfg Config) *Translator {
	res := fakeResolver{100: {PID: 100, ExeName: "python3", Cgroup: procattr.Cgroup{}}}
	return New(cfg, receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{})
}

// devrtCall is a call record as devrt writes it: source devrt, corr set.
func devrtCall(t *testing.T, api ev.API, corr uint32, start, end uint64, args ...uint64) *ev.Event {
	e := rec(api, ev.KindCall, args...)
	e.Source, e.Corr, e.Start, e.End = ev.SourceDevrt, corr, start, end
	if api == ev.APICuLaunchKernel {
		e.Flags |= ev.FlagStackValid
	}
	return decoded(t, e)
}

func gpuExec(api ev.API, corr uint32, callStart, gpuStart, gpuEnd uint64) *ev.GPUExec {
	x := &ev.GPUExec{API: api, Source: ev.SourceDevrt, PID: 100, TID: 101, CallStart: callStart,
		GPUStart: gpuStart, GPUEnd: gpuEnd, Corr: corr}
	var out ev.GPUExec
	if err := ev.DecodeGPUExec(ev.AppendGPUExec(nil, x), &out); err != nil {
		panic(err)
	}
	return &out
}

func allSpans(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
		for j := 0; j < ss.Len(); j++ {
			out = append(out, ss.At(j))
		}
	}
	return out
}

// histogram returns count and sum of the histogram points of name whose
// attributes are exactly attrs.
func histogramPoint(t *testing.T, md pmetric.Metrics, name string, attrs map[string]any) (uint64, float64) {
	t.Helper()
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		ms := rms.At(i).ScopeMetrics().At(0).Metrics()
		for k := 0; k < ms.Len(); k++ {
			if ms.At(k).Name() != name {
				continue
			}
			dps := ms.At(k).Histogram().DataPoints()
			for d := 0; d < dps.Len(); d++ {
				if dp := dps.At(d); assertEqualMap(dp.Attributes().AsRaw(), attrs) {
					return dp.Count(), dp.Sum()
				}
			}
		}
	}
	t.Fatalf("no %s point with %v", name, attrs)
	return 0, 0
}

func assertEqualMap(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// launchVecAdd gives tr devrt's records of a launch of vecAdd (named by
// cuModuleGetFunction) at 10 µs, its work on the GPU from 15 to 45 µs.
func launchVecAdd(t *testing.T, tr *Translator) {
	named := withOut(rec(ev.APICuModuleGetFunction, ev.KindCallNamed, 0x7ffc, 0xe0, 0x5000), 0xf00)
	named.Name, named.Source, named.Corr = "_Z6vecAddPfS_S_i", ev.SourceDevrt, 1
	tr.Handle(decoded(t, named))
	tr.Handle(devrtCall(t, ev.APICuLaunchKernel, 2, 10_000, 12_000, 0xf00, 128, 1, 1, 256, 1, 1, 0, 0x5))
	x := gpuExec(ev.APICuLaunchKernel, 2, 10_000, 15_000, 45_000)
	x.Stream, x.Handle = 0x5, 0xf00
	tr.HandleGPUExec(x)
}

func TestGPUExecSpanIsTheLaunchSpansChild(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	launchVecAdd(t, tr)

	td, n := tr.TakeSpans()
	require.Equal(t, 3, n)
	spans := allSpans(td)
	launch, gpu := spans[1], spans[2]
	require.Equal(t, "cuLaunchKernel gpu", gpu.Name())
	require.Equal(t, launch.TraceID(), gpu.TraceID())
	require.Equal(t, launch.SpanID(), gpu.ParentSpanID())
	require.NotEqual(t, launch.SpanID(), gpu.SpanID())
	require.Equal(t, pcommon.Timestamp(30_000), gpu.EndTimestamp()-gpu.StartTimestamp())
	require.Equal(t, pcommon.Timestamp(5_000), gpu.StartTimestamp()-launch.StartTimestamp(), "both on the same clock")
	require.Equal(t, map[string]any{
		"thread.id": int64(101), "gpu.cuda.queue.delay": int64(5_000), "gpu.cuda.stream": int64(5),
		"gpu.cuda.kernel.name": "vecAdd(float*, float*, float*, int)",
	}, gpu.Attributes().AsRaw())
	require.Equal(t, ptrace.StatusCodeUnset, gpu.Status().Code())

	md := tr.Metrics(SelfStats{Devrt: DevrtStats{Enabled: true}})
	api := map[string]any{"gpu.cuda.api": "cuLaunchKernel"}
	count, sum := histogramPoint(t, md, "gpu.kernel.execution.duration", api)
	require.Equal(t, uint64(1), count)
	require.InDelta(t, 30e-6, sum, 1e-12)
	count, sum = histogramPoint(t, md, "gpu.kernel.queue.delay", api)
	require.Equal(t, uint64(1), count)
	require.InDelta(t, 5e-6, sum, 1e-12)
	require.Equal(t, int64(3), sumValue(t, md, "gpu.ebpf.events.received", map[string]string{"gpu.source": "devrt"}))
	require.Equal(t, int64(0), sumValue(t, md, "gpu.ebpf.events.received", map[string]string{"gpu.source": "uprobe"}))
}

// TestGPUExecAfterHandOver: the GPU finishes after the launch span left in
// an earlier batch; the execution span still names it as parent.
func TestGPUExecAfterHandOver(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	tr.Handle(devrtCall(t, ev.APICuLaunchKernel, 9, 1000, 2000, 0xf00, 1, 1, 1, 32, 1, 1))
	first, _ := tr.TakeSpans()
	launch := allSpans(first)[0]
	tr.HandleGPUExec(gpuExec(ev.APICuLaunchKernel, 9, 1000, 3000, 4000))
	second, n := tr.TakeSpans()
	require.Equal(t, 1, n)
	gpu := allSpans(second)[0]
	require.Equal(t, launch.TraceID(), gpu.TraceID())
	require.Equal(t, launch.SpanID(), gpu.ParentSpanID())
}

// TestGPUExecFollowsNesting: the driver launch made by a runtime launch
// joins the runtime call's trace after its execution link was made; the
// execution span joins that trace too.
func TestGPUExecFollowsNesting(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	tr.Handle(devrtCall(t, ev.APICuLaunchKernel, 8, 1100, 1900, 0xf00, 1, 1, 1, 32, 1, 1)) // inner, returns first
	tr.Handle(devrtCall(t, ev.APICudaLaunchKernel, 7, 1000, 2000, 0x401000, 1, 1, 32, 1))  // outer
	tr.HandleGPUExec(gpuExec(ev.APICuLaunchKernel, 8, 1100, 2500, 2600))
	td, _ := tr.TakeSpans()
	spans := allSpans(td)
	inner, outer, gpu := spans[0], spans[1], spans[2]
	require.Equal(t, outer.SpanID(), inner.ParentSpanID())
	require.Equal(t, outer.TraceID(), gpu.TraceID())
	require.Equal(t, inner.SpanID(), gpu.ParentSpanID())
}

// TestGPUExecWithoutItsCall: a record whose call is not known waits for it
// one hand-over, then becomes a root span.
func TestGPUExecWithoutItsCall(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	tr.Handle(devrtCall(t, ev.APICuLaunchKernel, 1, 1000, 2000, 0xf00, 1, 1, 1, 32, 1, 1))
	// corr 1 + execLinks lands in the same slot: the link is the newer call's.
	tr.Handle(devrtCall(t, ev.APICuLaunchKernel, 1+execLinks, 3000, 4000, 0xf00, 1, 1, 1, 32, 1, 1))
	tr.HandleGPUExec(gpuExec(ev.APICuLaunchKernel, 1, 1000, 5000, 6000))
	tr.HandleGPUExec(gpuExec(ev.APICuGraphLaunch, 77, 1000, 5000, 6000))
	_, n := tr.TakeSpans()
	require.Equal(t, 2, n, "the two calls; the executions wait")
	for _, p := range tr.waiting {
		for corr, w := range p.exec.waiting {
			w.arrived -= execWait // a second ago
			p.exec.waiting[corr] = w
		}
	}
	td, n := tr.TakeSpans()
	require.Equal(t, 2, n, "given up on after a second")
	var names []string
	for _, gpu := range allSpans(td) {
		require.True(t, gpu.ParentSpanID().IsEmpty(), gpu.Name())
		names = append(names, gpu.Name())
	}
	require.ElementsMatch(t, []string{"cuLaunchKernel gpu", "cuGraphLaunch gpu"}, names)
	require.Equal(t, uint64(2), tr.procs[100].exec.unlinked)
	require.Zero(t, tr.nwaiting)
	require.Empty(t, tr.waiting)
	md := tr.Metrics(SelfStats{})
	count, _ := histogramPoint(t, md, "gpu.kernel.execution.duration", map[string]any{"gpu.cuda.api": "cuLaunchKernel"})
	require.Equal(t, uint64(1), count)
	count, _ = histogramPoint(t, md, "gpu.kernel.execution.duration", map[string]any{"gpu.cuda.api": "cuGraphLaunch"})
	require.Equal(t, uint64(1), count)
}

// TestGPUExecBeforeItsCall: devrt's poller wrote the record before the
// calling thread wrote the call's; the record waits and joins its call.
func TestGPUExecBeforeItsCall(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	tr.HandleGPUExec(gpuExec(ev.APICuMemcpyAsync, 3, 1000, 2500, 3500))
	_, n := tr.TakeSpans()
	require.Zero(t, n)
	host := withOut(rec(ev.APICuMemAllocHost, ev.KindCall, 0x1, 4096), 0x7000)
	dev := withOut(rec(ev.APICuMemAlloc, ev.KindCall, 0x1, 4096), 0xd000)
	tr.Handle(decoded(t, host))
	tr.Handle(decoded(t, dev))
	tr.Handle(devrtCall(t, ev.APICuMemcpyAsync, 3, 1000, 2000, 0xd000, 0x7000, 4096, 0x5))
	td, n := tr.TakeSpans()
	require.Equal(t, 4, n)
	spans := allSpans(td)
	call, gpu := spans[2], spans[3]
	require.Equal(t, "cuMemcpyAsync gpu", gpu.Name())
	require.Equal(t, call.SpanID(), gpu.ParentSpanID())
	require.Equal(t, "htod", attr(gpu, "gpu.cuda.copy.direction"), "the call's direction, worked out from the allocations")
	require.Zero(t, tr.procs[100].exec.unlinked)
	require.Zero(t, tr.nwaiting)
}

func attr(s ptrace.Span, k string) string {
	v, _ := s.Attributes().Get(k)
	return v.AsString()
}

// TestWaitingIsBounded: records that never find their call are bounded.
func TestWaitingIsBounded(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	for i := uint32(1); i <= maxWaitingExec+10; i++ {
		tr.HandleGPUExec(gpuExec(ev.APICuLaunchKernel, i, 1000, 2000, 3000))
	}
	require.Equal(t, maxWaitingExec, tr.nwaiting)
	require.Equal(t, uint64(10), tr.procs[100].exec.unlinked, "beyond the bound: spans at once")
	tr.FlushGPUExec()
	require.Zero(t, tr.nwaiting)
	_, n := tr.TakeSpans()
	require.Equal(t, maxWaitingExec+10, n)
}

// TestCopyExecutionByDirection: a unified-addressing copy takes the
// direction the translator worked out for its call; named copies their
// API's; sets none.
func TestCopyExecutionByDirection(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	host := withOut(rec(ev.APICuMemAllocHost, ev.KindCall, 0x1, 4096), 0x7000)
	dev := withOut(rec(ev.APICuMemAlloc, ev.KindCall, 0x1, 4096), 0xd000)
	for _, e := range []*ev.Event{host, dev} {
		e.Source = ev.SourceDevrt
		tr.Handle(decoded(t, e))
	}
	tr.Handle(devrtCall(t, ev.APICuMemcpyAsync, 3, 1000, 2000, 0xd000, 0x7000, 4096, 0x5))
	tr.Handle(devrtCall(t, ev.APICuMemcpyDtoHAsync, 4, 1000, 2000, 0x7000, 0xd000, 4096, 0x5))
	tr.Handle(devrtCall(t, ev.APICuMemsetD8Async, 5, 1000, 2000, 0xd000, 0, 4096, 0x5))
	for corr, api := range map[uint32]ev.API{3: ev.APICuMemcpyAsync, 4: ev.APICuMemcpyDtoHAsync, 5: ev.APICuMemsetD8Async} {
		x := gpuExec(api, corr, 1000, 2000, 2000+uint64(corr)*1000)
		x.Bytes = 4096
		tr.HandleGPUExec(x)
	}
	// A copy whose call was never seen: its API's direction.
	tr.HandleGPUExec(gpuExec(ev.APICuMemcpyHtoD, 99, 1000, 2000, 2500))
	tr.FlushGPUExec()

	td, _ := tr.TakeSpans()
	dirs := map[string]string{}
	for _, s := range allSpans(td) {
		if d, ok := s.Attributes().Get("gpu.cuda.copy.direction"); ok && len(s.Name()) > 4 && s.Name()[len(s.Name())-4:] == " gpu" {
			dirs[s.Name()] = d.Str()
		}
	}
	require.Equal(t, map[string]string{"cuMemcpyAsync gpu": "htod", "cuMemcpyDtoHAsync gpu": "dtoh", "cuMemcpyHtoD gpu": "htod"}, dirs)

	md := tr.Metrics(SelfStats{})
	for _, tt := range []struct {
		attrs map[string]any
		sum   float64
	}{
		{map[string]any{"gpu.cuda.api": "cuMemcpyAsync", "gpu.cuda.copy.direction": "htod"}, 3e-6},
		{map[string]any{"gpu.cuda.api": "cuMemcpyDtoHAsync", "gpu.cuda.copy.direction": "dtoh"}, 4e-6},
		{map[string]any{"gpu.cuda.api": "cuMemsetD8Async"}, 5e-6},
		{map[string]any{"gpu.cuda.api": "cuMemcpyHtoD", "gpu.cuda.copy.direction": "htod"}, 0.5e-6},
	} {
		count, sum := histogramPoint(t, md, "gpu.cuda.copy.execution.duration", tt.attrs)
		require.Equal(t, uint64(1), count, "%v", tt.attrs)
		require.InDelta(t, tt.sum, sum, 1e-12, "%v", tt.attrs)
	}
}

func TestGPUExecFlags(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	x := gpuExec(ev.APICuLaunchKernel, 1, 1000, 1000, 2000)
	x.Flags = ev.ExecFlagClamped | ev.ExecFlagCallFailed
	tr.HandleGPUExec(x)
	tr.FlushGPUExec()
	td, _ := tr.TakeSpans()
	gpu := allSpans(td)[0]
	clamped, _ := gpu.Attributes().Get("gpu.cuda.clock_clamped")
	require.True(t, clamped.Bool())
	require.Equal(t, ptrace.StatusCodeError, gpu.Status().Code())
}

// TestGPUExecWithoutSpans: spans off or the class filtered out, the
// histograms are still kept.
func TestGPUExecWithoutSpans(t *testing.T) {
	for _, mutate := range []func(*Config){
		func(c *Config) { c.Spans = false },
		func(c *Config) { c.SpanClasses = []string{"sync"} },
	} {
		cfg := execConfig()
		mutate(&cfg)
		tr := newExecTranslator(t, cfg)
		tr.Handle(devrtCall(t, ev.APICuLaunchKernel, 1, 1000, 2000, 0xf00, 1, 1, 1, 32, 1, 1))
		tr.HandleGPUExec(gpuExec(ev.APICuLaunchKernel, 1, 1000, 3000, 4000))
		_, n := tr.TakeSpans()
		require.Zero(t, n)
		count, _ := histogramPoint(t, tr.Metrics(SelfStats{}), "gpu.kernel.execution.duration", map[string]any{"gpu.cuda.api": "cuLaunchKernel"})
		require.Equal(t, uint64(1), count)
	}
}

// TestUprobeCallsMakeNoLinks: only devrt's calls carry corr; a uprobe
// launch keeps no GPU execution state.
func TestUprobeCallsMakeNoLinks(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	tr.Handle(decoded(t, rec(ev.APICuLaunchKernel, ev.KindCall, 0xf00, 1, 1, 1, 32, 1, 1)))
	require.Nil(t, tr.procs[100].exec)
	md := tr.Metrics(SelfStats{})
	for i := 0; i < md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().Len(); i++ {
		require.NotContains(t, md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(i).Name(), "execution")
	}
}

func TestDevrtSelfMetrics(t *testing.T) {
	tr := newExecTranslator(t, execConfig())
	tr.DecodeErrorFrom(ev.SourceDevrt)
	tr.DecodeError()
	md := tr.Metrics(SelfStats{RingFull: 1, Devrt: DevrtStats{Enabled: true, Full: 2, Disabled: 3, Timing: 4, Corrupt: 5,
		Active: 6, DisabledRings: 7, Closed: 8, Invalid: 9, Abandoned: 10, Stale: 11}})
	dropped := func(src, reason string) int64 {
		return sumValue(t, md, "gpu.ebpf.events.dropped", map[string]string{"gpu.source": src, "reason": reason})
	}
	require.Equal(t, int64(1), dropped("uprobe", "ring_full"))
	require.Equal(t, int64(1), dropped("uprobe", "decode_error"))
	require.Equal(t, int64(2), dropped("devrt", "ring_full"))
	require.Equal(t, int64(3), dropped("devrt", "disabled"))
	require.Equal(t, int64(4), dropped("devrt", "timing_unavailable"))
	require.Equal(t, int64(5), dropped("devrt", "ring_corrupt"))
	require.Equal(t, int64(1), dropped("devrt", "decode_error"))
	require.Equal(t, int64(0), dropped("devrt", "process_limit"))
	rings := func(state string) int64 {
		return sumValue(t, md, "gpu.ebpf.devrt.rings", map[string]string{"gpu.devrt.ring.state": state})
	}
	require.Equal(t, []int64{6, 7, 8}, []int64{rings("active"), rings("disabled"), rings("closed")})
	rejected := func(reason string) int64 {
		return sumValue(t, md, "gpu.ebpf.devrt.rings.rejected", map[string]string{"reason": reason})
	}
	require.Equal(t, []int64{9, 10, 11}, []int64{rejected("invalid"), rejected("corrupt"), rejected("stale")})
	require.Equal(t, int64(1), sumValue(t, md, "gpu.ebpf.events.received", map[string]string{"gpu.source": "devrt"}))

	// devrt off: none of its series.
	md = tr.Metrics(SelfStats{})
	n := 0
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() == "gpu.ebpf.devrt.rings" {
			n++
		}
	}
	require.Zero(t, n)
}

// TestGPUExecHooks: the device probes get devrt's launch call of a named
// kernel and its GPU timing, start and end (launch latency pairs the
// probes' first block with the work between them).
func TestGPUExecHooks(t *testing.T) {
	type call struct {
		pid        uint32
		kernel     string
		dev        int32
		start, end uint64
		gpuStart   uint64
	}
	var launched, executed []call
	res := fakeResolver{100: {PID: 100, ExeName: "python3", Cgroup: procattr.Cgroup{}}}
	tr := New(execConfig(), receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{
		Launched: func(pid uint32, kernel string, dev int32, start uint64) {
			launched = append(launched, call{pid: pid, kernel: kernel, dev: dev, start: start})
		},
		Executed: func(pid uint32, kernel string, dev int32, callStart, gpuStart, gpuEnd uint64) {
			executed = append(executed, call{pid, kernel, dev, callStart, gpuEnd, gpuStart})
		},
	})
	launchVecAdd(t, tr)
	require.Equal(t, []call{{pid: 100, kernel: "_Z6vecAddPfS_S_i", dev: -1, start: 10_000}}, launched)
	require.Equal(t, []call{{pid: 100, kernel: "_Z6vecAddPfS_S_i", dev: -1, start: 10_000, gpuStart: 15_000, end: 45_000}}, executed)
}
