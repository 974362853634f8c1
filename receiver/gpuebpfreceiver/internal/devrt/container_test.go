package devrt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs/nstest"
	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
)

// TestContainerRing: a process in its own mount and pid namespaces, with a
// private tmpfs on its ring directory and a library named like devrt's
// mapped, has a ring only visible through /proc/<pid>/root. The container
// scan finds it, reads it under the host pid (the header says 1), and
// removes it when the process has gone.
func TestContainerRing(t *testing.T) {
	lib := nstest.FakeDevrt(t)
	const dir = "/run/gpuext-test"
	// The shell becomes pid 1 of a new pid namespace; its tmpfs is private
	// to its mount namespace. It says when it is ready, then, told to,
	// execs a program with the library preloaded: the same pid and start
	// time, a new program.
	cmd, in, out := nstest.Start(t,
		"mkdir -p "+dir+" && mount -t tmpfs none "+dir+" && echo ready && read go && exec env LD_PRELOAD="+lib+" sleep 30")
	line, err := out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Skipf("the namespaced shell did not start: %q %v", line, err)
	}
	// unshare forks: the child (pid 1 inside) is the one with the mounts.
	child := childOf(t, cmd.Process.Pid)
	res, err := procattr.NewResolver("/proc")
	require.NoError(t, err)
	info, err := res.Resolve(child)
	require.NoError(t, err)
	ns, err := nsfs.NSPID("/proc", child)
	require.NoError(t, err)
	require.Equal(t, uint32(1), ns)

	inside := filepath.Join("/proc", strconv.Itoa(child), "root", dir)
	ringPath := filepath.Join(inside, "gpuext-devrt-1-42.ring")
	p, err := devring.Create(ringPath, devring.Header{Capacity: 64, PID: 1, StartTime: info.StartTime, CreatedNS: 42})
	require.NoError(t, err)
	defer p.Close()
	rec := make([]byte, 16)
	binary.LittleEndian.PutUint32(rec, 9)
	require.True(t, p.Write(rec))

	// A second ring in a directory the host and the process share (a
	// hostPath in Kubernetes): the host's scan finds it first, under a pid
	// (1) that is not the host's.
	shared := t.TempDir()
	q, err := devring.Create(filepath.Join(shared, "gpuext-devrt-1-43.ring"),
		devring.Header{Capacity: 64, PID: 1, StartTime: info.StartTime, CreatedNS: 43})
	require.NoError(t, err)
	defer q.Close()
	binary.LittleEndian.PutUint32(rec, 10)
	require.True(t, q.Write(rec))

	var recs []got
	var attached []uint32
	cfg := NewDefaultConfig()
	cfg.Directories = []string{dir, shared}
	src := New(cfg, Options{
		ProcRoot: "/proc",
		Resolve:  res.Resolve,
		Alive:    res.Alive,
		Handle:   func(pid uint32, rec []byte) { recs = append(recs, got{pid, binary.LittleEndian.Uint32(rec)}) },
		Attached: func(pid uint32, _ uint64) { attached = append(attached, pid) },
		Detached: func(pid uint32, until uint64) {
			require.Equal(t, Forever, until, "the process ended")
			attached = append(attached, 0)
		},
	})
	defer src.Shutdown()
	src.scanHostDirs()
	src.Poll()
	require.Zero(t, src.Rings(), "the private one is not in the host's directories")
	require.Len(t, src.orphans, 1, "the shared one names no host process")
	src.scanContainers()
	src.Poll()
	require.Zero(t, src.Rings(), "the shell does not map devrt")

	_, err = in.Write([]byte("go\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(child) + "/exe")
		return strings.HasSuffix(exe, "/sleep")
	}, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		data, _ := os.ReadFile("/proc/" + strconv.Itoa(child) + "/maps")
		return strings.Contains(string(data), "libgpuext-devrt.so")
	}, 5*time.Second, 10*time.Millisecond)
	src.scanContainers()
	src.Poll()
	require.ElementsMatch(t, []got{{uint32(child), 9}, {uint32(child), 10}}, recs, "both read under the host pid")
	require.Empty(t, src.orphans, "claimed by its process")
	// Two rings of one process: the newer (created 43) replaces the other.
	require.Equal(t, []uint32{uint32(child), uint32(child)}, attached)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		src.checkLiveness()
		src.Poll()
		return src.Rings() == 0
	}, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, []uint32{uint32(child), uint32(child), 0}, attached)
	_, err = os.Stat(filepath.Join(shared, "gpuext-devrt-1-43.ring"))
	require.True(t, os.IsNotExist(err), "removed from the shared directory")
}

// childOf returns the only child of pid.
func childOf(t *testing.T, pid int) int {
	var kids []string
	require.Eventually(t, func() bool {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		kids = strings.Fields(string(data))
		return err == nil && len(kids) == 1
	}, 2*time.Second, 10*time.Millisecond)
	child, err := strconv.Atoi(kids[0])
	require.NoError(t, err)
	return child
}
