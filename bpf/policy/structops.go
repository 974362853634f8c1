package policy

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// The struct_ops types gpu_ext registers (kernel-modules/gpu_ext/gpu_ext.h).
const (
	MemOps   = "gpu_mem_ops"
	SchedOps = "gpu_sched_ops"
)

// OpsMap is the key, in a spec prepared by Prepare, of the struct_ops map
// whose value holds the programs; creating a link on it attaches the policy.
const OpsMap = "struct_ops"

// Default policy names, as /sys/kernel/gpu_ext/{mem,sched}_policy shows them.
const (
	DefaultMemName   = "gpuext_mem"
	DefaultSchedName = "gpuext_sched"
)

// bpfFLink is BPF_F_LINK: the struct_ops map is attached by a bpf_link
// (which can be pinned and detached) instead of by a map update.
const bpfFLink = 1 << 13

var validName = regexp.MustCompile(`^[a-z0-9_]{1,15}$`)

// MemSpec returns the memory policy, ready to load, with name as the name
// the module reports.
func MemSpec(name string) (*ebpf.CollectionSpec, error) {
	spec, err := LoadMem()
	if err != nil {
		return nil, err
	}
	return spec, Prepare(spec, MemOps, name)
}

// SchedSpec returns the scheduling policy, ready to load.
func SchedSpec(name string) (*ebpf.CollectionSpec, error) {
	spec, err := LoadSched()
	if err != nil {
		return nil, err
	}
	return spec, Prepare(spec, SchedOps, name)
}

// Prepare turns an object whose programs sit in sections
// "struct_ops/<member of ops>" into a loadable struct_ops collection: each
// program is bound to its member of the kernel type ops, and a struct_ops
// map (key OpsMap, created with BPF_F_LINK) holds them with the given name.
// The object must carry ops's BTF (a ".struct_ops.link" variable of that
// type does it, and keeps the object usable by libbpf too).
func Prepare(spec *ebpf.CollectionSpec, ops, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("policy name %q: want 1 to 15 of a-z, 0-9, _", name)
	}
	var st *btf.Struct
	if err := spec.Types.TypeByName(ops, &st); err != nil {
		return fmt.Errorf("object has no BTF for struct %s: %w", ops, err)
	}
	members := map[string]bool{}
	var nameOff int = -1
	for _, m := range st.Members {
		members[m.Name] = true
		if m.Name == "name" {
			nameOff = int(m.Offset.Bytes())
		}
	}
	if nameOff < 0 {
		return fmt.Errorf("struct %s has no name member", ops)
	}
	bound := 0
	for pname, p := range spec.Programs {
		if p.Type != ebpf.StructOps {
			continue
		}
		member, ok := strings.CutPrefix(p.SectionName, "struct_ops/")
		if !ok || !members[member] {
			return fmt.Errorf("program %s in section %q: not a member of %s", pname, p.SectionName, ops)
		}
		p.AttachTo = ops + ":" + member
		bound++
	}
	if bound == 0 {
		return fmt.Errorf("object has no struct_ops programs for %s", ops)
	}
	value := make([]byte, st.Size)
	copy(value[nameOff:], name)
	spec.Maps[OpsMap] = &ebpf.MapSpec{
		Name:       name,
		Type:       ebpf.StructOpsMap,
		Flags:      bpfFLink,
		Key:        &btf.Int{Size: 4},
		KeySize:    4,
		Value:      st,
		MaxEntries: 1,
		Contents:   []ebpf.MapKV{{Key: uint32(0), Value: value}},
	}
	return nil
}
