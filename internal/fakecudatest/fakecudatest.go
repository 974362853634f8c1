// Package fakecudatest gives tests a private copy of the stand-in CUDA
// driver, runtime and programs of testdata/fakecuda.
//
// Uprobes attach per inode: every test package that probed one shared copy
// would also see the calls of the other packages' workloads running at the
// same time (go test runs packages in parallel), and count their loose ends.
// A copy per test is a file of its own, so a test sees only its programs.
package fakecudatest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once  sync.Once
	built string
	err   error
)

// Files are what a private copy holds.
var Files = []string{"libcuda.so.1", "libcudart.so.12", "workload", "callbench"}

// Dir returns a directory private to t holding the fake driver
// (libcuda.so.1), runtime (libcudart.so.12), workload and callbench. The
// programs find the libraries beside them (rpath $ORIGIN). The build is
// $FAKECUDA when set (make test sets it), else made once per test binary.
func Dir(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if built = os.Getenv("FAKECUDA"); built != "" {
			return
		}
		_, self, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(self), "..", "..", "testdata", "fakecuda")
		// A directory of this test binary's own: test binaries run in
		// parallel, and checkouts differ, so no build is shared.
		if built, err = os.MkdirTemp("", "otelcol-gpu-fakecuda-"); err != nil {
			return
		}
		var out []byte
		if out, err = exec.Command("make", "-s", "-C", src, "OUT="+built).CombinedOutput(); err != nil {
			err = &buildError{err, string(out)}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range Files {
		if err := copyFile(filepath.Join(built, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string {
	return "building testdata/fakecuda: " + e.err.Error() + "\n" + e.out
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
