package gpupolicyprocessor

import (
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
)

// Advice is the policy a process's recent GPU faults call for. The names
// are those of the gpu_ext memory policy's algorithms (bpf/policy) that
// enforce mode sets: what advise reports is what enforce would do.
type Advice struct {
	// Prefetch is "always_max", "stride", "none" or "default" (keep the
	// driver's threshold prefetcher).
	Prefetch string
	// Stride is the prefetch stride in bytes (negative: descending) for
	// Prefetch "stride".
	Stride int64
	// Eviction is "lfu" or "default" (the driver's LRU).
	Eviction string
}

// adviceFor maps a fault-stream classification to a policy. The reasoning,
// from the workloads in the seeds (gpu_ext's evaluation):
//   - sequential: the sweep will touch the whole of each 2 MiB block it
//     enters, so prefetching the whole block on the first fault
//     (always_max) replaces hundreds of fault round trips with one
//     migration;
//   - strided: the driver's prefetcher sees one touched page in every
//     stride and prefetches nothing; a stride prefetcher fetches the next
//     pages of the stride ahead of the faults;
//   - random: prefetched neighbours are mostly never used and cost
//     bandwidth and memory; turn prefetching off;
//   - hot set: a small working set refaulted again and again is being
//     evicted under pressure; LFU eviction keeps the frequently used chunks
//     resident where LRU lets a sweep of cold pages push them out.
//
// ok is false for Unknown or a pattern this version has no advice for.
func adviceFor(r faultpattern.Result) (a Advice, ok bool) {
	a = Advice{Prefetch: "default", Eviction: "default"}
	switch r.Pattern {
	case faultpattern.Sequential:
		a.Prefetch = "always_max"
	case faultpattern.Strided:
		a.Prefetch, a.Stride = "stride", r.Stride
	case faultpattern.Random:
		a.Prefetch = "none"
	case faultpattern.HotSet:
		a.Eviction = "lfu"
	default:
		return Advice{}, false
	}
	return a, true
}

// Names of what advise mode emits.
const (
	metricAdvice = "gpu.policy.advice"
	attrPattern  = "gpu.uvm.pattern"
	attrPrefetch = "gpu.policy.prefetch"
	attrStride   = "gpu.policy.prefetch.stride"
	attrEviction = "gpu.policy.eviction"
	attrSamples  = "gpu.policy.samples"
	scopeName    = "github.com/otelcol-gpu/otelcol-gpu/processor/gpupolicyprocessor"
	adviceUnit   = "1"
)

// verdict is one round's outcome for a stream that faulted since the last
// round: its advice, or ok false when there is none (an unknown pattern or
// one below min_confidence).
type verdict struct {
	key    faultstream.Key
	advice Advice
	ok     bool
}

// roundSink receives every round of advice (enforce mode applies it). live
// holds every GPU stream the hub has, verdicts those that faulted since the
// last round, in the hub's key order; what it appends to md passes on.
type roundSink interface {
	round(md pmetric.Metrics, now time.Time, live map[faultstream.Key]bool, verdicts []verdict)
}

// adviser derives advice from the fault stream of one receiver, at most
// once per interval, for streams that received faults since the last
// advice.
type adviser struct {
	cfg   AdviseConfig
	from  string
	now   func() time.Time
	log   *zap.Logger
	start pcommon.Timestamp
	sink  roundSink // nil in advise mode

	mu      sync.Mutex
	last    time.Time
	seen    map[faultstream.Key]uint64 // stream total at the last advice
	scratch []faultstream.Sample
}

func newAdviser(cfg AdviseConfig, from string, now func() time.Time, log *zap.Logger) *adviser {
	return &adviser{cfg: cfg, from: from, now: now, log: log, start: pcommon.NewTimestampFromTime(now()),
		seen: map[faultstream.Key]uint64{}}
}

// appendAdvice adds a gpu.policy.advice gauge per process and GPU whose
// faults changed since the last advice to md, when interval has passed.
// It reports how many it added.
func (a *adviser) appendAdvice(md pmetric.Metrics) int {
	hub, ok := faultstream.Lookup(a.from)
	if !ok {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if !a.last.IsZero() && now.Sub(a.last) < a.cfg.Interval {
		return 0
	}
	a.last = now
	ts := pcommon.NewTimestampFromTime(now)
	live := map[faultstream.Key]bool{}
	var verdicts []verdict
	n := 0
	for _, k := range hub.Keys() {
		if k.HWID == "" { // CPU faults: no GPU policy to advise
			continue
		}
		live[k] = true
		var total uint64
		a.scratch, total, ok = hub.Recent(k, a.scratch[:0])
		if !ok || total == a.seen[k] {
			continue
		}
		a.seen[k] = total
		window := faultstream.SinceIdle(a.scratch, uint64(a.cfg.IdleReset))
		window = window[max(0, len(window)-a.cfg.Window):]
		r := faultstream.Classify(window, faultpattern.Options{Window: a.cfg.Window})
		adv, ok := adviceFor(r)
		if !ok || r.Confidence < a.cfg.MinConfidence {
			verdicts = append(verdicts, verdict{key: k})
			continue
		}
		verdicts = append(verdicts, verdict{key: k, advice: adv, ok: true})
		appendAdviceMetric(md, k, r, adv, a.start, ts)
		a.log.Debug("gpu policy advice", zap.Int("pid", k.PID), zap.String("hw.id", k.HWID),
			zap.Stringer("pattern", r.Pattern), zap.Float64("confidence", r.Confidence), zap.Stringer("advice", adv))
		n++
	}
	for k := range a.seen {
		if !live[k] {
			delete(a.seen, k)
		}
	}
	if a.sink != nil {
		a.sink.round(md, now, live, verdicts)
	}
	return n
}

func appendAdviceMetric(md pmetric.Metrics, k faultstream.Key, r faultpattern.Result, adv Advice, start, ts pcommon.Timestamp) {
	rm := md.ResourceMetrics().AppendEmpty()
	res := rm.Resource().Attributes()
	res.PutInt("process.pid", int64(k.PID))
	res.PutStr("hw.id", k.HWID)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scopeName)
	m := sm.Metrics().AppendEmpty()
	m.SetName(metricAdvice)
	m.SetUnit(adviceUnit)
	m.SetDescription("Policy the process's recent GPU faults call for; the value is the confidence of the fault pattern behind it. Applied by enforce mode once stable, only reported by advise mode.")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(r.Confidence)
	at := dp.Attributes()
	at.PutStr(attrPattern, r.Pattern.String())
	at.PutStr(attrPrefetch, adv.Prefetch)
	if adv.Prefetch == "stride" {
		at.PutInt(attrStride, adv.Stride)
	}
	at.PutStr(attrEviction, adv.Eviction)
	at.PutInt(attrSamples, int64(r.Samples))
}

// String is for logs.
func (a Advice) String() string {
	s := "prefetch=" + a.Prefetch
	if a.Prefetch == "stride" {
		s += "(" + strconv.FormatInt(a.Stride, 10) + ")"
	}
	return s + " eviction=" + a.Eviction
}
