package gpuebpfreceiver

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devrt"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/translate"
)

// These tests feed the receiver devrt rings written by the Go producer
// (internal/devring), as the C library writes them, with the uprobe
// source off: they need neither root nor the library.

// selfRing creates a ring for this test process (alive, so discovery keeps
// it) in dir, created now.
func selfRing(t *testing.T, dir string) (*devring.Producer, string, uint64) {
	res, err := procattr.NewResolver("/proc")
	require.NoError(t, err)
	me, err := res.Resolve(os.Getpid())
	require.NoError(t, err)
	created := translate.Monotonic()
	path := filepath.Join(dir, "gpuext-devrt-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(created, 10)+".ring")
	p, err := devring.Create(path, devring.Header{Capacity: 256, PID: uint32(os.Getpid()), StartTime: me.StartTime,
		CreatedNS: created, Version: "go-test"})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p, path, created
}

func devrtConfig(dir string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.CollectionInterval = 50 * time.Millisecond
	cfg.Spans.FlushInterval = 20 * time.Millisecond
	cfg.CUDA.Enabled = false
	cfg.NVML.Enabled = false
	cfg.UVM.Enabled = false
	cfg.DevRT.Directories = []string{dir}
	cfg.DevRT.PollInterval = 10 * time.Millisecond
	return cfg
}

func startDevrtOnly(t *testing.T, cfg *Config) (*consumertest.TracesSink, *consumertest.MetricsSink) {
	require.NoError(t, cfg.Validate())
	traces, metrics := new(consumertest.TracesSink), new(consumertest.MetricsSink)
	set := receivertest.NewNopSettings(metadata.Type)
	tr, err := createTraces(context.Background(), set, cfg, traces)
	require.NoError(t, err)
	_, err = createMetrics(context.Background(), set, cfg, metrics)
	require.NoError(t, err)
	require.NoError(t, tr.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, tr.Shutdown(context.Background())) })
	return traces, metrics
}

func spansOfPID(traces *consumertest.TracesSink, pid int) []ptrace.Span {
	var out []ptrace.Span
	for _, td := range traces.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			if p, _ := rs.Resource().Attributes().Get("process.pid"); p.Int() != int64(pid) {
				continue
			}
			ss := rs.ScopeSpans().At(0).Spans()
			for j := 0; j < ss.Len(); j++ {
				out = append(out, ss.At(j))
			}
		}
	}
	return out
}

// latest returns the last emission's resource metrics of pid (0: the
// receiver's own).
func latest(metrics *consumertest.MetricsSink, pid int) (pmetric.ResourceMetrics, bool) {
	all := metrics.AllMetrics()
	for i := len(all) - 1; i >= 0; i-- {
		rms := all[i].ResourceMetrics()
		for j := 0; j < rms.Len(); j++ {
			p, ok := rms.At(j).Resource().Attributes().Get("process.pid")
			if (pid == 0 && !ok) || (ok && p.Int() == int64(pid)) {
				return rms.At(j), true
			}
		}
	}
	return pmetric.ResourceMetrics{}, false
}

func devrtRecord(e ev.Event) []byte {
	e.Source = ev.SourceDevrt
	e.PID, e.TID = 1, 2 // the ring's owner is the collector's business, not the record's
	return ev.AppendRecord(nil, &e)
}

func TestDevrtRingToSpansAndMetrics(t *testing.T) {
	dir := t.TempDir()
	p, path, created := selfRing(t, dir)
	pid := os.Getpid()
	traces, metrics := startDevrtOnly(t, devrtConfig(dir))

	at := created + 1000
	named := ev.Event{Kind: ev.KindCallNamed, API: ev.APICuModuleGetFunction, Corr: 1, Start: at, End: at + 100,
		Flags: ev.FlagOutValid, Out: 0xf00, Name: "_Z6vecAddPfS_S_i"}
	require.True(t, p.Write(devrtRecord(named)))
	for i := uint32(0); i < 10; i++ {
		s := at + 1000 + uint64(i)*1000
		l := ev.Event{Kind: ev.KindCall, API: ev.APICuLaunchKernel, Corr: 2 + i, Start: s, End: s + 500,
			Flags: ev.FlagStackValid, Args: [9]uint64{0xf00, 128, 1, 1, 256, 1, 1, 0, 0x7}}
		require.True(t, p.Write(devrtRecord(l)))
	}
	cp := ev.Event{Kind: ev.KindCall, API: ev.APICuMemcpyHtoDAsync, Corr: 12, Start: at + 20000, End: at + 21000,
		Args: [9]uint64{0xd000, 0x7000, 4096, 0x7}}
	require.True(t, p.Write(devrtRecord(cp)))
	for _, x := range []ev.GPUExec{
		{API: ev.APICuLaunchKernel, Corr: 2, CallStart: at + 1000, GPUStart: at + 3000, GPUEnd: at + 8000, Stream: 7, Handle: 0xf00},
		{API: ev.APICuLaunchKernel, Corr: 5, CallStart: at + 4000, GPUStart: at + 9000, GPUEnd: at + 14000, Stream: 7, Handle: 0xf00},
		{API: ev.APICuMemcpyHtoDAsync, Corr: 12, CallStart: at + 20000, GPUStart: at + 22000, GPUEnd: at + 23000, Stream: 7, Bytes: 4096},
	} {
		x.PID = 1
		require.True(t, p.Write(ev.AppendGPUExec(nil, &x)))
	}
	require.True(t, p.Write([]byte("not a record at all")))

	var spans []ptrace.Span
	require.Eventually(t, func() bool { spans = spansOfPID(traces, pid); return len(spans) >= 15 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	spans = spansOfPID(traces, pid)
	require.Len(t, spans, 15, "12 calls, 3 GPU executions")
	byID := map[pcommon.SpanID]ptrace.Span{}
	names := map[string]int{}
	for _, s := range spans {
		byID[s.SpanID()] = s
		names[s.Name()]++
	}
	require.Equal(t, map[string]int{"cuModuleGetFunction": 1, "cuLaunchKernel": 10, "cuMemcpyHtoDAsync": 1,
		"cuLaunchKernel gpu": 2, "cuMemcpyHtoDAsync gpu": 1}, names)
	for _, s := range spans {
		if len(s.Name()) < 4 || s.Name()[len(s.Name())-4:] != " gpu" {
			continue
		}
		parent, ok := byID[s.ParentSpanID()]
		require.True(t, ok, "%s has its call as parent", s.Name())
		require.Equal(t, parent.Name()+" gpu", s.Name())
		require.Equal(t, parent.TraceID(), s.TraceID())
		if s.Name() == "cuLaunchKernel gpu" {
			require.Equal(t, "vecAdd(float*, float*, float*, int)", attr(s, "gpu.cuda.kernel.name"))
			require.Equal(t, pcommon.Timestamp(5000), s.EndTimestamp()-s.StartTimestamp())
		}
	}

	// The ring's process says it is exiting: the ring is read on (and
	// kept) until the process has gone, reported as closed.
	p.SetState(devring.StateClosed, 0)
	var proc, self pmetric.ResourceMetrics
	require.Eventually(t, func() bool {
		var ok1, ok2 bool
		proc, ok1 = latest(metrics, pid)
		self, ok2 = latest(metrics, 0)
		if !ok1 || !ok2 {
			return false
		}
		n, _ := metricSum(self, "gpu.ebpf.devrt.rings", map[string]string{"gpu.devrt.ring.state": "closed"})
		return n == 1
	}, 5*time.Second, 10*time.Millisecond)
	n, _ := metricSum(self, "gpu.ebpf.devrt.rings", map[string]string{"gpu.devrt.ring.state": "active"})
	require.Zero(t, n)
	_, err := os.Stat(path)
	require.NoError(t, err, "this process still runs")
	n, _ = metricSum(proc, "gpu.cuda.launches", map[string]string{"gpu.cuda.api": "cuLaunchKernel"})
	require.Equal(t, int64(10), n)
	n, _ = metricSum(proc, "gpu.cuda.memory.copied", map[string]string{"gpu.cuda.copy.direction": "htod"})
	require.Equal(t, int64(4096), n)
	n, _ = metricSum(self, "gpu.ebpf.events.received", map[string]string{"gpu.source": "devrt"})
	require.Equal(t, int64(16), n, "15 records and the garbage one")
	n, _ = metricSum(self, "gpu.ebpf.events.dropped", map[string]string{"gpu.source": "devrt", "reason": "decode_error"})
	require.Equal(t, int64(1), n)
	for _, reason := range []string{"ring_full", "disabled", "timing_unavailable", "ring_corrupt", "process_limit"} {
		n, found := metricSum(self, "gpu.ebpf.events.dropped", map[string]string{"gpu.source": "devrt", "reason": reason})
		require.True(t, found, reason)
		require.Zero(t, n, reason)
	}
	count := histogramCount(proc, "gpu.kernel.execution.duration", "cuLaunchKernel")
	require.Equal(t, uint64(2), count)
	require.Equal(t, uint64(2), histogramCount(proc, "gpu.kernel.queue.delay", "cuLaunchKernel"))
	require.Equal(t, uint64(1), histogramCount(proc, "gpu.cuda.copy.execution.duration", "cuMemcpyHtoDAsync"))
}

func histogramCount(rm pmetric.ResourceMetrics, name, api string) uint64 {
	ms := rm.ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		if ms.At(i).Name() != name {
			continue
		}
		dps := ms.At(i).Histogram().DataPoints()
		for d := 0; d < dps.Len(); d++ {
			if a, _ := dps.At(d).Attributes().Get("gpu.cuda.api"); a.Str() == api {
				return dps.At(d).Count()
			}
		}
	}
	return 0
}

// TestDevrtRejectsGarbageFiles: a file named like a ring that is not one
// is counted once, left alone, and never stops the receiver.
func TestDevrtRejectsGarbageFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "gpuext-devrt-"+strconv.Itoa(os.Getpid())+"-1.ring")
	junk := make([]byte, 3*devring.PageSize)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	require.NoError(t, os.WriteFile(bad, junk, 0o600))
	_, metrics := startDevrtOnly(t, devrtConfig(dir))
	require.Eventually(t, func() bool {
		self, ok := latest(metrics, 0)
		if !ok {
			return false
		}
		n, _ := metricSum(self, "gpu.ebpf.devrt.rings.rejected", map[string]string{"reason": "invalid"})
		return n == 1
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	self, _ := latest(metrics, 0)
	n, _ := metricSum(self, "gpu.ebpf.devrt.rings.rejected", map[string]string{"reason": "invalid"})
	require.Equal(t, int64(1), n, "logged and counted once")
	_, err := os.Stat(bad)
	require.NoError(t, err)
}

// TestDevrtDedup: a process seen by the uprobes and by devrt. Its first
// uprobe call finds the ring at once; uprobe calls that started before the
// ring are kept, later ones are devrt's and dropped; when devrt disables
// itself the uprobes report again; an exec retires the old program's ring.
func TestDevrtDedup(t *testing.T) {
	dir := t.TempDir()
	p, path, created := selfRing(t, dir)
	pid := uint32(os.Getpid())
	r := devrtReceiver(t, devrtConfig(dir))

	uprobe := func(kind ev.Kind, start uint64) {
		raw := ev.AppendRecord(nil, &ev.Event{Kind: kind, API: ev.APICuCtxSynchronize, Source: ev.SourceUprobe,
			PID: pid, TID: pid, Start: start, End: start + 10})
		var e ev.Event
		r.handle(raw, &e)
	}
	uprobe(ev.KindCall, created-100) // before the ring: the uprobes' alone
	require.Equal(t, map[uint32]coverage{pid: {created, devrt.Forever}}, r.devrtCover, "found at the first call")
	uprobe(ev.KindCall, created) // devrt's
	uprobe(ev.KindCall, created+5000)
	require.Equal(t, uint64(2), r.devrtDups.Load())
	_, n := r.tr.TakeSpans()
	require.Equal(t, 1, n)

	p.SetState(devring.StateDisabled, 4)
	r.devrt.Poll()
	c := r.devrtCover[pid]
	require.Equal(t, created, c.since)
	require.Less(t, c.until, translate.Monotonic(), "covered until devrt was seen disabled")
	uprobe(ev.KindCall, c.until-1) // a call devrt reported before it stopped
	uprobe(ev.KindCall, c.until)   // the uprobes report again
	_, n = r.tr.TakeSpans()
	require.Equal(t, 1, n)
	require.Equal(t, uint64(3), r.devrtDups.Load())

	p.SetState(devring.StateActive, 0)
	r.devrt.Poll()
	require.Equal(t, map[uint32]coverage{pid: {created, devrt.Forever}}, r.devrtCover)
	exec := translate.Monotonic()
	uprobe(ev.KindExec, exec) // the process exec'd: its ring is the old program's
	_, err := os.Stat(path)
	require.True(t, os.IsNotExist(err), "the old program's ring is removed")
	require.Equal(t, map[uint32]coverage{pid: {created, exec}}, r.devrtCover)
	uprobe(ev.KindCall, exec+1)
	_, n = r.tr.TakeSpans()
	require.Equal(t, 1, n, "the new program is the uprobes' until it makes a ring")
}

// TestDevrtCoverageEndsAtExec: a process ended under devrt stays covered
// after its ring is gone (its uprobe events may be read late); an exec of
// that pid (a new process got it) ends the coverage, and a coverage that
// began after the exec (the new program's ring, found first) is kept.
func TestDevrtCoverageEndsAtExec(t *testing.T) {
	dir := t.TempDir()
	r := devrtReceiver(t, devrtConfig(dir))
	const pid = 4_000_000
	exec := func(at uint64) {
		raw := ev.AppendRecord(nil, &ev.Event{Kind: ev.KindExec, Source: ev.SourceUprobe, PID: pid, TID: pid, Start: at, End: at})
		var e ev.Event
		r.handle(raw, &e)
	}
	r.devrtCover[pid] = coverage{since: 1000, until: devrt.Forever}
	exec(5000)
	require.Equal(t, coverage{since: 1000, until: 5000}, r.devrtCover[pid])
	r.devrtCover[pid] = coverage{since: 9000, until: devrt.Forever}
	exec(8000)
	require.Equal(t, coverage{since: 9000, until: devrt.Forever}, r.devrtCover[pid])
}

// TestDevrtCoverageOutlivesRelease: the translator letting go of a process
// that ended under devrt (its ring drained and removed, the metrics
// emitted) before the ring buffer was read again leaves its unread uprobe
// calls devrt's; a call after the release (a new process that got the pid)
// is the uprobes'. The coverage is forgotten endedCoverGrace later.
func TestDevrtCoverageOutlivesRelease(t *testing.T) {
	r := devrtReceiver(t, devrtConfig(t.TempDir()))
	const pid = 4_000_001
	call := func(at uint64) {
		raw := ev.AppendRecord(nil, &ev.Event{Kind: ev.KindCall, API: ev.APICuCtxSynchronize, Source: ev.SourceUprobe,
			PID: pid, TID: pid, Start: at, End: at + 10})
		var e ev.Event
		r.handle(raw, &e)
	}
	r.devrtCover[pid] = coverage{since: 1000, until: devrt.Forever}
	before := translate.Monotonic()
	r.released(pid, true)
	after := translate.Monotonic()
	c := r.devrtCover[pid]
	require.Equal(t, uint64(1000), c.since)
	require.GreaterOrEqual(t, c.until, before)
	require.LessOrEqual(t, c.until, after)

	call(2000)        // made before it ended, read after the release
	call(c.until - 1) // the last instant covered
	require.Equal(t, uint64(2), r.devrtDups.Load(), "the ended process's calls stay devrt's")
	call(c.until) // the pid's next owner
	_, n := r.tr.TakeSpans()
	require.Equal(t, 1, n)

	r.released(pid, true) // a second release keeps the first end
	require.Equal(t, c, r.devrtCover[pid])
	r.pruneDevrtCover(c.until + endedCoverGrace)
	require.Equal(t, c, r.devrtCover[pid], "kept for endedCoverGrace")
	r.devrtCover[pid+1] = coverage{since: 5, until: devrt.Forever}
	r.pruneDevrtCover(c.until + endedCoverGrace + 1)
	require.Equal(t, map[uint32]coverage{pid + 1: {5, devrt.Forever}}, r.devrtCover, "then forgotten; a live process's kept")
}

// TestDevrtPartialClasses: devrt reporting launches only leaves the other
// calls of its processes to the uprobes.
func TestDevrtPartialClasses(t *testing.T) {
	dir := t.TempDir()
	_, _, created := selfRing(t, dir)
	pid := uint32(os.Getpid())
	cfg := devrtConfig(dir)
	cfg.DevRT.Classes = []string{"launch", "exec"}
	r := devrtReceiver(t, cfg)
	for _, api := range []ev.API{ev.APICuLaunchKernel, ev.APICuCtxSynchronize, ev.APICuMemAlloc} {
		raw := ev.AppendRecord(nil, &ev.Event{Kind: ev.KindCall, API: api, Source: ev.SourceUprobe,
			PID: pid, TID: pid, Start: created + 1, End: created + 10})
		var e ev.Event
		r.handle(raw, &e)
	}
	require.Equal(t, uint64(1), r.devrtDups.Load(), "only the launch is devrt's")
	_, n := r.tr.TakeSpans()
	require.Equal(t, 2, n)
}

// devrtReceiver is a receiver with only what the event goroutine needs for
// devrt (translator, resolver, source), driven by the test itself.
func devrtReceiver(t *testing.T, cfg *Config) *gpuReceiver {
	r := newReceiver(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	var err error
	r.resolver, err = procattr.NewResolver("/proc")
	require.NoError(t, err)
	r.tr = translate.New(translate.Config{Spans: true, Metrics: cfg.MetricsBuilderConfig}, r.set, r.resolver, nil, translate.Hooks{})
	r.startDevrt(t.Context())
	t.Cleanup(r.devrt.Shutdown)
	return r
}

// TestDevrtRingWaitsForExecRecord: a short program under devrt and the
// uprobes, with include rules. It exec'd (the exec record, with its name,
// is in the uprobes' ring buffer), made its ring, called and exited before
// the receiver read that record; discovery found the ring meanwhile. A
// drain then would judge the program by nothing (/proc has no trace of it,
// the translator no exec name yet): excluded, its records dropped, and its
// uprobe calls dropped too as devrt's, so no span at all. The ring waits
// until the ring buffer has been read up to when the ring was found.
func TestDevrtRingWaitsForExecRecord(t *testing.T) {
	dir := t.TempDir()
	const pid = 4_194_305 // above PID_MAX_LIMIT (4194304): never a live process
	created := translate.Monotonic()
	path := filepath.Join(dir, "gpuext-devrt-"+strconv.Itoa(pid)+"-"+strconv.FormatUint(created, 10)+".ring")
	p, err := devring.Create(path, devring.Header{Capacity: 64, PID: pid, StartTime: 7, CreatedNS: created, Version: "go-test"})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	for i := uint64(0); i < 3; i++ {
		require.True(t, p.Write(devrtRecord(ev.Event{Kind: ev.KindCall, API: ev.APICuCtxSynchronize, Corr: uint32(i + 1),
			Start: created + 1000*(i+1), End: created + 1000*(i+1) + 10})))
	}
	p.SetState(devring.StateClosed, 0) // devrt at exit

	cfg := devrtConfig(dir)
	cfg.CUDA.Include = []ProcessRule{{Executable: "workload"}}
	r := newReceiver(cfg, receivertest.NewNopSettings(metadata.Type), nil)
	r.resolver, err = procattr.NewResolver("/proc")
	require.NoError(t, err)
	r.tr = translate.New(translate.Config{Spans: true, Metrics: cfg.MetricsBuilderConfig}, r.set, r.resolver, nil, translate.Hooks{
		Select: cfg.CUDA.selector(), Skipped: r.skip, Released: r.released, Holding: r.devrtHolding})
	r.execRecords = true      // what Start sets with the uprobe source on
	r.startDevrt(t.Context()) // its first scan finds the ring
	t.Cleanup(r.devrt.Shutdown)
	handle := func(e ev.Event) {
		e.Source, e.PID, e.TID = ev.SourceUprobe, pid, pid
		var out ev.Event
		r.handle(ev.AppendRecord(nil, &e), &out)
	}

	r.devrt.Poll()                                         // the loop polls devrt before it reads the exec record
	comm := binary.LittleEndian.Uint64([]byte("workload")) // the new program's comm, NUL-padded in args[0..1]
	handle(ev.Event{Kind: ev.KindExec, Start: created - 1000, End: created - 1000, Args: [9]uint64{comm}})
	r.read.mark(translate.Monotonic(), 0) // then it has read the ring buffer to its end
	r.devrt.Poll()
	handle(ev.Event{Kind: ev.KindCall, API: ev.APICuCtxSynchronize, Start: created + 1000, End: created + 1010})
	td, n := r.tr.TakeSpans()
	require.Equal(t, 3, n, "devrt's records, once each")
	require.Equal(t, uint64(1), r.devrtDups.Load(), "the uprobe call is devrt's")
	exe, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("process.executable.name")
	require.Equal(t, "workload", exe.Str())
}

// TestReadMark: the ring buffer is read up to a mark's time once its
// backlog has been read, or the ring was seen empty; a mark outstanding is
// kept (under a flood a newer one would never be passed).
func TestReadMark(t *testing.T) {
	var m readMark
	m.mark(100, 0)
	require.Equal(t, uint64(100), m.upTo, "nothing unread")
	m.mark(200, 64)
	m.took(32)
	m.mark(300, 512) // kept: the first is not passed yet
	require.Equal(t, uint64(100), m.upTo)
	m.took(32)
	require.Equal(t, uint64(200), m.upTo)
	m.mark(400, 64)
	m.emptied()
	require.Equal(t, uint64(400), m.upTo)
	m.took(8)
	require.Equal(t, uint64(400), m.upTo)
}
