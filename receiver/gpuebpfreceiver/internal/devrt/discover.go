package devrt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procmaps"
)

// candidate is a ring file found in a directory.
type candidate struct {
	dirfd   int    // the directory (owned by the caller; dup'ed when kept)
	name    string // file name, checked by parseName
	path    string // for logs
	hostPID uint32 // the process whose root it was found in; 0: a host directory
	start   uint64 // hostPID's start time: its rings' header says the same
	seen    bool   // the uprobes just saw the pid: a ring of it is its ring
}

// discover is the discovery goroutine.
func (s *Source) discover(ctx context.Context) {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	var lastProc, lastLive time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.scanHostDirs()
			// A ring no host process claims is most likely a container
			// process's sharing the directory (a hostPath): look for its
			// owner soon rather than in a second, while it fills up.
			s.mu.Lock()
			orphaned := s.newOrphan
			s.newOrphan = false
			s.mu.Unlock()
			if now.Sub(lastProc) >= procScanInterval || (orphaned && now.Sub(lastProc) >= orphanScanInterval) {
				s.scanContainers()
				lastProc = now
			}
			if now.Sub(lastLive) >= livenessInterval {
				s.checkLiveness()
				lastLive = now
			}
			s.expireOrphans(now)
		}
	}
}

// hostDir returns the cached descriptor of a configured directory on the
// host, opening it when needed (it may appear later).
func (s *Source) hostDir(dir string) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fd, ok := s.hostDirs[dir]; ok {
		return fd, true
	}
	fd, err := nsfs.OpenDir(s.hostRoot, dir)
	if err != nil {
		return -1, false
	}
	s.hostDirs[dir] = fd
	return fd, true
}

// scanHostDirs considers every ring file in the configured directories.
func (s *Source) scanHostDirs() {
	for _, dir := range s.cfg.Directories {
		fd, ok := s.hostDir(dir)
		if !ok {
			continue
		}
		names, err := listRings(fd, 0)
		if err != nil {
			continue
		}
		for _, n := range names {
			s.consider(candidate{dirfd: fd, name: n, path: filepath.Join(dir, n)})
		}
	}
}

// scanContainers finds processes outside the host's mount namespace that
// map devrt and considers the ring files in their root's directories.
func (s *Source) scanContainers() {
	pids, err := procmaps.ListPIDs(s.opts.ProcRoot)
	if err != nil {
		return
	}
	seen := make(map[int]bool, len(pids))
	for _, pid := range pids {
		seen[pid] = true
		for _, c := range s.containerCandidates(pid) {
			s.consider(c)
			_ = unix.Close(c.dirfd)
		}
	}
	s.mu.Lock()
	for pid := range s.procs {
		if !seen[pid] {
			delete(s.procs, pid)
		}
	}
	s.mu.Unlock()
}

// candidatesOf returns pid's ring files: in the host's directories when it
// shares the host's mount namespace, else in its root's (those candidates,
// hostPID set, own their directory descriptor). Probe uses it.
func (s *Source) candidatesOf(pid int) []candidate {
	// A process gone already (its first uprobe events read late) is
	// looked for in the host's directories.
	if mnt, err := nsfs.MountNS(s.opts.ProcRoot, pid); err == nil && mnt != s.hostMnt {
		// The uprobes saw it call the driver. Its maps are read afresh
		// (not the scans' verdict, which may predate the loader mapping
		// devrt): a live program that does not map devrt has no ring,
		// whatever a ring of its pid in its namespace (another
		// container's pid 1, in a shared directory) says; maps that are
		// empty or gone (it is exiting) do not tell, and its root's
		// directories are listed.
		seen := false
		libs, err := procmaps.Scan(s.opts.ProcRoot, pid, func(p string) bool { seen = true; return s.isDevrt(p) })
		if (err == nil && seen && len(libs) == 0) || s.opts.Resolve == nil {
			return nil
		}
		info, err := s.opts.Resolve(pid)
		if err != nil {
			return nil
		}
		nsPID, err := nsfs.NSPID(s.opts.ProcRoot, pid)
		if err != nil || nsPID == 0 {
			return nil
		}
		return s.rootCandidates(pid, nsPID, info.StartTime) // the caller closes their directories
	}
	var out []candidate
	for _, dir := range s.cfg.Directories {
		fd, ok := s.hostDir(dir)
		if !ok {
			continue
		}
		names, _ := listRings(fd, uint32(pid))
		for _, n := range names {
			out = append(out, candidate{dirfd: fd, name: n, path: filepath.Join(dir, n)})
		}
	}
	return out
}

// containerCandidates returns the ring files of a process outside the
// host's mount namespace that maps devrt, each with a descriptor of its
// directory the caller closes. The maps are read once per program
// (procmaps.Verdict: again when they did not name devrt).
func (s *Source) containerCandidates(pid int) []candidate {
	mnt, err := nsfs.MountNS(s.opts.ProcRoot, pid)
	if err != nil || mnt == s.hostMnt || s.opts.Resolve == nil {
		return nil
	}
	info, err := s.opts.Resolve(pid)
	if err != nil {
		return nil
	}
	exe, _ := os.Readlink(filepath.Join(s.opts.ProcRoot, strconv.Itoa(pid), "exe"))
	s.mu.Lock()
	cp, ok := s.procs[pid]
	s.mu.Unlock()
	var before *procmaps.Verdict
	if ok {
		before = &cp.Verdict
	}
	if before.Stale(info.StartTime, exe) {
		libs, err := procmaps.Scan(s.opts.ProcRoot, pid, s.isDevrt)
		cp = containerProc{Verdict: before.Read(info.StartTime, exe, err == nil && len(libs) > 0)}
		if cp.Maps {
			cp.nsPID, _ = nsfs.NSPID(s.opts.ProcRoot, pid)
		}
		s.mu.Lock()
		s.procs[pid] = cp
		s.mu.Unlock()
	}
	if !cp.Maps || cp.nsPID == 0 {
		return nil
	}
	return s.rootCandidates(pid, cp.nsPID, cp.Start)
}

// rootCandidates returns the ring files of devrt pid nsPID in the
// directories under the root of pid (started at start), each with a
// descriptor of its directory the caller closes.
func (s *Source) rootCandidates(pid int, nsPID uint32, start uint64) []candidate {
	root := filepath.Join(s.opts.ProcRoot, strconv.Itoa(pid), "root")
	var out []candidate
	for _, dir := range s.cfg.Directories {
		fd, err := nsfs.OpenDir(root, dir)
		if err != nil {
			continue
		}
		names, _ := listRings(fd, nsPID)
		if len(names) == 0 {
			_ = unix.Close(fd)
			continue
		}
		for i, n := range names {
			dfd := fd
			if i > 0 {
				if dfd, err = unix.Dup(fd); err != nil {
					continue
				}
			}
			out = append(out, candidate{dirfd: dfd, name: n, path: filepath.Join(root, dir, n), hostPID: uint32(pid), start: start})
		}
	}
	return out
}

// consider opens a ring file not seen before and queues it for reading,
// or remembers why not.
func (s *Source) consider(c candidate) {
	found := monotonic() // the file was listed before: it existed by now
	var st unix.Stat_t
	if err := unix.Fstatat(c.dirfd, c.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return
	}
	key := fileKey{uint64(st.Dev), st.Ino}
	s.mu.Lock()
	if s.known[key] {
		s.mu.Unlock()
		return
	}
	if _, bad := s.bad[key]; bad {
		s.bad[key] = time.Now() // still there
		s.mu.Unlock()
		return
	}
	if o, ok := s.orphans[key]; ok {
		// Found again inside a process's root, or for a pid the uprobes
		// just saw (and not another process's by now): that process owns it.
		owner := o.e.pid
		if c.hostPID != 0 {
			owner = c.hostPID
		}
		if ((c.hostPID != 0 && o.e.start == c.start) || (c.seen && !s.reused(o.e.pid, o.e.start))) && s.samePIDNS(o.e, owner) {
			delete(s.orphans, key)
			if c.hostPID != 0 {
				o.e.pid = c.hostPID
			}
			o.e.sure = true
			if !s.alive(o.e.pid, o.e.start) {
				o.e.dead.Store(true)
			}
			s.known[key] = true
			s.pending = append(s.pending, o.e)
		}
		s.mu.Unlock()
		return
	}
	full := len(s.known)+len(s.orphans) >= s.cfg.MaxRings
	if full && !s.fullLog {
		s.log.Warn("devrt: max_rings reached; further rings wait", zap.Int("max_rings", s.cfg.MaxRings))
	}
	s.fullLog = full
	s.mu.Unlock()
	if full {
		return
	}

	e, err := s.open(c, key)
	if err == nil {
		e.found = found
	}
	if err == nil && c.hostPID != 0 && (e.start != c.start || !s.samePIDNS(e, c.hostPID)) {
		// Another process's of the same pid in its own namespace (another
		// container sharing the directory, or one that has ended): not
		// this one's. Its own process, or the host's scan, takes it. The
		// start time (clock ticks) can agree by chance; the pid
		// namespace, where the header names it, cannot.
		_ = e.ring.Close()
		_ = unix.Close(e.dirfd)
		return
	}
	switch {
	case errors.Is(err, devring.ErrNotReady):
		s.mu.Lock()
		first, ok := s.notReady[key]
		if !ok {
			s.notReady[key] = time.Now()
		} else if time.Since(first) > notReadyGrace {
			delete(s.notReady, key)
			s.rejectLocked(key, c.path, err)
		}
		s.mu.Unlock()
		return
	case errors.Is(err, devring.ErrInvalid):
		s.mu.Lock()
		delete(s.notReady, key)
		s.rejectLocked(key, c.path, err)
		s.mu.Unlock()
		return
	case err != nil:
		return // gone meanwhile, or not ours to open
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.notReady, key)
	if s.known[key] || s.orphans[key] != nil { // opened meanwhile by the other goroutine
		_ = e.ring.Close()
		_ = unix.Close(e.dirfd)
		return
	}
	if c.hostPID == 0 && !s.samePIDNS(e, e.pid) {
		// The host process of the name's pid is in another pid namespace
		// than devrt was: a container's ring in a shared directory. An
		// orphan, for its own process's scan to claim (or removed).
		s.orphans[key] = &orphan{e: e, first: time.Now()}
		s.newOrphan = true
		return
	}
	if c.hostPID == 0 && !s.alive(e.pid, e.start) {
		if st, err := e.ring.Counters(); err == nil && st.State == devring.StateClosed && !s.reused(e.pid, e.start) {
			// devrt closed it at exit: whoever it was, drain it now. It
			// stands for its pid only when the uprobes just saw that pid
			// (their events of it may still be unread). Not when the pid
			// is another live process's: an orphan then.
			e.dead.Store(true)
			e.sure = c.seen
			s.known[key] = true
			s.pending = append(s.pending, e)
			return
		}
		// No live host process of that pid and start: a ring of a process
		// in another pid namespace sharing this directory (found again in
		// its root by the container scan), or of one that was killed.
		s.orphans[key] = &orphan{e: e, first: time.Now()}
		s.newOrphan = true
		return
	}
	if !s.alive(e.pid, e.start) {
		e.dead.Store(true)
	}
	e.sure = true
	s.known[key] = true
	s.pending = append(s.pending, e)
}

// samePIDNS reports whether ring e can be host process pid's: its header
// names devrt's pid namespace (0: an older devrt, or unknown), which must
// be pid's. A namespace that cannot be read (the process gone, no access)
// does not decide: the start time does.
func (s *Source) samePIDNS(e *entry, pid uint32) bool {
	if e.pidns == 0 {
		return true
	}
	ns, err := nsfs.PIDNS(s.opts.ProcRoot, int(pid))
	return err != nil || ns == e.pidns
}

// open maps the ring and checks it belongs where it was found.
func (s *Source) open(c candidate, key fileKey) (*entry, error) {
	f, err := openRingFile(c.dirfd, c.name)
	if err != nil {
		return nil, err
	}
	r, err := devring.FromFile(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	h := r.Header()
	if namePID, _ := parseName(c.name); namePID != h.PID {
		_ = r.Close()
		return nil, errors.Join(devring.ErrInvalid, errors.New("the header's pid is not the file name's"))
	}
	if dev, ino := r.FileID(); dev != key.dev || ino != key.ino {
		_ = r.Close()
		return nil, errors.New("replaced while opened")
	}
	dirfd, err := unix.FcntlInt(uintptr(c.dirfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	pid := h.PID
	if c.hostPID != 0 {
		pid = c.hostPID
	}
	return &entry{ring: r, dirfd: dirfd, name: c.name, path: c.path, key: key, pid: pid,
		start: h.StartTime, created: h.CreatedNS, pidns: h.PIDNS}, nil
}

func (s *Source) rejectLocked(key fileKey, path string, err error) {
	s.bad[key] = time.Now()
	s.invalid++
	s.log.Warn("devrt: ignoring a ring file", zap.String("path", path), zap.Error(err))
}

func (s *Source) alive(pid uint32, start uint64) bool {
	return s.opts.Alive == nil || s.opts.Alive(int(pid), start)
}

// reused tells whether pid is now another live process's than the one that
// started at start.
func (s *Source) reused(pid uint32, start uint64) bool {
	return s.alive(pid, 0) && !s.alive(pid, start)
}

// checkLiveness marks the rings whose process has exited.
func (s *Source) checkLiveness() {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	for _, e := range live {
		if !e.dead.Load() && !s.alive(e.pid, e.start) {
			e.dead.Store(true)
		}
	}
}

// expireOrphans hands host rings nobody claimed for orphanGrace to the
// event goroutine, for a final drain (under the pid in the header, unless
// another process has it by now: then the records are counted, not handed
// over) and removal.
func (s *Source) expireOrphans(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, first := range s.notReady {
		if now.Sub(first) > 2*notReadyGrace { // gone before it was ready
			delete(s.notReady, key)
		}
	}
	if len(s.bad) > maxBad {
		// Forget the rejected files not seen by the last scans: gone. Those
		// still there stay remembered, however many (listing them costs
		// as much), so none is opened and logged again at every scan.
		keep := 4 * max(s.cfg.PollInterval, procScanInterval)
		for key, seen := range s.bad {
			if now.Sub(seen) > keep {
				delete(s.bad, key)
			}
		}
	}
	for key, o := range s.orphans {
		if now.Sub(o.first) < orphanGrace {
			continue
		}
		delete(s.orphans, key)
		o.e.final, o.e.orphan = true, true
		// Another process's by now, or a pid namespace the host
		// process of its pid is not in (a container's pid 1 that
		// exited unclaimed): counted, not handed over as that pid's.
		o.e.discard = s.reused(o.e.pid, o.e.start) || !s.samePIDNS(o.e, o.e.pid)
		s.stale++
		s.known[key] = true
		s.pending = append(s.pending, o.e)
	}
}
