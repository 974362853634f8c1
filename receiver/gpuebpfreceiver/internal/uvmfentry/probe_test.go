package uvmfentry

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenHere: this machine has no nvidia_uvm (nor does CI); Open says
// exactly that, before touching BPF.
func TestOpenHere(t *testing.T) {
	if _, err := os.Stat("/sys/module/nvidia_uvm"); err == nil {
		t.Skip("nvidia_uvm is loaded here")
	}
	p, err := Open(Options{})
	require.Nil(t, p)
	require.ErrorIs(t, err, ErrModuleNotLoaded)
	require.EqualError(t, err, "uvmfentry: the nvidia_uvm kernel module is not loaded (/sys/module/nvidia_uvm does not exist)")
}

// fakeRoot builds a sys/ and proc/ tree: the module directory if module,
// the captured BTF if withBTF, and a kallsyms of the captured symbols
// minus drop.
func fakeRoot(t *testing.T, module, withBTF bool, drop ...string) string {
	t.Helper()
	root := t.TempDir()
	if module {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "sys", "module", Module), 0o755))
	}
	if withBTF {
		dir := filepath.Join(root, "sys", "kernel", "btf")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		f, err := os.Open(vmlinuxBTFPath)
		require.NoError(t, err)
		defer f.Close()
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		b, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "vmlinux"), b, 0o444))
		b, err = os.ReadFile(moduleBTFPath)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, Module), b, 0o444))
	}
	var sb strings.Builder
	names := make([]string, 0, 4096)
	for name := range capturedSymbols(t) {
		if !slices.Contains(drop, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&sb, "0000000000000000 t %s\t[%s]\n", name, Module)
	}
	sb.WriteString("0000000000000000 T _text\n")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "proc", "kallsyms"), []byte(sb.String()), 0o444))
	return root
}

// TestOpenFailures: each reason Open gives, exactly, from fake trees.
func TestOpenFailures(t *testing.T) {
	noModule := fakeRoot(t, false, false)
	noBTF := fakeRoot(t, true, false)
	inlined := fakeRoot(t, true, true, "uvm_tools_broadcast_replay")
	for _, c := range []struct {
		name string
		opts Options
		is   error
		want string
	}{
		{"module", Options{Root: noModule}, ErrModuleNotLoaded,
			"uvmfentry: the nvidia_uvm kernel module is not loaded (" + noModule + "/sys/module/nvidia_uvm does not exist)"},
		{"btf", Options{Root: noBTF}, ErrNoModuleBTF,
			"uvmfentry: the kernel has no BTF for nvidia_uvm (" + noBTF + "/sys/kernel/btf/nvidia_uvm does not exist: " +
				"a kernel without CONFIG_DEBUG_INFO_BTF_MODULES, or a module built without BTF)"},
		{"required function", Options{Root: inlined}, ErrFunctionMissing,
			"uvmfentry: a required nvidia_uvm function cannot be traced in this driver: " +
				"uvm_tools_broadcast_replay: no symbol of its own in the module (inlined)"},
		{"ring size", Options{Root: noModule, RingBufferSize: 3 << 20}, nil,
			"uvmfentry: ring buffer size 3145728 is not a power of two of at least a page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Open(c.opts)
			require.Nil(t, p)
			require.EqualError(t, err, c.want)
			if c.is != nil {
				require.ErrorIs(t, err, c.is)
			}
		})
	}
}

// TestPrepareSkipsOptional: an optional function the driver inlined is
// skipped with its reason (both programs on it), the rest planned.
func TestPrepareSkipsOptional(t *testing.T) {
	root := fakeRoot(t, true, true, "evict_root_chunk", "uvm_tools_record_thrashing")
	pl, err := prepare(root)
	require.NoError(t, err)
	var got []string
	for _, s := range pl.skipped {
		got = append(got, s.String())
	}
	assert.Equal(t, []string{
		"uvm_tools_record_thrashing (uvm_thrashing): no symbol of its own in the module (inlined)",
		"evict_root_chunk (uvm_root_evict_enter): no symbol of its own in the module (inlined)",
		"evict_root_chunk (uvm_root_evict_exit): no symbol of its own in the module (inlined)",
	}, got)

	all, err := prepare(fakeRoot(t, true, true))
	require.NoError(t, err)
	assert.Empty(t, all.skipped)
}

// TestPrepareWithoutKallsyms: a tree without kallsyms skips the symbol
// check rather than failing.
func TestPrepareWithoutKallsyms(t *testing.T) {
	root := fakeRoot(t, true, true)
	require.NoError(t, os.Remove(filepath.Join(root, "proc", "kallsyms")))
	pl, err := prepare(root)
	require.NoError(t, err)
	assert.Empty(t, pl.skipped)
}

func TestLockdownMode(t *testing.T) {
	for content, want := range map[string]string{
		"[none] integrity confidentiality\n": "none",
		"none [integrity] confidentiality\n": "integrity",
		"none integrity [confidentiality]\n": "confidentiality",
		"garbage\n":                          "",
	} {
		root := t.TempDir()
		dir := filepath.Join(root, "sys", "kernel", "security")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "lockdown"), []byte(content), 0o444))
		assert.Equal(t, want, LockdownMode(root), content)
	}
	assert.Equal(t, "", LockdownMode(t.TempDir()))
}

// TestRefused: the reason given for a kernel refusal.
func TestRefused(t *testing.T) {
	locked := t.TempDir()
	dir := filepath.Join(locked, "sys", "kernel", "security")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lockdown"), []byte("none [integrity] confidentiality\n"), 0o444))
	capable := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(capable, "proc", "self"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(capable, "proc", "self", "status"),
		[]byte("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000000c000000000\n"), 0o444))
	eperm := fmt.Errorf("attach tracing: %w", syscall.EPERM)
	for _, c := range []struct {
		root string
		err  error
		want string
	}{
		{locked, eperm, "uvmfentry: the kernel refused the UVM programs: attach uvm_perf_event_notify: attach tracing: operation not permitted " +
			"(kernel lockdown is in integrity mode, which refuses BPF tracing of kernel functions)"},
		{t.TempDir(), eperm, "uvmfentry: the kernel refused the UVM programs: attach uvm_perf_event_notify: attach tracing: operation not permitted " +
			"(needs CAP_BPF and CAP_PERFMON, or root)"},
		{capable, eperm, "uvmfentry: the kernel refused the UVM programs: attach uvm_perf_event_notify: attach tracing: operation not permitted " +
			"(the collector has CAP_BPF and CAP_PERFMON, so most likely kernel lockdown; mount securityfs to read its mode in /sys/kernel/security/lockdown)"},
		{locked, syscall.EINVAL, "uvmfentry: the kernel refused the UVM programs: attach uvm_perf_event_notify: invalid argument"},
	} {
		err := refused(c.root, "attach uvm_perf_event_notify", c.err)
		assert.EqualError(t, err, c.want)
		assert.ErrorIs(t, err, ErrKernelRefused)
	}
}
