package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
)

// TestTrackBeforeRecords: devrt's ring is found while its process runs;
// its records are drained after it exited. Tracking it at discovery keeps
// its identity, and the rules judge it by it.
func TestTrackBeforeRecords(t *testing.T) {
	res := fakeResolver{300: {PID: 300, ExeName: "trainer"}}
	var seen []uint32
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{
		Select: func(p procattr.Process) bool { return p.ExeName == "trainer" },
		Seen:   func(pid uint32) { seen = append(seen, pid) },
	})
	tr.Track(300)
	tr.Track(300)
	require.Equal(t, []uint32{300}, seen, "judged once")
	delete(res, 300) // gone from /proc
	e := rec(ev.APICuCtxSynchronize, ev.KindCall)
	e.PID, e.Source = 300, ev.SourceDevrt
	tr.Handle(decoded(t, e))
	td, n := tr.TakeSpans()
	require.Equal(t, 1, n)
	exe, _ := td.ResourceSpans().At(0).Resource().Attributes().Get("process.executable.name")
	require.Equal(t, "trainer", exe.Str())
}

// TestExecCommOutlivesExit: records that arrive after the exit record
// still find the comm recorded at exec, until the emission after next.
func TestExecCommOutlivesExit(t *testing.T) {
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), fakeResolver{}, nil, Hooks{
		Select: func(p procattr.Process) bool { return p.ExeName == "trainer" },
	})
	tr.Handle(&ev.Event{Kind: ev.KindExec, PID: 300, Name: "trainer"})
	tr.Handle(&ev.Event{Kind: ev.KindExit, PID: 300})
	tr.Handle(&ev.Event{Kind: ev.KindExec, PID: 301, Name: "trainer"})
	tr.Handle(&ev.Event{Kind: ev.KindExit, PID: 301})
	tr.Metrics(SelfStats{})
	call := rec(ev.APICuCtxSynchronize, ev.KindCall)
	call.PID = 300
	tr.Handle(decoded(t, call))
	_, n := tr.TakeSpans()
	require.Equal(t, 1, n, "the comm passed the include rule after the exit and one emission")
	tr.Metrics(SelfStats{})
	call.PID = 301
	tr.Handle(decoded(t, call))
	_, n = tr.TakeSpans()
	require.Zero(t, n, "two emissions later the comm is gone")
	require.Empty(t, tr.execComm)
}

// TestHoldingKeepsExitedProcess: a source still holding records of an
// exited process keeps its state (and series) until it has handed them.
func TestHoldingKeepsExitedProcess(t *testing.T) {
	res := fakeResolver{100: {PID: 100, ExeName: "trainer"}}
	holding := true
	var released []uint32
	tr := New(testConfig(), receivertest.NewNopSettings(metadata.Type), res, nil, Hooks{
		Holding:  func(pid uint32) bool { return holding },
		Released: func(pid uint32, _ bool) { released = append(released, pid) },
	})
	tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	delete(res, 100) // exited
	tr.Metrics(SelfStats{})
	require.Equal(t, 1, tr.Processes(), "held")
	tr.Handle(decoded(t, rec(ev.APICuCtxSynchronize, ev.KindCall)))
	holding = false
	md := tr.Metrics(SelfStats{})
	require.Equal(t, int64(2), sumValue(t, md, "gpu.cuda.calls", map[string]string{"gpu.cuda.api": "cuCtxSynchronize"}), "one series")
	require.Zero(t, tr.Processes())
	require.Equal(t, []uint32{100}, released)
}
