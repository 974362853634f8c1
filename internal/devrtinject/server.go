package devrtinject

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Config configures a Server.
type Config struct {
	// Path of the unix socket: <ring dir>/gpuext-inject.sock for devrt to
	// find it without configuration.
	Path string
	// Patcher instruments modules. Required.
	Patcher Patcher
	// Cache keeps answers (nil: 256 answers, 256 MiB of PTX).
	Cache *Cache
	// PatchTimeout bounds one Patch (default 30 s). A patch runs detached
	// from the connection that asked: when devrt gives up first, the
	// answer is still cached for the module's next load.
	PatchTimeout time.Duration
	// IOTimeout bounds reading a request and writing its answer (default
	// 5 s).
	IOTimeout time.Duration
	// MaxConns is the most connections served at once (default 64); more
	// wait in the listen backlog.
	MaxConns int
	// Logger, or none.
	Logger *zap.Logger
}

// Stats are the server's counters.
type Stats struct {
	Requests    uint64 // well-formed requests
	BadRequests uint64 // requests that broke the protocol (answered ERROR, or closed)
	Patched     uint64 // answers by status
	Unchanged   uint64
	Rejected    uint64
	Errors      uint64
	CacheHits   uint64 // answers from the cache
	Patches     uint64 // Patch calls made
	PatchNanos  uint64 // their total time
	WriteErrors uint64 // answers devrt was no longer there to read
}

// Server answers devrt's injection requests on a unix socket.
type Server struct {
	cfg    Config
	ln     *net.UnixListener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sem    chan struct{}

	mu       sync.Mutex
	inflight map[Key]*patchCall

	requests, bad, patched, unchanged, rejected, errs atomic.Uint64
	hits, patches, patchNanos, writeErrs              atomic.Uint64
}

type patchCall struct {
	done chan struct{}
	res  Result
	err  error
}

// Listen creates the socket (replacing a stale socket file, never another
// kind of file), readable and writable by every user: devrt runs in the
// workloads' processes, whoever they run as, and a process can only learn
// the patched form of PTX it sent. Serve answers on it.
func Listen(cfg Config) (*Server, error) {
	if cfg.Patcher == nil {
		return nil, errors.New("devrtinject: no Patcher")
	}
	if cfg.Cache == nil {
		cfg.Cache = NewCache(256, 256<<20)
	}
	if cfg.PatchTimeout <= 0 {
		cfg.PatchTimeout = 30 * time.Second
	}
	if cfg.IOTimeout <= 0 {
		cfg.IOTimeout = 5 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if fi, err := os.Lstat(cfg.Path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("devrtinject: %s exists and is not a socket", cfg.Path)
		}
		if err := os.Remove(cfg.Path); err != nil {
			return nil, err
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(cfg.Path, 0o666); err != nil {
		ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, ln: ln, ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, cfg.MaxConns), inflight: map[Key]*patchCall{}}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Close stops accepting, cancels patches in flight, waits for the
// connections being served and removes the socket.
func (s *Server) Close() error {
	s.cancel()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Requests: s.requests.Load(), BadRequests: s.bad.Load(),
		Patched: s.patched.Load(), Unchanged: s.unchanged.Load(),
		Rejected: s.rejected.Load(), Errors: s.errs.Load(),
		CacheHits: s.hits.Load(), Patches: s.patches.Load(),
		PatchNanos: s.patchNanos.Load(), WriteErrors: s.writeErrs.Load(),
	}
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.cfg.Logger.Warn("injection socket accept", zap.Error(err))
			select {
			case <-time.After(10 * time.Millisecond):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		select {
		case s.sem <- struct{}{}:
		case <-s.ctx.Done():
			c.Close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sem }()
			defer c.Close()
			s.handle(c)
		}()
	}
}

func (s *Server) handle(c *net.UnixConn) {
	_ = c.SetDeadline(time.Now().Add(s.cfg.IOTimeout))
	q, err := ReadRequest(c)
	if err != nil {
		s.bad.Add(1)
		s.cfg.Logger.Debug("bad injection request", zap.Error(err))
		if q != nil { // the header was read: say why
			s.answer(c, &Response{Status: StatusError, Hash: q.Hash,
				Reason: "bad request: " + err.Error()})
		}
		return
	}
	s.requests.Add(1)
	key := Key{Hash: q.Hash, SMArch: q.SMArch, Version: s.cfg.Patcher.Version()}
	res, cached, err := s.result(key, q)
	p := &Response{Hash: q.Hash, ProbeVersion: key.Version}
	switch {
	case err != nil:
		p.Status, p.Reason = StatusError, truncate(err.Error())
	default:
		p.Status, p.Reason, p.SharedSize = res.Status, truncate(res.Reason), res.SharedSize
		switch {
		case res.Status == StatusPatched && len(res.Vars) > 0 && q.Flags&ReqVars == 0:
			// a devrt that would fall back to the original, or hand
			// the program the original's variables while the twin
			// runs: the program's results would change
			p.Status, p.SharedSize = StatusRejected, 0
			p.Reason = truncate("the module declares variables (" + strings.Join(res.Vars, ", ") +
				"), which this devrt cannot hand over to the patched module: update devrt")
		case res.Status == StatusPatched:
			p.PTX, p.Kernels, p.Init = res.PTX, res.Kernels, res.Init
			if len(res.Vars) > 0 {
				p.Flags |= RespVars
			}
		}
		if cached {
			p.Flags |= RespCached
			s.hits.Add(1)
		}
	}
	_ = c.SetWriteDeadline(time.Now().Add(s.cfg.IOTimeout))
	s.answer(c, p)
}

func truncate(s string) string {
	if len(s) > MaxReason {
		return s[:MaxReason]
	}
	return s
}

func (s *Server) answer(c *net.UnixConn, p *Response) {
	switch p.Status {
	case StatusPatched:
		s.patched.Add(1)
	case StatusUnchanged:
		s.unchanged.Add(1)
	case StatusRejected:
		s.rejected.Add(1)
	default:
		s.errs.Add(1)
	}
	b, err := AppendResponse(nil, p)
	if err != nil { // checked before: a bug, still answered
		b, _ = AppendResponse(nil, &Response{Status: StatusError, Hash: p.Hash,
			Reason: truncate("internal: " + err.Error())})
	}
	if _, err := c.Write(b); err != nil {
		s.writeErrs.Add(1)
	}
}

// result is the cached answer for key, or the Patcher's (one Patch per
// key at a time: concurrent loads of one module wait for the same patch).
func (s *Server) result(key Key, q *Request) (Result, bool, error) {
	if r, ok := s.cfg.Cache.Get(key); ok {
		return r, true, nil
	}
	s.mu.Lock()
	call, running := s.inflight[key]
	if !running {
		call = &patchCall{done: make(chan struct{})}
		s.inflight[key] = call
		go s.patch(key, q, call)
	}
	s.mu.Unlock()
	select {
	case <-call.done:
		return call.res, running, call.err
	case <-s.ctx.Done():
		return Result{}, false, errors.New("collector shutting down")
	}
}

func (s *Server) patch(key Key, q *Request, call *patchCall) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.PatchTimeout)
	defer cancel()
	m := &Module{PID: q.PID, SMArch: q.SMArch, API: q.API, Image: q.Image,
		Hash: q.Hash, PTX: q.PTX, Kernels: q.Kernels}
	start := time.Now()
	res, err := s.cfg.Patcher.Patch(ctx, m)
	s.patches.Add(1)
	s.patchNanos.Add(uint64(time.Since(start)))
	if err == nil {
		err = checkResult(&res)
	}
	if err == nil {
		s.cfg.Cache.Put(key, res)
		if ce := s.cfg.Logger.Check(zap.DebugLevel, "module patched"); ce != nil && res.Status == StatusPatched {
			ce.Write(zap.Uint32("pid", q.PID), zap.Binary("sha256", q.Hash[:]),
				zap.Int("kernels", len(res.Kernels)), zap.Strings("names", res.Kernels[:min(len(res.Kernels), 8)]))
		}
	} else {
		s.cfg.Logger.Info("module not patched", zap.Uint32("pid", q.PID),
			zap.Binary("sha256", q.Hash[:]), zap.Error(err))
	}
	call.res, call.err = res, err
	s.mu.Lock()
	delete(s.inflight, key)
	s.mu.Unlock()
	close(call.done)
}

// checkResult refuses what devrt would refuse, so that a broken Patcher
// answers ERROR (not cached) instead of a response devrt drops.
func checkResult(r *Result) error {
	switch r.Status {
	case StatusPatched:
		if len(r.PTX) == 0 || len(r.Kernels) == 0 {
			return errors.New("patcher: patched without PTX or kernels")
		}
		if r.SharedSize > 0 && !bytes.Contains(r.PTX, []byte(SharedGlobal)) {
			return errors.New("patcher: a shared region but no " + SharedGlobal)
		}
		if r.SharedSize == 0 && len(r.Init) > 0 {
			return errors.New("patcher: initial contents without a shared region")
		}
	case StatusUnchanged, StatusRejected:
		r.PTX, r.Kernels, r.Init = nil, nil, nil
		r.SharedSize = 0
	default:
		return fmt.Errorf("patcher: status %v", r.Status)
	}
	p := Response{Status: r.Status, PTX: r.PTX, Kernels: r.Kernels,
		SharedSize: r.SharedSize, Init: r.Init, Reason: truncate(r.Reason)}
	if err := p.valid(); err != nil {
		return fmt.Errorf("patcher: %w", err)
	}
	if _, err := joinNames(r.Kernels); err != nil {
		return fmt.Errorf("patcher: %w", err)
	}
	return nil
}
