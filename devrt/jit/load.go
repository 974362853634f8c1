package jit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// Site is where in a GPU kernel a probe runs (enum gpuext_dev_site).
type Site uint32

// Sites.
const (
	SiteEntry Site = 1
	SiteExit  Site = 2
	SiteLoad  Site = 3
	SiteStore Site = 4
)

func (s Site) String() string {
	switch s {
	case SiteEntry:
		return "entry"
	case SiteExit:
		return "exit"
	case SiteLoad:
		return "load"
	case SiteStore:
		return "store"
	}
	return fmt.Sprintf("site(%d)", uint32(s))
}

// Program is one device probe program of an object.
type Program struct {
	Name    string // the C function's name
	Section string
	Site    Site
	Kernel  string // kernel name or path.Match glob ("*": every kernel)
	// FirstBlock (an entry program of section gpu/entry_block0/<k>) runs in
	// block (0, 0, 0) of each launch only: the kernel's other blocks branch
	// around its site on their block index (devrt/ptx's
	// Probe.FirstBlock), so a probe of the launch's start costs the
	// others' warps a uniform test, not its body.
	FirstBlock bool
	// PerThread (an entry program of section gpu/entry_thread/<k>) runs in
	// every thread, with no leader elected, even at warp level; what it
	// returns, carried to the exits (ctx->entry_ret), is each thread's
	// own, and no shfl waits for it: a value that only one thread needs
	// at its exit, such as the ring record block_sched's thread 0 claims
	// at entry, costs the block no wait before its work.
	PerThread bool
	Insns     []Insn
}

// firstBlockEntry is the site of gpu/entry_block0/<k>, threadEntry of
// gpu/entry_thread/<k>.
const (
	firstBlockEntry = "entry_block0"
	threadEntry     = "entry_thread"
)

// FirstBlockSection tells whether sec attaches an entry probe to block
// (0, 0, 0) only.
func FirstBlockSection(sec string) bool {
	return strings.HasPrefix(sec, "gpu/"+firstBlockEntry+"/")
}

// ThreadSection tells whether sec attaches an entry probe run per thread.
func ThreadSection(sec string) bool {
	return strings.HasPrefix(sec, "gpu/"+threadEntry+"/")
}

// Object is the probe programs and maps of one eBPF ELF object.
type Object struct {
	Programs []Program
	Maps     []gpumap.Def
	// ringMaps are the standard BPF_MAP_TYPE_RINGBUF maps: their size is in
	// bytes and their payload is the largest record the programs write.
	ringBytes map[string]uint32
}

// ParseSection splits a section name into the attach site and kernel glob:
// gpu/entry/<k>, gpu/exit/<k>, gpu/load/<k>, gpu/store/<k>, and bpftime's
// kprobe/<k> (entry) and kretprobe/<k> (exit). <k> is a mangled kernel name
// or a path.Match glob. gpu/entry_block0/<k> is an entry probe that runs in
// block (0, 0, 0) of each launch only (FirstBlockSection), gpu/entry_thread/<k>
// one that runs in every thread (ThreadSection).
func ParseSection(sec string) (Site, string, error) {
	var site Site
	var rest string
	switch {
	case strings.HasPrefix(sec, "gpu/"):
		kind, k, ok := strings.Cut(strings.TrimPrefix(sec, "gpu/"), "/")
		if !ok {
			return 0, "", fmt.Errorf("section %q: want gpu/<entry|entry_block0|entry_thread|exit|load|store>/<kernel>", sec)
		}
		switch kind {
		case "entry", firstBlockEntry, threadEntry:
			site = SiteEntry
		case "exit":
			site = SiteExit
		case "load":
			site = SiteLoad
		case "store":
			site = SiteStore
		default:
			return 0, "", fmt.Errorf("section %q: unknown site %q (entry, entry_block0, entry_thread, exit, load, store)", sec, kind)
		}
		rest = k
	case strings.HasPrefix(sec, "kprobe/"):
		site, rest = SiteEntry, strings.TrimPrefix(sec, "kprobe/")
	case strings.HasPrefix(sec, "kretprobe/"):
		site, rest = SiteExit, strings.TrimPrefix(sec, "kretprobe/")
	default:
		return 0, "", fmt.Errorf("section %q is not a device probe (gpu/<site>/<kernel>, kprobe/<kernel>, kretprobe/<kernel>)", sec)
	}
	if rest == "" {
		return 0, "", fmt.Errorf("section %q names no kernel (use * for every kernel)", sec)
	}
	if _, err := path.Match(rest, ""); err != nil {
		return 0, "", fmt.Errorf("section %q: bad kernel glob: %w", sec, err)
	}
	return site, rest, nil
}

// MatchKernel reports whether the program attaches to kernel.
func (p Program) MatchKernel(kernel string) bool {
	ok, _ := path.Match(p.Kernel, kernel)
	return ok
}

// Standard BPF map types that map onto GPU maps.
const (
	bpfMapHash    = 1
	bpfMapArray   = 2
	bpfMapRingbuf = 27
)

// LoadObject reads an eBPF ELF object (clang -target bpf) without loading
// anything into the kernel: its device probe programs (by section name) and
// its maps as GPU map definitions.
//
// A malformed object is an error, never a crash: section sizes and .BTF.ext
// record counts are checked first (cilium/ebpf allocates what they say) and a
// panic inside cilium/ebpf's ELF or BTF reader becomes an error.
func LoadObject(r io.ReaderAt) (obj *Object, err error) {
	if err := checkELF(r); err != nil {
		return nil, fmt.Errorf("read eBPF object: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			obj, err = nil, fmt.Errorf("read eBPF object: malformed (%v)", p)
		}
	}()
	spec, err := ebpf.LoadCollectionSpecFromReader(r)
	if err != nil {
		return nil, fmt.Errorf("read eBPF object: %w", err)
	}
	return FromSpec(spec)
}

// FromSpec converts a parsed collection.
func FromSpec(spec *ebpf.CollectionSpec) (*Object, error) {
	obj := &Object{ringBytes: map[string]uint32{}}
	for _, n := range slices.Sorted(maps.Keys(spec.Maps)) {
		ms := spec.Maps[n]
		d, err := mapDef(ms)
		if err != nil {
			return nil, err
		}
		if ms.Type == bpfMapRingbuf {
			obj.ringBytes[n] = ms.MaxEntries
		}
		obj.Maps = append(obj.Maps, d)
	}
	for _, n := range slices.Sorted(maps.Keys(spec.Programs)) {
		ps := spec.Programs[n]
		site, kernel, err := ParseSection(ps.SectionName)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", n, err)
		}
		raw, refs, err := marshal(ps.Instructions)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", n, err)
		}
		insns, err := Decode(raw, refs)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", n, err)
		}
		lineInfo(ps.Instructions, insns)
		obj.Programs = append(obj.Programs, Program{Name: n, Section: ps.SectionName, Site: site, Kernel: kernel,
			FirstBlock: FirstBlockSection(ps.SectionName), PerThread: ThreadSection(ps.SectionName), Insns: insns})
	}
	if len(obj.Programs) == 0 {
		return nil, fmt.Errorf("object has no device probe programs")
	}
	return obj, nil
}

func mapDef(ms *ebpf.MapSpec) (gpumap.Def, error) {
	d := gpumap.Def{Name: ms.Name, KeySize: ms.KeySize, ValueSize: ms.ValueSize, MaxEntries: ms.MaxEntries}
	switch t := uint32(ms.Type); t {
	case bpfMapHash:
		d.Type = gpumap.Hash
	case bpfMapArray:
		d.Type = gpumap.Array
	case bpfMapRingbuf, uint32(gpumap.Ringbuf):
		d.Type = gpumap.Ringbuf
		if t == bpfMapRingbuf {
			d.KeySize, d.ValueSize = 0, 0 // set from the programs' records
		}
		if ms.MapExtra > gpumap.MaxShards || ms.MapExtra&(ms.MapExtra-1) != 0 {
			return d, fmt.Errorf("map %s: map_extra (shards) %d: a power of two up to %d", ms.Name, ms.MapExtra, gpumap.MaxShards)
		}
		d.Shards = uint32(ms.MapExtra)
	case uint32(gpumap.Hash), uint32(gpumap.Array):
		d.Type = gpumap.Type(t)
	case uint32(gpumap.PerThreadArray), uint32(gpumap.PerWarpArray), uint32(gpumap.PerSMArray), uint32(gpumap.PerBlockArray):
		d.Type = gpumap.Type(t)
		if ms.MapExtra > 1<<24 {
			return d, fmt.Errorf("map %s: map_extra (copies) %d too large", ms.Name, ms.MapExtra)
		}
		d.Copies = uint32(ms.MapExtra)
	default:
		return d, fmt.Errorf("map %s: type %d is not a GPU map (hash, array, ringbuf, or %d..%d)", ms.Name, t, gpumap.Hash, gpumap.PerBlockArray)
	}
	if d.Type == gpumap.Ringbuf && ms.KeySize != 0 && uint32(ms.Type) == uint32(gpumap.Ringbuf) {
		d.KeySize = 0
	}
	for _, kv := range ms.Contents {
		b, ok := kv.Value.([]byte)
		if !ok || bytes.ContainsFunc(b, func(r rune) bool { return r != 0 }) {
			return d, fmt.Errorf("map %s: initial contents are not supported (GPU maps start zeroed)", ms.Name)
		}
	}
	return d, nil
}

// marshal encodes cilium's instructions back to raw bytecode (jump and
// call references resolved) and records which raw slot loads which map.
func marshal(insns asm.Instructions) ([]byte, map[int]string, error) {
	insns = slices.Clone(insns)
	refs := map[int]string{}
	iter := insns.Iterate()
	for iter.Next() {
		ins := iter.Ins
		if ins.IsLoadFromMap() {
			refs[int(iter.Offset)] = ins.Reference()
		}
		if ins.IsBuiltinCall() && ins.Constant < 0 {
			return nil, nil, fmt.Errorf("raw insn %d: helper id %d", iter.Offset, ins.Constant)
		}
	}
	var buf bytes.Buffer
	if err := insns.Marshal(&buf, binary.LittleEndian); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), refs, nil
}

func lineInfo(src asm.Instructions, out []Insn) {
	i := 0
	for _, ins := range src {
		if i >= len(out) {
			return
		}
		if s := ins.Source(); s != nil {
			out[i].Line = strings.TrimSpace(s.String())
		}
		i++
	}
}

// Only returns a copy of o with just the named programs (in that order),
// or an error naming one it lacks.
func (o *Object) Only(names ...string) (*Object, error) {
	out := &Object{Maps: o.Maps, ringBytes: o.ringBytes}
	for _, n := range names {
		found := false
		for _, p := range o.Programs {
			if p.Name == n {
				out.Programs = append(out.Programs, p)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("object has no program %q", n)
		}
	}
	return out, nil
}
