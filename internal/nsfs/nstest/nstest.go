// Package nstest starts the stand-ins for container processes that the
// tests of the devrt ring and device probe sources look into: a shell in
// mount and pid namespaces of its own, and a library named like devrt's
// for it to map. Test-only; it needs root, and skips the test without it.
package nstest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FakeDevrt returns a loadable library named libgpuext-devrt.so (a copy
// of libdl): what a process maps is what tells the sources it runs devrt.
// It skips the test when not root (namespaces and mounts need it) or
// there is no library to copy.
func FakeDevrt(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("namespaces and mounts need root")
	}
	data, err := os.ReadFile("/lib/x86_64-linux-gnu/libdl.so.2")
	if err != nil {
		t.Skip("no library to stand in for devrt:", err)
	}
	lib := filepath.Join(t.TempDir(), "libgpuext-devrt.so")
	require.NoError(t, os.WriteFile(lib, data, 0o755))
	return lib
}

// Start runs script with sh as pid 1 of a new pid namespace, in a new
// mount namespace (unshare forks: cmd's process is unshare, the shell its
// child), and returns its stdin and stdout. It is killed at the end of
// the test; it skips the test when unshare cannot run.
func Start(t testing.TB, script string) (cmd *exec.Cmd, in io.WriteCloser, out *bufio.Reader) {
	t.Helper()
	cmd = exec.Command("unshare", "--mount", "--pid", "--fork", "--kill-child", "sh", "-c", script)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	in, err = cmd.StdinPipe()
	require.NoError(t, err)
	if err := cmd.Start(); err != nil {
		t.Skip("unshare:", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, in, bufio.NewReader(stdout)
}
