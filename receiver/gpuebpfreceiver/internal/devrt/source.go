package devrt

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procmaps"
)

// Options connect the source to the receiver. Handle, Attached and
// Detached are called on the goroutine that calls Poll, Probe, Exec,
// Silence and Shutdown (the receiver's event goroutine).
type Options struct {
	// ProcRoot is where the host's /proc is visible.
	ProcRoot string
	Logger   *zap.Logger
	// Handle receives every record with its process's pid in the
	// collector's pid namespace (devrt writes its own namespace's).
	Handle func(pid uint32, rec []byte)
	// Resolve and Alive tell who a process is and whether it still runs
	// with a start time (procattr.Resolver).
	Resolve func(pid int) (procattr.Process, error)
	Alive   func(pid int, start uint64) bool
	// Attached: from createdNS on, devrt reports every call of pid (called
	// again when a newer ring of pid replaces the last one).
	Attached func(pid uint32, createdNS uint64)
	// Detached: devrt reports pid's calls only until until (CLOCK_MONOTONIC
	// ns): the time it disabled itself (as noticed) or the process exec'd;
	// Forever when the process has ended, since the last drain took all
	// it reported.
	Detached func(pid uint32, until uint64)
	// Now is CLOCK_MONOTONIC in ns, written as the heartbeat.
	Now func() uint64
	// ReadUpTo, when set, is the CLOCK_MONOTONIC time before which every
	// record the uprobes' ring buffer took has been handled. A ring found
	// after it waits (Poll leaves it pending): the exec record of the
	// program that made it, written before the ring existed, is handled
	// before the ring's records, so the program is known by its name even
	// when it has exited by then. Probe takes the pid's rings at once, and
	// Poll any ring that has waited readWaitMax.
	ReadUpTo func() uint64
}

// Timing of discovery; rings are drained every poll_interval.
const (
	procScanInterval   = time.Second            // container processes mapping the library
	orphanScanInterval = 100 * time.Millisecond // ... sooner when a ring has no owner yet
	livenessInterval   = 250 * time.Millisecond // has a ring's process exited?
	orphanGrace        = 10 * time.Second       // a host ring no live process claims
	notReadyGrace      = 10 * time.Second       // a ring file whose header never appears
	devrtLibrary       = "libgpuext-devrt.so*"
	maxBad             = 4096 // rejected files remembered before those not seen lately are forgotten
)

// Forever is the end of the coverage of a process that ended under devrt.
const Forever = ^uint64(0)

type fileKey struct{ dev, ino uint64 }

// entry is one ring being read.
type entry struct {
	ring    *devring.Ring
	dirfd   int // the ring's directory, O_PATH, held so the file can be removed
	name    string
	path    string // for logs
	key     fileKey
	pid     uint32 // in the collector's pid namespace
	start   uint64
	created uint64
	found   uint64      // CLOCK_MONOTONIC when discovery saw the file: it existed before
	pidns   uint64      // devrt's pid namespace, from the header (0: unknown)
	final   bool        // drain once more and remove: superseded, exec'd, orphaned
	orphan  bool        // no live process claimed it: never stands for a pid
	discard bool        // an orphan whose pid is another process's now: its records are counted, not handed over
	sure    bool        // known to be pid's: it ran (or a uprobe saw it) when found
	until   uint64      // exec'd: when (its coverage ends there)
	dead    atomic.Bool // its process has exited (set by discovery)
	last    devring.Counters
}

// Stats are the source's counters for self-telemetry.
type Stats struct {
	Full, Disabled, Timing        uint64 // producers' drop counters, summed
	Corrupt                       uint64 // records left unread in abandoned rings, or of no process that can be named
	Active, DisabledRings, Closed int64  // rings read now, by state
	Invalid, Abandoned, Stale     uint64 // ring files given up
}

// Source reads every devrt ring. See the package comment.
type Source struct {
	// waitMax is how long a ring found may wait for ReadUpTo (readWaitMax;
	// tests set it).
	waitMax uint64

	cfg      Config
	opts     Options
	log      *zap.Logger
	ctl      devring.Control
	hostRoot string                 // "" or <proc_root>/1/root: where the host's directories are
	hostMnt  string                 // the host's mount namespace (nsfs.HostMountNS; "": none known)
	isDevrt  func(path string) bool // devrt's library in a process's maps

	// Shared by the discovery goroutine and the event goroutine.
	mu        sync.Mutex
	known     map[fileKey]bool      // pending or read
	bad       map[fileKey]time.Time // failed validation, corrupt or not removable: never again; when last seen
	notReady  map[fileKey]time.Time
	orphans   map[fileKey]*orphan
	pending   []*entry
	live      []*entry // what liveness checks look at
	invalid   uint64
	stale     uint64
	fullLog   bool
	newOrphan bool
	hostDirs  map[string]int // host directory → O_PATH fd
	procs     map[int]containerProc

	// Event goroutine only.
	rings     []*entry
	ringsOf   map[uint32]int      // pid → rings read
	attached  map[uint32]uint64   // pid → created_ns of the ring that counts
	gone      map[uint32]goneRing // pid → a ring retired without standing for it
	missed    map[uint32]uint64   // pid → Now() of a Probe that found no ring of it
	silenced  map[uint32]bool
	execs     map[uint32]uint64 // pid → when it last called execve (Now() ns)
	removed   devring.Counters  // drop counters of rings already removed
	abandoned uint64
	lost      uint64

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type orphan struct {
	e     *entry
	first time.Time
}

// goneRing is a ring drained and removed after its process exited, before
// any uprobe event of its pid was read, so it never stood for the pid. The
// uprobes' first event of that pid, read within goneGrace, still makes it
// the pid's: those unread events are of calls devrt reported.
type goneRing struct {
	created, start uint64
	at             uint64 // Now() when retired
}

// goneGrace bounds how late the uprobes' first event may claim a gone ring,
// and maxGone how many are remembered.
const (
	goneGrace = uint64(30 * time.Second)
	maxGone   = 1 << 12
)

// containerProc is what discovery learnt of a process outside the host's
// mount namespace.
type containerProc struct {
	procmaps.Verdict        // does its program map devrt
	nsPID            uint32 // its pid in its own namespace
}

// New returns a source; Start begins discovery.
func New(cfg Config, opts Options) *Source {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = monotonic
	}
	s := &Source{
		cfg: cfg, opts: opts, log: opts.Logger,
		waitMax:  readWaitMax(cfg.PollInterval),
		isDevrt:  procmaps.LibraryMatcher(devrtLibrary),
		ctl:      cfg.Control(uint32(os.Getpid())),
		known:    map[fileKey]bool{},
		bad:      map[fileKey]time.Time{},
		notReady: map[fileKey]time.Time{},
		orphans:  map[fileKey]*orphan{},
		hostDirs: map[string]int{},
		procs:    map[int]containerProc{},
		attached: map[uint32]uint64{},
		gone:     map[uint32]goneRing{},
		missed:   map[uint32]uint64{},
		ringsOf:  map[uint32]int{},
		silenced: map[uint32]bool{},
		execs:    map[uint32]uint64{},
	}
	if filepath.Clean(opts.ProcRoot) != "/proc" {
		s.hostRoot = filepath.Join(opts.ProcRoot, "1", "root")
	}
	s.hostMnt = nsfs.HostMountNS(opts.ProcRoot)
	return s
}

func monotonic() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// Start runs discovery until Shutdown: the configured directories every
// poll_interval, container processes every second.
func (s *Source) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	s.scanHostDirs()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.discover(ctx)
	}()
}

// Poll drains every ring, writes heartbeats and retires rings whose
// process has gone. Called every poll_interval on the event goroutine.
func (s *Source) Poll() {
	s.adoptPending(nil)
	now := s.opts.Now()
	for i := 0; i < len(s.rings); {
		if e := s.rings[i]; s.drain(e, now) {
			s.retire(e)
			continue // retire removed it from s.rings
		}
		i++
	}
}

// drain reads one ring and reports whether to retire it.
func (s *Source) drain(e *entry, now uint64) bool {
	if !s.drainOnce(e) {
		return true
	}
	_ = e.ring.Heartbeat(now)
	wasDisabled := e.last.State == devring.StateDisabled
	if c, err := e.ring.Counters(); err == nil {
		e.last = c
	}
	if disabled := e.last.State == devring.StateDisabled; disabled != wasDisabled {
		if disabled {
			s.log.Warn("devrt disabled itself in a process; its calls go unrecorded by devrt",
				zap.Uint32("pid", e.pid), zap.Uint32("reason", e.last.DisabledReason), zap.String("version", e.ring.Header().Version))
		}
		s.updateAttached(e.pid, s.opts.Now())
	}
	// A closed ring (the process is exiting) is read on until the process
	// has gone: what it calls on its way out is neither devrt's nor, while
	// the kernel skips it, the uprobes'; clearing the skip mid-call would
	// leave returns without entries.
	return e.final || e.dead.Load()
}

// drainOnce hands the ring's records on; false when the ring broke.
func (s *Source) drainOnce(e *entry) bool {
	_, err := e.ring.Drain(func(rec []byte) error {
		if e.discard {
			s.lost++
			return nil
		}
		s.opts.Handle(e.pid, rec)
		return nil
	})
	if err == nil {
		return true
	}
	if e.ring.Broken() != nil {
		s.abandoned++
		if c, cerr := e.ring.Counters(); cerr == nil && c.Head > e.ring.Tail() {
			s.lost += min(c.Head-e.ring.Tail(), uint64(e.ring.Header().Capacity))
		}
		s.log.Warn("devrt ring abandoned: its writer broke the ring protocol",
			zap.String("path", e.path), zap.Uint32("pid", e.pid), zap.Error(err))
	}
	return false
}

// retire drains e a last time, removes its file and forgets it.
func (s *Source) retire(e *entry) {
	broken := e.ring.Broken() != nil
	if !broken {
		s.drainOnce(e)
		broken = e.ring.Broken() != nil
		if c, err := e.ring.Counters(); err == nil {
			e.last = c
		}
		// Its writers are gone (exited, exec'd, superseded, orphaned): slots
		// claimed but never committed (a thread stopped mid-record) keep
		// whatever was committed after them from being read. Count them.
		if tail := e.ring.Tail(); !broken && e.last.Head > tail {
			left := min(e.last.Head-tail, uint64(e.ring.Header().Capacity))
			s.lost += left
			s.log.Warn("devrt ring retired with records its writer never finished",
				zap.String("path", e.path), zap.Uint32("pid", e.pid), zap.Uint64("slots", left))
		}
	}
	for i := range s.removed.Drops {
		s.removed.Drops[i] += e.last.Drops[i]
	}
	err := nsfs.RemoveIfSame(e.dirfd, e.name, e.key.dev, e.key.ino)
	if err != nil {
		s.log.Debug("cannot remove devrt ring", zap.String("path", e.path), zap.Error(err))
	}
	_ = e.ring.Close()
	_ = unix.Close(e.dirfd)
	for i, o := range s.rings {
		if o == e {
			s.rings = append(s.rings[:i], s.rings[i+1:]...)
			if s.ringsOf[e.pid]--; s.ringsOf[e.pid] <= 0 {
				delete(s.ringsOf, e.pid)
			}
			break
		}
	}
	s.mu.Lock()
	delete(s.known, e.key)
	if err != nil {
		s.bad[e.key] = time.Now() // the file stays: never read it again
	}
	s.publishLocked()
	s.mu.Unlock()
	until := s.opts.Now()
	switch {
	case e.dead.Load():
		until = Forever
	case e.until != 0:
		until = e.until
	}
	if !e.sure && !e.orphan && e.dead.Load() {
		if len(s.gone) >= maxGone {
			clear(s.gone)
		}
		s.gone[e.pid] = goneRing{created: e.created, start: e.start, at: s.opts.Now()}
	}
	s.updateAttached(e.pid, until)
}

// readWaitMax bounds how long a ring found waits for the uprobes' ring
// buffer to be read up to when it was found (Options.ReadUpTo): a loop
// that lags further (a starved CPU, a flood of events, a ring buffer that
// fails to read) would leave the ring undrained, its process filling it
// and devrt dropping, for as long. Past it the ring is taken; a program
// that exited before its exec record was read is then judged without its
// name, as before ReadUpTo. Two drain intervals, at least 250 ms.
func readWaitMax(poll time.Duration) uint64 {
	return uint64(max(2*poll, 250*time.Millisecond))
}

// adoptPending takes the rings discovery opened into the read set: those
// found before ReadUpTo or readWaitMax ago, and those take (nil: none)
// picks.
func (s *Source) adoptPending(take func(*entry) bool) {
	upTo := Forever
	if s.opts.ReadUpTo != nil {
		upTo = s.opts.ReadUpTo()
	}
	mono := monotonic()
	s.mu.Lock()
	var pending []*entry
	wait := s.pending[:0]
	for _, e := range s.pending {
		if e.found < upTo || mono-e.found >= s.waitMax || (take != nil && take(e)) {
			pending = append(pending, e)
		} else {
			wait = append(wait, e)
		}
	}
	clear(s.pending[len(wait):])
	s.pending = wait
	s.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	now := s.opts.Now()
	for _, e := range pending {
		at, execd := s.execs[e.pid]
		if execd && e.created < at {
			// Made by a program the pid has replaced since (its exec was
			// read before the ring was found): the old program's to the
			// end, never the new one's.
			e.final, e.until = true, at
		} else if t, ok := s.missed[e.pid]; ok && !e.sure && !e.orphan && e.created < t {
			// A Probe of this pid found no ring (its directory not
			// readable then, the process's files gone as it exited): the
			// uprobes saw the pid, so a ring of it made before that
			// Probe and found since stands for it, unless too late or
			// the pid is another live process's. The uprobe calls
			// reported before stay reported (twice).
			delete(s.missed, e.pid)
			e.sure = now-t < goneGrace && !s.reused(e.pid, e.start)
		}
		_ = e.ring.WriteControl(s.control(e.pid))
		_ = e.ring.Heartbeat(now)
		e.last, _ = e.ring.Counters()
		s.rings = append(s.rings, e)
		s.ringsOf[e.pid]++
		s.updateAttached(e.pid, now)
	}
	s.mu.Lock()
	s.publishLocked()
	s.mu.Unlock()
}

// updateAttached marks all but the newest ring of pid final (a newer ring
// means the program was replaced) and tells the receiver whether, and from
// when, devrt reports pid's calls: not while devrt has disabled itself, as
// it then passes calls through unrecorded. A ring whose process has ended
// still counts: uprobe events of its last calls may not have been read
// yet. until is when the coverage ends if it ends now.
func (s *Source) updateAttached(pid uint32, until uint64) {
	var newest *entry
	for _, e := range s.rings {
		if e.pid == pid && e.sure && !e.final && (newest == nil || e.created > newest.created) {
			newest = e
		}
	}
	for _, e := range s.rings {
		if newest != nil && e.pid == pid && e != newest && !e.orphan {
			e.final = true // superseded
		}
	}
	covering := newest != nil && newest.last.State != devring.StateDisabled
	was, had := s.attached[pid]
	switch {
	case !covering && had:
		delete(s.attached, pid)
		if s.opts.Detached != nil {
			s.opts.Detached(pid, until)
		}
	case covering && (!had || was != newest.created):
		s.attached[pid] = newest.created
		if s.opts.Attached != nil {
			s.opts.Attached(pid, newest.created)
		}
	}
}

func (s *Source) publishLocked() { s.live = append(s.live[:0:0], s.rings...) }

func (s *Source) control(pid uint32) devring.Control {
	if s.silenced[pid] {
		return devring.Control{ConsumerPID: s.ctl.ConsumerPID} // report nothing
	}
	return s.ctl
}

// Probe looks for pid's ring at once (its first call seen by the uprobes):
// every call after the ring's creation is then reported by devrt alone.
// The uprobes saw pid, so a ring of that pid found by discovery after the
// process ended (which alone would not be taken to stand for it) is its,
// even when it was already drained and removed (gone): a short process
// can end, and its ring be read to the end, before the uprobes' events of
// it are read. And when Probe finds none, a ring of pid found later
// within goneGrace stands for it too (missed).
func (s *Source) Probe(pid uint32) {
	// The uprobes' records of pid are read up to this call, its exec
	// record included: its rings need not wait.
	mine := func(e *entry) bool { return e.pid == pid }
	s.adoptPending(mine)
	found := false
	for _, e := range s.rings {
		found = found || e.pid == pid
	}
	if !found {
		for _, c := range s.candidatesOf(int(pid)) {
			c.seen = true
			s.consider(c)
			if c.hostPID != 0 {
				_ = unix.Close(c.dirfd)
			}
		}
		s.adoptPending(mine)
	}
	sure, has := false, false
	for _, e := range s.rings {
		has = has || e.pid == pid && !e.orphan
		if e.pid == pid && !e.orphan && !e.sure {
			e.sure, sure = true, true
		}
	}
	if _, gone := s.gone[pid]; !has && !gone {
		now := s.opts.Now()
		if len(s.missed) >= maxGone {
			for p, t := range s.missed {
				if now-t >= goneGrace {
					delete(s.missed, p)
				}
			}
			if len(s.missed) >= maxGone {
				clear(s.missed)
			}
		}
		s.missed[pid] = now
	}
	if sure {
		s.updateAttached(pid, s.opts.Now())
	}
	if g, ok := s.gone[pid]; ok && s.ringsOf[pid] == 0 {
		delete(s.gone, pid)
		// Not if the pid is another live process's by now.
		reused := s.alive(pid, 0) && !s.alive(pid, g.start)
		if !reused && s.opts.Now()-g.at < goneGrace && s.opts.Attached != nil {
			s.opts.Attached(pid, g.created)
			if s.opts.Detached != nil {
				s.opts.Detached(pid, Forever)
			}
		}
	}
}

// Exec retires the rings pid made before it called execve at ns (the new
// program makes its own), so their last records are taken under the old
// program's identity. A ring of the old program found later is retired
// when it is taken in.
func (s *Source) Exec(pid uint32, at uint64) {
	s.mu.Lock()
	delete(s.procs, int(pid)) // a new program: read its maps again
	s.mu.Unlock()
	delete(s.missed, pid)
	if len(s.execs) >= maxGone {
		now := s.opts.Now()
		for p, t := range s.execs {
			if now-t > goneGrace {
				delete(s.execs, p)
			}
		}
		if len(s.execs) >= maxGone {
			clear(s.execs)
		}
	}
	if at > s.execs[pid] {
		s.execs[pid] = at
	}
	// The old program's rings, to retire now; the new program's wait for
	// Poll, after the receiver has taken in this exec record.
	s.adoptPending(func(e *entry) bool { return e.pid == pid && e.created < at })
	var old []*entry
	for _, e := range s.rings {
		if e.pid == pid && e.created < at {
			old = append(old, e)
		}
	}
	for _, e := range old {
		e.final, e.until = true, at
		s.retire(e)
	}
}

// Silence tells devrt in pid to report nothing (the selection rules
// exclude the process); Unsilence undoes it.
func (s *Source) Silence(pid uint32)   { s.setSilenced(pid, true) }
func (s *Source) Unsilence(pid uint32) { s.setSilenced(pid, false) }

func (s *Source) setSilenced(pid uint32, on bool) {
	if s.silenced[pid] == on {
		return
	}
	if on {
		s.silenced[pid] = true
	} else {
		delete(s.silenced, pid)
	}
	for _, e := range s.rings {
		if e.pid == pid {
			_ = e.ring.WriteControl(s.control(pid))
		}
	}
}

// Holding reports whether a ring of pid is still read: its last records
// come after the process has exited.
func (s *Source) Holding(pid uint32) bool { return s.ringsOf[pid] > 0 }

// Rings is the number of rings being read.
func (s *Source) Rings() int { return len(s.rings) }

// Stats returns the counters for self-telemetry (event goroutine).
func (s *Source) Stats() Stats {
	st := Stats{
		Full:      s.removed.Drops[devring.DropFull],
		Disabled:  s.removed.Drops[devring.DropDisabled],
		Timing:    s.removed.Drops[devring.DropTiming],
		Corrupt:   s.lost,
		Abandoned: s.abandoned,
	}
	for _, e := range s.rings {
		st.Full += e.last.Drops[devring.DropFull]
		st.Disabled += e.last.Drops[devring.DropDisabled]
		st.Timing += e.last.Drops[devring.DropTiming]
		switch e.last.State {
		case devring.StateDisabled:
			st.DisabledRings++
		case devring.StateClosed:
			st.Closed++
		default:
			st.Active++
		}
	}
	s.mu.Lock()
	st.Invalid, st.Stale = s.invalid, s.stale
	s.mu.Unlock()
	return st
}

// Shutdown stops discovery, drains every ring a last time and lets go of
// them, telling devrt nobody reads (consumer_pid 0). Files stay: their
// processes still run, and a restarted collector resumes where this one
// stopped. Call it on the event goroutine, before the final hand-over.
func (s *Source) Shutdown() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	s.adoptPending(func(*entry) bool { return true })
	for _, e := range s.rings {
		s.drainOnce(e)
		ctl := s.control(e.pid)
		ctl.ConsumerPID = 0
		_ = e.ring.WriteControl(ctl)
		_ = e.ring.Close()
		_ = unix.Close(e.dirfd)
	}
	s.rings = nil
	clear(s.ringsOf)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.orphans {
		_ = o.e.ring.Close()
		_ = unix.Close(o.e.dirfd)
	}
	s.orphans = map[fileKey]*orphan{}
	for _, fd := range s.hostDirs {
		_ = unix.Close(fd)
	}
	s.hostDirs = map[string]int{}
	s.live = nil
}
