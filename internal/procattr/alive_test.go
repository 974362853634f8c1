package procattr

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAlive(t *testing.T) {
	root := t.TempDir()
	write := func(pid, stat string, tasks ...string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, pid, "task"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, pid, "stat"), []byte(stat), 0o644))
		for _, tid := range tasks {
			require.NoError(t, os.MkdirAll(filepath.Join(root, pid, "task", tid), 0o755))
		}
	}
	stat := func(pid, comm, state, start string) string {
		return pid + " (" + comm + ") " + state + " 1 " + pid + " " + pid + " 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 " + start + " 0 0\n"
	}
	write("10", stat("10", "python3 (worker)", "S", "123"), "10")
	write("11", stat("11", "zombie", "Z", "124"), "11")
	write("12", stat("12", "dead", "X", "125"), "12")
	write("13", "13 (torn")
	write("14", stat("14", "leader-exited", "Z", "126"), "14", "15", "16")
	r, err := NewResolver(root)
	require.NoError(t, err)
	tests := []struct {
		pid   int
		start uint64
		want  bool
	}{
		{10, 0, true},
		{10, 123, true},
		{10, 999, false}, // the pid was reused
		{11, 0, false},   // zombie, no other thread
		{12, 0, false},
		{13, 0, false},
		{14, 126, true}, // zombie leader, workers still running
		{99, 0, false},
		{0, 0, false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, r.Alive(tt.pid, tt.start), "pid %d start %d", tt.pid, tt.start)
	}
}

// TestAliveRealProcesses: a running child, the same after it has been
// reaped, and a child whose main thread exited while a thread runs on.
func TestAliveRealProcesses(t *testing.T) {
	real, err := NewResolver("/proc")
	require.NoError(t, err)

	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	p, err := real.Resolve(cmd.Process.Pid)
	require.NoError(t, err)
	require.True(t, real.Alive(cmd.Process.Pid, p.StartTime))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.False(t, real.Alive(cmd.Process.Pid, p.StartTime))

	src := filepath.Join(t.TempDir(), "ptexit.c")
	bin := strings.TrimSuffix(src, ".c")
	require.NoError(t, os.WriteFile(src, []byte(`#include <pthread.h>
#include <unistd.h>
static void *worker(void *a) { (void)a; sleep(30); return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, worker, 0); pthread_exit(0); }
`), 0o644))
	out, err := exec.Command("gcc", "-o", bin, src, "-lpthread").CombinedOutput()
	require.NoError(t, err, string(out))
	cmd = exec.Command(bin)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "stat"))
		s, _ := statState(b)
		return s == 'Z'
	}, 5*time.Second, 10*time.Millisecond, "the main thread exits")
	require.True(t, real.Alive(cmd.Process.Pid, 0), "its worker still runs")
}
