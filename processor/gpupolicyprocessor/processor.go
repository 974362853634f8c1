package gpupolicyprocessor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"
)

// policy is the state shared by the traces, metrics and logs processors of one
// configuration. There is one per configured gpupolicy processor so that one
// enforcer with one rate limit owns the pinned maps instead of one per
// signal. It starts with the first signal and stops with the last.
type policy struct {
	cfg     *Config
	logger  *zap.Logger
	advice  *adviser  // advise and enforce modes
	enforce *enforcer // enforce mode only

	mu      sync.Mutex
	refs    int  // signal processors created and not yet shut down; guarded by registry.mu
	started bool // Start ran on at least one of them
}

// The process functions pass data through unchanged, except that advise
// and enforce modes append their advice (and enforce its counts of changes)
// to the metrics that pass; enforce applies the advice as it goes.
func (*policy) processTraces(_ context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	return td, nil
}

func (p *policy) processMetrics(_ context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	if p.advice != nil {
		p.advice.appendAdvice(md)
	}
	return md, nil
}

func (*policy) processLogs(_ context.Context, ld plog.Logs) (plog.Logs, error) {
	return ld, nil
}

// start runs once per policy, however many signals share it.
func (p *policy) start(_ context.Context, host component.Host) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return nil
	}
	p.started = true
	if p.enforce != nil {
		p.enforce.begin(host)
	}
	p.logger.Info("gpupolicy processor started",
		zap.String("mode", p.cfg.Mode),
		zap.String("pin_path", p.cfg.PinPath),
		zap.Float64("max_actions_per_second", p.cfg.MaxActionsPerSecond))
	return nil
}

// stop runs when the last signal processor sharing the policy shuts down;
// enforce mode undoes its changes to the policy.
func (p *policy) stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		return nil
	}
	var err error
	if p.enforce != nil {
		err = p.enforce.stop()
	}
	p.logger.Info("gpupolicy processor stopped", zap.String("mode", p.cfg.Mode))
	return err
}

// registry maps each configuration to its policy.
type registry struct {
	mu sync.Mutex
	m  map[*Config]*policy
}

var policies = &registry{m: map[*Config]*policy{}}

// handle is one signal processor's reference to a shared policy. Its shutdown
// releases the reference exactly once, as Shutdown may be called repeatedly.
type handle struct {
	policy   *policy
	reg      *registry
	shutOnce sync.Once
}

func (r *registry) acquire(cfg *Config, set processor.Settings) *handle {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.m[cfg]
	if !ok {
		p = &policy{cfg: cfg, logger: set.Logger}
		if cfg.Mode == ModeAdvise || cfg.Mode == ModeEnforce {
			p.advice = newAdviser(cfg.Advise, cfg.SignalsFrom, time.Now, set.Logger)
		}
		if cfg.Mode == ModeEnforce {
			p.enforce = newEnforcer(cfg, newLoader(cfg.PinPath), set.Logger)
			p.advice.sink = p.enforce
		}
		r.m[cfg] = p
	}
	p.refs++
	return &handle{policy: p, reg: r}
}

func (r *registry) release(p *policy) error {
	r.mu.Lock()
	p.refs--
	last := p.refs == 0
	if last {
		delete(r.m, p.cfg)
	}
	r.mu.Unlock()
	if last {
		return p.stop()
	}
	return nil
}

// len reports how many policies are live; tests use it to check releases.
func (r *registry) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

func (h *handle) start(ctx context.Context, host component.Host) error {
	return h.policy.start(ctx, host)
}

func (h *handle) shutdown(context.Context) (err error) {
	h.shutOnce.Do(func() { err = h.reg.release(h.policy) })
	return err
}
