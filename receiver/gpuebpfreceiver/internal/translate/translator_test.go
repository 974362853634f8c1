package translate

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/filter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
)

// fakeResolver knows the processes in the map; those whose Cgroup.Path is
// "exited" have ended (Resolve still answers, as a cache would).
type fakeResolver map[int]procattr.Process

func (f fakeResolver) Resolve(pid int) (procattr.Process, error) {
	p, ok := f[pid]
	if !ok {
		return p, fs.ErrNotExist
	}
	return p, nil
}

func (f fakeResolver) Forget(int) {}

func (f fakeResolver) Alive(pid int, _ uint64) bool {
	p, ok := f[pid]
	return ok && p.Cgroup.Path != "exited"
}

func testConfig() Config {
	return Config{
		Spans:        true,
		CallDuration: HistogramConfig{Enabled: true, Buckets: []float64{1e-6, 1e-3}},
		GridSize:     HistogramConfig{Enabled: true, Buckets: []float64{1, 100}},
		BlockSize:    HistogramConfig{Enabled: true, Buckets: []float64{32, 256}},
		Metrics:      metadata.DefaultMetricsBuilderConfig(),
		HostName:     "node-1",
	}
}

func newTestTranslator(t *testing.T, hooks Hooks) *Translator {
	res := fakeResolver{100: {PID: 100, ExeName: "python3", Cgroup: procattr.Cgroup{
		ContainerID: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		PodUID:      "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}}}
	return New(testConfig(), receivertest.NewNopSettings(metadata.Type), res, nil, hooks)
}

func rec(api ev.API, kind ev.Kind, args ...uint64) *ev.Event {
	e := &ev.Event{Kind: kind, API: api, Source: ev.SourceUprobe, PID: 100, TID: 101, Start: 1000, End: 3000}
	copy(e.Args[:], args)
	return e
}

// decoded runs the event through the real decoder, as the receiver does.
func decoded(t *testing.T, e *ev.Event) *ev.Event {
	var out ev.Event
	require.NoError(t, ev.Decode(ev.AppendRecord(nil, e), &out))
	return &out
}

func withOut(e *ev.Event, v uint64) *ev.Event { e.Out = v; e.Flags |= ev.FlagOutValid; return e }

func sumValue(t *testing.T, md pmetric.Metrics, name string, attrs map[string]string) int64 {
	t.Helper()
	var total int64
	found := false
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() != name {
					continue
				}
				dps := m.Sum().DataPoints()
				for d := 0; d < dps.Len(); d++ {
					dp := dps.At(d)
					match := true
					for k, v := range attrs {
						got, ok := dp.Attributes().Get(k)
						if !ok || got.Str() != v {
							match = false
						}
					}
					if match {
						total += dp.IntValue()
						found = true
					}
				}
			}
		}
	}
	require.True(t, found, "no %s %v", name, attrs)
	return total
}

func TestAllocationsFreesAndLeaks(t *testing.T) {
	tr := newTestTranslator(t, Hooks{})
	for i := uint64(0); i < 10; i++ {
		tr.Handle(decoded(t, withOut(rec(ev.APICuMemAlloc, ev.KindCall, 0x7ffc, 1<<20), 0xd000+i*0x100000)))
	}
	for i := uint64(0); i < 7; i++ {
		tr.Handle(decoded(t, rec(ev.APICuMemFree, ev.KindCall, 0xd000+i*0x100000)))
	}
	// A free of an address never allocated changes nothing but the call count.
	tr.Handle(decoded(t, rec(ev.APICuMemFree, ev.KindCall, 0xbad)))
	md := tr.Metrics(SelfStats{})
	dev := map[string]string{"gpu.cuda.memory.kind": "device"}
	require.Equal(t, int64(10<<20), sumValue(t, md, "gpu.cuda.memory.allocated", dev))
	require.Equal(t, int64(7<<20), sumValue(t, md, "gpu.cuda.memory.freed", dev))
	require.Equal(t, int64(3<<20), sumValue(t, md, "gpu.cuda.memory.outstanding", dev))
	require.Equal(t, int64(10), sumValue(t, md, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": "cuMemAlloc"}))
	require.Equal(t, int64(8), sumValue(t, md, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": "cuMemFree"}))

	// Resource attribution.
	rm := md.ResourceMetrics().At(0)
	want := map[string]any{
		"process.pid": int64(100), "process.executable.name": "python3", "host.name": "node-1",
		"container.id": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"k8s.pod.uid":  "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b",
	}
	require.Equal(t, want, rm.Resource().Attributes().AsRaw())
}

func TestLaunchSpansNameKernels(t *testing.T) {
	tr := newTestTranslator(t, Hooks{})
	named := withOut(rec(ev.APICuModuleGetFunction, ev.KindCallNamed, 0x7ffc, 0xe0, 0x5000), 0xf00)
	named.Name = "_Z6vecAddPfS_S_i"
	named.Start, named.End = 100, 200
	tr.Handle(decoded(t, named))
	l := rec(ev.APICuLaunchKernel, ev.KindCall, 0xf00, 128, 1, 1, 256, 1, 1, 1024, 0x5)
	l.Flags = ev.FlagStackValid
	tr.Handle(decoded(t, l))
	bad := rec(ev.APICuLaunchKernel, ev.KindCall, 0, 1, 1, 1, 1, 1, 1, 0, 0)
	bad.Result = 400
	bad.Start, bad.End = 4000, 4500
	tr.Handle(decoded(t, bad))

	td, n := tr.TakeSpans()
	require.Equal(t, 3, n)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	launch := spans.At(1)
	require.Equal(t, "cuLaunchKernel", launch.Name())
	require.Equal(t, map[string]any{
		"thread.id": int64(101), "gpu.cuda.kernel.name": "vecAdd(float*, float*, float*, int)",
		"gpu.cuda.grid": "128x1x1", "gpu.cuda.block": "256x1x1", "gpu.cuda.shared_memory": int64(1024),
		"gpu.cuda.stream": int64(5),
	}, launch.Attributes().AsRaw())
	require.Equal(t, pcommon.Timestamp(2000), launch.EndTimestamp()-launch.StartTimestamp())
	failed := spans.At(2)
	require.Equal(t, ptrace.StatusCodeError, failed.Status().Code())
	require.Equal(t, "CUDA_ERROR_INVALID_HANDLE", failed.Status().Message())
	require.NotEqual(t, launch.TraceID(), failed.TraceID())

	md := tr.Metrics(SelfStats{})
	require.Equal(t, int64(1), sumValue(t, md, "gpu.cuda.launches", map[string]string{"gpu.cuda.api": "cuLaunchKernel"}))
	require.Equal(t, int64(1), sumValue(t, md, "gpu.cuda.calls", map[string]string{"gpu.cuda.result": "CUDA_ERROR_INVALID_HANDLE"}))

	_, n = tr.TakeSpans()
	require.Zero(t, n, "batch was handed over")
}

// TestNestedCallsShareATrace: a runtime launch and the driver launch it
// makes become parent and child in one trace, whatever order they arrive
// in; calls after them on the thread start their own traces.
func TestNestedCallsShareATrace(t *testing.T) {
	tr := newTestTranslator(t, Hooks{})
	at := func(api ev.API, start, end uint64) *ev.Event {
		e := rec(api, ev.KindCall)
		e.Start, e.End = start, end
		return decoded(t, e)
	}
	tr.Handle(at(ev.APICuLaunchKernel, 1100, 1400))   // first inner call, returns first
	tr.Handle(at(ev.APICuMemsetD8, 1500, 1900))       // second inner call
	tr.Handle(at(ev.APICudaLaunchKernel, 1000, 2000)) // the outer call returns last
	tr.Handle(at(ev.APICuCtxSynchronize, 2100, 3000)) // after it: a trace of its own
	td, n := tr.TakeSpans()
	require.Equal(t, 4, n)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	inner, set, outer, after := spans.At(0), spans.At(1), spans.At(2), spans.At(3)
	require.Equal(t, outer.TraceID(), inner.TraceID())
	require.Equal(t, outer.SpanID(), inner.ParentSpanID())
	require.Equal(t, outer.TraceID(), set.TraceID())
	require.Equal(t, outer.SpanID(), set.ParentSpanID(), "both inner calls are the outer call's children")
	require.True(t, outer.ParentSpanID().IsEmpty())
	require.NotEqual(t, outer.TraceID(), after.TraceID())
	require.True(t, after.ParentSpanID().IsEmpty())
}

// TestThreeLevelNesting: the middle span is parented to the outer one and
// the innermost keeps the middle as parent, all in the outer's trace.
func TestThreeLevelNesting(t *testing.T) {
	tr := newTestTranslator(t, Hooks{})
	at := func(api ev.API, start, end uint64) *ev.Event {
		e := rec(api, ev.KindCall)
		e.Start, e.End = start, end
		return decoded(t, e)
	}
	tr.Handle(at(ev.APICuMemsetD8, 1200, 1300))
	tr.Handle(at(ev.APICuLaunchKernel, 1100, 1900))
	tr.Handle(at(ev.APICudaLaunchKernel, 1000, 2000))
	td, _ := tr.TakeSpans()
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	innermost, middle, outer := spans.At(0), spans.At(1), spans.At(2)
	require.Equal(t, middle.SpanID(), innermost.ParentSpanID())
	require.Equal(t, outer.SpanID(), middle.ParentSpanID())
	require.Equal(t, outer.TraceID(), innermost.TraceID())
	require.Equal(t, outer.TraceID(), middle.TraceID())
}

func TestSelectionSkipsProcesses(t *testing.T) {
	var skipped, seen []uint32
	tr := newTestTranslator(t, Hooks{
		Select:  func(p procattr.Process) bool { return p.ExeName != "python3" },
		Skipped: func(pid uint32) { skipped = append(skipped, pid) },
		Seen:    func(pid uint32) { seen = append(seen, pid) },
	})
	tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	_, n := tr.TakeSpans()
	require.Zero(t, n)
	require.Equal(t, []uint32{100}, skipped)
	require.Empty(t, seen)

	other := rec(ev.APICuCtxSynchronize, ev.KindCall)
	other.PID = 200
	tr.Handle(decoded(t, other))
	tr.Handle(decoded(t, other))
	require.Equal(t, []uint32{200}, seen, "seen once, at the first call")
}

func TestShortLivedProcessAttributedFromExec(t *testing.T) {
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), fakeResolver{}, nil, Hooks{
		Select: func(p procattr.Process) bool { return p.ExeName == "trainer" },
	})
	// An exec record as the kernel writes it: the comm in args[0..1].
	var out ev.Event
	raw := ev.AppendRecord(nil, &ev.Event{Kind: ev.KindExec, PID: 300})
	copy(raw[48:], "trainer")
	require.NoError(t, ev.Decode(raw, &out))
	require.Equal(t, "trainer", out.Name)
	tr.Handle(&out)
	call := rec(ev.APICuCtxSynchronize, ev.KindCall)
	call.PID = 300
	tr.Handle(decoded(t, call))
	td, n := tr.TakeSpans()
	require.Equal(t, 1, n, "the comm from exec passed the include rule")
	name, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("process.executable.name")
	require.Equal(t, "trainer", name.Str())
}

// TestExecEmitsTheOldProgramOnce: calls made before an execve since the
// last emission are emitted under the old identity; the new program starts
// a new series; the kernel filter is cleared at once (Released, not exited).
func TestExecEmitsTheOldProgramOnce(t *testing.T) {
	var released []bool
	res := fakeResolver{100: {PID: 100, ExeName: "launcher", StartTime: 5}}
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{
		Released: func(pid uint32, exited bool) { released = append(released, exited) },
	})
	for i := 0; i < 5; i++ {
		tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	}
	first := tr.Metrics(SelfStats{})
	require.Equal(t, int64(5), sumValue(t, first, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": "cuCtxSynchronize"}))
	for i := 0; i < 7; i++ {
		tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	}
	tr.Handle(&ev.Event{Kind: ev.KindExec, PID: 100, Name: "trainer"})
	require.Equal(t, []bool{false}, released)
	res[100] = procattr.Process{PID: 100, ExeName: "trainer", StartTime: 5}
	tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))

	second := tr.Metrics(SelfStats{})
	byExe := map[string]int64{}
	rms := second.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		exe, ok := rms.At(i).Resource().Attributes().Get("process.executable.name")
		if !ok {
			continue
		}
		byExe[exe.Str()] = sumValue(t, pmetricOf(rms.At(i)), "gpu.cuda.calls", nil)
	}
	require.Equal(t, map[string]int64{"launcher": 12, "trainer": 1}, byExe)
	third := tr.Metrics(SelfStats{})
	require.Equal(t, 2, third.ResourceMetrics().Len(), "the retired program is gone: trainer and the receiver remain")
}

func pmetricOf(rm pmetric.ResourceMetrics) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm.CopyTo(md.ResourceMetrics().AppendEmpty())
	return md
}

// TestLeaderExitOfLiveProcessKeepsState: the exit event is the group
// leader's; if the process still runs (other threads), nothing is dropped
// and its cumulative metrics keep their start time.
func TestLeaderExitOfLiveProcessKeepsState(t *testing.T) {
	res := fakeResolver{100: {PID: 100, ExeName: "python3"}}
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{
		Released: func(uint32, bool) { t.Fatal("released a live process") },
	})
	tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	tr.Handle(&ev.Event{Kind: ev.KindExit, PID: 100})
	first := tr.Metrics(SelfStats{})
	tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	second := tr.Metrics(SelfStats{})
	require.Equal(t, 1, tr.Processes())
	require.Equal(t, int64(2), sumValue(t, second, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": "cuCtxSynchronize"}))
	start := func(md pmetric.Metrics) pcommon.Timestamp {
		return md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Sum().DataPoints().At(0).StartTimestamp()
	}
	require.Equal(t, start(first), start(second))
}

func TestExitReleasesAfterFinalEmission(t *testing.T) {
	var released []uint32
	res := fakeResolver{100: {PID: 100, ExeName: "python3", Cgroup: procattr.Cgroup{Path: "exited"}}}
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{
		Released: func(pid uint32, exited bool) {
			require.True(t, exited)
			released = append(released, pid)
		}})
	tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	tr.Handle(&ev.Event{Kind: ev.KindExit, PID: 100})
	require.Equal(t, 1, tr.Processes())
	md := tr.Metrics(SelfStats{RingFull: 3, Probes: 8})
	require.Equal(t, int64(1), sumValue(t, md, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": "cuCtxSynchronize"}))
	require.Equal(t, int64(3), sumValue(t, md, "gpu.ebpf.events.dropped", map[string]string{"reason": "ring_full"}))
	require.Equal(t, int64(2), sumValue(t, md, "gpu.ebpf.events.received", nil))
	require.Zero(t, tr.Processes())
	require.Equal(t, []uint32{100}, released)
}

// TestResourceFilterDropsHistogramsToo: a process the resource attribute
// filters exclude emits no metrics at all, histograms included.
func TestResourceFilterDropsHistogramsToo(t *testing.T) {
	cfg := testConfig()
	cfg.Metrics.ResourceAttributes.ProcessExecutableName.MetricsExclude = []filter.Config{{Strict: "python3"}}
	res := fakeResolver{100: {PID: 100, ExeName: "python3"}, 200: {PID: 200, ExeName: "trainer"}}
	tr := New(cfg, receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{})
	for _, pid := range []uint32{100, 200} {
		e := rec(ev.APICuLaunchKernel, ev.KindCall, 0xf00, 1, 1, 1, 32, 1, 1)
		e.PID = pid
		tr.Handle(decoded(t, e))
	}
	md := tr.Metrics(SelfStats{})
	var exes []string
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		if exe, ok := rms.At(i).Resource().Attributes().Get("process.executable.name"); ok {
			exes = append(exes, exe.Str())
			names := map[string]bool{}
			ms := rms.At(i).ScopeMetrics().At(0).Metrics()
			for k := 0; k < ms.Len(); k++ {
				names[ms.At(k).Name()] = true
			}
			require.True(t, names["gpu.cuda.call.duration"], "the kept process has its histograms")
		}
	}
	require.Equal(t, []string{"trainer"}, exes)
}

// fakeSymbolizer answers "not yet" to the first ask of an address and the
// name afterwards, as symtab's background worker does.
type fakeSymbolizer struct {
	names map[uint64]string
	asked map[uint64]int
}

func (f *fakeSymbolizer) Lookup(_ uint32, addr uint64) (string, bool) {
	f.asked[addr]++
	if f.asked[addr] == 1 {
		return "", false
	}
	return f.names[addr], true
}

// TestRuntimeStubNamedFromELFSymbols: a cudaLaunchKernel whose stub was
// never registered (the runtime was probed after the program loaded) is
// named from the process's symbols once the symbolizer has answered; a miss
// is remembered and not asked again.
func TestRuntimeStubNamedFromELFSymbols(t *testing.T) {
	sym := &fakeSymbolizer{names: map[uint64]string{0x401000: "_Z11saxpyKernelfPKfPf"}, asked: map[uint64]int{}}
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), fakeResolver{}, sym, Hooks{})
	launch := func(stub uint64, start uint64) {
		e := rec(ev.APICudaLaunchKernel, ev.KindCall, stub, 64, 1, 128, 1)
		e.Start, e.End = start, start+100
		tr.Handle(decoded(t, e))
	}
	launch(0x401000, 1000) // first ask: not yet
	launch(0x401000, 2000) // answered
	launch(0x401000, 3000) // remembered
	launch(0x999000, 4000) // not yet
	launch(0x999000, 5000) // answered: no symbol
	launch(0x999000, 6000) // the miss is remembered
	td, n := tr.TakeSpans()
	require.Equal(t, 6, n)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	var names []string
	for i := 0; i < spans.Len(); i++ {
		v, _ := spans.At(i).Attributes().Get("gpu.cuda.kernel.name")
		names = append(names, v.Str())
	}
	require.Equal(t, []string{"", "saxpyKernel(float, float const*, float*)", "saxpyKernel(float, float const*, float*)", "", "", ""}, names)
	require.Equal(t, map[uint64]int{0x401000: 2, 0x999000: 2}, sym.asked)
}

// TestRuntimeExStubNamedFromELFSymbols: cudaLaunchKernelExC's host stub
// (its second argument) is named from the process's symbols like
// cudaLaunchKernel's.
func TestRuntimeExStubNamedFromELFSymbols(t *testing.T) {
	sym := &fakeSymbolizer{names: map[uint64]string{0x401000: "_Z11saxpyKernelfPKfPf"}, asked: map[uint64]int{}}
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), fakeResolver{}, sym, Hooks{})
	for _, start := range []uint64{1000, 2000} { // first ask: not yet; then answered
		e := rec(ev.APICudaLaunchKernelExC, ev.KindCall, 0x7ffc1000, 0x401000, 0)
		e.Start, e.End = start, start+100
		tr.Handle(decoded(t, e))
	}
	td, n := tr.TakeSpans()
	require.Equal(t, 2, n)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	v, _ := spans.At(1).Attributes().Get("gpu.cuda.kernel.name")
	require.Equal(t, "saxpyKernel(float, float const*, float*)", v.Str())
	require.Equal(t, map[uint64]int{0x401000: 2}, sym.asked)
}

// TestNestingStaysWithinAProcess: thread ids are only unique within a pid
// namespace (devrt writes gettid() of the process's own: every container's
// main thread is 1), so a call of another process whose interval contains a
// span of the same thread id is not its parent.
func TestNestingStaysWithinAProcess(t *testing.T) {
	res := fakeResolver{100: {PID: 100, ExeName: "a"}, 200: {PID: 200, ExeName: "b"}}
	for _, tt := range []struct {
		name           string
		innerPID       uint32
		innerTID       uint32
		outerPID       uint32
		outerTID       uint32
		wantParented   bool
		wantSameTraces bool
	}{
		{"same process, same thread", 100, 1, 100, 1, true, true},
		{"other process, same thread id", 200, 1, 100, 1, false, false},
		{"same process, other thread", 100, 2, 100, 1, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{})
			call := func(api ev.API, pid, tid uint32, start, end uint64) *ev.Event {
				e := rec(api, ev.KindCall)
				e.Source, e.PID, e.TID, e.Start, e.End = ev.SourceDevrt, pid, tid, start, end
				return decoded(t, e)
			}
			tr.Handle(call(ev.APICuMemsetD8, tt.innerPID, tt.innerTID, 1100, 1400))
			tr.Handle(call(ev.APICudaLaunchKernel, tt.outerPID, tt.outerTID, 1000, 2000))
			td, n := tr.TakeSpans()
			require.Equal(t, 2, n)
			spans := allSpans(td)
			inner, outer := spans[0], spans[1]
			require.Equal(t, "cuMemsetD8", inner.Name())
			require.Equal(t, tt.wantParented, inner.ParentSpanID() == outer.SpanID())
			require.Equal(t, tt.wantParented, !inner.ParentSpanID().IsEmpty())
			require.Equal(t, tt.wantSameTraces, inner.TraceID() == outer.TraceID())
		})
	}
}

// expandingName is a mangled name of at most ev.NameMax-1 bytes whose
// demangled form doubles every two parameters (each is a template of the
// last one, twice, by substitution): f(X<A, A>, X<X<A, A>, X<A, A>>, ...).
// Demangled in full it is over 100 MB.
func expandingName() string {
	s := "_Z1f1XI1AS_E"
	for i := 0; ; i++ {
		id := strings.ToUpper(strconv.FormatInt(int64(i), 36))
		next := s + "S0_IS" + id + "_S" + id + "_E"
		if len(next) >= ev.NameMax {
			return s
		}
		s = next
	}
}

// TestNamesDemangleWithinBounds: a name a program passes (any string) is
// demangled for spans within a bound of time and memory; one whose
// demangled form would exceed it is shown mangled.
func TestNamesDemangleWithinBounds(t *testing.T) {
	for _, tt := range []struct {
		name, mangled, want string
	}{
		{"ordinary", "_Z6vecAddPfS_S_i", "vecAdd(float*, float*, float*, int)"},
		{"not mangled", "matmul_kernel", "matmul_kernel"},
		{"expanding", expandingName(), expandingName()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestTranslator(t, Hooks{})
			named := withOut(rec(ev.APICuModuleGetFunction, ev.KindCallNamed, 0x7ffc, 0xe0, 0x5000), 0xf00)
			named.Name = tt.mangled
			tr.Handle(decoded(t, named))
			l := rec(ev.APICuLaunchKernel, ev.KindCall, 0xf00, 1, 1, 1, 1, 1, 1, 0, 0)
			l.Flags = ev.FlagStackValid
			tr.Handle(decoded(t, l))
			td, n := tr.TakeSpans()
			require.Equal(t, 2, n)
			spans := allSpans(td)
			got := attr(spans[0], "gpu.cuda.function.name")
			require.Equal(t, len(tt.want), len(got))
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.want, attr(spans[1], "gpu.cuda.kernel.name"))
		})
	}
}
