package devrttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// The C-level tests of make -C devrt check, from go test: the ring
// producer under threads and a broken consumer, registration records,
// dlsym(RTLD_NEXT) under devrt's dlsym, and every workload scenario with
// and without devrt.
func TestCLevel(t *testing.T) {
	h := newHarness(t)
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..")
	for _, tc := range []struct {
		name string
		cmd  *exec.Cmd
	}{
		{"ring", exec.Command(filepath.Join(h.devrt, "ring-test"))},
		{"reg", exec.Command(filepath.Join(h.devrt, "reg-test"))},
		{"dlsym", exec.Command(filepath.Join(h.devrt, "dlsym-test"))},
		{"scenarios", exec.Command(filepath.Join(src, "tests", "check.sh"), h.devrt, h.fake)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cmd.Env = os.Environ()
			if tc.name == "dlsym" {
				tc.cmd.Env = append(tc.cmd.Env, "LD_PRELOAD="+h.lib())
			}
			out, err := tc.cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			t.Logf("%s", out)
		})
	}
}
