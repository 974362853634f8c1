package gpuebpfreceiver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostRoot(t *testing.T) {
	require.Equal(t, "", hostRoot("/proc"))
	require.Equal(t, "", hostRoot("/proc/"))
	require.Equal(t, "/host/proc/1/root", hostRoot("/host/proc"))
}

func TestFindDrivers(t *testing.T) {
	root := t.TempDir()
	write := func(p string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(root+p), 0o755))
		require.NoError(t, os.WriteFile(root+p, []byte("\x7fELF"), 0o644))
	}
	// The ld.so cache names a driver in a non-standard place; the usual
	// directories hold another; one is named twice.
	write("/opt/nvidia/lib/libcuda.so.1")
	write("/usr/lib/x86_64-linux-gnu/libcuda.so.1")
	write("/usr/local/nvidia/lib64/libcuda.so.1")
	cache := "glibc-ld.so.cache1.1\x00\x00libcuda.so.1\x00/opt/nvidia/lib/libcuda.so.1\x00" +
		"libc.so.6\x00/lib/x86_64-linux-gnu/libc.so.6\x00libcuda.so.1\x00/usr/lib/x86_64-linux-gnu/libcuda.so.1\x00" +
		"libcuda.so.1\x00/gone/libcuda.so.1\x00"
	require.NoError(t, os.MkdirAll(root+"/etc", 0o755))
	require.NoError(t, os.WriteFile(root+"/etc/ld.so.cache", []byte(cache), 0o644))

	require.Equal(t, []string{
		root + "/opt/nvidia/lib/libcuda.so.1",
		root + "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
		root + "/usr/local/nvidia/lib64/libcuda.so.1",
	}, findDrivers(root))

	require.Empty(t, findDrivers(t.TempDir()), "no driver: nothing, no error")
	require.Nil(t, ldCachePaths(root+"/missing", "libcuda.so.1"))
}
