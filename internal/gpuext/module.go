package gpuext

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf/btf"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuextsim"
)

// ABIVersion is GPUEXT_KMOD_ABI_VERSION of bpf/include/gpuext_abi.h, the
// version the policies of this build were compiled against (from their BTF).
const ABIVersion = uint64(policy.ParamsGpuextPolicyAbiGPUEXT_POLICY_ABI)

// The module's name, as /sys/kernel/btf/ and /sys/kernel/ show it, and the
// BTF enum that carries its ABI version.
const (
	ModuleName  = "gpu_ext"
	abiEnum     = "gpu_ext_abi"
	abiEnumItem = "GPU_EXT_ABI_VERSION"
)

// Paths are where the kernel shows what gpuext reads and writes; tests point
// them at a fake tree.
type Paths struct {
	Sys   string // sysfs kernel dir: <Sys>/gpu_ext/{abi_version,mem_policy,sched_policy,stats}
	BTF   string // <BTF>/vmlinux and <BTF>/gpu_ext
	BPFFS string // pins: <BPFFS>/mem/, <BPFFS>/sched/
}

// DefaultPaths are the real kernel's.
var DefaultPaths = Paths{Sys: "/sys/kernel", BTF: "/sys/kernel/btf", BPFFS: "/sys/fs/bpf/gpuext"}

// ErrNoModule says the gpu_ext module is not loaded.
var ErrNoModule = errors.New("gpu_ext kernel module is not loaded")

// ABIError says the module speaks another ABI than this build.
type ABIError struct {
	Source string // where the module's version was read
	Module uint64
	Want   uint64
}

func (e *ABIError) Error() string {
	return fmt.Sprintf("gpu_ext ABI mismatch: %s says version %d, this build speaks %d; "+
		"load the gpu_ext module built from the same tree (kernel-modules/gpu_ext)", e.Source, e.Module, e.Want)
}

// CheckModule checks that the module is loaded (its BTF and sysfs dir exist)
// and that both its BTF enum and its sysfs abi_version carry ABIVersion.
func CheckModule(p Paths) error {
	modBTF := filepath.Join(p.BTF, ModuleName)
	if _, err := os.Stat(modBTF); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (no %s; insmod gpu_ext.ko first)", ErrNoModule, modBTF)
	} else if err != nil {
		return fmt.Errorf("gpu_ext module BTF: %w", err)
	}
	v, err := btfABIVersion(p)
	if err != nil {
		return err
	}
	if v != ABIVersion {
		return &ABIError{Source: modBTF + " (enum " + abiEnum + ")", Module: v, Want: ABIVersion}
	}
	file := filepath.Join(p.Sys, ModuleName, "abi_version")
	raw, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (no %s)", ErrNoModule, file)
	}
	if err != nil {
		return fmt.Errorf("gpu_ext abi_version: %w", err)
	}
	sv, err := gpuextsim.ParseABIVersion(string(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if uint64(sv) != ABIVersion {
		return &ABIError{Source: file, Module: uint64(sv), Want: ABIVersion}
	}
	return nil
}

// btfABIVersion reads GPU_EXT_ABI_VERSION from the module's split BTF.
func btfABIVersion(p Paths) (uint64, error) {
	base, err := btf.LoadSpec(filepath.Join(p.BTF, "vmlinux"))
	if err != nil {
		return 0, fmt.Errorf("kernel BTF: %w", err)
	}
	mod, err := btf.LoadSplitSpec(filepath.Join(p.BTF, ModuleName), base)
	if err != nil {
		return 0, fmt.Errorf("gpu_ext module BTF: %w", err)
	}
	var enum *btf.Enum
	if err := mod.TypeByName(abiEnum, &enum); err != nil {
		return 0, fmt.Errorf("gpu_ext module BTF has no enum %s (a module older than the ABI check?): %w", abiEnum, err)
	}
	for _, v := range enum.Values {
		if v.Name == abiEnumItem {
			return v.Value, nil
		}
	}
	return 0, fmt.Errorf("gpu_ext module BTF: enum %s has no %s", abiEnum, abiEnumItem)
}
