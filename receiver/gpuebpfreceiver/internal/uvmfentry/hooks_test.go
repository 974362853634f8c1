package uvmfentry

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

// The driver captured on the H200 (bpf/testdata/README.md).
var (
	testdataDir    = filepath.Join("..", "..", "..", "..", "bpf", "testdata")
	moduleBTFPath  = filepath.Join(testdataDir, "nvidia_uvm-580.159.04.btf")
	vmlinuxBTFPath = filepath.Join(testdataDir, "vmlinux-6.18.44-fc-v657-gpu.btf.gz")
	kallsymsPath   = filepath.Join(testdataDir, "nvidia_uvm-580.159.04.kallsyms.gz")
)

// capturedBTF loads the captured vmlinux BTF and the module's split BTF on it.
func capturedBTF(t testing.TB) (vmlinux, module *btf.Spec) {
	t.Helper()
	f, err := os.Open(vmlinuxBTFPath)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	vmlinux, err = btf.LoadSpecFromReader(readerAt(t, zr))
	require.NoError(t, err)
	m, err := os.Open(moduleBTFPath)
	require.NoError(t, err)
	defer m.Close()
	module, err = btf.LoadSplitSpecFromReader(m, vmlinux)
	require.NoError(t, err)
	return vmlinux, module
}

func capturedSymbols(t testing.TB) Symbols {
	t.Helper()
	f, err := os.Open(kallsymsPath)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	syms, err := ReadSymbols(zr, Module)
	require.NoError(t, err)
	return syms
}

// TestHooksAttachableInDriver580: every target is a function of the
// module's BTF with the prototype its program reads, each parameter one
// 8-byte argument slot (structs passed by value included), no more than
// the 12 arguments trampolines take, and an out-of-line symbol under its
// own name (fentry resolves the BTF name through kallsyms).
func TestHooksAttachableInDriver580(t *testing.T) {
	_, mod := capturedBTF(t)
	syms := capturedSymbols(t)
	require.Len(t, Hooks, 12)
	for _, h := range Hooks {
		t.Run(h.Program, func(t *testing.T) {
			assert.Empty(t, h.Check(mod, syms))
			var fn *btf.Func
			require.NoError(t, mod.TypeByName(h.Function, &fn))
			proto := fn.Type.(*btf.FuncProto)
			require.LessOrEqual(t, len(proto.Params), 12)
			for _, p := range proto.Params {
				size, err := btf.Sizeof(p.Type)
				require.NoError(t, err)
				assert.LessOrEqual(t, size, 8, "%s: parameter %s takes more than one argument slot", h.Function, p.Name)
			}
			assert.True(t, syms[h.Function], "%s has no symbol", h.Function)
			assert.False(t, h.Required && h.Loses != "", "a required hook loses everything")
			assert.True(t, h.Required || h.Loses != "", "an optional hook says what is lost without it")
		})
	}
}

// TestHooksMatchObject: the object's programs are exactly the hooks, each
// with its section's target and attach type.
func TestHooksMatchObject(t *testing.T) {
	spec, err := bpf.LoadUvm()
	require.NoError(t, err)
	require.Len(t, spec.Programs, len(Hooks))
	for _, h := range Hooks {
		p := spec.Programs[h.Program]
		require.NotNil(t, p, h.Program)
		assert.Equal(t, ebpf.Tracing, p.Type, h.Program)
		assert.Equal(t, h.Function, p.AttachTo, h.Program)
		want := ebpf.AttachTraceFEntry
		if h.Exit {
			want = ebpf.AttachTraceFExit
		}
		assert.Equal(t, want, p.AttachType, h.Program)
	}
}

// TestHookCheckReasons: what Open reports for a function it cannot use.
func TestHookCheckReasons(t *testing.T) {
	_, mod := capturedBTF(t)
	notify := Hooks[0]
	require.Equal(t, "uvm_perf_event_notify", notify.Function)
	changed := notify
	changed.Params = []string{"*uvm_va_space_t", "uvm_perf_event_t", "*uvm_perf_event_data_t"}
	missing := notify
	missing.Function = "uvm_perf_event_notify_v2"
	for _, c := range []struct {
		name string
		hook Hook
		syms Symbols
		want string
	}{
		{"attachable", notify, Symbols{"uvm_perf_event_notify": true}, ""},
		{"no symbol check", notify, nil, ""},
		{"not in BTF", missing, nil, "not in the module's BTF (removed or renamed in this driver)"},
		{"prototype", changed, nil, "prototype changed: the program reads void(*uvm_va_space_t, uvm_perf_event_t, *uvm_perf_event_data_t), " +
			"the driver has void(*uvm_perf_va_space_events_t, uvm_perf_event_t, *uvm_perf_event_data_t)"},
		{"clone", notify, Symbols{"uvm_perf_event_notify.isra.0": true, "uvm_perf_event_notify.constprop.0": true},
			"compiled only as uvm_perf_event_notify.constprop.0, uvm_perf_event_notify.isra.0 " +
				"(a clone with another calling convention): fentry cannot attach by the BTF name"},
		{"inlined", notify, Symbols{"uvm_perf_event_notify_cpu_fault": true}, "no symbol of its own in the module (inlined)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.hook.Check(mod, c.syms))
		})
	}
}

// TestCapturedClones: driver 580 has functions in its BTF that exist only
// as compiler clones, which is why the symbol check exists:
// uvm_perf_event_notify_gpu_fault (the helper that raises GPU fault
// events) is there only as .constprop.0.
func TestCapturedClones(t *testing.T) {
	_, mod := capturedBTF(t)
	syms := capturedSymbols(t)
	var fn *btf.Func
	require.NoError(t, mod.TypeByName("uvm_perf_event_notify_gpu_fault", &fn))
	h := Hook{Function: fn.Name}
	var err error
	h.Params, h.Return, err = Prototype(fn)
	require.NoError(t, err)
	assert.Equal(t, "compiled only as uvm_perf_event_notify_gpu_fault.constprop.0 (a clone with another calling convention): "+
		"fentry cannot attach by the BTF name", h.Check(mod, syms))
}

func TestReadSymbols(t *testing.T) {
	in := strings.Join([]string{
		"ffffffffc0a01000 t uvm_perf_event_notify\t[nvidia_uvm]",
		"0000000000000000 T uvm_tools_broadcast_replay\t[nvidia_uvm]",
		"0000000000000000 d g_uvm_global\t[nvidia_uvm]",
		"0000000000000000 t nv_open\t[nvidia]",
		"ffffffff81000000 T _text",
		"t service_fault_batch",
		"r a_const",
		"",
	}, "\n")
	syms, err := ReadSymbols(strings.NewReader(in), Module)
	require.NoError(t, err)
	assert.Equal(t, Symbols{"uvm_perf_event_notify": true, "uvm_tools_broadcast_replay": true, "service_fault_batch": true}, syms)
}

func TestTypeString(t *testing.T) {
	u32 := &btf.Int{Name: "unsigned int", Size: 4}
	nv := &btf.Typedef{Name: "NvU32", Type: u32}
	st := &btf.Struct{Name: "uvm_gpu_struct"}
	for _, c := range []struct {
		typ  btf.Type
		want string
	}{
		{nil, "void"},
		{&btf.Void{}, "void"},
		{u32, "unsigned int"},
		{nv, "NvU32"},
		{&btf.Pointer{Target: &btf.Const{Type: &btf.Typedef{Name: "uvm_gpu_t", Type: st}}}, "*uvm_gpu_t"},
		{&btf.Pointer{Target: st}, "*struct uvm_gpu_struct"},
		{&btf.Pointer{Target: &btf.Struct{}}, "*struct {...}"},
		{&btf.Volatile{Type: &btf.Enum{Name: "e"}}, "enum e"},
		{&btf.Pointer{Target: &btf.FuncProto{}}, "*func(...)"},
	} {
		assert.Equal(t, c.want, TypeString(c.typ))
	}
}
