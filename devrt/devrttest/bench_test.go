package devrttest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDevrtOverhead times cuLaunchKernel on the fake driver without
// devrt and under devrt in its configurations, side by side in one run
// (scripts/bench.sh: make bench). The metric is ns/call, from callbench's
// own clock around the loop; ns/op includes starting the program.
//
// The ring holds every call of the run (no consumer competes for the two
// CPUs of a CI machine), in /dev/shm as in production: each record is
// written into slots that are cold, as behind a real consumer.
func BenchmarkDevrtOverhead(b *testing.B) {
	dir := devrtDir(b)
	fake := fakeDir(b)
	for _, bc := range []struct {
		name string
		env  []string
	}{
		{"without-devrt", nil},
		{"devrt-classes-none", []string{"GPUEXT_DEVRT_CLASSES=none"}},
		{"devrt-timing-off", []string{"GPUEXT_DEVRT_SAMPLE=0"}},
		// Every 32nd call timed: at the default minimum interval (50 ms)
		// this loop of ~50 ns calls would time about one in 1,000,000.
		{"devrt-sample-32", []string{"GPUEXT_DEVRT_SAMPLE=32", "GPUEXT_DEVRT_SAMPLE_GAP_US=0"}},
		{"devrt-ring-full", []string{"GPUEXT_DEVRT_SAMPLE=0", "GPUEXT_DEVRT_RING_SLOTS=64"}},
		// PyTorch's path: cudaLaunchKernel through the runtime, whose
		// cuLaunchKernel devrt folds into the runtime call's record.
		{"without-devrt-runtime", nil},
		{"devrt-timing-off-runtime", []string{"GPUEXT_DEVRT_SAMPLE=0"}},
		// Cold: 8 MiB written between two calls, as a program's own work
		// evicts what devrt's last call left in the caches; each call timed
		// on its own, 20,000 of them whatever b.N.
		{"without-devrt-cold", []string{coldThrash}},
		{"devrt-timing-off-cold", []string{"GPUEXT_DEVRT_SAMPLE=0", coldThrash}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			env := append([]string{"FAKECUDA_COUNT=0", "LD_LIBRARY_PATH=" + fake}, bc.env...)
			calls := b.N
			if slices.Contains(bc.env, coldThrash) {
				calls = coldCalls
			}
			if !strings.HasPrefix(bc.name, "without-devrt") {
				ringDir := shmDir(b)
				env = append(env, "LD_PRELOAD="+filepath.Join(dir, "libgpuext-devrt.so"),
					"GPUEXT_DEVRT_DIR="+ringDir, "GPUEXT_DEVRT_RING_SLOTS="+strconv.Itoa(ringSlots(calls)))
				env = append(env, bc.env...) // a configuration's own ring size wins
			}
			mode := "launch"
			if strings.HasSuffix(bc.name, "-runtime") {
				mode = "rtlaunch"
			}
			cmd := exec.Command(filepath.Join(fake, "callbench"), mode, strconv.Itoa(calls))
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("callbench: %v %s", err, out)
			}
			var r struct {
				NsPerCall float64 `json:"ns_per_call"`
			}
			if err := json.Unmarshal(out, &r); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(r.NsPerCall, "ns/call")
		})
	}
}

// The cold rows' thrash (callbench's CALLBENCH_THRASH, KiB) and calls.
// The rows named *-runtime run callbench's rtlaunch mode.
const (
	coldThrash = "CALLBENCH_THRASH=8192"
	coldCalls  = 20000
)

// ringSlots is a ring that holds n calls and callbench's setup.
func ringSlots(n int) int {
	s := 64
	for s < n+16 && s < 1<<20 {
		s <<= 1
	}
	return s
}

// shmDir is a folder on tmpfs, removed after the benchmark (a caller that
// makes one per iteration removes each itself: tmpfs is memory).
func shmDir(b *testing.B) string {
	d, err := os.MkdirTemp("/dev/shm", "devrt-bench-")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}
