package procattr

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAlive(t *testing.T) {
	root := t.TempDir()
	write := func(pid, stat string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, pid), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, pid, "stat"), []byte(stat), 0o644))
	}
	write("10", "10 (python3 (worker)) S 1 10 10 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 123 0 0\n")
	write("11", "11 (zombie) Z 1 11 11 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 124 0 0\n")
	write("12", "12 (dead) X 1 12 12 0\n")
	write("13", "13 (torn")
	r, err := NewResolver(root)
	require.NoError(t, err)
	for pid, want := range map[int]bool{10: true, 11: false, 12: false, 13: false, 14: false, 0: false} {
		require.Equal(t, want, r.Alive(pid), "pid %d", pid)
	}

	// A real child: alive while it runs, not once it has exited and been reaped.
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	real, err := NewResolver("/proc")
	require.NoError(t, err)
	require.True(t, real.Alive(cmd.Process.Pid))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.False(t, real.Alive(cmd.Process.Pid))
}
