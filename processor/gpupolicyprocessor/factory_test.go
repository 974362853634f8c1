package gpupolicyprocessor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-gpu/otelcol-gpu/processor/gpupolicyprocessor/internal/metadata"
)

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, component.MustNewType("gpupolicy"), f.Type())
	assert.Equal(t, component.StabilityLevelDevelopment, f.TracesStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.MetricsStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsStability())
}

// createAll creates the three signal processors of one configuration.
func createAll(t *testing.T, set processor.Settings, cfg component.Config,
	tr consumer.Traces, me consumer.Metrics, lo consumer.Logs,
) (processor.Traces, processor.Metrics, processor.Logs) {
	t.Helper()
	f := NewFactory()
	ctx := context.Background()
	tp, err := f.CreateTraces(ctx, set, cfg, tr)
	require.NoError(t, err)
	require.NotNil(t, tp)
	mp, err := f.CreateMetrics(ctx, set, cfg, me)
	require.NoError(t, err)
	require.NotNil(t, mp)
	lp, err := f.CreateLogs(ctx, set, cfg, lo)
	require.NoError(t, err)
	require.NotNil(t, lp)
	return tp, mp, lp
}

func TestCreateProcessors(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	tp, mp, lp := createAll(t, processortest.NewNopSettings(metadata.Type), cfg,
		consumertest.NewNop(), consumertest.NewNop(), consumertest.NewNop())
	for name, c := range map[string]interface{ Capabilities() consumer.Capabilities }{
		"traces": tp, "metrics": mp, "logs": lp,
	} {
		assert.Equal(t, consumer.Capabilities{MutatesData: false}, c.Capabilities(), name)
	}
	assert.Equal(t, 1, policies.len(), "one policy shared by the three signals")
	for _, c := range []component.Component{tp, mp, lp} {
		require.NoError(t, c.Shutdown(context.Background()))
	}
	assert.Equal(t, 0, policies.len())
}

func testTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutInt("process.pid", 4242)
	rs.Resource().Attributes().PutStr("container.id", "0123456789abcdef")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("gpuebpf")
	for i, name := range []string{"cuLaunchKernel", "cuMemcpyHtoDAsync"} {
		s := ss.Spans().AppendEmpty()
		s.SetName(name)
		s.SetTraceID(pcommon.TraceID{1, 2, 3, byte(i)})
		s.SetSpanID(pcommon.SpanID{4, 5, byte(i)})
		s.SetStartTimestamp(pcommon.Timestamp(1_000_000 + i))
		s.SetEndTimestamp(pcommon.Timestamp(2_000_000 + i))
		s.Attributes().PutStr("gpu.cuda.api", name)
	}
	return td
}

func testMetrics() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutInt("process.pid", 4242)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("gpu.cuda.calls")
	m.SetUnit("{call}")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	dp := sum.DataPoints().AppendEmpty()
	dp.Attributes().PutStr("gpu.cuda.api", "cuLaunchKernel")
	dp.SetIntValue(17)
	dp.SetTimestamp(pcommon.NewTimestampFromTime(time.Unix(1700000000, 0)))
	h := rm.ScopeMetrics().At(0).Metrics().AppendEmpty()
	h.SetName("gpu.cuda.call.duration")
	hdp := h.SetEmptyHistogram().DataPoints().AppendEmpty()
	hdp.SetCount(3)
	hdp.SetSum(0.25)
	hdp.ExplicitBounds().FromRaw([]float64{0.1, 1})
	hdp.BucketCounts().FromRaw([]uint64{1, 2, 0})
	return md
}

func testLogs() plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("hw.id", "GPU-00000000-0000-0000-0000-000000000000")
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("Xid 79: GPU has fallen off the bus")
	lr.SetSeverityNumber(plog.SeverityNumberError)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Unix(1700000000, 0)))
	return ld
}

func TestPassThrough(t *testing.T) {
	tests := []struct {
		name     string
		readOnly bool
	}{
		{name: "mutable input"},
		{name: "read-only input", readOnly: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, ms, ls := new(consumertest.TracesSink), new(consumertest.MetricsSink), new(consumertest.LogsSink)
			tp, mp, lp := createAll(t, processortest.NewNopSettings(metadata.Type),
				NewFactory().CreateDefaultConfig(), ts, ms, ls)
			ctx := context.Background()
			host := componenttest.NewNopHost()
			for _, c := range []component.Component{tp, mp, lp} {
				require.NoError(t, c.Start(ctx, host))
			}

			td, md, ld := testTraces(), testMetrics(), testLogs()
			wantT, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
			require.NoError(t, err)
			wantM, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
			require.NoError(t, err)
			wantL, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
			require.NoError(t, err)
			if tt.readOnly {
				td.MarkReadOnly()
				md.MarkReadOnly()
				ld.MarkReadOnly()
			}

			require.NoError(t, tp.ConsumeTraces(ctx, td))
			require.NoError(t, mp.ConsumeMetrics(ctx, md))
			require.NoError(t, lp.ConsumeLogs(ctx, ld))

			require.Len(t, ts.AllTraces(), 1)
			require.Len(t, ms.AllMetrics(), 1)
			require.Len(t, ls.AllLogs(), 1)
			assert.Equal(t, 2, ts.SpanCount())
			assert.Equal(t, 2, ms.DataPointCount())
			assert.Equal(t, 1, ls.LogRecordCount())

			gotT, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(ts.AllTraces()[0])
			require.NoError(t, err)
			gotM, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(ms.AllMetrics()[0])
			require.NoError(t, err)
			gotL, err := (&plog.ProtoMarshaler{}).MarshalLogs(ls.AllLogs()[0])
			require.NoError(t, err)
			assert.Equal(t, wantT, gotT, "traces changed")
			assert.Equal(t, wantM, gotM, "metrics changed")
			assert.Equal(t, wantL, gotL, "logs changed")
			assert.Equal(t, tt.readOnly, ts.AllTraces()[0].IsReadOnly())

			for _, c := range []component.Component{tp, mp, lp} {
				require.NoError(t, c.Shutdown(ctx))
			}
			assert.Equal(t, 0, policies.len())
		})
	}
}

func TestNextConsumerErrorReturned(t *testing.T) {
	want := errors.New("downstream refused")
	tp, mp, lp := createAll(t, processortest.NewNopSettings(metadata.Type),
		NewFactory().CreateDefaultConfig(), consumertest.NewErr(want), consumertest.NewErr(want), consumertest.NewErr(want))
	ctx := context.Background()
	assert.Equal(t, want, tp.ConsumeTraces(ctx, testTraces()))
	assert.Equal(t, want, mp.ConsumeMetrics(ctx, testMetrics()))
	assert.Equal(t, want, lp.ConsumeLogs(ctx, testLogs()))
	for _, c := range []component.Component{tp, mp, lp} {
		require.NoError(t, c.Shutdown(ctx))
	}
}

// logEntry is the part of a log line the lifecycle tests look at.
type logEntry struct {
	Message string
	Fields  map[string]any
}

func entries(logs *observer.ObservedLogs) []logEntry {
	var out []logEntry
	for _, e := range logs.AllUntimed() {
		out = append(out, logEntry{Message: e.Message, Fields: e.ContextMap()})
	}
	return out
}

func TestLifecycle(t *testing.T) {
	started := logEntry{Message: "gpupolicy processor started", Fields: map[string]any{
		"mode": "observe", "pin_path": "/sys/fs/bpf/gpuext", "max_actions_per_second": float64(10),
	}}
	stopped := logEntry{Message: "gpupolicy processor stopped", Fields: map[string]any{"mode": "observe"}}

	tests := []struct {
		name string
		// start says which of traces, metrics, logs get Start.
		start [3]bool
		// shutdownTwice calls Shutdown twice on every processor.
		shutdownTwice bool
		want          []logEntry
	}{
		{name: "never started", want: nil},
		{name: "all started", start: [3]bool{true, true, true}, want: []logEntry{started, stopped}},
		{name: "only metrics started", start: [3]bool{false, true, false}, want: []logEntry{started, stopped}},
		{name: "shutdown twice", start: [3]bool{true, true, true}, shutdownTwice: true, want: []logEntry{started, stopped}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			set := processortest.NewNopSettings(metadata.Type)
			set.Logger = zap.New(core)
			tp, mp, lp := createAll(t, set, NewFactory().CreateDefaultConfig(),
				consumertest.NewNop(), consumertest.NewNop(), consumertest.NewNop())
			comps := []component.Component{tp, mp, lp}
			ctx := context.Background()
			host := componenttest.NewNopHost()
			for i, c := range comps {
				if tt.start[i] {
					require.NoError(t, c.Start(ctx, host))
				}
			}
			// Nothing is logged as stopped until the last signal shuts down.
			require.NoError(t, tp.Shutdown(ctx))
			require.NoError(t, mp.Shutdown(ctx))
			if tt.shutdownTwice {
				require.NoError(t, tp.Shutdown(ctx))
				require.NoError(t, mp.Shutdown(ctx))
			}
			assert.Equal(t, 1, policies.len(), "logs processor still holds the policy")
			require.NoError(t, lp.Shutdown(ctx))
			if tt.shutdownTwice {
				for _, c := range comps {
					require.NoError(t, c.Shutdown(ctx))
				}
			}
			assert.Equal(t, 0, policies.len())
			assert.Equal(t, tt.want, entries(logs))
		})
	}
}

// Two configurations (gpupolicy and gpupolicy/b) get a policy each.
func TestSeparatePoliciesPerConfig(t *testing.T) {
	f := NewFactory()
	ctx := context.Background()
	a, err := f.CreateTraces(ctx, processortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(), consumertest.NewNop())
	require.NoError(t, err)
	b, err := f.CreateTraces(ctx, processortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(), consumertest.NewNop())
	require.NoError(t, err)
	assert.Equal(t, 2, policies.len())
	require.NoError(t, a.Shutdown(ctx))
	assert.Equal(t, 1, policies.len())
	require.NoError(t, b.Shutdown(ctx))
	assert.Equal(t, 0, policies.len())
}
