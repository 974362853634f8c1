package gpuebpfreceiver

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// driverDirs are where NVIDIA driver installs put libcuda.so.1: distribution
// packages, the runfile installer, the GPU operator's driver container and
// the container toolkit's mounts.
var driverDirs = []string{
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib64",
	"/usr/lib",
	"/usr/local/nvidia/lib64",
	"/usr/local/nvidia/lib",
	"/run/nvidia/driver/usr/lib/x86_64-linux-gnu",
	"/run/nvidia/driver/usr/lib64",
}

// hostRoot is the prefix under which the host's files are visible: the
// root of pid 1 when the host's /proc is mounted elsewhere, else "".
func hostRoot(procRoot string) string {
	if filepath.Clean(procRoot) == "/proc" {
		return ""
	}
	return filepath.Join(procRoot, "1", "root")
}

// findDrivers returns the host's libcuda.so.1 files: those named in the
// ld.so cache, then those in the usual driver directories, de-duplicated.
func findDrivers(root string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		full := root + p
		if seen[full] {
			return
		}
		if st, err := os.Stat(full); err == nil && st.Mode().IsRegular() {
			seen[full] = true
			out = append(out, full)
		}
	}
	for _, p := range ldCachePaths(root+"/etc/ld.so.cache", "libcuda.so.1") {
		add(p)
	}
	for _, d := range driverDirs {
		add(d + "/libcuda.so.1")
	}
	return out
}

// ldCachePaths returns the absolute paths of soname recorded in an ld.so
// cache file. The cache's string table holds each library's path as a
// NUL-terminated string, which is all this needs from the format.
func ldCachePaths(cache, soname string) []string {
	data, err := os.ReadFile(cache)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range bytes.Split(data, []byte{0}) {
		p := string(s)
		if strings.HasPrefix(p, "/") && filepath.Base(p) == soname {
			out = append(out, p)
		}
	}
	return out
}
