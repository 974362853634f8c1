package uvmfentry

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Hook is one program of bpf/uvm.bpf.c and the nvidia_uvm function it
// attaches to.
type Hook struct {
	// Program is the program's name in the object.
	Program string
	// Function is the traced function.
	Function string
	// Exit: fexit (sees the return value) rather than fentry.
	Exit bool
	// Params are the function's parameter types as the program reads them,
	// rendered as TypeString renders BTF; Return its return type. The
	// program reads arguments by position, so a driver whose prototype
	// differs must not be attached to.
	Params []string
	Return string
	// Required: without it the backend is not worth running (Open fails).
	Required bool
	// Loses says what is missing when an optional hook is skipped.
	Loses string
}

// Hooks are the programs of bpf/uvm.bpf.c. The prototypes are those of
// driver 580 (bpf/testdata/nvidia_uvm-580.159.04.btf); hooks_test.go checks
// them against it and against the module's symbols.
var Hooks = slices.Concat([]Hook{
	{
		Program: "uvm_perf_event", Function: "uvm_perf_event_notify",
		Params:   []string{"*uvm_perf_va_space_events_t", "uvm_perf_event_t", "*uvm_perf_event_data_t"},
		Return:   "void",
		Required: true,
	},
	{
		Program: "uvm_replay", Function: "uvm_tools_broadcast_replay",
		Params:   []string{"*uvm_gpu_t", "*uvm_push_t", "NvU32", "uvm_fault_client_type_t"},
		Return:   "void",
		Required: true,
	},
	{
		Program: "uvm_thrashing", Function: "uvm_tools_record_thrashing",
		Params: []string{"*uvm_va_space_t", "NvU64", "size_t", "*uvm_processor_mask_t"},
		Return: "void",
		Loses:  "gpu.uvm.thrashing",
	},
	{
		Program: "uvm_throttling", Function: "uvm_tools_record_throttling_start",
		Params: []string{"*uvm_va_space_t", "NvU64", "uvm_processor_id_t"},
		Return: "void",
		Loses:  "gpu.uvm.throttling",
	},
	{
		Program: "uvm_prefetch_hint", Function: "uvm_perf_prefetch_get_hint_va_block", Exit: true,
		Params: []string{"*uvm_va_block_t", "*uvm_va_block_context_t", "uvm_processor_id_t", "*uvm_page_mask_t",
			"uvm_va_block_region_t", "*uvm_perf_prefetch_bitmap_tree_t", "*uvm_perf_prefetch_hint_t"},
		Return: "void",
		Loses:  "gpu.uvm.prefetch.hinted",
	},
	{
		Program: "uvm_evict_chunks", Function: "uvm_va_block_evict_chunks", Exit: true,
		Params: []string{"*uvm_va_block_t", "*uvm_gpu_t", "*uvm_gpu_chunk_t", "*uvm_tracker_t"},
		Return: "NV_STATUS",
		Loses:  "gpu.uvm.evictions",
	},
},
	timed("uvm_root_evict", "evict_root_chunk",
		[]string{"*uvm_pmm_gpu_t", "*uvm_gpu_root_chunk_t", "uvm_pmm_context_t"}, "NV_STATUS",
		"gpu.uvm.root_chunk.evictions"),
	timed("uvm_service", "uvm_parent_gpu_service_replayable_faults",
		[]string{"*uvm_parent_gpu_t"}, "void",
		"gpu.uvm.fault.service.duration"),
	timed("uvm_batch", "service_fault_batch",
		[]string{"*uvm_parent_gpu_t", "fault_service_mode_t", "*uvm_fault_service_batch_context_t"}, "NV_STATUS",
		"gpu.uvm.fault.batches, gpu.uvm.fault.batch.entries"),
)

// timed is the fentry and fexit pair (programs prefix_enter and
// prefix_exit) that times fn.
func timed(prefix, fn string, params []string, ret, loses string) []Hook {
	return []Hook{
		{Program: prefix + "_enter", Function: fn, Params: params, Return: ret, Loses: loses},
		{Program: prefix + "_exit", Function: fn, Exit: true, Params: params, Return: ret, Loses: loses},
	}
}

// Skipped is a hook that was not attached, and why.
type Skipped struct {
	Hook   Hook
	Reason string
}

func (s Skipped) String() string {
	return fmt.Sprintf("%s (%s): %s", s.Hook.Function, s.Hook.Program, s.Reason)
}

// TypeString renders a parameter or return type the way Hook.Params
// spells them: qualifiers dropped, "*" before a pointer's target, a
// typedef by its name, "struct name" for a named struct.
func TypeString(t btf.Type) string {
	switch v := t.(type) {
	case nil, *btf.Void:
		return "void"
	case *btf.Pointer:
		return "*" + TypeString(v.Target)
	case *btf.Const:
		return TypeString(v.Type)
	case *btf.Volatile:
		return TypeString(v.Type)
	case *btf.Restrict:
		return TypeString(v.Type)
	case *btf.TypeTag:
		return TypeString(v.Type)
	case *btf.Struct:
		if v.Name == "" {
			return "struct {...}"
		}
		return "struct " + v.Name
	case *btf.Union:
		if v.Name == "" {
			return "union {...}"
		}
		return "union " + v.Name
	case *btf.Enum:
		if v.Name == "" {
			return "enum {...}"
		}
		return "enum " + v.Name
	case *btf.FuncProto:
		return "func(...)"
	}
	return t.TypeName()
}

// Prototype renders fn's parameters and return type with TypeString.
func Prototype(fn *btf.Func) (params []string, ret string, err error) {
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok {
		return nil, "", fmt.Errorf("%s: BTF type %T is not a function prototype", fn.Name, fn.Type)
	}
	for _, p := range proto.Params {
		params = append(params, TypeString(p.Type))
	}
	return params, TypeString(proto.Return), nil
}

// Symbols is what /proc/kallsyms says about one module: its text symbols
// by name.
type Symbols map[string]bool

// ReadSymbols reads the text symbols of module from a /proc/kallsyms in
// r ("addr type name [module]" lines; addresses may be zero). It also
// reads the "type name" lines of bpf/testdata's kallsyms captures, which
// hold one module's symbols only.
func ReadSymbols(r io.Reader, module string) (Symbols, error) {
	syms := Symbols{}
	tag := "[" + module + "]"
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var typ, name string
		switch {
		case len(f) == 4 && f[3] == tag:
			typ, name = f[1], f[2]
		case len(f) == 2:
			typ, name = f[0], f[1]
		default:
			continue
		}
		if typ == "t" || typ == "T" {
			syms[name] = true
		}
	}
	return syms, sc.Err()
}

// Check says why hook h cannot be attached to the driver described by
// spec (the module's BTF) and syms (its kallsyms), or "" when it can.
// syms nil skips the symbol check.
func (h Hook) Check(spec *btf.Spec, syms Symbols) string {
	var fn *btf.Func
	if err := spec.TypeByName(h.Function, &fn); err != nil {
		if errors.Is(err, btf.ErrNotFound) {
			return "not in the module's BTF (removed or renamed in this driver)"
		}
		return "BTF lookup failed: " + err.Error()
	}
	params, ret, err := Prototype(fn)
	if err != nil {
		return err.Error()
	}
	if strings.Join(params, ", ") != strings.Join(h.Params, ", ") || ret != h.Return {
		return fmt.Sprintf("prototype changed: the program reads %s(%s), the driver has %s(%s)",
			h.Return, strings.Join(h.Params, ", "), ret, strings.Join(params, ", "))
	}
	if syms != nil && !syms[h.Function] {
		var clones []string
		for name := range syms {
			if strings.HasPrefix(name, h.Function+".") {
				clones = append(clones, name)
			}
		}
		if len(clones) > 0 {
			slices.Sort(clones)
			return fmt.Sprintf("compiled only as %s (a clone with another calling convention): fentry cannot attach by the BTF name", strings.Join(clones, ", "))
		}
		return "no symbol of its own in the module (inlined)"
	}
	return ""
}
