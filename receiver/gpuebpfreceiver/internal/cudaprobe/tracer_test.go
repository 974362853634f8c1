package cudaprobe

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/fakecudatest"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

func buildLib(t *testing.T, src string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "lib.so")
	b, err := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-o", out, src).CombinedOutput()
	require.NoError(t, err, string(b))
	return out
}

func TestTargetsProbeEachAddressOnce(t *testing.T) {
	lib := buildLib(t, "testdata/alias.c")
	tgts, aliases, err := targets(lib)
	require.NoError(t, err)
	var names []string
	for _, tg := range tgts {
		names = append(names, tg.symbol)
	}
	sort.Strings(names)
	// cuStreamSynchronize and cuStreamSynchronize_ptsz share an address.
	require.Equal(t, []string{"cuCtxSynchronize", "cuStreamSynchronize"}, names)
	require.Equal(t, 1, aliases)
	require.NotEqual(t, tgts[0].offset, tgts[1].offset)
}

func TestTargetsRejectsNonELF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "not-elf")
	require.NoError(t, os.WriteFile(p, []byte("hello"), 0o644))
	_, _, err := targets(p)
	require.ErrorContains(t, err, "open ELF")
}

// fakeDriver returns the driver of a private fake CUDA copy.
func fakeDriver(t testing.TB) string { return fakecudatest.Dir(t) + "/libcuda.so.1" }

func TestAttachOncePerInode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	driver := fakeDriver(t)
	tr, err := New(Options{RingBufferSize: 1 << 16, MaxInflight: 1024})
	require.NoError(t, err)
	defer func() { require.NoError(t, tr.Close()) }()

	tgts, _, err := targets(driver)
	require.NoError(t, err)

	lib, err := tr.AttachLibrary(driver)
	require.NoError(t, err)
	require.Equal(t, len(tgts), lib.Probes)
	require.Equal(t, int64(2*len(tgts)), tr.Probes(), "an entry and a return per function")

	// A symlink to the same file is the same inode: nothing new.
	link := filepath.Join(t.TempDir(), "libcuda.so.1")
	require.NoError(t, os.Symlink(driver, link))
	again, err := tr.AttachLibrary(link)
	require.NoError(t, err)
	require.Nil(t, again)
	require.Len(t, tr.Libraries(), 1)

	_, err = tr.AttachLibrary("/nonexistent/libcuda.so.1")
	require.ErrorContains(t, err, "no such file")

	// A library without any CUDA function gets no probe and says why.
	other := filepath.Join(t.TempDir(), "empty.c")
	require.NoError(t, os.WriteFile(other, []byte("int unrelated(void) { return 1; }\n"), 0o644))
	_, err = tr.AttachLibrary(buildLib(t, other))
	require.ErrorContains(t, err, "defines none of the CUDA functions probed")

	// Lean mode: launches get no return probe.
	lean, err := New(Options{RingBufferSize: 1 << 16, MaxInflight: 1024, LaunchEntryOnly: true})
	require.NoError(t, err)
	defer lean.Close()
	_, err = lean.AttachLibrary(driver)
	require.NoError(t, err)
	launches := 0
	for _, tg := range tgts {
		if tg.probe.api.Class() == ev.ClassLaunch {
			launches++
		}
	}
	require.Equal(t, 8, launches, "cuLaunchKernel, Ex, Cooperative, GraphLaunch, each with _ptsz")
	require.Equal(t, int64(2*len(tgts)-launches), lean.Probes())

	ringFull, inflightFull, unmatched, err := tr.Drops()
	require.NoError(t, err)
	require.Zero(t, ringFull+inflightFull+unmatched)
}

// TestSymbolTableCoversEveryAPI makes sure every API id has at least one
// probed symbol and every symbol names a known API.
func TestSymbolTableCoversEveryAPI(t *testing.T) {
	seen := map[string]bool{}
	for sym, p := range symbols {
		require.True(t, p.api.Known(), sym)
		seen[p.api.EnumName()] = true
	}
	for _, a := range apisForTest() {
		require.True(t, seen[a.EnumName()], "no symbol probes %s", a.EnumName())
	}
}

// TestForgetProcessDropsUnfinishedCalls: a process killed inside a CUDA call
// leaves its entry behind; ForgetProcess removes it, so the in-flight table
// cannot fill up with the dead.
func TestForgetProcessDropsUnfinishedCalls(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	driver := fakeDriver(t)
	dir := filepath.Dir(driver)
	tr, err := New(Options{RingBufferSize: 1 << 16, MaxInflight: 1024})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.AttachLibrary(driver)
	require.NoError(t, err)

	inflight := func() int {
		n := 0
		var k [16]byte
		var v []byte
		it := tr.objs.Inflight.Iterate()
		for it.Next(&k, &v) {
			n++
		}
		return n
	}
	require.Zero(t, inflight())

	// Every driver call sleeps 2 s: cuInit (not probed), then the first
	// probed call, which is killed before it returns.
	cmd := exec.Command(dir+"/workload", "launch-storm", "1")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+dir, "FAKECUDA_DELAY_US=2000000")
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return inflight() == 1 }, 8*time.Second, 10*time.Millisecond)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Equal(t, 1, inflight(), "the killed call's entry is still there")

	require.NoError(t, tr.SetTraced(uint32(cmd.Process.Pid), false))
	tr.ForgetProcess(uint32(cmd.Process.Pid))
	require.Zero(t, inflight())
	var action uint8
	require.Error(t, tr.objs.PidFilter.Lookup(uint32(cmd.Process.Pid), &action), "filter entry removed")
}
