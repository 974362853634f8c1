package uvmfentry

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

// TestVerifierAcceptsPrograms runs every program through this kernel's
// verifier, relocated against driver 580's captured BTF. No machine we
// have can attach them to nvidia_uvm (none has the module but the GPU
// machine, whose lockdown refuses the attach), so each is loaded for a
// stand-in: a function of this kernel with as many arguments (and a return
// value where an fexit program reads one). The verifier then checks
// everything but the types of the arguments, which the programs only pass
// to bpf_probe_read_kernel (hooks_test.go checks those against the BTF).
// Loading attaches nothing. Needs root and a kernel that allows tracing
// programs; skipped otherwise, as on this project's CI machine and GPU
// machine, which are both locked down. To run it there anyway, boot a
// kernel without lockdown (Debian bookworm-backports' 6.12 cloud kernel
// under qemu -accel tcg takes seconds) with an initramfs holding busybox,
// this package's test binary (CGO_ENABLED=0 go test -c), bpf/testdata at
// ../../../../bpf/testdata, and proc and sys mounted.
func TestVerifierAcceptsPrograms(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to load BPF programs")
	}
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	kf, err := os.Open("/proc/kallsyms")
	require.NoError(t, err)
	text := map[string]bool{}
	b, err := io.ReadAll(kf)
	kf.Close()
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && (f[1] == "t" || f[1] == "T") {
			text[f[2]] = true
		}
	}
	_, mod := capturedBTF(t)
	spec, err := bpf.LoadUvm()
	require.NoError(t, err)
	_ = rlimit.RemoveMemlock()
	if err := tracingAllowed(t, kernel, text); err != nil {
		t.Skipf("this kernel refuses tracing programs (lockdown is %q): %v", LockdownMode("/"), err)
	}
	for _, h := range Hooks {
		var fn *btf.Func
		require.NoError(t, mod.TypeByName(h.Function, &fn))
		want, ret := protoKinds(fn)
		if !h.Exit {
			ret = argOther // an fentry program reads no return value
		}
		stand := standIn(t, kernel, text, want, ret)
		t.Logf("%s (%s) verified on %s", h.Program, h.Function, stand)
		spec.Programs[h.Program].AttachTo = stand
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{KernelTypes: kernel, ExtraRelocationTargets: []*btf.Spec{mod}},
	})
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		t.Fatalf("verifier: %+v", ve)
	}
	require.NoError(t, err)
	coll.Close()
}

// argKind is how the verifier sees a function argument: a pointer to a
// struct is a typed kernel pointer (PTR_TO_BTF_ID), anything else that
// fits a register (integers, enums, small structs by value) a scalar.
type argKind int

const (
	argOther argKind = iota
	argScalar
	argStructPtr
)

func kindOf(t btf.Type) argKind {
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Int, *btf.Enum:
		return argScalar
	case *btf.Struct:
		if u.Size <= 8 {
			return argScalar
		}
	case *btf.Pointer:
		if _, ok := btf.UnderlyingType(u.Target).(*btf.Struct); ok {
			return argStructPtr
		}
		return argScalar
	}
	return argOther
}

// protoKinds are the kinds of fn's parameters and of its return value.
func protoKinds(fn *btf.Func) (params []argKind, ret argKind) {
	proto := fn.Type.(*btf.FuncProto)
	for _, p := range proto.Params {
		params = append(params, kindOf(p.Type))
	}
	if _, void := proto.Return.(*btf.Void); void {
		return params, argOther
	}
	return params, kindOf(proto.Return)
}

// standIn finds the function of the running kernel most like the hook's
// target for the verifier: as many parameters, a scalar wherever the
// target has one (the programs compute with those), a struct pointer
// wherever possible where the target has one (the programs only offset
// and probe-read those, which a scalar would also pass), a scalar return
// value where an fexit program reads one; with a text symbol and a unique
// name. It skips the functions tracing may not attach to.
func standIn(t *testing.T, kernel *btf.Spec, text map[string]bool, want []argKind, ret argKind) string {
	t.Helper()
	best, bestScore := "", -1
	for typ, err := range kernel.All() {
		require.NoError(t, err)
		fn, ok := typ.(*btf.Func)
		if !ok || !text[fn.Name] || strings.Contains(fn.Name, "bpf") || strings.Contains(fn.Name, "rcu") ||
			strings.Contains(fn.Name, "preempt") || strings.Contains(fn.Name, "migrate") || strings.HasPrefix(fn.Name, "__") {
			continue
		}
		params, r := protoKinds(fn)
		if len(params) != len(want) || (ret == argScalar && r != argScalar) {
			continue
		}
		score := 0
		for i, k := range params {
			switch {
			case k == argOther, want[i] == argScalar && k != argScalar:
				score = -1
			case want[i] == argStructPtr && k == argStructPtr:
				score++
			}
			if score < 0 {
				break
			}
		}
		if score <= bestScore {
			continue
		}
		if same, err := kernel.AnyTypesByName(fn.Name); err != nil || len(same) != 1 {
			continue
		}
		best, bestScore = fn.Name, score
	}
	if best == "" {
		t.Skipf("no kernel function with parameters %v (return value: %v) to stand in", want, ret)
	}
	return best
}

// tracingAllowed loads the smallest fentry program: kernels locked down
// (this project's CI machine and the GPU machine are) refuse it with EPERM.
func tracingAllowed(t *testing.T, kernel *btf.Spec, text map[string]bool) error {
	p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: standIn(t, kernel, text, []argKind{argScalar}, argOther), License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	}, ebpf.ProgramOptions{KernelTypes: kernel})
	if err != nil {
		return err
	}
	return p.Close()
}
