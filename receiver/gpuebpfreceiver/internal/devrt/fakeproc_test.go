package devrt

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
)

// fakeProc is a /proc with pid 1 (the host's mount namespace) and
// processes in mount namespaces of their own that map devrt, each with a
// pid in its own namespace. Every root is the host's "/", so the ring
// directory is shared (a hostPath).
type fakeProc struct {
	t     *testing.T
	root  string
	start map[int]uint64 // host pid → start time
}

func newFakeProc(t *testing.T) *fakeProc {
	f := &fakeProc{t: t, root: t.TempDir(), start: map[int]uint64{}}
	f.add(1, 1, 1, "mnt:[1]")
	return f
}

// add makes process pid (nsPID in its own namespace) started at start.
func (f *fakeProc) add(pid int, nsPID uint32, start uint64, mnt string) {
	dir := filepath.Join(f.root, strconv.Itoa(pid))
	require.NoError(f.t, os.MkdirAll(filepath.Join(dir, "ns"), 0o755))
	require.NoError(f.t, os.Symlink(mnt, filepath.Join(dir, "ns", "mnt")))
	require.NoError(f.t, os.Symlink("/", filepath.Join(dir, "root")))
	require.NoError(f.t, os.Symlink("/usr/bin/app", filepath.Join(dir, "exe")))
	require.NoError(f.t, os.WriteFile(filepath.Join(dir, "status"),
		[]byte("Name:\tapp\nNSpid:\t"+strconv.Itoa(pid)+"\t"+u(nsPID)+"\n"), 0o644))
	require.NoError(f.t, os.WriteFile(filepath.Join(dir, "maps"),
		[]byte("7f0000000000-7f0000001000 r-xp 00000000 08:01 4242 /opt/lib/libgpuext-devrt.so\n"), 0o644))
	f.start[pid] = start
}

// pidNS gives process pid the pid namespace n (its ns/pid link).
func (f *fakeProc) pidNS(pid int, n uint64) {
	require.NoError(f.t, os.Symlink("pid:["+u64(n)+"]", filepath.Join(f.root, strconv.Itoa(pid), "ns", "pid")))
}

func (f *fakeProc) resolve(pid int) (procattr.Process, error) {
	s, ok := f.start[pid]
	if !ok {
		return procattr.Process{}, os.ErrNotExist
	}
	return procattr.Process{PID: pid, StartTime: s}, nil
}

// TestContainerRingOfAnotherProcess: two containers share the ring
// directory and each runs devrt as pid 1 of its own pid namespace, so both
// write gpuext-devrt-1-*.ring. Each container process's scan lists both
// files; only the ring whose header names the process's start time is its,
// whether the container scan finds the rings first or claims them from the
// host scan's orphans.
func TestContainerRingOfAnotherProcess(t *testing.T) {
	for _, tt := range []struct {
		name      string
		hostFirst bool
		orphans   int // after the host scan
	}{
		{"container scan first", false, 0},
		{"host scan first", true, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFakeProc(t)
			fp.add(500, 1, 7, "mnt:[2]")
			fp.add(600, 1, 8, "mnt:[3]")
			w := newWorldWith(t, nil, func(o *Options) {
				o.ProcRoot = fp.root
				o.Resolve = fp.resolve
			})
			w.alive(500, 7)
			w.alive(600, 8)
			mk := func(start, created uint64, seq uint32) string {
				path := filepath.Join(w.dir, "gpuext-devrt-1-"+u64(created)+".ring")
				p, err := devring.Create(path, devring.Header{Capacity: 64, PID: 1, StartTime: start, CreatedNS: created, Version: "test"})
				require.NoError(t, err)
				t.Cleanup(func() { p.Close() })
				write(t, p, seq)
				return path
			}
			pathA := mk(7, 5000, 1) // 500's
			pathB := mk(8, 6000, 2) // 600's
			if tt.hostFirst {
				w.poll()
			}
			require.Len(t, w.src.orphans, tt.orphans)
			w.src.scanContainers()
			w.src.Poll()
			require.ElementsMatch(t, []got{{500, 1}, {600, 2}}, w.take())
			require.ElementsMatch(t, []string{"attach 500 5000", "attach 600 6000"}, w.log)
			require.Empty(t, w.src.orphans)

			w.poll() // both processes live on: nothing retired
			w.src.scanContainers()
			w.src.Poll()
			require.Empty(t, w.take())
			require.Len(t, w.log, 2)
			require.True(t, exists(pathA))
			require.True(t, exists(pathB), "a live process's ring is not removed")
			require.Equal(t, 2, w.src.Rings())
		})
	}
}

// TestContainerRingSameStartTick: two containers share the ring directory,
// each runs devrt as pid 1 of its own pid namespace, and both started in
// the same clock tick, so the start time cannot tell their rings apart;
// the pid namespace each ring's header names does, whichever scan finds
// them first, also when the host's pid 1 started in that tick too (the
// host's scan leaves them orphans for their processes, not the host pid
// 1's).
func TestContainerRingSameStartTick(t *testing.T) {
	for _, tt := range []struct {
		name      string
		hostFirst bool
		hostTick  bool // the host's pid 1 started at 7 too
	}{
		{"container scan first", false, false},
		{"host scan first", true, false},
		{"host scan first, host pid 1 in the same tick", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFakeProc(t)
			fp.add(500, 1, 7, "mnt:[2]")
			fp.add(600, 1, 7, "mnt:[3]")
			fp.pidNS(500, 4026532101)
			fp.pidNS(600, 4026532202)
			w := newWorldWith(t, nil, func(o *Options) {
				o.ProcRoot = fp.root
				o.Resolve = fp.resolve
			})
			w.alive(500, 7)
			w.alive(600, 7)
			if tt.hostTick {
				fp.start[1] = 7
				fp.pidNS(1, 4026531836)
				w.alive(1, 7)
			}
			for _, r := range []struct {
				created uint64
				ns      uint64
				seq     uint32
			}{{5000, 4026532101, 1}, {6000, 4026532202, 2}} {
				p, err := devring.Create(filepath.Join(w.dir, "gpuext-devrt-1-"+u64(r.created)+".ring"),
					devring.Header{Capacity: 64, PID: 1, StartTime: 7, CreatedNS: r.created, Version: "test", PIDNS: r.ns})
				require.NoError(t, err)
				t.Cleanup(func() { p.Close() })
				write(t, p, r.seq)
			}
			if tt.hostFirst {
				w.poll()
				require.Len(t, w.src.orphans, 2)
				require.Empty(t, w.take(), "not the host pid 1's")
			}
			w.src.scanContainers()
			w.src.Poll()
			require.ElementsMatch(t, []got{{500, 1}, {600, 2}}, w.take())
			require.ElementsMatch(t, []string{"attach 500 5000", "attach 600 6000"}, w.log)
			require.Empty(t, w.src.orphans)
		})
	}
}
