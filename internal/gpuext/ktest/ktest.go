// Package ktest decides whether a test that needs the gpu_ext kernel modules
// runs: under scripts/kernel-test.sh (GPUEXT_KERNEL_TEST=1, inside qemu) a
// missing module is a failure, anywhere else the test is skipped with a
// message that says where it runs, so `go test ./...` on a host without the
// modules stays green without hiding a broken kernel run.
package ktest

import (
	"os"
	"testing"
)

// InVM reports whether the test runs under scripts/kernel-test.sh.
func InVM() bool { return os.Getenv("GPUEXT_KERNEL_TEST") == "1" }

// Bench reports whether scripts/kernel-test.sh --bench asked for benchmarks.
func Bench() bool { return os.Getenv("GPUEXT_BENCH") == "1" }

// Require skips (host) or fails (kernel test run) unless every path exists.
func Require(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			if InVM() {
				t.Fatalf("%s missing in the kernel test VM: %v", p, err)
			}
			t.Skipf("needs %s: runs under make kernel-test", p)
		}
	}
}

// Module is the gpu_ext module's sysfs directory; Sim the simulator's device.
const (
	Module = "/sys/kernel/gpu_ext"
	Sim    = "/dev/gpu_ext_sim"
)
