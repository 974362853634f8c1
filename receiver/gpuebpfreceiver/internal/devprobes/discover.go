package devprobes

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procmaps"
)

// Where region files are found, and for whom they are read.
//
// devrt names a region gpuext-devmaps-<pid>-<created_ns>.maps with its
// getpid(), the pid in the process's own pid namespace, in its own
// directory: a container's /dev/shm, or a directory several containers
// share (a hostPath, where every container's pid 1 writes
// gpuext-devmaps-1-*). devrt maps the file before it gives it that name and
// until it removes it, so the process that made a region is the one whose
// /proc/<pid>/maps has the file (device and inode; where maps prints
// another device than stat, overlayfs and btrfs subvolumes, the inode at
// the path the file was listed at in the process's own view) and whose
// innermost NSpid is the name's pid; a forked child maps its parent's
// region too, but under another pid. With Options.ProcRoot a file is read
// only for such a process:
//
//   - in a configured directory (the collector's view), for the host
//     process of the name's pid if it is alive, is that pid in its own
//     namespace and maps the file;
//   - in the same directories inside the root of each process that maps
//     devrt and is in another mount namespace (scanned every second, a
//     bounded number of processes and maps files per poll), for that
//     process (its host pid) if the name's pid is its innermost NSpid and
//     it maps the file.
//
// A file no process is shown to own is never read. One in a configured
// directory (a region of a process that was killed before it was ever
// read, or one of a container that sees the directory elsewhere than at a
// configured path) is removed once it has stayed so for orphanGrace and two
// container scans. Directories inside a root are opened as if it were "/",
// files only if they are regular, never through a link (internal/nsfs).
// A file reached through several routes (a shared directory) is read once.

// Bounds of discovery.
const (
	devrtLibrary          = "libgpuext-devrt.so*" // as the devrt ring source's
	containerScanInterval = time.Second           // processes looked into again
	maxScanPIDs           = 1024                  // processes one poll looks at
	maxMapsReads          = 8                     // /proc/<pid>/maps files one poll reads
	maxListed             = 1 << 16               // entries one directory listing reads
	orphanGrace           = 30 * time.Second      // a configured directory's file no process owns
	maxRefused            = 1 << 14               // (file, pid) pairs remembered as not the pid's
	maxOrphans            = 1 << 12
	claimForget           = 10 * time.Second // an unread claimed file not seen since
)

type fileKey struct{ dev, ino uint64 }

func keyOf(st *unix.Stat_t) fileKey { return fileKey{uint64(st.Dev), st.Ino} }

// claim is a region file and the host process it is read for; its path
// names it in s.regions and s.bad.
type claim struct {
	path  string
	owner uint32
	seen  time.Time
}

// openFile is where an open region's file is: its directory (O_PATH, held
// so it is looked at and removed without a path a container could
// redirect), its name and identity.
type openFile struct {
	dirfd int
	name  string
	key   fileKey
}

// refusal: the file is not the pid's (it does not map it, or is not that
// pid in its own namespace, or has ended), as found in a configured
// directory or in the pid's root (inRoot: there the process's own view of
// the path is known). A process maps no region file published before it
// looked, so that stays true.
type refusal struct {
	key    fileKey
	pid    uint32
	inRoot bool
}

type orphan struct {
	first, seen time.Time
	round       uint64 // container scans finished when first seen
}

// containerProc is what discovery learnt of a process in another mount
// namespace: whether it maps devrt, and its pid in its own namespace.
type containerProc struct {
	procmaps.Verdict // does its program map devrt
	nsPID            uint32
}

// discovery is Poll's state for finding regions (under s.mu).
type discovery struct {
	ready    bool
	hostMnt  string
	hostDirs map[string]int // configured directory -> O_PATH fd
	claims   map[fileKey]*claim
	open     map[string]openFile // region path -> its file
	refused  map[refusal]bool
	orphans  map[fileKey]*orphan
	procs    map[int]*containerProc
	scanning bool
	pids     []int // the container scan under way
	next     int
	started  time.Time // when the last scan started
	rounds   uint64    // scans finished
	reads    int       // maps files this poll may still read
	isDevrt  func(string) bool
}

// procDefaults fills in Alive and Resolve from ProcRoot.
func procDefaults(o Options) Options {
	if o.ProcRoot != "" && (o.Alive == nil || o.Resolve == nil) {
		if r, err := procattr.NewResolver(o.ProcRoot); err == nil {
			if o.Alive == nil {
				o.Alive = func(pid uint32) bool { return r.Alive(int(pid), 0) }
			}
			if o.Resolve == nil {
				o.Resolve = r.Resolve
			}
		}
	}
	if o.Alive == nil {
		o.Alive = alive
	}
	return o
}

func (s *Source) discovery() *discovery {
	d := &s.disc
	if !d.ready {
		*d = discovery{ready: true, hostDirs: map[string]int{}, claims: map[fileKey]*claim{},
			open: map[string]openFile{}, refused: map[refusal]bool{}, orphans: map[fileKey]*orphan{},
			procs: map[int]*containerProc{}, isDevrt: procmaps.LibraryMatcher(devrtLibrary)}
		if s.opts.ProcRoot != "" {
			d.hostMnt = nsfs.HostMountNS(s.opts.ProcRoot)
		}
	}
	return d
}

// closeDiscovery closes every descriptor discovery holds (Shutdown).
func (s *Source) closeDiscovery() {
	d := &s.disc
	for _, o := range d.open {
		_ = unix.Close(o.dirfd)
	}
	for _, fd := range d.hostDirs {
		_ = unix.Close(fd)
	}
	*d = discovery{}
}

func isRegionName(name string) bool {
	_, ok := regionPID(name)
	return ok
}

func statAt(dirfd int, name string) (unix.Stat_t, bool) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return st, err == nil
}

// findRegions opens the region files not read yet whose process is known
// (Poll, under s.mu).
func (s *Source) findRegions() {
	d := s.discovery()
	now := s.opts.Now()
	d.reads = maxMapsReads
	for _, dir := range s.opts.Dirs {
		fd, ok := d.hostDirs[dir]
		if !ok {
			var err error
			if fd, err = nsfs.OpenDir("", dir); err != nil {
				continue // it may appear later
			}
			d.hostDirs[dir] = fd
		}
		names, _ := nsfs.ListNames(fd, maxListed, isRegionName)
		for _, n := range names {
			s.hostFile(fd, dir, n, now)
		}
	}
	if s.opts.ProcRoot != "" && s.opts.Resolve != nil {
		s.scanContainers(now)
	}
	for key, c := range d.claims {
		if s.regions[c.path] == nil && now.Sub(c.seen) > claimForget {
			delete(d.claims, key) // gone (or out of sight) without being read
		}
	}
	for key, o := range d.orphans {
		if now.Sub(o.seen) > claimForget {
			delete(d.orphans, key)
		}
	}
}

// hostFile considers a region file of a configured directory.
func (s *Source) hostFile(fd int, dir, name string, now time.Time) {
	d := &s.disc
	st, ok := statAt(fd, name)
	if !ok {
		return
	}
	key := keyOf(&st)
	if c := d.claims[key]; c != nil {
		s.retry(c, key, fd, true, name, &st, now)
		return
	}
	owner, _ := regionPID(name)
	if s.opts.ProcRoot != "" {
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return // nobody maps a link or a node
		}
		var decided bool
		if owner, decided = s.hostOwner(owner, key, dir, name); !decided {
			return // no maps file left to read in this poll
		}
		if owner == 0 {
			s.orphaned(fd, dir, name, key, now)
			return
		}
	}
	s.claim(key, fd, true, filepath.Join(dir, name), name, owner, &st, now)
}

// hostOwner returns pid if the host process pid made the file key: it
// runs, is pid in its own namespace and maps the file; else 0. Not
// decided when that needs a maps file and the poll has read its share.
func (s *Source) hostOwner(pid uint32, key fileKey, dir, name string) (owner uint32, decided bool) {
	d := &s.disc
	r := refusal{key, pid, false}
	if d.refused[r] {
		return 0, true
	}
	if !s.opts.Alive(pid) {
		d.refuse(r)
		return 0, true
	}
	if ns, err := nsfs.NSPID(s.opts.ProcRoot, int(pid)); err != nil || ns != pid {
		d.refuse(r)
		return 0, true
	}
	if d.reads == 0 {
		return 0, false
	}
	d.reads--
	// Its view of the directory is the collector's if it is in the host's
	// mount namespace.
	view := ""
	if mnt, err := nsfs.MountNS(s.opts.ProcRoot, int(pid)); err == nil && mnt == d.hostMnt {
		view = filepath.Join(dir, name)
	}
	if _, mapped, err := d.readMaps(s.opts.ProcRoot, int(pid)); err != nil || !mapped.has(key, view) {
		d.refuse(r)
		return 0, true
	}
	return pid, true
}

func (d *discovery) refuse(r refusal) {
	if len(d.refused) >= maxRefused {
		clear(d.refused) // asked again, at the cost of a maps file each
	}
	d.refused[r] = true
}

// regionMaps are the region files a process maps: by device and inode,
// and the inode at each path (its own view) it maps one from.
type regionMaps struct {
	keys  map[fileKey]bool
	paths map[string]uint64
}

// has tells whether the process maps the file key, listed at view in the
// process's own view of its directories ("" when that is not known). The
// device that /proc/<pid>/maps prints is not stat's on every filesystem
// (overlayfs: the layer's; btrfs: the filesystem's, not the subvolume's):
// then the same inode at the very path the file was listed at is taken.
func (m regionMaps) has(key fileKey, view string) bool {
	return m.keys[key] || view != "" && m.paths[view] == key.ino
}

// readMaps reads pid's maps: whether it maps devrt, and the region files
// it maps.
func (d *discovery) readMaps(procRoot string, pid int) (devrt bool, regions regionMaps, err error) {
	libs, err := procmaps.Scan(procRoot, pid, func(p string) bool { return d.isDevrt(p) || isRegionName(path.Base(p)) })
	if err != nil {
		return false, regionMaps{}, err
	}
	regions = regionMaps{keys: map[fileKey]bool{}, paths: map[string]uint64{}}
	for _, l := range libs {
		if isRegionName(path.Base(l.Path)) {
			regions.keys[fileKey{l.Dev, l.Inode}] = true
			regions.paths[l.Path] = l.Inode
		} else {
			devrt = true
		}
	}
	return devrt, regions, nil
}

// orphaned: no process owns the file of a configured directory. Never
// read; removed once it has stayed so for orphanGrace and two container
// scans (one started after it was seen).
func (s *Source) orphaned(fd int, dir, name string, key fileKey, now time.Time) {
	d := &s.disc
	o := d.orphans[key]
	if o == nil {
		if len(d.orphans) < maxOrphans {
			d.orphans[key] = &orphan{first: now, seen: now, round: d.rounds}
		}
		return
	}
	o.seen = now
	if now.Sub(o.first) < orphanGrace || d.rounds < o.round+2 {
		return
	}
	delete(d.orphans, key)
	if err := nsfs.RemoveIfSame(fd, name, key.dev, key.ino); err == nil {
		s.log.Info("device probe region of no running process removed", zap.String("path", filepath.Join(dir, name)))
	}
}

// scanContainers goes on with the scan of processes in other mount
// namespaces, a new one every containerScanInterval.
func (s *Source) scanContainers(now time.Time) {
	d := &s.disc
	if !d.scanning {
		if d.rounds > 0 && now.Sub(d.started) < containerScanInterval {
			return
		}
		pids, err := procmaps.ListPIDs(s.opts.ProcRoot)
		if err != nil {
			return
		}
		d.scanning, d.pids, d.next, d.started = true, pids, 0, now
	}
	for n := 0; d.next < len(d.pids); n++ {
		if n == maxScanPIDs || !s.scanProcess(d.pids[d.next], now) {
			return // the rest at the next poll
		}
		d.next++
	}
	listed := make(map[int]bool, len(d.pids))
	for _, pid := range d.pids {
		listed[pid] = true
	}
	for pid := range d.procs {
		if !listed[pid] {
			delete(d.procs, pid)
		}
	}
	d.scanning, d.pids = false, nil
	d.rounds++
}

// found is a region file in a process's root.
type found struct {
	fd        int
	dir, name string
	key       fileKey
	st        unix.Stat_t
}

// scanProcess looks for the regions of pid, if it is in another mount
// namespace and maps devrt, in its root; false when the poll has read its
// share of maps files (pid is looked at again at the next poll).
func (s *Source) scanProcess(pid int, now time.Time) bool {
	d := &s.disc
	procRoot := s.opts.ProcRoot
	if mnt, err := nsfs.MountNS(procRoot, pid); err != nil || mnt == d.hostMnt {
		return true // the host's: its files are in the configured directories
	}
	info, err := s.opts.Resolve(pid)
	if err != nil {
		return true
	}
	exe, _ := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "exe"))
	cp := d.procs[pid]
	var mapped regionMaps // read before the directories were listed
	var before *procmaps.Verdict
	if cp != nil {
		before = &cp.Verdict
	}
	if before.Stale(info.StartTime, exe) {
		if d.reads == 0 {
			return false
		}
		d.reads--
		devrt, m, err := d.readMaps(procRoot, pid)
		cp = &containerProc{Verdict: before.Read(info.StartTime, exe, err == nil && devrt)}
		if cp.Maps {
			mapped = m
			cp.nsPID, _ = nsfs.NSPID(procRoot, pid)
		}
		d.procs[pid] = cp
	}
	if !cp.Maps || cp.nsPID == 0 {
		return true
	}
	root := filepath.Join(procRoot, strconv.Itoa(pid), "root")
	var todo []found
	for _, dir := range s.opts.Dirs {
		fd, err := nsfs.OpenDir(root, dir)
		if err != nil {
			continue
		}
		defer unix.Close(fd)
		names, _ := nsfs.ListNames(fd, maxListed, func(n string) bool {
			p, ok := regionPID(n)
			return ok && p == cp.nsPID
		})
		for _, n := range names {
			st, ok := statAt(fd, n)
			if !ok || st.Mode&unix.S_IFMT != unix.S_IFREG {
				continue // nobody maps a link or a node
			}
			key := keyOf(&st)
			if c := d.claims[key]; c != nil {
				s.retry(c, key, fd, false, n, &st, now)
			} else if !d.refused[refusal{key, uint32(pid), true}] {
				todo = append(todo, found{fd, dir, n, key, st})
			}
		}
	}
	if len(todo) == 0 {
		return true
	}
	early := mapped.keys != nil
	if !early {
		if d.reads == 0 {
			return false
		}
		d.reads--
		if _, mapped, err = d.readMaps(procRoot, pid); err != nil {
			return true
		}
	}
	for i := range todo {
		f := &todo[i]
		switch {
		case mapped.has(f.key, filepath.Join(f.dir, f.name)):
			s.claim(f.key, f.fd, false, filepath.Join(root, f.dir, f.name), f.name, uint32(pid), &f.st, now)
		case !early:
			// Maps read after the listing: a file published since
			// then was mapped before it (its name comes last).
			d.refuse(refusal{f.key, uint32(pid), true})
		}
	}
	return true
}

// claim makes the file key owner's and tries to open it.
func (s *Source) claim(key fileKey, fd int, host bool, path, name string, owner uint32, st *unix.Stat_t, now time.Time) {
	d := &s.disc
	c := &claim{path: path, owner: owner}
	d.claims[key] = c
	delete(d.orphans, key)
	s.retry(c, key, fd, host, name, st, now)
}

// retry opens a claimed file not read yet (found again through the
// directory fd); one given up is removed once its process has gone,
// through a configured directory (nobody else removes it).
func (s *Source) retry(c *claim, key fileKey, fd int, host bool, name string, st *unix.Stat_t, now time.Time) {
	c.seen = now
	if s.regions[c.path] != nil {
		return
	}
	if s.bad[c.path] {
		if host && !s.opts.Alive(c.owner) {
			_ = nsfs.RemoveIfSame(fd, name, key.dev, key.ino)
			delete(s.bad, c.path)
			delete(s.disc.claims, key)
		}
		return
	}
	if len(s.regions) >= MaxRegions {
		return
	}
	f, err := nsfs.OpenRegular(fd, name)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) { // else unloaded between the listing and the open
			s.giveUp(c.path, err)
		}
		return
	}
	defer f.Close()
	var fst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &fst); err != nil || keyOf(&fst) != key {
		return // replaced since it was listed: the next poll
	}
	r, err := proberegion.FromFile(f, c.path, s.set.Layout())
	if err != nil {
		if errors.Is(err, proberegion.ErrShort) && now.Sub(time.Unix(st.Mtim.Unix())) < sizeGrace && s.opts.Alive(c.owner) {
			return // devrt is still sizing it: next poll
		}
		s.giveUp(c.path, err)
		return
	}
	dfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		_ = r.Close()
		return
	}
	s.disc.open[c.path] = openFile{dirfd: dfd, name: name, key: key}
	dev, ord := s.regionDevice(f, fst.Size, c.path)
	s.regions[c.path] = &region{r: r, tr: proberegion.NewTracker(), pid: c.owner, dev: dev, ord: ord,
		drops: map[string]uint64{}}
	p := s.proc(c.owner)
	p.open[ord]++
	p.devs[ord] = dev
	s.log.Debug("device probe region opened", zap.Uint32("pid", c.owner), zap.String("path", c.path),
		zap.Int32("device", ord), zap.String("hw.id", dev))
}

// regionDevice is the hw.id of the GPU devrt's record at the end of the
// region file names, or "" (no record, or one without a UUID), and the
// GPU's ordinal in the process, or -1 (no record). A broken record costs
// only the names: the region is read all the same.
func (s *Source) regionDevice(f *os.File, size int64, path string) (string, int32) {
	d, ok, err := devrtinject.ReadDeviceInfo(f, size)
	if err != nil {
		s.log.Warn("device probe region: its device record is unreadable; its data names no GPU",
			zap.String("path", path), zap.Error(err))
		return "", -1
	}
	if !ok {
		return "", -1
	}
	return d.HWID(), d.Device
}

// regionGone tells whether the region at path lost its file (devrt
// removed it: the module was unloaded, or the process ended) or another
// file has its name.
func (s *Source) regionGone(path string) bool {
	o, ok := s.disc.open[path]
	if !ok { // not opened by discovery (tests)
		_, err := os.Lstat(path)
		return err != nil
	}
	st, ok := statAt(o.dirfd, o.name)
	return !ok || keyOf(&st) != o.key
}

// release lets go of the file of a region just closed, removing it first
// if remove (its process ended without unloading the module). A broken
// one stays claimed, so it is not opened again.
func (s *Source) release(path string, remove, broken bool) {
	d := &s.disc
	o, ok := d.open[path]
	if !ok {
		if remove {
			_ = os.Remove(path)
		}
		return
	}
	if remove {
		_ = nsfs.RemoveIfSame(o.dirfd, o.name, o.key.dev, o.key.ino)
	}
	_ = unix.Close(o.dirfd)
	delete(d.open, path)
	if !broken {
		delete(d.claims, o.key)
	}
}
