package devprobes

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/procmaps"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes/internal/metadata"
)

// fakeHost is a /proc (ProcRoot) holding the host's pid 1 and the
// processes a test adds, the configured region directory dir as the host
// sees it, and the roots of container processes. A process is alive while
// its stat file says so.
type fakeHost struct {
	t    *testing.T
	base string
	proc string
	dir  string // the configured directory: absolute, the host's
	now  time.Time
	size int64 // a region file's size
}

func newFakeHost(t *testing.T, size uint64) *fakeHost {
	base := t.TempDir()
	h := &fakeHost{t: t, base: base, proc: filepath.Join(base, "proc"), dir: filepath.Join(base, "shm"),
		now: wall, size: int64((size + 4095) &^ 4095)}
	require.NoError(t, os.MkdirAll(h.dir, 0o755))
	h.add(fakeProcess{pid: 1, nsPID: "1", mnt: "mnt:[1]", root: "/"})
	return h
}

// fakeProcess is one process of the fake /proc.
type fakeProcess struct {
	pid   int
	nsPID string // NSpid: the pids from the host's namespace in
	mnt   string
	root  string   // "/": the host's (a directory shared with it)
	devrt bool     // maps libgpuext-devrt.so
	maps  []string // region files it maps, as the host sees them
	// the device its maps file prints for them when not stat's ("00:3f":
	// overlayfs, btrfs), and the path when not the file's
	dev, path string
}

// root makes a container root whose region directory is its own.
func (h *fakeHost) root(name string) string {
	r := filepath.Join(h.base, "roots", name)
	require.NoError(h.t, os.MkdirAll(filepath.Join(r, h.dir), 0o755))
	return r
}

// region makes a region file (zeros: fresh headers) in dir.
func (h *fakeHost) region(dir, name string) string {
	p := filepath.Join(dir, name)
	require.NoError(h.t, os.WriteFile(p, nil, 0o600))
	require.NoError(h.t, os.Truncate(p, h.size))
	return p
}

func (h *fakeHost) add(p fakeProcess) {
	dir := filepath.Join(h.proc, strconv.Itoa(p.pid))
	require.NoError(h.t, os.MkdirAll(filepath.Join(dir, "ns"), 0o755))
	require.NoError(h.t, os.Symlink(p.mnt, filepath.Join(dir, "ns", "mnt")))
	require.NoError(h.t, os.Symlink(p.root, filepath.Join(dir, "root")))
	require.NoError(h.t, os.Symlink("/usr/bin/app", filepath.Join(dir, "exe")))
	require.NoError(h.t, os.WriteFile(filepath.Join(dir, "status"),
		[]byte("Name:\tapp\nNSpid:\t"+strings.ReplaceAll(p.nsPID, " ", "\t")+"\n"), 0o644))
	require.NoError(h.t, os.WriteFile(filepath.Join(dir, "stat"),
		fmt.Appendf(nil, "%d (app) S 1 %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", p.pid, p.pid, p.pid, 1000+p.pid), 0o644))
	require.NoError(h.t, os.WriteFile(filepath.Join(dir, "cgroup"), []byte("0::/\n"), 0o644))
	var maps strings.Builder
	if p.devrt {
		maps.WriteString("7f0000000000-7f0000001000 r-xp 00000000 08:01 4242 /opt/lib/libgpuext-devrt.so\n")
	}
	for i, f := range p.maps {
		var st unix.Stat_t
		require.NoError(h.t, unix.Stat(f, &st))
		shown := f // the path as the process sees it: inside its root
		if p.root != "/" {
			shown = strings.TrimPrefix(f, p.root)
		}
		if p.path != "" {
			shown = p.path
		}
		dev := fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev))
		if p.dev != "" {
			dev = p.dev
		}
		fmt.Fprintf(&maps, "7f10%08x-7f10%08x rw-s 00000000 %s %d %s\n", i<<24, i<<24+int(h.size), dev, st.Ino, shown)
	}
	require.NoError(h.t, os.WriteFile(filepath.Join(dir, "maps"), []byte(maps.String()), 0o644))
}

// exit ends process pid.
func (h *fakeHost) exit(pid int) {
	require.NoError(h.t, os.RemoveAll(filepath.Join(h.proc, strconv.Itoa(pid))))
}

func (h *fakeHost) source() *Source {
	cfg := NewDefaultConfig()
	cfg.Enabled = true
	s, err := New(cfg, Options{Dirs: []string{h.dir}, Settings: receivertest.NewNopSettings(metadata.Type), HostName: "node",
		ProcRoot: h.proc, Now: func() time.Time { return h.now },
		Monotonic: func() uint64 { return uint64(h.now.UnixNano() - wallMono) }})
	require.NoError(h.t, err)
	h.t.Cleanup(s.Shutdown)
	return s
}

// regions names each region read, "host <file>" or "root of <pid>
// <file>" (where it was found), with the pid it is read for.
func (h *fakeHost) regions(s *Source) map[string]uint32 {
	out := map[string]uint32{}
	for path, rg := range s.regions {
		where := "host"
		if rest, ok := strings.CutPrefix(path, h.proc+"/"); ok {
			where = "root of " + strings.SplitN(rest, "/", 2)[0]
		}
		out[where+" "+filepath.Base(path)] = rg.pid
	}
	return out
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestRegionAttribution: region files are read for the host process that
// made them, wherever they are found: in a container's own directory (seen
// through its root), in a directory several containers share (each
// container's pid 1 writes gpuext-devmaps-1-*), in the host's directory
// for the live host process of the name's pid that maps it; files nobody
// can be shown to own are not read for anyone.
func TestRegionAttribution(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(h *fakeHost)
		want  map[string]uint32
	}{
		{"in a container's own directory: its host pid", func(h *fakeHost) {
			r := h.root("a")
			f := h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-100.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{f}})
		}, map[string]uint32{"root of 500 gpuext-devmaps-1-100.maps": 500}},
		{"two containers share the directory, each as pid 1", func(h *fakeHost) {
			a := h.region(h.dir, "gpuext-devmaps-1-100.maps")
			b := h.region(h.dir, "gpuext-devmaps-1-200.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: "/", devrt: true, maps: []string{a}})
			h.add(fakeProcess{pid: 600, nsPID: "600 1", mnt: "mnt:[3]", root: "/", devrt: true, maps: []string{b}})
		}, map[string]uint32{"root of 500 gpuext-devmaps-1-100.maps": 500, "root of 600 gpuext-devmaps-1-200.maps": 600}},
		{"a forked child maps its parent's region: the parent's", func(h *fakeHost) {
			r := h.root("a")
			f := h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-100.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{f}})
			h.add(fakeProcess{pid: 501, nsPID: "501 2", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{f}})
		}, map[string]uint32{"root of 500 gpuext-devmaps-1-100.maps": 500}},
		{"host directory: the live host process that maps it", func(h *fakeHost) {
			f := h.region(h.dir, "gpuext-devmaps-4242-1.maps")
			h.add(fakeProcess{pid: 4242, nsPID: "4242", mnt: "mnt:[1]", root: "/", devrt: true, maps: []string{f}})
		}, map[string]uint32{"host gpuext-devmaps-4242-1.maps": 4242}},
		{"maps prints another device (overlayfs, btrfs): the inode at the path", func(h *fakeHost) {
			r := h.root("a")
			f := h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-100.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{f}, dev: "00:3f"})
			g := h.region(h.dir, "gpuext-devmaps-4242-1.maps")
			h.add(fakeProcess{pid: 4242, nsPID: "4242", mnt: "mnt:[1]", root: "/", devrt: true, maps: []string{g}, dev: "00:3f"})
		}, map[string]uint32{"root of 500 gpuext-devmaps-1-100.maps": 500, "host gpuext-devmaps-4242-1.maps": 4242}},
		{"another device and another path: not the file", func(h *fakeHost) {
			r := h.root("a")
			f := h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-100.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{f}, dev: "00:3f",
				path: "/elsewhere/gpuext-devmaps-1-100.maps"})
			g := h.region(h.dir, "gpuext-devmaps-4242-1.maps")
			h.add(fakeProcess{pid: 4242, nsPID: "4242", mnt: "mnt:[1]", root: "/", devrt: true, maps: []string{g}, dev: "00:3f",
				path: "/elsewhere/gpuext-devmaps-4242-1.maps"})
		}, map[string]uint32{}},
		{"another device, in another mount namespace: through its root", func(h *fakeHost) {
			// a process of the host's pid namespace in a container (the
			// directory shared): its path is not the collector's view, so
			// only its root's listing matches it
			g := h.region(h.dir, "gpuext-devmaps-4242-1.maps")
			h.add(fakeProcess{pid: 4242, nsPID: "4242", mnt: "mnt:[9]", root: "/", devrt: true, maps: []string{g}, dev: "00:3f"})
		}, map[string]uint32{"root of 4242 gpuext-devmaps-4242-1.maps": 4242}},
		{"host directory: no live process of the name's pid", func(h *fakeHost) {
			h.region(h.dir, "gpuext-devmaps-4343-1.maps")
		}, map[string]uint32{}},
		{"host directory: the name's pid is another namespace's", func(h *fakeHost) {
			// host pid 7 is pid 3 in its own namespace: a file it made says 3
			f := h.region(h.dir, "gpuext-devmaps-7-1.maps")
			h.add(fakeProcess{pid: 7, nsPID: "7 3", mnt: "mnt:[1]", root: "/", devrt: true, maps: []string{f}})
		}, map[string]uint32{}},
		{"host directory: the live pid does not map it (a container's pid 1)", func(h *fakeHost) {
			h.region(h.dir, "gpuext-devmaps-1-100.maps")
		}, map[string]uint32{}},
		{"a region file that is a symbolic link", func(h *fakeHost) {
			r := h.root("a")
			real := h.region(r, "real.maps")
			require.NoError(t, os.Symlink("/real.maps", filepath.Join(r, h.dir, "gpuext-devmaps-1-100.maps")))
			host := h.region(h.base, "host.maps")
			require.NoError(t, os.Symlink(host, filepath.Join(h.dir, "gpuext-devmaps-4242-1.maps")))
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{real}})
			h.add(fakeProcess{pid: 4242, nsPID: "4242", mnt: "mnt:[1]", root: "/", devrt: true, maps: []string{host}})
		}, map[string]uint32{}},
		{"a container's directory is a link out of its root", func(h *fakeHost) {
			// the container's <dir> links to the absolute path of a host
			// directory: inside its root that path is not there
			r := filepath.Join(h.base, "roots", "a")
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(r, h.dir)), 0o755))
			other := filepath.Join(h.base, "other")
			require.NoError(t, os.Mkdir(other, 0o755))
			require.NoError(t, os.Symlink(other, filepath.Join(r, h.dir)))
			f := h.region(other, "gpuext-devmaps-1-100.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{f}})
		}, map[string]uint32{}},
		{"a container process without devrt is not looked into", func(h *fakeHost) {
			r := h.root("a")
			f := h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-100.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, maps: []string{f}})
		}, map[string]uint32{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHost(t, 0)
			h.size = int64((h.source().Set().Layout().Size + 4095) &^ 4095)
			tt.setup(h)
			s := h.source()
			s.Poll()
			require.Equal(t, tt.want, h.regions(s))
			require.Zero(t, s.broken)
			s.Poll()
			require.Equal(t, tt.want, h.regions(s), "the same at the next poll")
		})
	}
}

// TestContainerRegionRetired: a container process's region is read under
// its host pid; once the process has ended it is read a last time and its
// file removed, through the container's root.
func TestContainerRegionRetired(t *testing.T) {
	h := newFakeHost(t, 0)
	s := h.source()
	h.size = int64((s.Set().Layout().Size + 4095) &^ 4095)
	r := h.root("a")
	f := h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-100.maps")
	h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{f}})
	s.Poll()
	require.Equal(t, map[string]uint32{"root of 500 gpuext-devmaps-1-100.maps": 500}, h.regions(s))
	require.Equal(t, []point{{map[string]any{"state": "active"}, 1}, {map[string]any{"state": "broken"}, 0}},
		metrics(s.Metrics())["gpu.devrt.probes.regions"])

	h.exit(500)
	s.Poll()
	require.Empty(t, h.regions(s))
	require.False(t, exists(f), "removed: its process ended without unloading")
	require.Contains(t, s.procs, uint32(500))
	require.Empty(t, s.procs[500].open)
}

// TestUnclaimedRegionRemoved: a file in a host directory that no process
// can be shown to own (it ended before the file was read: nothing maps it)
// is never read; once it has stayed unclaimed for orphanGrace and two
// container scans, it is removed. A claimed one stays, and so does an
// unclaimed one in a container's own directory (it goes with the
// container).
func TestUnclaimedRegionRemoved(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after time.Duration // since the first poll
		left  []string
	}{
		{"kept before the grace", orphanGrace - time.Second, []string{"gpuext-devmaps-1-100.maps", "gpuext-devmaps-4242-1.maps", "root:gpuext-devmaps-1-300.maps"}},
		{"removed after it", orphanGrace, []string{"gpuext-devmaps-4242-1.maps", "root:gpuext-devmaps-1-300.maps"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHost(t, 0)
			s := h.source()
			h.size = int64((s.Set().Layout().Size + 4095) &^ 4095)
			h.region(h.dir, "gpuext-devmaps-1-100.maps")
			mine := h.region(h.dir, "gpuext-devmaps-4242-1.maps")
			h.add(fakeProcess{pid: 4242, nsPID: "4242", mnt: "mnt:[1]", root: "/", devrt: true, maps: []string{mine}})
			r := h.root("a")
			h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-300.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true})
			s.Poll()
			start := h.now
			for h.now.Sub(start) < tt.after {
				h.now = h.now.Add(time.Second)
				s.Poll()
			}
			var left []string
			for _, d := range []string{h.dir, filepath.Join(r, h.dir)} {
				names, err := filepath.Glob(filepath.Join(d, RegionPattern))
				require.NoError(t, err)
				for _, n := range names {
					if d != h.dir {
						n = "root:" + filepath.Base(n)
					}
					left = append(left, filepath.Base(n))
				}
			}
			require.Equal(t, tt.left, left)
			require.Equal(t, map[string]uint32{"host gpuext-devmaps-4242-1.maps": 4242}, h.regions(s))
		})
	}
}

// TestDiscoveryWorkBounded: reading processes' maps is the costly part of
// discovery; one poll reads at most maxMapsReads of them, so twenty
// container processes, each with a region, are all found over three polls.
func TestDiscoveryWorkBounded(t *testing.T) {
	h := newFakeHost(t, 0)
	s := h.source()
	h.size = int64((s.Set().Layout().Size + 4095) &^ 4095)
	for i := range 20 {
		r := h.root(strconv.Itoa(i))
		f := h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-100.maps")
		h.add(fakeProcess{pid: 500 + i, nsPID: strconv.Itoa(500+i) + " 1", mnt: "mnt:[" + strconv.Itoa(10+i) + "]", root: r, devrt: true, maps: []string{f}})
	}
	var found []int
	for range 4 {
		s.Poll()
		found = append(found, len(s.regions))
	}
	require.Equal(t, []int{maxMapsReads, 2 * maxMapsReads, 20, 20}, found)
}

// TestContainerRegionMapsLate: a scan that reads a container process's
// maps before the loader mapped devrt (between its execve and LD_PRELOAD)
// does not look into its root; the next scan reads its maps again and
// finds its region. After procmaps.NegativeReads scans without devrt the
// maps are not read again.
func TestContainerRegionMapsLate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		misses int // scans before devrt and the region show in the maps
		want   map[string]uint32
	}{
		{"mapped after one scan", 1, map[string]uint32{"root of 500 gpuext-devmaps-1-100.maps": 500}},
		{"mapped after NegativeReads scans", procmaps.NegativeReads, map[string]uint32{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHost(t, 0)
			h.size = int64((h.source().Set().Layout().Size + 4095) &^ 4095)
			r := h.root("a")
			f := h.region(filepath.Join(r, h.dir), "gpuext-devmaps-1-100.maps")
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r})
			s := h.source()
			for range tt.misses {
				s.Poll()
				require.Empty(t, h.regions(s))
				h.now = h.now.Add(containerScanInterval)
			}
			h.exit(500)
			h.add(fakeProcess{pid: 500, nsPID: "500 1", mnt: "mnt:[2]", root: r, devrt: true, maps: []string{f}})
			s.Poll()
			require.Equal(t, tt.want, h.regions(s))
		})
	}
}
