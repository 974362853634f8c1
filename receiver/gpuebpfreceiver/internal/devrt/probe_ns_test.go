package devrt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procmaps"
)

// These cover Probe where the uprobes' first event of a process is read
// late, while the process exits: its /proc/<pid>/maps is empty by then
// (the kernel releases the memory before the namespaces), or was read and
// cached before the loader mapped devrt. Probe must find the ring all the
// same: a process probed once is not probed again, so a ring it misses
// leaves every uprobe event of the process reported beside devrt's record
// of the same call (TestEndToEndDevrtWithUprobes/copies: 40 spans for 20).

// exiting empties pid's maps, as while it exits.
func (f *fakeProc) exiting(pid int) {
	require.NoError(f.t, os.WriteFile(filepath.Join(f.root, u(uint32(pid)), "maps"), nil, 0o644))
}

// TestProbeHostProcessWithPID1Hidden: pid 1's mount namespace cannot be
// read (a sandbox; the CI machine's pid 1 is not ptrace-readable). With a
// proc that is not the collector's own (this fake one) nothing stands for
// the host's namespace: the process, exiting (its maps empty), is looked
// for under its root, and found (nsfs.HostMountNS falls back to the
// collector's namespace only for its own /proc).
func TestProbeHostProcessWithPID1Hidden(t *testing.T) {
	fp := newFakeProc(t)
	require.NoError(t, os.Remove(filepath.Join(fp.root, "1", "ns", "mnt")))
	require.NoError(t, os.MkdirAll(filepath.Join(fp.root, "self", "ns"), 0o755))
	require.NoError(t, os.Symlink("mnt:[1]", filepath.Join(fp.root, "self", "ns", "mnt")))
	fp.add(100, 100, 7, "mnt:[1]") // the collector's namespace
	fp.exiting(100)
	w := newWorldWith(t, nil, func(o *Options) {
		o.ProcRoot = fp.root
		o.Resolve = fp.resolve
	})
	require.Equal(t, "", w.src.hostMnt)
	w.alive(100, 7)
	p, _ := w.ring(100, 5000)
	write(t, p, 1)
	w.src.Probe(100)
	require.Equal(t, []string{"attach 100 5000"}, w.log, "its calls are devrt's: the uprobes' are dropped")
	w.src.Poll()
	require.Equal(t, []got{{100, 1}}, w.take())
}

// containerWithRing is a fake /proc with container process 500 (pid 1 in
// its namespace, started at 7, mapping devrt) and its ring, created at
// 5000, in the ring directory, and a world reading them.
func containerWithRing(t *testing.T) (*fakeProc, *world, *devring.Producer) {
	fp := newFakeProc(t)
	fp.add(500, 1, 7, "mnt:[2]")
	w := newWorldWith(t, nil, func(o *Options) {
		o.ProcRoot = fp.root
		o.Resolve = fp.resolve
	})
	w.alive(500, 7)
	p, err := devring.Create(filepath.Join(w.dir, "gpuext-devrt-1-5000.ring"),
		devring.Header{Capacity: 64, PID: 1, StartTime: 7, CreatedNS: 5000, Version: "test"})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return fp, w, p
}

// TestProbeContainerProcessMapsGone: a container process's maps no longer
// name devrt (it is exiting), or were cached before devrt was mapped; the
// uprobes saw it call the driver, so Probe lists its root's directories.
func TestProbeContainerProcessMapsGone(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(fp *fakeProc, w *world)
	}{
		{"exiting", func(fp *fakeProc, _ *world) { fp.exiting(500) }},
		{"maps unreadable", func(fp *fakeProc, _ *world) {
			require.NoError(t, os.Remove(filepath.Join(fp.root, "500", "maps")))
		}},
		{"cached before devrt was mapped", func(fp *fakeProc, w *world) {
			fp.exiting(500) // no devrt yet: the scan caches that
			w.src.scanContainers()
			require.Zero(t, w.src.Rings())
			require.NoError(t, os.WriteFile(filepath.Join(fp.root, "500", "maps"),
				[]byte("7f0000000000-7f0000001000 r-xp 00000000 08:01 4242 /opt/lib/libgpuext-devrt.so\n"), 0o644))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fp, w, p := containerWithRing(t)
			write(t, p, 1)
			tt.setup(fp, w)
			w.src.Probe(500)
			require.Equal(t, []string{"attach 500 5000"}, w.log)
			w.src.Poll()
			require.Equal(t, []got{{500, 1}}, w.take(), "read under the host pid")
		})
	}
}

// TestScanContainersMapsLate: a scan that reads a container process's maps
// before the loader mapped devrt (between its execve and LD_PRELOAD) finds
// no ring; the next scan reads them again and finds it. After
// procmaps.NegativeReads scans without devrt the answer is kept: maps
// that name devrt later are not read.
func TestScanContainersMapsLate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		misses int // scans before devrt shows in the maps
		want   int // rings after the scan that follows
	}{
		{"mapped before the first scan", 0, 1},
		{"mapped after one scan", 1, 1},
		{"mapped after procmaps.NegativeReads scans", procmaps.NegativeReads, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fp, w, _ := containerWithRing(t)
			maps := filepath.Join(fp.root, "500", "maps")
			devrtMaps, err := os.ReadFile(maps)
			require.NoError(t, err)
			fp.exiting(500) // maps without devrt
			for range tt.misses {
				w.src.scanContainers()
				w.src.Poll()
				require.Zero(t, w.src.Rings())
			}
			require.NoError(t, os.WriteFile(maps, devrtMaps, 0o644))
			w.src.scanContainers()
			w.src.Poll()
			require.Equal(t, tt.want, w.src.Rings())
		})
	}
}

// TestProbeContainerProcessWithoutDevrt: a live container process whose
// maps do not name devrt gets no ring, though a ring of its pid in its
// namespace (another container's pid 1 in a shared directory, started in
// the same clock tick) is there.
func TestProbeContainerProcessWithoutDevrt(t *testing.T) {
	fp, w, p := containerWithRing(t)
	write(t, p, 1)
	require.NoError(t, os.WriteFile(filepath.Join(fp.root, "500", "maps"),
		[]byte("55d000000000-55d000001000 r-xp 00000000 08:01 77 /usr/bin/app\n"), 0o644))
	w.src.Probe(500)
	require.Empty(t, w.log)
	w.src.Poll()
	require.Empty(t, w.take())
}
