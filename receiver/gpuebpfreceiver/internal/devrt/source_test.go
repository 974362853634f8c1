package devrt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
)

// world is a source over a temporary directory, with processes that are
// alive as the test says.
type world struct {
	t    *testing.T
	dir  string
	src  *Source
	mu   sync.Mutex
	live map[uint32]uint64 // pid → start time of live processes
	recs []got
	log  []string // Attached/Detached calls
	now  uint64
}

type got struct {
	pid uint32
	seq uint32
}

func newWorld(t *testing.T, mutate func(*Config)) *world {
	return newWorldWith(t, mutate, nil)
}

// newWorldWith is newWorld with Options changed by mutateOpts.
func newWorldWith(t *testing.T, mutate func(*Config), mutateOpts func(*Options)) *world {
	w := &world{t: t, dir: t.TempDir(), live: map[uint32]uint64{}, now: 1_000_000}
	cfg := NewDefaultConfig()
	cfg.Directories = []string{w.dir}
	cfg.PollInterval = 10 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	require.NoError(t, cfg.Validate())
	opts := Options{
		ProcRoot: "/proc",
		Handle: func(pid uint32, rec []byte) {
			w.recs = append(w.recs, got{pid, binary.LittleEndian.Uint32(rec)})
		},
		Alive: func(pid int, start uint64) bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			s, ok := w.live[uint32(pid)]
			return ok && (start == 0 || s == start)
		},
		Attached: func(pid uint32, created uint64) { w.log = append(w.log, "attach "+u(pid)+" "+u64(created)) },
		Detached: func(pid uint32, until uint64) {
			at := u64(until)
			if until == Forever {
				at = "forever"
			}
			w.log = append(w.log, "detach "+u(pid)+" "+at)
		},
		Now: func() uint64 { return w.now },
	}
	if mutateOpts != nil {
		mutateOpts(&opts)
	}
	w.src = New(cfg, opts)
	t.Cleanup(w.src.Shutdown)
	return w
}

func u(v uint32) string   { return strconv.FormatUint(uint64(v), 10) }
func u64(v uint64) string { return strconv.FormatUint(v, 10) }

func (w *world) alive(pid uint32, start uint64) {
	w.mu.Lock()
	w.live[pid] = start
	w.mu.Unlock()
}

func (w *world) kill(pid uint32) {
	w.mu.Lock()
	delete(w.live, pid)
	w.mu.Unlock()
}

// ring makes the ring of process pid (start time 7) created at created.
func (w *world) ring(pid uint32, created uint64) (*devring.Producer, string) {
	path := filepath.Join(w.dir, "gpuext-devrt-"+u(pid)+"-"+u64(created)+".ring")
	p, err := devring.Create(path, devring.Header{Capacity: 64, PID: pid, StartTime: 7, CreatedNS: created, Version: "test"})
	require.NoError(w.t, err)
	w.t.Cleanup(func() { p.Close() })
	return p, path
}

func write(t *testing.T, p *devring.Producer, seqs ...uint32) {
	for _, s := range seqs {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint32(b, s)
		require.True(t, p.Write(b))
	}
}

// poll runs a discovery round and a drain, as the two goroutines would.
func (w *world) poll() {
	w.src.scanHostDirs()
	w.src.checkLiveness()
	w.src.Poll()
}

func (w *world) take() []got { r := w.recs; w.recs = nil; return r }

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// openRing opens a ring as devrt would see it, to read the control page.
func openRing(t *testing.T, path string) *devring.Ring {
	r, err := devring.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

func TestSourceReadsRings(t *testing.T) {
	w := newWorld(t, func(c *Config) {
		c.Classes = []string{"launch", "exec"}
		c.SampleEvery = 8
		c.SampleMinInterval = 250 * time.Microsecond
	})
	w.alive(100, 7)
	w.alive(200, 7)
	p1, path1 := w.ring(100, 5000)
	p2, _ := w.ring(200, 6000)
	write(t, p1, 1, 2, 3)
	write(t, p2, 10)
	w.poll()
	require.ElementsMatch(t, []got{{100, 1}, {100, 2}, {100, 3}, {200, 10}}, w.take())
	require.ElementsMatch(t, []string{"attach 100 5000", "attach 200 6000"}, w.log)

	ctl, gen, hb, err := openRing(t, path1).ReadControl()
	require.NoError(t, err)
	require.Equal(t, devring.Control{Classes: devring.ClassLaunch | devring.ClassExec, SampleEvery: 8, SampleGapUS: 250,
		ConsumerPID: uint32(os.Getpid())}, ctl)
	require.Equal(t, uint32(2), gen)
	require.Equal(t, uint64(1_000_000), hb)

	w.now = 2_000_000
	write(t, p1, 4)
	w.poll()
	require.Equal(t, []got{{100, 4}}, w.take())
	_, gen, hb, _ = openRing(t, path1).ReadControl()
	require.Equal(t, uint64(2_000_000), hb, "a heartbeat at each drain")
	require.Equal(t, uint32(2), gen, "the configuration is written once")
	require.Equal(t, 2, w.src.Rings())
	require.Equal(t, Stats{Active: 2}, w.src.Stats())
}

func TestSourceRetiresExitedProcess(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	p, path := w.ring(100, 5000)
	p.AddDrops(devring.DropFull, 3)
	write(t, p, 1)
	w.poll()
	write(t, p, 2, 3) // written just before the process died
	w.kill(100)
	w.poll()
	require.Equal(t, []got{{100, 1}, {100, 2}, {100, 3}}, w.take(), "the final drain loses nothing")
	require.False(t, exists(path), "removed")
	require.Equal(t, []string{"attach 100 5000", "detach 100 forever"}, w.log)
	require.Equal(t, Stats{Full: 3}, w.src.Stats(), "a removed ring's drops still count")
	w.poll()
	require.Zero(t, w.src.Rings())
}

func TestSourceRetiresAStartTimeMismatch(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	p, path := w.ring(100, 5000)
	write(t, p, 1)
	w.poll()
	w.alive(100, 8) // the pid now belongs to another process
	w.poll()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.False(t, exists(path))
}

// TestSourceClosedRingWaitsForExit: devrt closes its ring at exit; the
// ring is read until the process has gone, then removed.
func TestSourceClosedRingWaitsForExit(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	p, path := w.ring(100, 5000)
	write(t, p, 1)
	p.SetState(devring.StateClosed, 0)
	w.poll()
	w.poll()
	require.True(t, exists(path), "the process still runs its exit path")
	require.Equal(t, Stats{Closed: 1}, w.src.Stats())
	write(t, p, 2)
	w.kill(100)
	w.poll()
	require.Equal(t, []got{{100, 1}, {100, 2}}, w.take())
	require.False(t, exists(path))
	require.Equal(t, []string{"attach 100 5000", "detach 100 forever"}, w.log)
}

// TestSourceNewerRingReplacesOlder: a process that exec'd made a new ring
// under the same pid; the old one is drained a last time and removed.
func TestSourceNewerRingReplacesOlder(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	old, oldPath := w.ring(100, 5000)
	write(t, old, 1)
	w.poll()
	write(t, old, 2)
	young, youngPath := w.ring(100, 9000)
	write(t, young, 3)
	w.poll()
	require.Equal(t, []got{{100, 1}, {100, 2}, {100, 3}}, w.take())
	require.False(t, exists(oldPath))
	require.True(t, exists(youngPath))
	require.Equal(t, []string{"attach 100 5000", "attach 100 9000"}, w.log)
}

func TestSourceExec(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	p, path := w.ring(100, 5000)
	w.poll()
	write(t, p, 1)
	w.src.Exec(100, 4000) // an exec before the ring: nothing to do
	require.True(t, exists(path))
	w.src.Exec(100, 6000)
	require.Equal(t, []got{{100, 1}}, w.take())
	require.False(t, exists(path))
	require.Equal(t, []string{"attach 100 5000", "detach 100 6000"}, w.log, "covered until the exec")
	w.src.Exec(300, 1) // not a devrt process
}

func TestSourceRejectsInvalidFilesOnce(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(5, 7)
	garbage := filepath.Join(w.dir, "gpuext-devrt-5-1.ring")
	mem := make([]byte, 3*devring.PageSize)
	binary.LittleEndian.PutUint64(mem, 0xdeadbeef)
	require.NoError(t, os.WriteFile(garbage, mem, 0o600))
	// A valid ring under another pid's name.
	_, wrongName := w.ring(6, 1)
	require.NoError(t, os.Rename(wrongName, filepath.Join(w.dir, "gpuext-devrt-5-2.ring")))
	// Not ring names: never opened.
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "gpuext-devrt-x-1.ring"), mem, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(w.dir, "other"), mem, 0o600))
	// A link: not followed.
	_, target := w.ring(7, 1)
	require.NoError(t, os.Rename(target, filepath.Join(t.TempDir(), "elsewhere")))
	require.NoError(t, os.Symlink(filepath.Join(w.dir, "elsewhere"), filepath.Join(w.dir, "gpuext-devrt-7-1.ring")))
	for i := 0; i < 3; i++ {
		w.poll()
	}
	require.Equal(t, Stats{Invalid: 2}, w.src.Stats())
	require.Zero(t, w.src.Rings())
	require.True(t, exists(garbage), "what is not a ring is not removed")
}

// TestSourceWaitsForHeader: a file devrt has created but not filled yet
// is tried again, not rejected.
func TestSourceWaitsForHeader(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	p, path := w.ring(100, 5000)
	write(t, p, 1)
	full, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, make([]byte, len(full)), 0o600)) // same inode, zeros
	w.poll()
	require.Zero(t, w.src.Rings())
	require.NoError(t, os.WriteFile(path, full, 0o600))
	w.poll()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.Equal(t, Stats{Active: 1}, w.src.Stats())
}

// TestSourceOrphan: a ring whose header names no live process is left
// alone for a grace period (a process in another pid namespace sharing
// the directory is found by the container scan), then drained once and
// removed.
func TestSourceOrphan(t *testing.T) {
	w := newWorld(t, nil)
	p, path := w.ring(100, 5000)
	write(t, p, 1)
	w.poll()
	require.Zero(t, w.src.Rings())
	require.Empty(t, w.take())
	w.src.expireOrphans(time.Now())
	w.src.Poll()
	require.Empty(t, w.take())
	w.src.expireOrphans(time.Now().Add(orphanGrace + time.Second))
	w.src.Poll()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.False(t, exists(path))
	require.Equal(t, Stats{Stale: 1}, w.src.Stats())
	require.Empty(t, w.log, "an orphan never stands for a live process")
}

func TestSourceAbandonsCorruptRing(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	p, path := w.ring(100, 5000)
	write(t, p, 1, 2, 3)
	// Break slot 1's sequence number.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], 77)
	_, err = f.WriteAt(b[:], devring.DataOffset+devring.SlotSize)
	require.NoError(t, err)
	f.Close()
	w.poll()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.False(t, exists(path), "abandoned and removed")
	require.Equal(t, Stats{Abandoned: 1, Corrupt: 2}, w.src.Stats())
	require.Equal(t, []string{"attach 100 5000", "detach 100 1000000"}, w.log, "covered until now")
}

func TestSourceMaxRings(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.MaxRings = 1 })
	w.alive(100, 7)
	w.alive(200, 7)
	p1, _ := w.ring(100, 5000)
	p2, _ := w.ring(200, 5000)
	write(t, p1, 1)
	write(t, p2, 2)
	w.poll()
	require.Len(t, w.take(), 1)
	require.Equal(t, 1, w.src.Rings())
	first := w.src.rings[0].pid
	w.kill(first)
	w.poll() // the first is retired
	w.poll() // the second is read
	require.Len(t, w.take(), 1)
	require.Equal(t, 1, w.src.Rings())
}

func TestSourceSilence(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	_, path := w.ring(100, 5000)
	w.poll()
	r := openRing(t, path)
	w.src.Silence(100)
	ctl, _, _, _ := r.ReadControl()
	require.Equal(t, devring.Control{ConsumerPID: uint32(os.Getpid())}, ctl)
	w.src.Unsilence(100)
	ctl, _, _, _ = r.ReadControl()
	require.Equal(t, uint32(devring.ClassAll), ctl.Classes)
	require.Equal(t, uint32(32), ctl.SampleEvery)
}

// TestSourceProbe: the first uprobe event of a process finds its ring at
// once, without waiting for discovery.
func TestSourceProbe(t *testing.T) {
	w := newWorld(t, nil)
	// This process's mount namespace is the "host" here (a test may run
	// outside pid 1's), so its ring is looked for in the directories.
	w.src.hostMnt, _ = nsfs.MountNS("/proc", os.Getpid())
	pid := uint32(os.Getpid())
	w.alive(pid, 7)
	p, _ := w.ring(pid, 5000)
	write(t, p, 1)
	w.src.Probe(pid)
	require.Equal(t, []string{"attach " + u(pid) + " 5000"}, w.log, "attached at once")
	require.Equal(t, 1, w.src.Rings())
	w.src.Probe(pid) // known: nothing more
	w.src.Poll()
	require.Equal(t, []got{{pid, 1}}, w.take())
}

func TestSourceShutdownLeavesFiles(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	p, path := w.ring(100, 5000)
	w.src.Start(t.Context())
	require.Eventually(t, func() bool {
		w.src.Poll()
		return w.src.Rings() == 1
	}, 2*time.Second, 5*time.Millisecond)
	write(t, p, 1)
	w.src.Shutdown()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.True(t, exists(path))
	ctl, _, _, _ := openRing(t, path).ReadControl()
	require.Zero(t, ctl.ConsumerPID, "nobody reads it now")
	w.src.Shutdown() // twice is fine
}

// TestSourceDisabledRingStopsCovering: devrt that turned itself off passes
// calls through unrecorded, so the uprobes must see them again: the pid is
// detached while the ring is still read (its drop counters count).
func TestSourceDisabledRingStopsCovering(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	p, path := w.ring(100, 5000)
	w.poll()
	p.SetState(devring.StateDisabled, 3)
	p.AddDrops(devring.DropDisabled, 12)
	w.poll()
	require.Equal(t, []string{"attach 100 5000", "detach 100 1000000"}, w.log)
	require.True(t, exists(path))
	require.Equal(t, Stats{Disabled: 12, DisabledRings: 1}, w.src.Stats())
	p.SetState(devring.StateActive, 0)
	w.poll()
	require.Equal(t, []string{"attach 100 5000", "detach 100 1000000", "attach 100 5000"}, w.log)

	// Already disabled when found: never attached.
	w.alive(200, 7)
	q, _ := w.ring(200, 6000)
	q.SetState(devring.StateDisabled, 1)
	w.poll()
	require.Equal(t, 2, w.src.Rings())
	require.Len(t, w.log, 3)
}

// TestSourceClosedRingOfExitedProcess: a process that lived shorter than a
// poll closed its ring at exit before discovery saw it: it is drained at
// once, not left for the orphan grace period.
func TestSourceClosedRingOfExitedProcess(t *testing.T) {
	w := newWorld(t, nil)
	p, path := w.ring(100, 5000)
	write(t, p, 1, 2)
	p.SetState(devring.StateClosed, 0)
	w.poll()
	require.Equal(t, []got{{100, 1}, {100, 2}}, w.take())
	require.False(t, exists(path))
	require.Equal(t, Stats{}, w.src.Stats())
	require.Empty(t, w.log)
}

// TestSourceProbeFindsExitedProcess: the uprobes' first events of a
// process are read after it exited; Probe still finds its closed ring, and
// it covers the process for good (the unread uprobe events are devrt's).
func TestSourceProbeFindsExitedProcess(t *testing.T) {
	w := newWorld(t, nil)
	p, path := w.ring(100, 5000)
	write(t, p, 1)
	p.SetState(devring.StateClosed, 0)
	w.src.Probe(100)
	require.Equal(t, []string{"attach 100 5000"}, w.log)
	w.src.Poll()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.False(t, exists(path))
	require.Equal(t, []string{"attach 100 5000", "detach 100 forever"}, w.log)
}

// TestSourceProbeAfterDiscovery: discovery found the closed ring of an
// exited process first (not taken to stand for its pid); the uprobes'
// first event of that pid, read late, makes it the pid's.
func TestSourceProbeAfterDiscovery(t *testing.T) {
	w := newWorld(t, nil)
	p, _ := w.ring(100, 5000)
	p.SetState(devring.StateClosed, 0)
	w.src.scanHostDirs()
	w.src.Probe(100)
	require.Equal(t, []string{"attach 100 5000"}, w.log)
	w.src.Poll()
	require.Equal(t, []string{"attach 100 5000", "detach 100 forever"}, w.log)
}

// TestSourceProbeAfterRetire: discovery found the closed ring of an exited
// process and the event goroutine drained and removed it before the
// uprobes' first event of that pid was read; Probe still makes the
// process devrt's for good (its unread uprobe events are duplicates).
// Once, within goneGrace, and not when the pid is another live process's.
func TestSourceProbeAfterRetire(t *testing.T) {
	w := newWorld(t, nil)
	p, path := w.ring(100, 5000)
	write(t, p, 1)
	p.SetState(devring.StateClosed, 0)
	w.poll()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.False(t, exists(path))
	require.Empty(t, w.log)
	w.src.Probe(100)
	require.Equal(t, []string{"attach 100 5000", "detach 100 forever"}, w.log)
	w.src.Probe(100)
	require.Len(t, w.log, 2, "claimed once")

	// Too late.
	p, _ = w.ring(101, 6000)
	p.SetState(devring.StateClosed, 0)
	w.poll()
	w.now += goneGrace
	w.src.Probe(101)
	require.Len(t, w.log, 2)

	// The pid is a new live process's: not the gone ring's.
	p, _ = w.ring(102, 7000)
	p.SetState(devring.StateClosed, 0)
	w.poll()
	w.alive(102, 99)
	w.src.Probe(102)
	require.Len(t, w.log, 2)
}

// TestSourceProbeMissedThenFound: a Probe found no ring of its pid (its
// files not readable then); the ring, found later with its process gone,
// stands for the pid all the same (its uprobe calls read since are
// devrt's), within goneGrace and not after an exec of the pid. When the
// pid is another live process's by then, the ring is an orphan, as
// without the Probe.
func TestSourceProbeMissedThenFound(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before func(w *world)
		recs   []got
		want   []string
	}{
		{"found later", func(*world) {}, []got{{100, 1}}, []string{"attach 100 5000", "detach 100 forever"}},
		{"too late", func(w *world) { w.now += goneGrace }, []got{{100, 1}}, nil},
		{"exec'd since", func(w *world) { w.src.Exec(100, 4000) }, []got{{100, 1}}, nil},
		{"the pid another live process's", func(w *world) { w.alive(100, 99) }, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, nil)
			w.src.Probe(100)
			require.Empty(t, w.log)
			tt.before(w)
			p, _ := w.ring(100, 5000)
			write(t, p, 1)
			p.SetState(devring.StateClosed, 0)
			w.poll()
			require.Equal(t, tt.recs, w.take())
			require.Equal(t, tt.want, w.log)
		})
	}
}

// TestSourceProbeMissedAfterExec: the pid exec'd, then a Probe of the new
// program found no ring; the old program's closed ring and the new one's,
// found together later, go each their way: the old one retired as the old
// program's, the new one standing for the pid. A ring made after the
// Probe was not what the probed call was reported by: not taken for it.
func TestSourceProbeMissedAfterExec(t *testing.T) {
	w := newWorld(t, nil)
	w.src.Exec(100, 4000)
	w.src.Probe(100)
	require.Empty(t, w.log)
	for _, r := range []struct {
		created uint64
		seq     uint32
	}{{3000, 1}, {5000, 2}} {
		p, _ := w.ring(100, r.created)
		write(t, p, r.seq)
		p.SetState(devring.StateClosed, 0)
	}
	w.poll()
	require.ElementsMatch(t, []got{{100, 1}, {100, 2}}, w.take())
	require.Equal(t, []string{"attach 100 5000", "detach 100 forever"}, w.log)

	w.src.Probe(101)
	p, _ := w.ring(101, w.now+1)
	write(t, p, 3)
	p.SetState(devring.StateClosed, 0)
	w.poll()
	require.Equal(t, []got{{101, 3}}, w.take())
	require.Len(t, w.log, 2, "made after the Probe: not 101's calls")
}

// TestSourceProbeClaimsOrphan: a killed process left its ring active; the
// uprobes' first event of its pid, read late, claims it from the orphans.
func TestSourceProbeClaimsOrphan(t *testing.T) {
	w := newWorld(t, nil)
	p, path := w.ring(100, 5000)
	write(t, p, 1)
	w.src.scanHostDirs()
	require.Len(t, w.src.orphans, 1)
	w.src.Probe(100)
	require.Empty(t, w.src.orphans)
	w.src.Poll()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.Equal(t, []string{"attach 100 5000", "detach 100 forever"}, w.log)
	require.False(t, exists(path))
	require.Equal(t, Stats{}, w.src.Stats(), "not stale")
}

func TestSourceHolding(t *testing.T) {
	w := newWorld(t, nil)
	w.alive(100, 7)
	w.ring(100, 5000)
	require.False(t, w.src.Holding(100))
	w.poll()
	require.True(t, w.src.Holding(100))
	w.kill(100)
	w.poll()
	require.False(t, w.src.Holding(100), "drained for the last time")
}

// TestSourcePidReusedBeforeRingFound: a process ended (killed: its ring
// still active; or exiting: closed) and its pid already runs another
// process when its ring is found. The uprobes' first event of that pid is
// the new process's, so it does not claim the ring, and the ring's records
// are not handed over under the new process's pid: they are counted.
// While the pid is free, the ring stands for it as before.
func TestSourcePidReusedBeforeRingFound(t *testing.T) {
	for _, tt := range []struct {
		name       string
		closed     bool
		newStart   uint64 // the pid's new owner; 0: none
		afterProbe []string
		recs       []got
		log        []string
		stats      Stats
	}{
		{"killed, pid free", false, 0, []string{"attach 100 5000"},
			[]got{{100, 1}}, []string{"attach 100 5000", "detach 100 forever"}, Stats{}},
		{"exited, pid free", true, 0, []string{"attach 100 5000"},
			[]got{{100, 1}}, []string{"attach 100 5000", "detach 100 forever"}, Stats{}},
		{"killed, pid reused", false, 8, nil, nil, nil, Stats{Stale: 1, Corrupt: 1}},
		{"exited, pid reused", true, 8, nil, nil, nil, Stats{Stale: 1, Corrupt: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, nil)
			p, path := w.ring(100, 5000) // start time 7
			write(t, p, 1)
			if tt.closed {
				p.SetState(devring.StateClosed, 0)
			}
			if tt.newStart != 0 {
				w.alive(100, tt.newStart)
			}
			w.src.scanHostDirs()
			w.src.Probe(100)
			require.Equal(t, tt.afterProbe, w.log)
			w.src.Poll()
			w.src.expireOrphans(time.Now().Add(orphanGrace + time.Second))
			w.src.Poll()
			require.Equal(t, tt.recs, w.take())
			require.Equal(t, tt.log, w.log)
			require.False(t, exists(path))
			require.Equal(t, tt.stats, w.src.Stats())
		})
	}
}

// TestSourceExecBeforeRingFound: a program made its ring and called execve
// before discovery saw the ring (the exec event is read first). The ring is
// the old program's: drained under the pid and removed, and it never
// covers the new program, which may not run devrt at all (its calls would
// be dropped as devrt's otherwise).
func TestSourceExecBeforeRingFound(t *testing.T) {
	for _, tt := range []struct {
		name     string
		newRing  bool // the new program runs devrt too
		recs     []got
		log      []string
		oldStays bool
	}{
		{"new program without devrt", false, []got{{100, 1}}, nil, false},
		{"new program with devrt", true, []got{{100, 1}, {100, 2}}, []string{"attach 100 9000"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, nil)
			w.alive(100, 7) // execve keeps the pid and the start time
			old, oldPath := w.ring(100, 5000)
			write(t, old, 1)
			w.src.Exec(100, 6000)
			if tt.newRing {
				young, _ := w.ring(100, 9000)
				write(t, young, 2)
			}
			w.poll()
			w.poll()
			require.ElementsMatch(t, tt.recs, w.take())
			require.Equal(t, tt.log, w.log)
			require.Equal(t, tt.oldStays, exists(oldPath))
		})
	}
}

// TestSourceWriterDiedMidRecord: a thread had claimed slots and not yet
// committed them when its process was killed (or exec'd); records other
// threads committed after them can never be read in order. The final
// drain takes what comes before the gap, and what is left between the
// consumer's position and the producers' head is counted as lost.
func TestSourceWriterDiedMidRecord(t *testing.T) {
	for _, tt := range []struct {
		name  string
		hole  int // the position never committed; -1: none
		recs  []got
		stats Stats
	}{
		{"clean", -1, []got{{100, 1}, {100, 2}, {100, 3}}, Stats{}},
		{"first record unfinished", 0, nil, Stats{Corrupt: 3}},
		{"second record unfinished", 1, []got{{100, 1}}, Stats{Corrupt: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, nil)
			w.alive(100, 7)
			p, path := w.ring(100, 5000)
			w.poll()
			write(t, p, 1, 2, 3)
			if tt.hole >= 0 {
				// Claimed (head moved past it), never committed: the slot's
				// sequence number still says free.
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				require.NoError(t, err)
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], uint64(tt.hole))
				_, err = f.WriteAt(b[:], int64(devring.DataOffset+tt.hole*devring.SlotSize))
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			w.kill(100)
			w.poll()
			require.Equal(t, tt.recs, w.take())
			require.False(t, exists(path))
			require.Zero(t, w.src.Rings())
			require.Equal(t, tt.stats, w.src.Stats())
		})
	}
}

// TestSourceManyInvalidFiles: more invalid ring files than are remembered
// at once (a program, or any user of /dev/shm, made them). Each is
// rejected, counted and logged once, not opened again at every scan;
// files gone are forgotten, so new ones are remembered too.
func TestSourceManyInvalidFiles(t *testing.T) {
	w := newWorld(t, nil)
	mk := func(from, to int) {
		for i := from; i < to; i++ {
			f, err := os.Create(filepath.Join(w.dir, "gpuext-devrt-9-"+strconv.Itoa(i)+".ring"))
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("notaring"), 0)
			require.NoError(t, err)
			require.NoError(t, f.Truncate(devring.DataOffset))
			require.NoError(t, f.Close())
		}
	}
	n := maxBad + maxBad/4
	for _, tt := range []struct {
		name    string
		step    func()
		invalid uint64
	}{
		{"first scan", func() { mk(0, n) }, uint64(n)},
		{"second scan", func() {}, uint64(n)},
		{"third scan", func() {}, uint64(n)},
		{"most removed, new ones made", func() {
			for i := 0; i < n-10; i++ {
				require.NoError(t, os.Remove(filepath.Join(w.dir, "gpuext-devrt-9-"+strconv.Itoa(i)+".ring")))
			}
			// An hour on: the scans saw the files still there, not the
			// others.
			w.src.mu.Lock()
			for k, seen := range w.src.bad {
				w.src.bad[k] = seen.Add(-time.Hour)
			}
			w.src.mu.Unlock()
			w.poll()
			w.src.expireOrphans(time.Now())
			require.Len(t, w.src.bad, 10)
			mk(n, n+maxBad-5)
		}, uint64(n + maxBad - 5)},
		{"and again", func() {}, uint64(n + maxBad - 5)},
	} {
		tt.step()
		w.poll()
		require.Equal(t, tt.invalid, w.src.Stats().Invalid, tt.name)
	}
	require.Len(t, w.src.bad, maxBad+5, "the files there now")
}

// TestSourceRingWaitsForReadUpTo: a ring found after the time the uprobes'
// ring buffer was read up to waits in Poll (its program's exec record may
// be unread); Probe of its pid takes it at once; then Poll takes the rest;
// a ring that has waited readWaitMax is taken though the buffer was not
// read that far.
func TestSourceRingWaitsForReadUpTo(t *testing.T) {
	var upTo uint64
	w := newWorldWith(t, nil, func(o *Options) { o.ReadUpTo = func() uint64 { return upTo } })
	require.Equal(t, uint64(250*time.Millisecond), w.src.waitMax, "2 x 10 ms, at least 250 ms")
	w.src.waitMax = uint64(time.Hour) // no test machine stalls that long
	w.alive(100, 7)
	w.alive(200, 7)
	p1, _ := w.ring(100, 5000)
	p2, _ := w.ring(200, 6000)
	write(t, p1, 1)
	write(t, p2, 2)
	w.poll()
	require.Empty(t, w.take(), "found after the ring buffer was read")
	require.Empty(t, w.log)
	w.src.Probe(200)
	w.src.Poll()
	require.Equal(t, []got{{200, 2}}, w.take(), "the uprobes' records of 200 are read: its ring is taken")
	upTo = monotonic()
	w.src.Poll()
	require.Equal(t, []got{{100, 1}}, w.take())
	require.Equal(t, []string{"attach 200 6000", "attach 100 5000"}, w.log)

	w.alive(300, 7)
	p3, _ := w.ring(300, 7000)
	write(t, p3, 3)
	w.poll()
	require.Empty(t, w.take(), "found after the ring buffer was read")
	w.src.waitMax = 0 // as if it had waited readWaitMax
	w.src.Poll()
	require.Equal(t, []got{{300, 3}}, w.take())
}

// TestSourceExecTakesOldRingsOnly: an exec record read while rings of its
// pid wait for ReadUpTo takes the old program's (made before the exec: to
// drain to the end and retire) at once; the new program's waits for the
// ring buffer to be read past when it was found, as any other.
func TestSourceExecTakesOldRingsOnly(t *testing.T) {
	var upTo uint64
	w := newWorldWith(t, nil, func(o *Options) { o.ReadUpTo = func() uint64 { return upTo } })
	w.src.waitMax = uint64(time.Hour)
	w.alive(100, 7)
	old, _ := w.ring(100, 5000)
	write(t, old, 1)
	young, _ := w.ring(100, 7000)
	write(t, young, 2)
	w.src.scanHostDirs()
	w.src.Exec(100, 6000)
	w.src.Poll()
	require.Equal(t, []got{{100, 1}}, w.take(), "the old program's ring, at once")
	upTo = monotonic()
	w.src.Poll()
	require.Equal(t, []got{{100, 2}}, w.take(), "the new program's, once the ring buffer was read")
}
