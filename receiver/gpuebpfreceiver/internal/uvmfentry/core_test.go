package uvmfentry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

// The GPU machine's lockdown refuses the attach itself, so this is the
// closest to running the programs there: every CO-RE relocation of every
// program, computed as the loader computes it against the module's BTF
// captured from driver 580.159.04, and each result compared with what the
// BTF says independently.

// coreRelo is one relocation and its fixup, parsed from their String forms
// (the library exports no accessors for them).
type coreRelo struct {
	program  string
	kind     string
	local    btf.Type
	accessor []int
	poison   bool
	target   uint64
}

var (
	reloRE  = regexp.MustCompile(`^CORERelocation\((\w+), \w+:"([^"]*)"\[([0-9:]+)\], local_id=(\d+)\)$`)
	fixupRE = regexp.MustCompile(`^(\w+)=(?:(poison)|(\d+)->(\d+))$`)
)

// relocate computes every program's relocations against the captured BTF.
func relocate(t *testing.T) []coreRelo {
	t.Helper()
	spec, err := bpf.LoadUvm()
	require.NoError(t, err)
	vmlinux, mod := capturedBTF(t)
	var out []coreRelo
	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var relos []*btf.CORERelocation
		iter := spec.Programs[name].Instructions.Iterate()
		for iter.Next() {
			if r := btf.CORERelocationMetadata(iter.Ins); r != nil {
				relos = append(relos, r)
			}
		}
		if len(relos) == 0 {
			continue // the entry programs read no driver memory
		}
		fixups, err := btf.CORERelocate(relos, []*btf.Spec{vmlinux, mod}, binary.LittleEndian,
			func(btf.Type) (btf.TypeID, error) { return 0, errors.New("no local type id relocations expected") })
		require.NoError(t, err, name)
		for i, r := range relos {
			m := reloRE.FindStringSubmatch(r.String())
			require.NotNil(t, m, "relocation %q", r.String())
			id, err := strconv.Atoi(m[4])
			require.NoError(t, err)
			local, err := spec.Types.TypeByID(btf.TypeID(id))
			require.NoError(t, err)
			var acc []int
			for _, s := range strings.Split(m[3], ":") {
				n, err := strconv.Atoi(s)
				require.NoError(t, err)
				acc = append(acc, n)
			}
			f := fixupRE.FindStringSubmatch(fixups[i].String())
			require.NotNil(t, f, "fixup %q", fixups[i].String())
			require.Equal(t, m[1], f[1])
			c := coreRelo{program: name, kind: m[1], local: local, accessor: acc, poison: f[2] != ""}
			if !c.poison {
				c.target, err = strconv.ParseUint(f[4], 10, 64)
				require.NoError(t, err)
			}
			out = append(out, c)
		}
	}
	return out
}

// step is one member (by name, "" for an anonymous one) or array element.
type step struct {
	name  string
	index int
	array bool
}

// path resolves a field accessor on the local type into member names.
func (c coreRelo) path(t *testing.T) []step {
	t.Helper()
	typ := btf.UnderlyingType(c.local)
	var out []step
	for _, a := range c.accessor[1:] {
		switch v := typ.(type) {
		case *btf.Struct:
			out = append(out, step{name: v.Members[a].Name})
			typ = btf.UnderlyingType(v.Members[a].Type)
		case *btf.Union:
			out = append(out, step{name: v.Members[a].Name})
			typ = btf.UnderlyingType(v.Members[a].Type)
		case *btf.Array:
			out = append(out, step{index: a, array: true})
			typ = btf.UnderlyingType(v.Type)
		default:
			t.Fatalf("accessor %v of %s walks into %T", c.accessor, c.local.TypeName(), typ)
		}
	}
	return out
}

func (c coreRelo) String() string {
	return fmt.Sprintf("%s: %s %s%v", c.program, c.kind, c.local.TypeName(), c.accessor)
}

// member finds a member by name in a composite, looking into anonymous
// members as C does; bits is its offset from the composite's start.
func member(typ btf.Type, name string) (btf.Member, uint32, bool) {
	var members []btf.Member
	switch v := typ.(type) {
	case *btf.Struct:
		members = v.Members
	case *btf.Union:
		members = v.Members
	default:
		return btf.Member{}, 0, false
	}
	for _, m := range members {
		if m.Name == name {
			return m, uint32(m.Offset), true
		}
	}
	for _, m := range members {
		if m.Name == "" {
			if in, bits, ok := member(btf.UnderlyingType(m.Type), name); ok {
				return in, uint32(m.Offset) + bits, true
			}
		}
	}
	return btf.Member{}, 0, false
}

// targetField walks path in the target type named like the local one and
// returns the field's bit offset, its member (for bitfields) and its type.
func targetField(t *testing.T, targets []*btf.Spec, local btf.Type, path []step) (bits uint32, m btf.Member, typ btf.Type) {
	t.Helper()
	var root btf.Type
	for _, s := range targets {
		if found, err := s.AnyTypesByName(local.TypeName()); err == nil {
			for _, f := range found {
				if fmt.Sprintf("%T", f) == fmt.Sprintf("%T", local) {
					root = f
				}
			}
		}
	}
	require.NotNil(t, root, "no %T %s in the captured BTF", local, local.TypeName())
	typ = btf.UnderlyingType(root)
	for _, s := range path {
		switch {
		case s.array:
			arr, ok := typ.(*btf.Array)
			require.True(t, ok)
			size, err := btf.Sizeof(arr.Type)
			require.NoError(t, err)
			bits += uint32(s.index*size) * 8
			typ = btf.UnderlyingType(arr.Type)
		case s.name == "":
			// An anonymous local member: the next name is searched inside
			// the target's anonymous members.
		default:
			var off uint32
			var ok bool
			m, off, ok = member(typ, s.name)
			require.True(t, ok, "%s has no member %s", local.TypeName(), s.name)
			bits += off
			typ = btf.UnderlyingType(m.Type)
		}
	}
	return bits, m, typ
}

// TestCORERelocations: every relocation of every program resolves against
// driver 580's BTF, except the fallbacks for older drivers (types with a
// ___flavor suffix), which must resolve to "absent" and be poisoned behind
// that check; and every resolved offset, size, bitfield position and enum
// value is what the BTF says when looked up by name.
func TestCORERelocations(t *testing.T) {
	relos := relocate(t)
	vmlinux, mod := capturedBTF(t)
	targets := []*btf.Spec{vmlinux, mod}
	type bitfield struct {
		size                uint64 // bits
		bit                 uint64 // from the root type's start
		off, lshift, rshift uint64
	}
	bitfields := map[string]*bitfield{}
	var fallbacks int
	for _, c := range relos {
		if strings.Contains(c.local.TypeName(), "___") {
			fallbacks++
			if c.kind == "field_exists" {
				assert.False(t, c.poison, "%s", c)
				assert.Zero(t, c.target, "%s: a fallback for older drivers exists in 580", c)
			} else {
				assert.True(t, c.poison, "%s: a fallback access is not behind its existence check", c)
			}
			continue
		}
		require.False(t, c.poison, "%s is poisoned", c)
		switch c.kind {
		case "field_exists", "enumval_exists", "type_exists":
			assert.Equal(t, uint64(1), c.target, "%s", c)
		case "enumval_value":
			local, ok := btf.UnderlyingType(c.local).(*btf.Enum)
			require.True(t, ok, "%s", c)
			name := local.Values[c.accessor[0]].Name
			want, ok := targetEnumValue(targets, c.local.TypeName(), name)
			require.True(t, ok, "%s: no %s in the captured BTF", c, name)
			assert.Equal(t, want, c.target, "%s (%s)", c, name)
		case "byte_off", "byte_sz", "lshift_u64", "rshift_u64", "signed":
			bits, m, typ := targetField(t, targets, c.local, c.path(t))
			key := fmt.Sprintf("%s%v", c.local.TypeName(), c.accessor)
			if m.BitfieldSize > 0 {
				bf := bitfields[key]
				if bf == nil {
					bf = &bitfield{size: uint64(m.BitfieldSize), bit: uint64(bits)}
					bitfields[key] = bf
				}
				switch c.kind {
				case "byte_off":
					bf.off = c.target
				case "lshift_u64":
					bf.lshift = c.target
				case "rshift_u64":
					bf.rshift = c.target
				case "signed":
					assert.Zero(t, c.target, "%s: unsigned bitfield", c)
				}
				continue
			}
			switch c.kind {
			case "byte_off":
				assert.Equal(t, uint64(bits/8), c.target, "%s", c)
			case "byte_sz":
				size, err := btf.Sizeof(typ)
				require.NoError(t, err)
				assert.Equal(t, uint64(size), c.target, "%s", c)
			default:
				t.Errorf("%s: shift relocation on a field that is not a bitfield", c)
			}
		default:
			t.Errorf("%s: unexpected relocation kind", c)
		}
	}
	// A probed bitfield read loads byte_sz bytes at byte_off, then shifts
	// left by lshift and right by rshift: the field is rshift-lshift bits
	// into the load and 64-rshift bits wide.
	require.Len(t, bitfields, 3, "fault_type, fault_access_type, log2_size")
	for key, bf := range bitfields {
		assert.Equal(t, bf.size, 64-bf.rshift, "%s: bitfield size", key)
		assert.Equal(t, bf.bit, bf.off*8+bf.rshift-bf.lshift, "%s: bitfield position", key)
	}
	assert.Equal(t, 4, fallbacks, "the va_range fallback (existence check and read) in the two programs walking VA blocks")
}

func targetEnumValue(targets []*btf.Spec, typeName, name string) (uint64, bool) {
	for _, s := range targets {
		found, err := s.AnyTypesByName(typeName)
		if err != nil {
			continue
		}
		for _, f := range found {
			if e, ok := btf.UnderlyingType(f).(*btf.Enum); ok {
				for _, v := range e.Values {
					if v.Name == name {
						return v.Value, true
					}
				}
			}
		}
	}
	return 0, false
}

// TestCOREKnownOffsets pins a few relocations to the offsets bpftool and
// pahole report for driver 580.159.04 on 6.18.44 (numbers checked once by
// hand), so a bug shared by the loader and the walk above still shows.
func TestCOREKnownOffsets(t *testing.T) {
	relos := relocate(t)
	got := map[string]uint64{}
	for _, c := range relos {
		if c.kind != "byte_off" || c.poison {
			continue
		}
		var names []string
		for _, s := range c.path(t) {
			switch {
			case s.array:
				names = append(names, "["+strconv.Itoa(s.index)+"]")
			case s.name != "":
				names = append(names, s.name)
			}
		}
		got[c.local.TypeName()+"."+strings.Join(names, ".")] = c.target
	}
	for field, off := range map[string]uint64{
		"uvm_perf_va_space_events_t.va_space":                                     184,
		"uvm_perf_event_data_t.migration.bytes":                                   40,
		"uvm_perf_event_data_t.migration.cause":                                   56,
		"uvm_perf_event_data_t.migration.src_nid":                                 26,
		"uvm_perf_event_data_t.fault.gpu.batch_id":                                24,
		"uvm_perf_event_data_t.fault.cpu.pc":                                      32,
		"uvm_va_space_t.va_space_mm.mm":                                           367864,
		"uvm_va_space_t.gpu_va_spaces":                                            363248,
		"uvm_va_block_t.managed_range":                                            40,
		"uvm_va_block_t.start":                                                    48,
		"uvm_va_block_t.hmm.va_space":                                             2888,
		"uvm_va_range_managed_struct.va_range.va_space":                           0,
		"uvm_parent_gpu_t.uuid":                                                   80,
		"uvm_parent_gpu_t.fault_buffer.replayable.batch_service_context.batch_id": 6416,
		"uvm_fault_service_batch_context_t.num_duplicate_faults":                  64,
		"uvm_fault_service_batch_context_t.batch_id":                              4872,
		"uvm_fault_buffer_entry_t.num_instances":                                  92,
		"uvm_gpu_t.id.val":                                                        128,
		"uvm_gpu_struct.pmm":                                                      6664,
		"uvm_perf_prefetch_hint_t.residency.val":                                  64,
		"mm_struct.owner":                                                         1296,
		"task_struct.tgid":                                                        1268,
	} {
		v, ok := got[field]
		if assert.True(t, ok, "no program reads %s any more", field) {
			assert.Equal(t, off, v, field)
		}
	}
}
