package gpupolicyprocessor

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultstream"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
)

// applier is what enforce mode needs of the gpu_ext loader. *gpuext.Loader
// is the real one; unit tests record the calls instead, so the decision
// logic is tested with exact expectations on any machine.
type applier interface {
	Status() (gpuext.Status, error)
	AttachMem(name string, p gpuext.MemParams) error
	MemParams() (gpuext.MemParams, error)
	SetMem(p gpuext.MemParams) error
	SetPrefetchFor(pid uint32, p gpuext.Prefetch) error
	ClearPrefetchFor(pid uint32) error
	Detach(k gpuext.Kind) error
}

var _ applier = (*gpuext.Loader)(nil)

// newLoader is the real applier over the kernel's paths, with the pins
// under pinPath.
func newLoader(pinPath string) *gpuext.Loader {
	paths := gpuext.DefaultPaths
	paths.BPFFS = pinPath
	return &gpuext.Loader{Paths: paths}
}

// Names of what enforce mode emits.
const (
	metricApplied     = "gpu.policy.applied"
	metricApplyErrors = "gpu.policy.apply.errors"
	attrDecision      = "gpu.policy.decision"
	attrAlgorithm     = "gpu.policy.algorithm"
	decisionPrefetch  = "prefetch" // a process's own prefetch algorithm ("default": its entry cleared)
	decisionEviction  = "eviction" // the policy-wide eviction algorithm
)

// enforcer applies the adviser's rounds to the memory policy pinned under
// pin_path. Its state is what it believes the policy holds because it put
// it there: the per-process prefetch entries it set and the eviction
// algorithm. Each round it computes what the policy should hold from the
// stable advice and makes the changes that differ, at most
// max_actions_per_second; a change that is deferred or fails is tried
// again at the next round, so nothing is lost and nothing is repeated.
//
// Decisions (README "enforce"):
//   - a stream's advice is applied once it was the same for stable_rounds
//     rounds in a row (a stride prefetch of another stride is the same),
//     and stays applied until another advice is stable or the stream is
//     forgotten (its process exited, or no faults for forget_after);
//   - prefetch is per process (prefetch_pid): the stable advice of its
//     streams when they agree, and no entry (the policy-wide algorithm)
//     when they disagree or advise "default"; a process that had an entry
//     when the processor adopted the policy is someone else's and left be;
//   - eviction is one for the whole GPU memory of the machine: LFU while
//     any stream's stable advice is a hot set, else the base algorithm (the
//     configured one when the processor attached the policy, the policy's
//     own when it adopted one). A base of priority is an operator's
//     protection of owners and is never changed.
type enforcer struct {
	cfg   EnforceConfig
	dir   string // the memory policy's pins, for messages
	ap    applier
	log   *zap.Logger
	limit limiter
	start pcommon.Timestamp

	mu       sync.Mutex
	host     component.Host
	active   bool // applying; false before start, after stop, or when degraded to advise
	attached bool // this processor attached the policy
	base     gpuext.Eviction
	eviction gpuext.Eviction // as the processor last set or found it
	streams  map[faultstream.Key]*streamState
	prefetch map[uint32]gpuext.Prefetch // per-process entries this processor set
	others   map[uint32]bool            // pids with an entry when the policy was adopted: not ours to change
	applied  map[appliedKey]int64
	errs     map[string]int64 // by decision
}

// streamState is the hysteresis of one stream.
type streamState struct {
	candidate Advice // the latest advice and how many rounds in a row it came
	streak    int
	stable    Advice // the advice applied for this stream, once hasStable
	hasStable bool
	lastFault time.Time // the last round the stream had new faults
}

type appliedKey struct{ decision, algorithm string }

// sameChange reports whether a and b set the policy the same way: a stride
// prefetch of another stride is the same change (the policy learns the
// stride from the faults), so it continues a run of advice.
func (a Advice) sameChange(b Advice) bool {
	return a.Prefetch == b.Prefetch && a.Eviction == b.Eviction
}

func newEnforcer(cfg *Config, ap applier, log *zap.Logger) *enforcer {
	return &enforcer{
		cfg: cfg.Enforce, dir: filepath.Join(cfg.PinPath, string(gpuext.Mem)), ap: ap, log: log,
		limit: newLimiter(cfg.MaxActionsPerSecond), start: pcommon.NewTimestampFromTime(time.Now()),
		streams: map[faultstream.Key]*streamState{}, prefetch: map[uint32]gpuext.Prefetch{},
		applied: map[appliedKey]int64{}, errs: map[string]int64{},
	}
}

// begin finds or attaches the memory policy. Whatever goes wrong (no
// module: every machine but one that loaded gpu_ext; another's policy),
// the collector keeps running and the processor advises only.
func (e *enforcer) begin(host component.Host) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.host = host
	if err := e.adopt(); err != nil {
		e.degrade(err)
		return
	}
	e.active = true
	e.log.Info("gpupolicy enforcing advice on the gpu_ext memory policy",
		zap.String("policy", e.cfg.PolicyName), zap.String("pins", e.dir),
		zap.Bool("attached_now", e.attached), zap.Stringer("eviction", e.base))
}

func (e *enforcer) adopt() error {
	st, err := e.ap.Status()
	if err != nil {
		return err
	}
	name := e.cfg.PolicyName
	switch {
	case st.Mem != nil && st.MemPolicy == name:
		e.base = st.Mem.Params.Eviction
		e.others = map[uint32]bool{}
		for pid := range st.Mem.Prefetch {
			e.others[pid] = true
		}
	case st.Mem != nil && st.MemPolicy == "-":
		return fmt.Errorf("stale pins at %s: the gpu_ext module runs no memory policy; remove them (gpuextctl detach mem)", e.dir)
	case st.Mem != nil:
		return fmt.Errorf("the memory policy pinned at %s is %q, not %q (enforce::policy_name): left alone", e.dir, st.MemPolicy, name)
	case st.MemPolicy != "-":
		return fmt.Errorf("the gpu_ext module runs memory policy %q, not pinned at %s: left alone", st.MemPolicy, e.dir)
	case !e.cfg.Attach:
		return fmt.Errorf("no memory policy is pinned at %s and enforce::attach is false", e.dir)
	default:
		ev, err := gpuext.ParseEviction(e.cfg.Eviction)
		if err != nil {
			return err
		}
		p := gpuext.DefaultMemParams()
		p.Eviction = ev
		if err := e.ap.AttachMem(name, p); err != nil {
			return err
		}
		e.attached, e.base = true, ev
	}
	e.eviction = e.base
	return nil
}

// degrade stops applying and says why, once: a log line and a recoverable
// error status of the component.
func (e *enforcer) degrade(err error) {
	e.active = false
	err = fmt.Errorf("gpupolicy enforce mode runs as advise: %w", err)
	e.log.Warn("gpupolicy enforce mode is not applying advice", zap.Error(err))
	componentstatus.ReportStatus(e.host, componentstatus.NewRecoverableErrorEvent(err))
}

// round takes one round of advice, applies what became stable and appends
// the applied and error counts to md.
func (e *enforcer) round(md pmetric.Metrics, now time.Time, live map[faultstream.Key]bool, verdicts []verdict) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active {
		e.observe(now, live, verdicts)
		e.reconcile(now)
	}
	e.appendMetrics(md, now)
}

// observe updates each stream's hysteresis and forgets gone or idle ones.
func (e *enforcer) observe(now time.Time, live map[faultstream.Key]bool, verdicts []verdict) {
	for _, v := range verdicts {
		s := e.streams[v.key]
		if s == nil {
			s = &streamState{}
			e.streams[v.key] = s
		}
		s.lastFault = now
		switch {
		case !v.ok:
			s.candidate, s.streak = Advice{}, 0
		case s.streak > 0 && s.candidate.sameChange(v.advice):
			s.candidate = v.advice
			s.streak++
		default:
			s.candidate, s.streak = v.advice, 1
		}
		if s.streak >= e.cfg.StableRounds {
			s.stable, s.hasStable = s.candidate, true
		}
	}
	for k, s := range e.streams {
		if !live[k] || now.Sub(s.lastFault) > e.cfg.ForgetAfter {
			delete(e.streams, k)
		}
	}
}

// desired is what the policy should hold given the streams' stable advice.
func (e *enforcer) desired() (map[uint32]gpuext.Prefetch, gpuext.Eviction) {
	per := map[uint32]map[gpuext.Prefetch]bool{}
	hot := false
	for k, s := range e.streams {
		if !s.hasStable {
			continue
		}
		// Eviction is machine-wide: any stream's hot set counts, also of
		// a process whose prefetch entry is not ours to change.
		hot = hot || s.stable.Eviction == "lfu"
		if k.PID <= 0 || uint64(k.PID) > 1<<32-1 {
			continue
		}
		pf, err := gpuext.ParsePrefetch(s.stable.Prefetch)
		if err != nil {
			continue // not a name of the policy's; adviceFor gives none such
		}
		pid := uint32(k.PID)
		if e.others[pid] {
			continue
		}
		if per[pid] == nil {
			per[pid] = map[gpuext.Prefetch]bool{}
		}
		per[pid][pf] = true
	}
	want := map[uint32]gpuext.Prefetch{}
	for pid, set := range per {
		if len(set) != 1 {
			continue
		}
		for pf := range set {
			if pf != gpuext.PrefetchDefault {
				want[pid] = pf
			}
		}
	}
	ev := e.base
	if hot && e.base != gpuext.EvictPriority {
		ev = gpuext.EvictLFU
	}
	return want, ev
}

// action is one change to the policy.
type action struct {
	decision, algorithm string
	pid                 uint32 // prefetch actions
	do                  func() error
	done                func()
}

// reconcile makes the changes from what the policy holds to what it
// should: cleared entries first, then eviction, then new entries, each
// ordered by pid, as far as the rate limit allows.
func (e *enforcer) reconcile(now time.Time) {
	want, ev := e.desired()
	var acts []action
	for _, pid := range sortedKeys(e.prefetch) {
		if _, ok := want[pid]; !ok {
			acts = append(acts, action{decisionPrefetch, gpuext.PrefetchDefault.String(), pid,
				func() error { return e.ap.ClearPrefetchFor(pid) }, func() { delete(e.prefetch, pid) }})
		}
	}
	if ev != e.eviction {
		acts = append(acts, action{decisionEviction, ev.String(), 0,
			func() error { return e.setEviction(ev) }, func() { e.eviction = ev }})
	}
	for _, pid := range sortedKeys(want) {
		if pf, ok := e.prefetch[pid]; !ok || pf != want[pid] {
			pf := want[pid]
			acts = append(acts, action{decisionPrefetch, pf.String(), pid,
				func() error { return e.ap.SetPrefetchFor(pid, pf) }, func() { e.prefetch[pid] = pf }})
		}
	}
	for i, a := range acts {
		if !e.limit.allow(now) {
			e.log.Debug("gpupolicy changes deferred by max_actions_per_second", zap.Int("deferred", len(acts)-i))
			return
		}
		if i == 0 {
			if err := e.replaced(); err != nil {
				e.degrade(err)
				return
			}
		}
		if err := a.do(); err != nil {
			e.errs[a.decision]++
			e.log.Debug("gpupolicy change failed", zap.String("decision", a.decision),
				zap.String("algorithm", a.algorithm), zap.Uint32("pid", a.pid), zap.Error(err))
			if errors.Is(err, gpuext.ErrNotAttached) { // someone detached the policy: leave it so
				e.degrade(err)
				return
			}
			continue
		}
		a.done()
		e.applied[appliedKey{a.decision, a.algorithm}]++
		e.log.Debug("gpupolicy change applied", zap.String("decision", a.decision),
			zap.String("algorithm", a.algorithm), zap.Uint32("pid", a.pid))
	}
}

// replaced says whether the policy pinned at the processor's path is no
// longer the one it attached or adopted: someone detached it and pinned
// another there, whose entries and eviction are not the processor's to
// change. Asked before each round's changes and before shutdown's undo;
// if the status cannot be read, the changes go ahead (and fail on their
// own if the policy is gone).
func (e *enforcer) replaced() error {
	st, err := e.ap.Status()
	if err != nil || (st.Mem != nil && st.MemPolicy == e.cfg.PolicyName) {
		return nil
	}
	if st.Mem == nil {
		return fmt.Errorf("no memory policy is pinned at %s any more: left alone", e.dir)
	}
	return fmt.Errorf("the memory policy pinned at %s is now %q, not %q (enforce::policy_name): left alone", e.dir, st.MemPolicy, e.cfg.PolicyName)
}

// setEviction changes the eviction algorithm and keeps every other
// parameter of the running policy (an operator's gpuextctl settings).
func (e *enforcer) setEviction(ev gpuext.Eviction) error {
	p, err := e.ap.MemParams()
	if err != nil {
		return err
	}
	p.Eviction = ev
	return e.ap.SetMem(p)
}

// stop undoes the processor's changes (its per-process entries, the
// eviction if it changed it) and detaches the policy when configured. The
// undo is not rate limited: it happens once.
func (e *enforcer) stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.active {
		return nil
	}
	e.active = false
	if len(e.prefetch) > 0 || e.eviction != e.base || e.cfg.DetachOnShutdown {
		if err := e.replaced(); err != nil {
			e.log.Warn("gpupolicy enforce shutdown: nothing undone", zap.Error(err))
			return nil
		}
	}
	var errs []error
	for _, pid := range sortedKeys(e.prefetch) {
		if err := e.ap.ClearPrefetchFor(pid); err != nil {
			errs = append(errs, fmt.Errorf("clear prefetch of pid %d: %w", pid, err))
			continue
		}
		delete(e.prefetch, pid)
	}
	if e.eviction != e.base {
		if err := e.setEviction(e.base); err != nil {
			errs = append(errs, fmt.Errorf("restore eviction %s: %w", e.base, err))
		} else {
			e.eviction = e.base
		}
	}
	if e.cfg.DetachOnShutdown {
		if err := e.ap.Detach(gpuext.Mem); err != nil {
			errs = append(errs, err)
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		err = fmt.Errorf("gpupolicy enforce shutdown: %w", err)
	}
	e.log.Info("gpupolicy stopped enforcing", zap.Bool("detached", e.cfg.DetachOnShutdown && err == nil), zap.Error(err))
	return err
}

// appendMetrics adds the cumulative counts of applied changes and failed
// ones, once there are any.
func (e *enforcer) appendMetrics(md pmetric.Metrics, now time.Time) {
	if len(e.applied) == 0 && len(e.errs) == 0 {
		return
	}
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scopeName)
	ts := pcommon.NewTimestampFromTime(now)
	sum := func(name, desc string) pmetric.NumberDataPointSlice {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit("{change}")
		m.SetDescription(desc)
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		return s.DataPoints()
	}
	point := func(dps pmetric.NumberDataPointSlice, v int64) pcommon.Map {
		dp := dps.AppendEmpty()
		dp.SetStartTimestamp(e.start)
		dp.SetTimestamp(ts)
		dp.SetIntValue(v)
		return dp.Attributes()
	}
	if len(e.applied) > 0 {
		dps := sum(metricApplied, "Changes the processor made to the gpu_ext memory policy (enforce mode).")
		keys := sortedKeysFunc(e.applied, func(a, b appliedKey) int {
			return cmp.Or(cmp.Compare(a.decision, b.decision), cmp.Compare(a.algorithm, b.algorithm))
		})
		for _, k := range keys {
			at := point(dps, e.applied[k])
			at.PutStr(attrDecision, k.decision)
			at.PutStr(attrAlgorithm, k.algorithm)
		}
	}
	if len(e.errs) > 0 {
		dps := sum(metricApplyErrors, "Changes to the gpu_ext memory policy that failed (enforce mode); they are tried again.")
		for _, d := range sortedKeys(e.errs) {
			point(dps, e.errs[d]).PutStr(attrDecision, d)
		}
	}
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return sortedKeysFunc(m, cmp.Compare[K])
}

func sortedKeysFunc[K comparable, V any](m map[K]V, less func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, less)
	return keys
}

// limiter is a token bucket: rate changes a second, bursts of up to
// max(1, rate).
type limiter struct {
	rate, burst, tokens float64
	last                time.Time
}

func newLimiter(rate float64) limiter {
	burst := max(1, rate)
	return limiter{rate: rate, burst: burst, tokens: burst}
}

func (l *limiter) allow(now time.Time) bool {
	if !l.last.IsZero() && now.After(l.last) {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	if l.last.IsZero() || now.After(l.last) {
		l.last = now
	}
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
