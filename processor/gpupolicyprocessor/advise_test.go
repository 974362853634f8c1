package gpupolicyprocessor

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/processor/gpupolicyprocessor/internal/metadata"
)

func TestAdviceFor(t *testing.T) {
	tests := []struct {
		in   faultpattern.Result
		want Advice
		ok   bool
	}{
		{faultpattern.Result{Pattern: faultpattern.Sequential, Stride: 4096}, Advice{Prefetch: "always_max", Eviction: "default"}, true},
		{faultpattern.Result{Pattern: faultpattern.Strided, Stride: -65536}, Advice{Prefetch: "stride", Stride: -65536, Eviction: "default"}, true},
		{faultpattern.Result{Pattern: faultpattern.Random}, Advice{Prefetch: "none", Eviction: "default"}, true},
		{faultpattern.Result{Pattern: faultpattern.HotSet, WorkingSetPages: 64}, Advice{Prefetch: "default", Eviction: "lfu"}, true},
		{faultpattern.Result{Pattern: faultpattern.Unknown}, Advice{}, false},
		{faultpattern.Result{Pattern: faultpattern.Pattern(42)}, Advice{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in.Pattern.String(), func(t *testing.T) {
			got, ok := adviceFor(tt.in)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
	assert.Equal(t, "prefetch=stride(-65536) eviction=default", Advice{Prefetch: "stride", Stride: -65536, Eviction: "default"}.String())
	assert.Equal(t, "prefetch=default eviction=lfu", Advice{Prefetch: "default", Eviction: "lfu"}.String())
}

// Synthetic fault streams of n faults each.
func sequential(n int) []faultstream.Sample {
	out := make([]faultstream.Sample, n)
	for i := range out {
		out[i] = faultstream.Sample{TimeNs: uint64(i + 1), Addr: 0x7f0000000000 + uint64(i)*4096, Access: faultstream.AccessRead}
	}
	return out
}

func strided(n int, stride uint64) []faultstream.Sample {
	out := sequential(n)
	for i := range out {
		out[i].Addr = 0x7f0000000000 + uint64(i)*stride
	}
	return out
}

func random(n int, seed uint64) []faultstream.Sample {
	r := rand.New(rand.NewPCG(seed, 1))
	out := sequential(n)
	for i := range out {
		out[i].Addr = 0x7f0000000000 + r.Uint64N(1<<30)&^4095
	}
	return out
}

func hotSet(n, pages int, seed uint64) []faultstream.Sample {
	r := rand.New(rand.NewPCG(seed, 2))
	out := sequential(n)
	for i := range out {
		out[i].Addr = 0x7f0000000000 + uint64(r.IntN(pages))*4096
		out[i].Access = faultstream.AccessWrite
	}
	return out
}

func publish(h *faultstream.Hub, k faultstream.Key, ss []faultstream.Sample) {
	st := h.Stream(k)
	for _, s := range ss {
		st.Add(s)
	}
}

// advice is one gpu.policy.advice point, flattened.
type advice struct {
	PID        int64
	HWID       string
	Pattern    string
	Prefetch   string
	Stride     int64
	Eviction   string
	Samples    int64
	Confidence float64
}

func advices(t *testing.T, md pmetric.Metrics) []advice {
	var out []advice
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != metricAdvice {
					continue
				}
				require.Equal(t, scopeName, sm.Scope().Name())
				require.Equal(t, pmetric.MetricTypeGauge, m.Type())
				for _, dp := range m.Gauge().DataPoints().All() {
					pid, _ := rm.Resource().Attributes().Get("process.pid")
					hw, _ := rm.Resource().Attributes().Get("hw.id")
					a := advice{PID: pid.Int(), HWID: hw.Str(), Confidence: dp.DoubleValue()}
					at := dp.Attributes()
					if v, ok := at.Get(attrPattern); ok {
						a.Pattern = v.Str()
					}
					if v, ok := at.Get(attrPrefetch); ok {
						a.Prefetch = v.Str()
					}
					if v, ok := at.Get(attrStride); ok {
						a.Stride = v.Int()
					}
					if v, ok := at.Get(attrEviction); ok {
						a.Eviction = v.Str()
					}
					if v, ok := at.Get(attrSamples); ok {
						a.Samples = v.Int()
					}
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// TestAdviseModeThroughPipeline runs the processor as a pipeline would, in
// advise mode, over a hub registered as a receiver registers it, and checks
// each stream's advice, its pacing and what is left alone.
func TestAdviseModeThroughPipeline(t *testing.T) {
	hub := faultstream.NewHub(4096, 0)
	defer faultstream.Register("gpuebpf/advise", hub)()

	const gpu = "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d"
	publish(hub, faultstream.Key{PID: 100, HWID: gpu}, sequential(2048))
	publish(hub, faultstream.Key{PID: 200, HWID: gpu}, strided(1024, 64<<10))
	publish(hub, faultstream.Key{PID: 300, HWID: gpu}, random(1024, 7))
	publish(hub, faultstream.Key{PID: 400, HWID: gpu}, hotSet(1024, 64, 9))
	publish(hub, faultstream.Key{PID: 500, HWID: gpu}, sequential(10)) // too few: Unknown
	publish(hub, faultstream.Key{PID: 100}, sequential(1024))          // CPU faults: no advice

	cfg := createDefaultConfig()
	cfg.Mode = ModeAdvise
	cfg.SignalsFrom = "gpuebpf/advise"
	require.NoError(t, cfg.Validate())
	sink := new(consumertest.MetricsSink)
	set := processortest.NewNopSettings(metadata.Type)
	p, err := NewFactory().CreateMetrics(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	assert.True(t, p.Capabilities().MutatesData)
	require.NoError(t, p.Start(context.Background(), nil))
	defer func() { require.NoError(t, p.Shutdown(context.Background())) }()

	clock := time.Unix(1000, 0)
	pol := policies.m[cfg]
	require.NotNil(t, pol)
	pol.advice.now = func() time.Time { return clock }

	in := pmetric.NewMetrics()
	in.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetName("gpu.uvm.faults")
	require.NoError(t, p.ConsumeMetrics(context.Background(), in))
	require.Len(t, sink.AllMetrics(), 1)
	out := sink.AllMetrics()[0]
	assert.Equal(t, "gpu.uvm.faults", out.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Name(), "what passes is kept")

	got := advices(t, out)
	require.Len(t, got, 4)
	want := []advice{
		{PID: 100, HWID: gpu, Pattern: "sequential", Prefetch: "always_max", Eviction: "default", Samples: 1024},
		{PID: 200, HWID: gpu, Pattern: "strided", Prefetch: "stride", Stride: 64 << 10, Eviction: "default", Samples: 1024},
		{PID: 300, HWID: gpu, Pattern: "random", Prefetch: "none", Eviction: "default", Samples: 1024},
		{PID: 400, HWID: gpu, Pattern: "hot_set", Prefetch: "default", Eviction: "lfu", Samples: 1024},
	}
	for i := range want {
		assert.GreaterOrEqual(t, got[i].Confidence, cfg.Advise.MinConfidence, got[i].Pattern)
		// The value is the classifier's confidence over the same window.
		k := faultstream.Key{PID: int(want[i].PID), HWID: gpu}
		ss, _, _ := hub.Recent(k, nil)
		r := faultstream.Classify(ss[len(ss)-1024:], faultpattern.Options{Window: 1024})
		want[i].Confidence = r.Confidence
	}
	assert.Equal(t, want, got)

	// Within the interval: nothing more.
	clock = clock.Add(5 * time.Second)
	require.NoError(t, p.ConsumeMetrics(context.Background(), pmetric.NewMetrics()))
	assert.Empty(t, advices(t, sink.AllMetrics()[1]))

	// After it, only the streams that faulted since: pid 300 turns
	// sequential.
	clock = clock.Add(10 * time.Second)
	publish(hub, faultstream.Key{PID: 300, HWID: gpu}, sequential(1024))
	require.NoError(t, p.ConsumeMetrics(context.Background(), pmetric.NewMetrics()))
	got = advices(t, sink.AllMetrics()[2])
	require.Len(t, got, 1)
	assert.Equal(t, int64(300), got[0].PID)
	assert.Equal(t, "sequential", got[0].Pattern)
	assert.Equal(t, "always_max", got[0].Prefetch)

	// A process that exits is forgotten; its key may come back.
	hub.Remove(300)
	clock = clock.Add(10 * time.Second)
	require.NoError(t, p.ConsumeMetrics(context.Background(), pmetric.NewMetrics()))
	assert.Empty(t, advices(t, sink.AllMetrics()[3]))
	assert.NotContains(t, pol.advice.seen, faultstream.Key{PID: 300, HWID: gpu})
}

func TestAdviseWithoutReceiverPassesThrough(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Mode = ModeAdvise
	cfg.SignalsFrom = "gpuebpf/absent"
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), nil))
	defer func() { require.NoError(t, p.Shutdown(context.Background())) }()
	md := pmetric.NewMetrics()
	md.ResourceMetrics().AppendEmpty()
	require.NoError(t, p.ConsumeMetrics(context.Background(), md))
	require.Len(t, sink.AllMetrics(), 1)
	assert.Equal(t, 1, sink.AllMetrics()[0].ResourceMetrics().Len())
}

func TestObserveModeAddsNothing(t *testing.T) {
	hub := faultstream.NewHub(4096, 0)
	defer faultstream.Register(component.MustNewID("gpuebpf").String(), hub)()
	publish(hub, faultstream.Key{PID: 1, HWID: "GPU-x"}, sequential(1024))
	cfg := createDefaultConfig()
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	assert.False(t, p.Capabilities().MutatesData)
	require.NoError(t, p.Start(context.Background(), nil))
	defer func() { require.NoError(t, p.Shutdown(context.Background())) }()
	require.NoError(t, p.ConsumeMetrics(context.Background(), pmetric.NewMetrics()))
	assert.Equal(t, 0, sink.AllMetrics()[0].ResourceMetrics().Len())
}

// TestAdviseIdleReset: after a pause longer than idle_reset, only the new
// phase's faults are classified.
func TestAdviseIdleReset(t *testing.T) {
	for _, tt := range []struct {
		idle time.Duration
		want string
	}{{time.Second, "strided"}, {0, "sequential"}} {
		t.Run(tt.idle.String(), func(t *testing.T) {
			hub := faultstream.NewHub(4096, 0)
			defer faultstream.Register("gpuebpf/idle", hub)()
			k := faultstream.Key{PID: 1, HWID: "GPU-x"}
			publish(hub, k, sequential(1024))
			later := strided(256, 64<<10)
			for i := range later {
				later[i].TimeNs += 2e9
			}
			publish(hub, k, later)
			cfg := createDefaultConfig().Advise
			cfg.IdleReset = tt.idle
			a := newAdviser(cfg, "gpuebpf/idle", func() time.Time { return time.Unix(1, 0) }, zap.NewNop())
			md := pmetric.NewMetrics()
			require.Equal(t, 1, a.appendAdvice(md))
			assert.Equal(t, tt.want, advices(t, md)[0].Pattern)
		})
	}
}
