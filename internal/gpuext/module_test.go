package gpuext

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"
)

// fakeKernel writes a sysfs/BTF tree as a kernel with gpu_ext would show it:
// a base BTF with one int, the module's split BTF with enum enumName
// {itemName = btfVersion}, and abi_version holding sysVersion. Empty strings
// leave the files out.
func fakeKernel(t *testing.T, enumName, itemName string, btfVersion int32, sysVersion string) Paths {
	t.Helper()
	root := t.TempDir()
	p := Paths{Sys: filepath.Join(root, "sys"), BTF: filepath.Join(root, "btf"), BPFFS: filepath.Join(root, "bpffs")}
	require.NoError(t, os.MkdirAll(p.BTF, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(p.Sys, ModuleName), 0o755))

	b, err := btf.NewBuilder([]btf.Type{&btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}})
	require.NoError(t, err)
	base, err := b.Marshal(nil, &btf.MarshalOptions{Order: binary.LittleEndian})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(p.BTF, "vmlinux"), base, 0o644))
	if enumName != "" {
		baseStrLen := binary.LittleEndian.Uint32(base[20:24])
		require.NoError(t, os.WriteFile(filepath.Join(p.BTF, ModuleName),
			splitEnumBTF(baseStrLen, enumName, itemName, btfVersion), 0o644))
	}
	if sysVersion != "" {
		require.NoError(t, os.WriteFile(filepath.Join(p.Sys, ModuleName, "abi_version"), []byte(sysVersion), 0o644))
	}
	return p
}

// splitEnumBTF encodes split BTF holding one 4-byte enum with one value
// (the layout of include/uapi/linux/btf.h), as pahole writes for a module.
func splitEnumBTF(baseStrLen uint32, enumName, itemName string, v int32) []byte {
	strs := enumName + "\x00" + itemName + "\x00"
	var types bytes.Buffer
	le := binary.LittleEndian
	const kindEnum = 6
	_ = binary.Write(&types, le, []uint32{baseStrLen, kindEnum<<24 | 1, 4})
	_ = binary.Write(&types, le, []uint32{baseStrLen + uint32(len(enumName)) + 1, uint32(v)})
	var out bytes.Buffer
	_ = binary.Write(&out, le, uint16(0xeb9f))
	_ = binary.Write(&out, le, []uint8{1, 0})
	_ = binary.Write(&out, le, []uint32{24, 0, uint32(types.Len()), uint32(types.Len()), uint32(len(strs))})
	out.Write(types.Bytes())
	out.WriteString(strs)
	return out.Bytes()
}

func TestCheckModule(t *testing.T) {
	const enum, item = "gpu_ext_abi", "GPU_EXT_ABI_VERSION"
	v := int32(ABIVersion)
	for _, tc := range []struct {
		name    string
		paths   Paths
		isErr   error
		abi     *ABIError
		message string
	}{
		{name: "matching", paths: fakeKernel(t, enum, item, v, "1\n")},
		{name: "no module", paths: fakeKernel(t, "", "", 0, ""), isErr: ErrNoModule,
			message: "gpu_ext kernel module is not loaded (no "},
		{name: "btf mismatch", paths: fakeKernel(t, enum, item, v+1, "1\n"),
			abi: &ABIError{Module: uint64(v + 1), Want: ABIVersion}},
		{name: "sysfs mismatch", paths: fakeKernel(t, enum, item, v, "7\n"),
			abi: &ABIError{Module: 7, Want: ABIVersion}},
		{name: "no abi enum", paths: fakeKernel(t, "other_enum", item, v, "1\n"),
			message: "gpu_ext module BTF has no enum gpu_ext_abi"},
		{name: "no abi item", paths: fakeKernel(t, enum, "OTHER", v, "1\n"),
			message: "gpu_ext module BTF: enum gpu_ext_abi has no GPU_EXT_ABI_VERSION"},
		{name: "no sysfs", paths: fakeKernel(t, enum, item, v, ""), isErr: ErrNoModule,
			message: "gpu_ext kernel module is not loaded (no "},
		{name: "sysfs garbage", paths: fakeKernel(t, enum, item, v, "one\n"),
			message: `abi_version: gpu_ext stats: abi_version "one": strconv.ParseUint: parsing "one": invalid syntax`},
		{name: "sysfs no newline", paths: fakeKernel(t, enum, item, v, "1"),
			message: `abi_version: gpu_ext stats: abi_version "1": no newline`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckModule(tc.paths)
			if tc.isErr == nil && tc.abi == nil && tc.message == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tc.isErr != nil {
				require.ErrorIs(t, err, tc.isErr)
			}
			if tc.abi != nil {
				var ae *ABIError
				require.True(t, errors.As(err, &ae), "%v", err)
				require.Equal(t, tc.abi.Module, ae.Module)
				require.Equal(t, tc.abi.Want, ae.Want)
				require.Contains(t, err.Error(), "gpu_ext ABI mismatch")
			}
			if tc.message != "" {
				require.Contains(t, err.Error(), tc.message)
			}
		})
	}
}

// The loader refuses to load anything when the module check fails, before
// touching the BPF syscall.
func TestAttachChecksModuleFirst(t *testing.T) {
	l := &Loader{Paths: fakeKernel(t, "gpu_ext_abi", "GPU_EXT_ABI_VERSION", int32(ABIVersion)+1, "2\n")}
	var ae *ABIError
	require.ErrorAs(t, l.AttachMem("gpuext_mem", DefaultMemParams()), &ae)
	require.ErrorAs(t, l.AttachSched("gpuext_sched", LCBE(1_000_000, 200)), &ae)
	_, err := os.Stat(l.Paths.BPFFS)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing pinned")
}

func TestNotAttached(t *testing.T) {
	l := &Loader{Paths: fakeKernel(t, "gpu_ext_abi", "GPU_EXT_ABI_VERSION", int32(ABIVersion), "1\n")}
	require.ErrorIs(t, l.Detach(Mem), ErrNotAttached)
	require.ErrorIs(t, l.Detach(Sched), ErrNotAttached)
	require.ErrorIs(t, l.SetMem(DefaultMemParams()), ErrNotAttached)
	require.ErrorIs(t, l.SetPriority(Owner{PID: 1}, 3), ErrNotAttached)
	require.ErrorIs(t, l.SetSched(LCBE(1000, 200)), ErrNotAttached)
}
