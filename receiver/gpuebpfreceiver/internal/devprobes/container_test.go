package devprobes

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs/nstest"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes/internal/metadata"
)

// mapper is what a devrt process does with a region: it makes the file
// under a name the collector does not look for, sizes and maps it, then
// publishes it as gpuext-devmaps-<getpid()>-<argv[3]>.maps. It prints its host
// pid (the first NSpid of the host's /proc) and waits.
const mapper = `
import mmap, os, sys
d, size = sys.argv[1], int(sys.argv[2])
tmp = os.path.join(d, ".gpuext-devmaps-%d-%s.new" % (os.getpid(), sys.argv[3]))
fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.ftruncate(fd, size)
m = mmap.mmap(fd, size, mmap.MAP_SHARED)
os.rename(tmp, os.path.join(d, "gpuext-devmaps-%d-%s.maps" % (os.getpid(), sys.argv[3])))
for line in open("/proc/self/status"):
    if line.startswith("NSpid:"):
        print(line.split()[1], flush=True)
sys.stdin.read()
`

// TestContainerRegionInNamespaces: processes that map a library named
// like devrt's, each pid 1 of its own pid namespace, make their regions as
// devrt in a container does: in a tmpfs private to their mount namespace,
// or in a directory they share with the host and each other (a hostPath),
// both named gpuext-devmaps-1-*. The source finds each through
// /proc/<pid>/root, reads it for its process's host pid (the real maps
// file's device and inode match the file's), and once the process has
// ended reads it a last time and forgets it.
func TestContainerRegionInNamespaces(t *testing.T) {
	lib := nstest.FakeDevrt(t)
	py, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skip("no python3:", err)
	}
	for _, tt := range []struct {
		name    string
		private bool // a tmpfs of its own on the directory
		created []int
	}{
		{"private tmpfs", true, []int{5}},
		{"a directory two containers share", false, []int{5, 6}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("/run", "gpuext-probes-test")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			cfg := NewDefaultConfig()
			cfg.Enabled = true
			s, err := New(cfg, Options{Dirs: []string{dir}, Settings: receivertest.NewNopSettings(metadata.Type), ProcRoot: "/proc"})
			require.NoError(t, err)
			defer s.Shutdown()
			size := strconv.FormatUint((s.Set().Layout().Size+4095)&^4095, 10)

			want := map[string]uint32{}
			var stops []func()
			for _, created := range tt.created {
				mount := ""
				if tt.private {
					mount = "mount -t tmpfs none " + dir + " && "
				}
				cmd, in, out := nstest.Start(t,
					mount+"exec env LD_PRELOAD="+lib+" "+strings.TrimSpace(string(py))+" -c '"+mapper+"' "+dir+" "+size+" "+strconv.Itoa(created))
				line, err := out.ReadString('\n')
				if err != nil {
					t.Skipf("the namespaced process did not start: %q %v", line, err)
				}
				hostPID, err := strconv.Atoi(strings.TrimSpace(line))
				require.NoError(t, err)
				require.NotEqual(t, 1, hostPID)
				want[filepath.Join("/proc", line[:len(line)-1], "root", dir, "gpuext-devmaps-1-"+strconv.Itoa(created)+".maps")] = uint32(hostPID)
				stops = append(stops, func() {
					require.NoError(t, in.Close()) // it exits; its namespaces go
					require.NoError(t, cmd.Wait())
				})
			}
			seen := len(tt.created)
			if tt.private {
				seen = 0 // not from the host
			}
			names, err := filepath.Glob(filepath.Join(dir, RegionPattern))
			require.NoError(t, err)
			require.Len(t, names, seen)

			// Every process is looked at, a few maps files a poll.
			for i := 0; i < 1000 && len(s.regions) < len(want); i++ {
				s.Poll()
			}
			got := map[string]uint32{}
			for path, rg := range s.regions {
				got[path] = rg.pid
			}
			require.Equal(t, want, got, "each read for its own process's host pid")

			for _, stop := range stops {
				stop()
			}
			s.Poll()
			require.Empty(t, s.regions)
			for _, pid := range want {
				require.Empty(t, s.procs[pid].open)
			}
			names, err = filepath.Glob(filepath.Join(dir, RegionPattern))
			require.NoError(t, err)
			require.Empty(t, names, "removed: the processes ended without unloading")
		})
	}
}

// TestHostRegionOfThisProcess: with the real /proc, a region in a
// configured directory is read for the host process of its name that maps
// it (this test's), and one of the same pid it does not map is not.
func TestHostRegionOfThisProcess(t *testing.T) {
	dir := t.TempDir()
	cfg := NewDefaultConfig()
	cfg.Enabled = true
	s, err := New(cfg, Options{Dirs: []string{dir}, Settings: receivertest.NewNopSettings(metadata.Type), ProcRoot: "/proc"})
	require.NoError(t, err)
	defer s.Shutdown()
	size := int64((s.Set().Layout().Size + 4095) &^ 4095)
	self := strconv.Itoa(os.Getpid())
	mine := filepath.Join(dir, "gpuext-devmaps-"+self+"-1.maps")
	f, err := os.OpenFile(mine, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	require.NoError(t, f.Close())
	other := filepath.Join(dir, "gpuext-devmaps-"+self+"-2.maps")
	require.NoError(t, os.WriteFile(other, make([]byte, size), 0o600))

	s.Poll()
	got := map[string]uint32{}
	for path, rg := range s.regions {
		got[filepath.Base(path)] = rg.pid
	}
	require.Equal(t, map[string]uint32{filepath.Base(mine): uint32(os.Getpid())}, got)
}
