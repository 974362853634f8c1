package gpupolicyprocessor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
	"github.com/otelcol-gpu/otelcol-gpu/processor/gpupolicyprocessor/internal/metadata"
)

// recorder is an applier that keeps a policy's state in memory and records
// every call that changes or reads the policy, one line each.
type recorder struct {
	status    gpuext.Status
	statusErr error
	params    gpuext.MemParams
	prefetch  map[uint32]gpuext.Prefetch
	fail      map[string]error // method name -> error it returns
	calls     []string
}

func newRecorder() *recorder {
	return &recorder{status: gpuext.Status{MemPolicy: "-", SchedPolicy: "-"}, prefetch: map[uint32]gpuext.Prefetch{}}
}

// pinned makes r hold a policy named name with eviction ev, as gpuextctl
// would have left it.
func (r *recorder) pinned(name string, ev gpuext.Eviction) *recorder {
	r.params = gpuext.DefaultMemParams()
	r.params.Eviction = ev
	r.status.MemPolicy = name
	r.status.Mem = &gpuext.MemStatus{Params: r.params}
	return r
}

func (r *recorder) call(method, format string, args ...any) error {
	r.calls = append(r.calls, method+fmt.Sprintf(format, args...))
	return r.fail[method]
}

func (r *recorder) Status() (gpuext.Status, error) {
	r.calls = append(r.calls, "Status")
	st := r.status
	if st.Mem != nil {
		m := *st.Mem
		m.Prefetch = map[uint32]gpuext.Prefetch{}
		for pid, p := range r.prefetch {
			m.Prefetch[pid] = p
		}
		st.Mem = &m
	}
	return st, r.statusErr
}

func (r *recorder) AttachMem(name string, p gpuext.MemParams) error {
	if err := r.call("AttachMem", " %s eviction=%s prefetch=%s", name, p.Eviction, p.Prefetch); err != nil {
		return err
	}
	r.pinned(name, p.Eviction)
	return nil
}

func (r *recorder) MemParams() (gpuext.MemParams, error) { return r.params, r.fail["MemParams"] }

func (r *recorder) SetMem(p gpuext.MemParams) error {
	if err := r.call("SetMem", " eviction=%s prefetch=%s lfu_hot=%d", p.Eviction, p.Prefetch, p.LFUHot); err != nil {
		return err
	}
	r.params = p
	return nil
}

func (r *recorder) SetPrefetchFor(pid uint32, p gpuext.Prefetch) error {
	if err := r.call("SetPrefetchFor", " %d %s", pid, p); err != nil {
		return err
	}
	r.prefetch[pid] = p
	return nil
}

func (r *recorder) ClearPrefetchFor(pid uint32) error {
	if err := r.call("ClearPrefetchFor", " %d", pid); err != nil {
		return err
	}
	delete(r.prefetch, pid)
	return nil
}

func (r *recorder) Detach(k gpuext.Kind) error { return r.call("Detach", " %s", k) }

// take returns the calls since the last take.
func (r *recorder) take() []string {
	c := r.calls
	r.calls = nil
	return c
}

// statusHost records the component status events reported to it.
type statusHost struct {
	component.Host
	events []*componentstatus.Event
}

func (h *statusHost) Report(e *componentstatus.Event) { h.events = append(h.events, e) }

func enforceConfig(edit ...func(*Config)) *Config {
	cfg := createDefaultConfig()
	cfg.Mode = ModeEnforce
	cfg.MaxActionsPerSecond = 1000
	cfg.Enforce.StableRounds = 2
	cfg.Enforce.ForgetAfter = time.Minute
	for _, f := range edit {
		f(cfg)
	}
	return cfg
}

// Advice of each pattern, as adviceFor gives it.
var (
	seqAdvice    = mustAdvice(faultpattern.Sequential, 0)
	strideAdvice = mustAdvice(faultpattern.Strided, 65536)
	randAdvice   = mustAdvice(faultpattern.Random, 0)
	hotAdvice    = mustAdvice(faultpattern.HotSet, 0)
)

func mustAdvice(p faultpattern.Pattern, stride int64) Advice {
	a, ok := adviceFor(faultpattern.Result{Pattern: p, Stride: stride})
	if !ok {
		panic(p)
	}
	return a
}

const gpuA, gpuB = "GPU-a", "GPU-b"

func key(pid int, hw string) faultstream.Key { return faultstream.Key{PID: pid, HWID: hw} }

func advised(pid int, hw string, a Advice) verdict {
	return verdict{key: key(pid, hw), advice: a, ok: true}
}

func liveOf(keys ...faultstream.Key) map[faultstream.Key]bool {
	m := map[faultstream.Key]bool{}
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func TestEnforceStart(t *testing.T) {
	noModule := fmt.Errorf("%w (no /sys/kernel/btf/gpu_ext; insmod gpu_ext.ko first)", gpuext.ErrNoModule)
	for _, tt := range []struct {
		name      string
		edit      func(*Config)
		rec       *recorder
		calls     []string
		active    bool
		base      gpuext.Eviction
		statusErr string // the recoverable error reported; empty: none
	}{
		{
			name: "no module", rec: &recorder{statusErr: noModule}, calls: []string{"Status"},
			statusErr: "gpupolicy enforce mode runs as advise: gpu_ext kernel module is not loaded (no /sys/kernel/btf/gpu_ext; insmod gpu_ext.ko first)",
		},
		{
			name: "nothing pinned: attach", rec: newRecorder(), active: true, base: gpuext.EvictLRU,
			calls: []string{"Status", "AttachMem gpuext_mem eviction=lru prefetch=default"},
		},
		{
			name: "attach with the configured name and eviction", rec: newRecorder(), active: true, base: gpuext.EvictFIFO,
			edit:  func(c *Config) { c.Enforce.PolicyName, c.Enforce.Eviction = "otelcol", "fifo" },
			calls: []string{"Status", "AttachMem otelcol eviction=fifo prefetch=default"},
		},
		{
			name: "nothing pinned, attach off", rec: newRecorder(), calls: []string{"Status"},
			edit:      func(c *Config) { c.Enforce.Attach = false },
			statusErr: "gpupolicy enforce mode runs as advise: no memory policy is pinned at /sys/fs/bpf/gpuext/mem and enforce::attach is false",
		},
		{
			name: "adopt the pinned policy of our name", rec: newRecorder().pinned("gpuext_mem", gpuext.EvictMRU),
			calls: []string{"Status"}, active: true, base: gpuext.EvictMRU,
		},
		{
			name: "a pinned policy of another name", rec: newRecorder().pinned("tenant_lfu", gpuext.EvictLFU), calls: []string{"Status"},
			statusErr: `gpupolicy enforce mode runs as advise: the memory policy pinned at /sys/fs/bpf/gpuext/mem is "tenant_lfu", not "gpuext_mem" (enforce::policy_name): left alone`,
		},
		{
			name: "another's policy pinned elsewhere", rec: func() *recorder { r := newRecorder(); r.status.MemPolicy = "gpuext_mem"; return r }(),
			calls:     []string{"Status"},
			statusErr: `gpupolicy enforce mode runs as advise: the gpu_ext module runs memory policy "gpuext_mem", not pinned at /sys/fs/bpf/gpuext/mem: left alone`,
		},
		{
			name: "stale pins", rec: newRecorder().pinned("-", gpuext.EvictLRU), calls: []string{"Status"},
			statusErr: "gpupolicy enforce mode runs as advise: stale pins at /sys/fs/bpf/gpuext/mem: the gpu_ext module runs no memory policy; remove them (gpuextctl detach mem)",
		},
		{
			name: "attach refused",
			rec: func() *recorder {
				r := newRecorder()
				r.fail = map[string]error{"AttachMem": fmt.Errorf("%w: verifier says no", gpuext.ErrAttached)}
				return r
			}(),
			calls:     []string{"Status", "AttachMem gpuext_mem eviction=lru prefetch=default"},
			statusErr: "gpupolicy enforce mode runs as advise: a policy of this kind is already attached: verifier says no",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := enforceConfig()
			if tt.edit != nil {
				tt.edit(cfg)
			}
			require.NoError(t, cfg.Validate())
			e := newEnforcer(cfg, tt.rec, zap.NewNop())
			host := &statusHost{}
			e.begin(host)
			assert.Equal(t, tt.calls, tt.rec.take())
			assert.Equal(t, tt.active, e.active)
			if tt.statusErr == "" {
				assert.Empty(t, host.events)
				assert.Equal(t, tt.base, e.base)
				assert.Equal(t, tt.base, e.eviction)
				return
			}
			require.Len(t, host.events, 1)
			assert.Equal(t, componentstatus.StatusRecoverableError, host.events[0].Status())
			assert.EqualError(t, host.events[0].Err(), tt.statusErr)
			// Degraded, it advises only: rounds change nothing, stop undoes nothing.
			for range 3 {
				e.round(pmetric.NewMetrics(), time.Unix(10, 0), liveOf(key(1, gpuA)), []verdict{advised(1, gpuA, seqAdvice)})
			}
			require.NoError(t, e.stop())
			assert.Empty(t, tt.rec.take())
		})
	}
}

// step is one round of TestEnforceRounds: the streams the hub has, those
// with new faults and their verdicts, and the calls that must follow.
type step struct {
	at       time.Duration
	live     []faultstream.Key
	verdicts []verdict
	calls    []string
}

func runSteps(t *testing.T, e *enforcer, r *recorder, steps []step) {
	t.Helper()
	for i, s := range steps {
		e.round(pmetric.NewMetrics(), time.Unix(1000, 0).Add(s.at), liveOf(s.live...), s.verdicts)
		require.Equal(t, checked(s.calls), r.take(), "step %d (at %v)", i, s.at)
	}
}

// checked is a round's calls when it has changes to make: the status of
// the pinned policy first (is it still ours?), then the changes.
func checked(calls []string) []string {
	if len(calls) == 0 {
		return calls
	}
	return append([]string{"Status"}, calls...)
}

func TestEnforceRounds(t *testing.T) {
	r := newRecorder()
	e := newEnforcer(enforceConfig(), r, zap.NewNop())
	e.begin(nil)
	require.Equal(t, []string{"Status", "AttachMem gpuext_mem eviction=lru prefetch=default"}, r.take())
	all := []faultstream.Key{key(100, gpuA), key(200, gpuA), key(300, gpuA)}
	s := time.Second
	runSteps(t, e, r, []step{
		// First sight: nothing is stable yet.
		{0, all, []verdict{advised(100, gpuA, seqAdvice), advised(200, gpuA, hotAdvice), advised(300, gpuA, strideAdvice)}, nil},
		// Second round of the same advice: applied. Eviction first, then
		// entries by pid; the hot set's prefetch is the policy's.
		{10 * s, all, []verdict{advised(100, gpuA, seqAdvice), advised(200, gpuA, hotAdvice), advised(300, gpuA, strideAdvice)},
			[]string{"SetMem eviction=lfu prefetch=default lfu_hot=2", "SetPrefetchFor 100 always_max", "SetPrefetchFor 300 stride"}},
		// The same again: nothing to change. A stride of another length
		// is the same algorithm.
		{20 * s, all, []verdict{advised(100, gpuA, seqAdvice), advised(300, gpuA, mustAdvice(faultpattern.Strided, 4096))}, nil},
		{30 * s, all, []verdict{advised(300, gpuA, mustAdvice(faultpattern.Strided, 4096))}, nil},
		// pid 100 turns random once, then nothing confident, then random
		// twice: only the two in a row count.
		{40 * s, all, []verdict{advised(100, gpuA, randAdvice)}, nil},
		{50 * s, all, []verdict{{key: key(100, gpuA)}}, nil},
		{60 * s, all, []verdict{advised(100, gpuA, randAdvice)}, nil},
		{70 * s, all, []verdict{advised(100, gpuA, randAdvice)}, []string{"SetPrefetchFor 100 none"}},
		// pid 200 exits (its streams leave the hub): LRU again.
		{80 * s, []faultstream.Key{key(100, gpuA), key(300, gpuA)}, []verdict{advised(100, gpuA, randAdvice)},
			[]string{"SetMem eviction=lru prefetch=default lfu_hot=2"}},
	})
	// pid 300 had no faults since 30s: forgotten after forget_after (1m).
	runSteps(t, e, r, []step{
		{89 * s, []faultstream.Key{key(100, gpuA), key(300, gpuA)}, []verdict{advised(100, gpuA, randAdvice)}, nil},
		{91 * s, []faultstream.Key{key(100, gpuA), key(300, gpuA)}, []verdict{advised(100, gpuA, randAdvice)}, []string{"ClearPrefetchFor 300"}},
	})
	// pid 400 on two GPUs: entries only when both agree.
	two := []faultstream.Key{key(100, gpuA), key(400, gpuA), key(400, gpuB)}
	runSteps(t, e, r, []step{
		{100 * s, two, []verdict{advised(400, gpuA, seqAdvice), advised(400, gpuB, randAdvice)}, nil},
		{110 * s, two, []verdict{advised(400, gpuA, seqAdvice), advised(400, gpuB, randAdvice)}, nil},
		{120 * s, two, []verdict{advised(400, gpuB, seqAdvice)}, nil},
		{130 * s, two, []verdict{advised(400, gpuB, seqAdvice)}, []string{"SetPrefetchFor 400 always_max"}},
		// One GPU's stream becomes a hot set: its prefetch advice is
		// "default", so the two disagree and the entry goes; eviction LFU.
		{140 * s, two, []verdict{advised(400, gpuA, hotAdvice)}, nil},
		{150 * s, two, []verdict{advised(400, gpuA, hotAdvice)},
			[]string{"ClearPrefetchFor 400", "SetMem eviction=lfu prefetch=default lfu_hot=2"}},
	})
	assert.Equal(t, map[uint32]gpuext.Prefetch{100: gpuext.PrefetchNone}, r.prefetch)

	md := pmetric.NewMetrics()
	e.round(md, time.Unix(1160, 0), liveOf(two...), []verdict{advised(100, gpuA, randAdvice)})
	assert.Empty(t, r.take())
	assert.Equal(t, []counted{
		{metricApplied, "eviction", "lfu", 2}, {metricApplied, "eviction", "lru", 1},
		{metricApplied, "prefetch", "always_max", 2}, {metricApplied, "prefetch", "default", 2},
		{metricApplied, "prefetch", "none", 1}, {metricApplied, "prefetch", "stride", 1},
	}, counts(t, md))

	// Shutdown undoes what the processor did and leaves the policy.
	require.NoError(t, e.stop())
	assert.Equal(t, []string{"Status", "ClearPrefetchFor 100", "SetMem eviction=lru prefetch=default lfu_hot=2"}, r.take())
	assert.Empty(t, r.prefetch)
	require.NoError(t, e.stop(), "a second stop does nothing")
	assert.Empty(t, r.take())
}

// counted is one point of gpu.policy.applied or gpu.policy.apply.errors.
type counted struct {
	Metric, Decision, Algorithm string
	Value                       int64
}

func counts(t *testing.T, md pmetric.Metrics) []counted {
	t.Helper()
	var out []counted
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != metricApplied && m.Name() != metricApplyErrors {
					continue
				}
				require.Equal(t, scopeName, sm.Scope().Name())
				require.Equal(t, pmetric.MetricTypeSum, m.Type())
				require.True(t, m.Sum().IsMonotonic())
				require.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality())
				for _, dp := range m.Sum().DataPoints().All() {
					c := counted{Metric: m.Name(), Value: dp.IntValue()}
					if v, ok := dp.Attributes().Get(attrDecision); ok {
						c.Decision = v.Str()
					}
					if v, ok := dp.Attributes().Get(attrAlgorithm); ok {
						c.Algorithm = v.Str()
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// TestEnforceStableRoundsOne: with stable_rounds 1 advice applies at once.
// A process that had an entry when the policy was adopted (gpuextctl
// --pid-prefetch) is left as the operator set it, also at shutdown.
func TestEnforceStableRoundsOne(t *testing.T) {
	r := newRecorder().pinned("gpuext_mem", gpuext.EvictLRU)
	r.prefetch[9] = gpuext.PrefetchSequential
	e := newEnforcer(enforceConfig(func(c *Config) { c.Enforce.StableRounds = 1 }), r, zap.NewNop())
	e.begin(nil)
	r.take()
	k := []faultstream.Key{key(7, gpuA), key(9, gpuA)}
	runSteps(t, e, r, []step{
		{0, k, []verdict{advised(7, gpuA, strideAdvice), advised(9, gpuA, randAdvice)}, []string{"SetPrefetchFor 7 stride"}},
		{time.Second, k, []verdict{advised(7, gpuA, seqAdvice)}, []string{"SetPrefetchFor 7 always_max"}},
		{2 * time.Second, k, []verdict{{key: key(7, gpuA)}}, nil},
	})
	require.NoError(t, e.stop())
	assert.Equal(t, []string{"Status", "ClearPrefetchFor 7"}, r.take())
	assert.Equal(t, map[uint32]gpuext.Prefetch{9: gpuext.PrefetchSequential}, r.prefetch)
}

// TestEnforcePriorityBaseKept: an adopted policy whose eviction is
// priority protects owners; hot sets do not override it.
func TestEnforcePriorityBaseKept(t *testing.T) {
	r := newRecorder().pinned("gpuext_mem", gpuext.EvictPriority)
	e := newEnforcer(enforceConfig(), r, zap.NewNop())
	e.begin(nil)
	r.take()
	k := []faultstream.Key{key(7, gpuA), key(8, gpuA)}
	runSteps(t, e, r, []step{
		{0, k, []verdict{advised(7, gpuA, hotAdvice), advised(8, gpuA, seqAdvice)}, nil},
		{time.Second, k, []verdict{advised(7, gpuA, hotAdvice), advised(8, gpuA, seqAdvice)}, []string{"SetPrefetchFor 8 always_max"}},
	})
	assert.Equal(t, gpuext.EvictPriority, r.params.Eviction)
}

// TestEnforceRateLimit: at 1 change a second (bursts of 1), three stable
// changes take three seconds; deferred ones are made later, none twice.
func TestEnforceRateLimit(t *testing.T) {
	r := newRecorder()
	e := newEnforcer(enforceConfig(func(c *Config) { c.MaxActionsPerSecond = 1 }), r, zap.NewNop())
	e.begin(nil)
	r.take()
	k := []faultstream.Key{key(1, gpuA), key(2, gpuA), key(3, gpuA)}
	vs := []verdict{advised(1, gpuA, seqAdvice), advised(2, gpuA, randAdvice), advised(3, gpuA, hotAdvice)}
	ms := time.Millisecond
	runSteps(t, e, r, []step{
		{0, k, vs, nil},
		{100 * ms, k, vs, []string{"SetMem eviction=lfu prefetch=default lfu_hot=2"}},
		{600 * ms, k, nil, nil},
		{1100 * ms, k, nil, []string{"SetPrefetchFor 1 always_max"}},
		{1200 * ms, k, nil, nil},
		{5 * time.Second, k, nil, []string{"SetPrefetchFor 2 none"}}, // the bucket holds one at most
		{6 * time.Second, k, nil, nil},
	})
}

func TestLimiter(t *testing.T) {
	for _, tt := range []struct {
		rate  float64
		at    []time.Duration
		allow []bool
	}{
		{1, []time.Duration{0, 0, time.Second, 1500 * time.Millisecond, 2 * time.Second}, []bool{true, false, true, false, true}},
		{2.5, []time.Duration{0, 0, 0, 100 * time.Millisecond, 400 * time.Millisecond, 10 * time.Second}, []bool{true, true, false, false, true, true}},
		{0.5, []time.Duration{0, time.Second, 2 * time.Second}, []bool{true, false, true}},
		// A clock that goes back refills nothing.
		{1, []time.Duration{10 * time.Second, 0, 10500 * time.Millisecond, 11 * time.Second}, []bool{true, false, false, true}},
	} {
		l := newLimiter(tt.rate)
		var got []bool
		for _, d := range tt.at {
			got = append(got, l.allow(time.Unix(0, 0).Add(d)))
		}
		assert.Equal(t, tt.allow, got, "rate %v", tt.rate)
	}
}

// TestEnforceErrors: a failed change is counted and tried again at the
// next round; a policy detached by someone else stops enforcement.
func TestEnforceErrors(t *testing.T) {
	r := newRecorder()
	e := newEnforcer(enforceConfig(), r, zap.NewNop())
	host := &statusHost{}
	e.begin(host)
	r.take()
	r.fail = map[string]error{"SetPrefetchFor": errors.New("map full")}
	k := []faultstream.Key{key(1, gpuA), key(2, gpuA)}
	vs := []verdict{advised(1, gpuA, seqAdvice), advised(2, gpuA, randAdvice)}
	runSteps(t, e, r, []step{
		{0, k, vs, nil},
		{time.Second, k, vs, []string{"SetPrefetchFor 1 always_max", "SetPrefetchFor 2 none"}},
		{2 * time.Second, k, nil, []string{"SetPrefetchFor 1 always_max", "SetPrefetchFor 2 none"}},
	})
	r.fail = map[string]error{"SetPrefetchFor": fmt.Errorf("%w: no /sys/fs/bpf/gpuext/mem/prefetch_pid", gpuext.ErrNotAttached)}
	md := pmetric.NewMetrics()
	e.round(md, time.Unix(1003, 0), liveOf(k...), nil)
	assert.Equal(t, checked([]string{"SetPrefetchFor 1 always_max"}), r.take(), "the first ErrNotAttached stops it")
	assert.False(t, e.active)
	require.Len(t, host.events, 1)
	assert.EqualError(t, host.events[0].Err(),
		"gpupolicy enforce mode runs as advise: no policy of this kind is attached: no /sys/fs/bpf/gpuext/mem/prefetch_pid")
	assert.Equal(t, []counted{{metricApplyErrors, "prefetch", "", 5}}, counts(t, md))
	r.fail = nil
	runSteps(t, e, r, []step{{5 * time.Second, k, vs, nil}})
	require.NoError(t, e.stop())
	assert.Empty(t, r.take(), "nothing to undo, nothing touched")
}

// TestEnforceStop: shutdown clears the entries, restores eviction and
// detaches when configured; errors are returned, the rest still done.
func TestEnforceStop(t *testing.T) {
	for _, tt := range []struct {
		name   string
		detach bool
		fail   map[string]error
		calls  []string
		err    string
	}{
		{"keep the policy", false, nil,
			[]string{"Status", "ClearPrefetchFor 1", "ClearPrefetchFor 2", "SetMem eviction=lru prefetch=default lfu_hot=2"}, ""},
		{"detach", true, nil,
			[]string{"Status", "ClearPrefetchFor 1", "ClearPrefetchFor 2", "SetMem eviction=lru prefetch=default lfu_hot=2", "Detach mem"}, ""},
		{"errors", true, map[string]error{"ClearPrefetchFor": errors.New("EPERM"), "SetMem": errors.New("EBADF")},
			[]string{"Status", "ClearPrefetchFor 1", "ClearPrefetchFor 2", "SetMem eviction=lru prefetch=default lfu_hot=2", "Detach mem"},
			"gpupolicy enforce shutdown: clear prefetch of pid 1: EPERM\nclear prefetch of pid 2: EPERM\nrestore eviction lru: EBADF"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder()
			e := newEnforcer(enforceConfig(func(c *Config) { c.Enforce.DetachOnShutdown = tt.detach }), r, zap.NewNop())
			e.begin(nil)
			r.take()
			k := []faultstream.Key{key(1, gpuA), key(2, gpuA), key(3, gpuA)}
			vs := []verdict{advised(1, gpuA, seqAdvice), advised(2, gpuA, randAdvice), advised(3, gpuA, hotAdvice)}
			runSteps(t, e, r, []step{{0, k, vs, nil}})
			e.round(pmetric.NewMetrics(), time.Unix(1001, 0), liveOf(k...), vs)
			require.Len(t, r.take(), 4) // Status and three changes
			r.fail = tt.fail
			err := e.stop()
			assert.Equal(t, tt.calls, r.take())
			if tt.err == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tt.err)
			}
		})
	}
}

// TestEnforceModeThroughPipeline runs the processor as a pipeline would,
// with the recorder in place of the loader: faults in the receiver's hub,
// rounds paced by advise::interval, the changes and their counts.
func TestEnforceModeThroughPipeline(t *testing.T) {
	hub := faultstream.NewHub(4096, 0)
	defer faultstream.Register("gpuebpf/enforce", hub)()
	const gpu = "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d"
	cfg := enforceConfig(func(c *Config) { c.SignalsFrom = "gpuebpf/enforce" })
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	pol := policies.m[cfg]
	r := newRecorder()
	pol.enforce.ap = r
	clock := time.Unix(1000, 0)
	pol.advice.now = func() time.Time { return clock }
	host := &statusHost{}
	require.NoError(t, p.Start(context.Background(), host))
	assert.Empty(t, host.events)
	assert.Equal(t, []string{"Status", "AttachMem gpuext_mem eviction=lru prefetch=default"}, r.take())

	for i := range 2 {
		publish(hub, faultstream.Key{PID: 100, HWID: gpu}, sequential(1024))
		publish(hub, faultstream.Key{PID: 400, HWID: gpu}, hotSet(1024, 64, uint64(9+i)))
		require.NoError(t, p.ConsumeMetrics(context.Background(), pmetric.NewMetrics()))
		clock = clock.Add(cfg.Advise.Interval)
	}
	assert.Equal(t, checked([]string{"SetMem eviction=lfu prefetch=default lfu_hot=2", "SetPrefetchFor 100 always_max"}), r.take())
	out := sink.AllMetrics()
	require.Len(t, out, 2)
	assert.Len(t, advices(t, out[0]), 2, "advice is reported as in advise mode")
	assert.Empty(t, counts(t, out[0]))
	assert.Equal(t, []counted{{metricApplied, "eviction", "lfu", 1}, {metricApplied, "prefetch", "always_max", 1}}, counts(t, out[1]))

	hub.Remove(100)
	require.NoError(t, p.ConsumeMetrics(context.Background(), pmetric.NewMetrics()))
	assert.Equal(t, checked([]string{"ClearPrefetchFor 100"}), r.take(), "an exited process's entry goes")
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Equal(t, []string{"Status", "SetMem eviction=lru prefetch=default lfu_hot=2"}, r.take())
}

// TestEnforceWithoutModule: the real loader where there is no gpu_ext
// module (a directory with none of its files): Start succeeds, reports the
// loader's reason once, and the processor advises.
func TestEnforceWithoutModule(t *testing.T) {
	hub := faultstream.NewHub(4096, 0)
	defer faultstream.Register("gpuebpf/nomod", hub)()
	dir := t.TempDir()
	cfg := enforceConfig(func(c *Config) { c.SignalsFrom, c.PinPath = "gpuebpf/nomod", filepath.Join(dir, "bpf") })
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	pol := policies.m[cfg]
	pol.enforce.ap = &gpuext.Loader{Paths: gpuext.Paths{Sys: dir, BTF: dir, BPFFS: cfg.PinPath}}
	host := &statusHost{}
	require.NoError(t, p.Start(context.Background(), host))
	require.Len(t, host.events, 1)
	assert.Equal(t, componentstatus.StatusRecoverableError, host.events[0].Status())
	assert.EqualError(t, host.events[0].Err(), "gpupolicy enforce mode runs as advise: gpu_ext kernel module is not loaded (no "+
		filepath.Join(dir, "gpu_ext")+"; insmod gpu_ext.ko first)")
	publish(hub, faultstream.Key{PID: 1, HWID: "GPU-x"}, sequential(1024))
	require.NoError(t, p.ConsumeMetrics(context.Background(), pmetric.NewMetrics()))
	assert.Len(t, advices(t, sink.AllMetrics()[0]), 1)
	assert.Empty(t, counts(t, sink.AllMetrics()[0]))
	require.NoError(t, p.Shutdown(context.Background()))
	assert.Len(t, host.events, 1, "reported once")
}

// TestEnforceDesired: what the policy should hold for given stable advice.
// Eviction is one for the machine: LFU while any stream's stable advice is a
// hot set, whoever owns the process's prefetch entry (README "enforce").
func TestEnforceDesired(t *testing.T) {
	stable := func(a Advice) *streamState { return &streamState{stable: a, hasStable: true} }
	for _, tt := range []struct {
		name     string
		base     gpuext.Eviction
		others   map[uint32]bool
		streams  map[faultstream.Key]*streamState
		prefetch map[uint32]gpuext.Prefetch
		eviction gpuext.Eviction
	}{
		{
			name: "our hot set", base: gpuext.EvictLRU,
			streams:  map[faultstream.Key]*streamState{key(7, gpuA): stable(hotAdvice)},
			prefetch: map[uint32]gpuext.Prefetch{}, eviction: gpuext.EvictLFU,
		},
		{
			name: "hot set of a process with an operator's entry", base: gpuext.EvictLRU, others: map[uint32]bool{9: true},
			streams:  map[faultstream.Key]*streamState{key(9, gpuA): stable(hotAdvice)},
			prefetch: map[uint32]gpuext.Prefetch{}, eviction: gpuext.EvictLFU,
		},
		{
			name: "ours sequential, an operator's process hot", base: gpuext.EvictMRU, others: map[uint32]bool{9: true},
			streams: map[faultstream.Key]*streamState{
				key(7, gpuA): stable(seqAdvice), key(9, gpuA): stable(hotAdvice), key(9, gpuB): stable(randAdvice),
			},
			prefetch: map[uint32]gpuext.Prefetch{7: gpuext.PrefetchAlwaysMax}, eviction: gpuext.EvictLFU,
		},
		{
			name: "an operator's process sequential", base: gpuext.EvictLRU, others: map[uint32]bool{9: true},
			streams:  map[faultstream.Key]*streamState{key(9, gpuA): stable(seqAdvice)},
			prefetch: map[uint32]gpuext.Prefetch{}, eviction: gpuext.EvictLRU,
		},
		{
			name: "priority base is kept", base: gpuext.EvictPriority, others: map[uint32]bool{9: true},
			streams:  map[faultstream.Key]*streamState{key(9, gpuA): stable(hotAdvice)},
			prefetch: map[uint32]gpuext.Prefetch{}, eviction: gpuext.EvictPriority,
		},
		{
			name: "not yet stable", base: gpuext.EvictLRU, others: map[uint32]bool{9: true},
			streams:  map[faultstream.Key]*streamState{key(9, gpuA): {candidate: hotAdvice, streak: 1}},
			prefetch: map[uint32]gpuext.Prefetch{}, eviction: gpuext.EvictLRU,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnforcer(enforceConfig(), newRecorder(), zap.NewNop())
			e.base, e.others, e.streams = tt.base, tt.others, tt.streams
			prefetch, eviction := e.desired()
			assert.Equal(t, tt.prefetch, prefetch)
			assert.Equal(t, tt.eviction, eviction)
		})
	}
}

// TestEnforceHysteresis: the rounds a stream's advice needs before it is
// applied. A stride prefetch of another stride is the same change (the
// policy learns the stride from the faults), so it continues the run.
func TestEnforceHysteresis(t *testing.T) {
	stride := func(s int64) verdict { return advised(1, gpuA, mustAdvice(faultpattern.Strided, s)) }
	none := verdict{key: key(1, gpuA)}
	for _, tt := range []struct {
		name   string
		stable int
		rounds []verdict
		calls  []string // after the last round
	}{
		{"same stride twice", 2, []verdict{stride(65536), stride(65536)}, []string{"SetPrefetchFor 1 stride"}},
		{"another stride", 2, []verdict{stride(65536), stride(131072)}, []string{"SetPrefetchFor 1 stride"}},
		{"descending", 2, []verdict{stride(65536), stride(-65536)}, []string{"SetPrefetchFor 1 stride"}},
		{"three strides", 3, []verdict{stride(4096 * 3), stride(8192 * 3), stride(16384 * 3)}, []string{"SetPrefetchFor 1 stride"}},
		{"two of three", 3, []verdict{stride(65536), stride(131072)}, nil},
		{"broken by no advice", 2, []verdict{stride(65536), none, stride(131072)}, nil},
		{"broken by other advice", 2, []verdict{stride(65536), advised(1, gpuA, seqAdvice), stride(65536)}, nil},
		{"sequential twice", 2, []verdict{advised(1, gpuA, seqAdvice), advised(1, gpuA, seqAdvice)}, []string{"SetPrefetchFor 1 always_max"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder()
			e := newEnforcer(enforceConfig(func(c *Config) { c.Enforce.StableRounds = tt.stable }), r, zap.NewNop())
			e.begin(nil)
			r.take()
			for i, v := range tt.rounds {
				e.round(pmetric.NewMetrics(), time.Unix(1000+int64(i)*10, 0), liveOf(key(1, gpuA)), []verdict{v})
				if i < len(tt.rounds)-1 {
					require.Empty(t, r.take(), "round %d", i)
				}
			}
			assert.Equal(t, checked(tt.calls), r.take())
		})
	}
}

// TestEnforceRoundPolicyReplaced: someone detached the processor's policy
// while it ran (and maybe pinned another in its place): the next round with
// changes to make finds out before making them, changes nothing, and the
// processor goes on advising, with one recoverable error status.
func TestEnforceRoundPolicyReplaced(t *testing.T) {
	for _, tt := range []struct {
		name    string
		replace func(r *recorder)
		err     string
	}{
		{
			name:    "another pinned in its place",
			replace: func(r *recorder) { r.pinned("tenant_fifo", gpuext.EvictFIFO) },
			err: `gpupolicy enforce mode runs as advise: the memory policy pinned at /sys/fs/bpf/gpuext/mem is now "tenant_fifo", ` +
				`not "gpuext_mem" (enforce::policy_name): left alone`,
		},
		{
			name:    "detached",
			replace: func(r *recorder) { r.status = gpuext.Status{MemPolicy: "-", SchedPolicy: "-"} },
			err:     "gpupolicy enforce mode runs as advise: no memory policy is pinned at /sys/fs/bpf/gpuext/mem any more: left alone",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder()
			e := newEnforcer(enforceConfig(), r, zap.NewNop())
			host := &statusHost{}
			e.begin(host)
			r.take()
			k := []faultstream.Key{key(1, gpuA)}
			vs := []verdict{advised(1, gpuA, seqAdvice)}
			runSteps(t, e, r, []step{{0, k, vs, nil}})
			tt.replace(r)
			e.round(pmetric.NewMetrics(), time.Unix(1001, 0), liveOf(k...), vs)
			assert.Equal(t, []string{"Status"}, r.take())
			assert.False(t, e.active)
			require.Len(t, host.events, 1)
			assert.EqualError(t, host.events[0].Err(), tt.err)
			e.round(pmetric.NewMetrics(), time.Unix(1002, 0), liveOf(k...), vs)
			require.NoError(t, e.stop())
			assert.Empty(t, r.take(), "nothing more: neither rounds nor shutdown touch it")
		})
	}
}

// TestEnforceStopPolicyReplaced: at shutdown the processor undoes its
// changes to, and detaches, only the policy named policy_name. When someone
// detached it and pinned another in its place while the processor ran, the
// other one is left as it is.
func TestEnforceStopPolicyReplaced(t *testing.T) {
	for _, tt := range []struct {
		name     string
		detach   bool
		replace  func(r *recorder) // what someone did while the processor ran
		calls    []string
		prefetch map[uint32]gpuext.Prefetch
		eviction gpuext.Eviction
	}{
		{
			name: "still ours", detach: true, replace: func(*recorder) {},
			calls:    []string{"Status", "ClearPrefetchFor 1", "SetMem eviction=lru prefetch=default lfu_hot=2", "Detach mem"},
			prefetch: map[uint32]gpuext.Prefetch{}, eviction: gpuext.EvictLRU,
		},
		{
			name: "replaced, detach on shutdown", detach: true,
			replace: func(r *recorder) {
				r.pinned("tenant_fifo", gpuext.EvictFIFO)
				r.prefetch = map[uint32]gpuext.Prefetch{1: gpuext.PrefetchSequential}
			},
			calls:    []string{"Status"},
			prefetch: map[uint32]gpuext.Prefetch{1: gpuext.PrefetchSequential}, eviction: gpuext.EvictFIFO,
		},
		{
			name: "replaced, kept", detach: false,
			replace: func(r *recorder) {
				r.pinned("tenant_fifo", gpuext.EvictFIFO)
				r.prefetch = map[uint32]gpuext.Prefetch{1: gpuext.PrefetchSequential}
			},
			calls:    []string{"Status"},
			prefetch: map[uint32]gpuext.Prefetch{1: gpuext.PrefetchSequential}, eviction: gpuext.EvictFIFO,
		},
		{
			name: "detached by someone", detach: true,
			replace: func(r *recorder) {
				r.status = gpuext.Status{MemPolicy: "-", SchedPolicy: "-"}
				r.prefetch = map[uint32]gpuext.Prefetch{}
				r.params = gpuext.MemParams{}
			},
			calls:    []string{"Status"},
			prefetch: map[uint32]gpuext.Prefetch{}, eviction: gpuext.EvictLRU,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder()
			e := newEnforcer(enforceConfig(func(c *Config) { c.Enforce.DetachOnShutdown = tt.detach }), r, zap.NewNop())
			e.begin(nil)
			r.take()
			k := []faultstream.Key{key(1, gpuA), key(2, gpuA)}
			vs := []verdict{advised(1, gpuA, seqAdvice), advised(2, gpuA, hotAdvice)}
			runSteps(t, e, r, []step{
				{0, k, vs, nil},
				{time.Second, k, vs, []string{"SetMem eviction=lfu prefetch=default lfu_hot=2", "SetPrefetchFor 1 always_max"}},
			})
			tt.replace(r)
			require.NoError(t, e.stop())
			assert.Equal(t, tt.calls, r.take())
			assert.Equal(t, tt.prefetch, r.prefetch)
			assert.Equal(t, tt.eviction, r.params.Eviction)
		})
	}
}
