package uvmfentry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

// Module is the kernel module traced.
const Module = "nvidia_uvm"

// DefaultRingBufferSize is the ring's size when Options leaves it 0: about
// 80,000 records, a few fault storms' worth between two reads.
const DefaultRingBufferSize = 8 << 20

// Options configures Open. The zero value is the default.
type Options struct {
	// RingBufferSize is the ring's size in bytes: a power of two, at least
	// a page. 0 means DefaultRingBufferSize.
	RingBufferSize int
	// FilterPIDs sends the records of processes added with Track only
	// (and those of no process: batches, replays, root chunk evictions).
	FilterPIDs bool
	// Root is where sys/ and proc/ are read ("" means /): tests point it
	// at a fake tree.
	Root string
}

// Probe owns the loaded programs, their links and the ring reader.
type Probe struct {
	coll    *ebpf.Collection
	mu      sync.Mutex // links: detached by Drain or Close
	links   []link.Link
	rd      *ringbuf.Reader
	skipped []Skipped
	bad     atomic.Uint64
	closed  atomic.Bool
}

// Drops counts records the kernel side could not deliver.
type Drops struct {
	// RingFull: the ring had no room (the reader fell behind).
	RingFull uint64
	// Unmatched: a timed record whose entry was not seen (attached
	// mid-call, or the entry table was full); sent without a start.
	Unmatched uint64
	// EntryTableFull: an entry time that could not be stored.
	EntryTableFull uint64
}

// Open checks that nvidia_uvm and its BTF are there and that every
// required function can be traced, then loads and attaches the programs.
// Optional hooks that cannot be attached in this driver are skipped
// (Skipped says which and why). Errors wrap ErrModuleNotLoaded,
// ErrNoModuleBTF, ErrFunctionMissing or ErrKernelRefused.
func Open(opts Options) (*Probe, error) {
	if runtime.GOOS != "linux" {
		return nil, ErrUnsupported
	}
	root := opts.Root
	if root == "" {
		root = "/"
	}
	size := opts.RingBufferSize
	if size == 0 {
		size = DefaultRingBufferSize
	}
	if size < os.Getpagesize() || size&(size-1) != 0 {
		return nil, fmt.Errorf("uvmfentry: ring buffer size %d is not a power of two of at least a page", size)
	}
	pl, err := prepare(root)
	if err != nil {
		return nil, err
	}
	spec, err := bpf.LoadUvm()
	if err != nil {
		return nil, err
	}
	p := &Probe{skipped: pl.skipped}
	for _, sk := range pl.skipped {
		delete(spec.Programs, sk.Hook.Program)
	}
	spec.Maps["uvm_events"].MaxEntries = uint32(size)
	if err := spec.Variables["filter_pids"].Set(opts.FilterPIDs); err != nil {
		return nil, err
	}
	_ = rlimit.RemoveMemlock()
	// The specs read above are the running kernel's: relocating against
	// them (rather than letting the library read every module's BTF) is
	// faster and relocates exactly what was checked.
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{KernelTypes: pl.vmlinux, ExtraRelocationTargets: []*btf.Spec{pl.mod}},
	})
	if err != nil {
		return nil, refused(root, "load", err)
	}
	p.coll = coll
	for _, h := range Hooks {
		prog := coll.Programs[h.Program]
		if prog == nil {
			continue // skipped
		}
		at := ebpf.AttachTraceFEntry
		if h.Exit {
			at = ebpf.AttachTraceFExit
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: at})
		if err != nil {
			_ = p.Close()
			return nil, refused(root, "attach "+h.Function, err)
		}
		p.links = append(p.links, l)
	}
	if p.rd, err = ringbuf.NewReader(coll.Maps["uvm_events"]); err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("uvmfentry: open ring: %w", err)
	}
	return p, nil
}

// plan is what Open found before loading anything.
type plan struct {
	vmlinux, mod *btf.Spec
	skipped      []Skipped
}

// prepare checks the module, its BTF and every hook's function.
func prepare(root string) (*plan, error) {
	vmlinux, mod, syms, err := inspect(root)
	if err != nil {
		return nil, err
	}
	pl := &plan{vmlinux: vmlinux, mod: mod}
	for _, h := range Hooks {
		reason := h.Check(mod, syms)
		if reason == "" {
			continue
		}
		if h.Required {
			return nil, fmt.Errorf("%w: %s: %s", ErrFunctionMissing, h.Function, reason)
		}
		pl.skipped = append(pl.skipped, Skipped{Hook: h, Reason: reason})
	}
	return pl, nil
}

// inspect reads the module's BTF and symbols under root.
func inspect(root string) (vmlinux, mod *btf.Spec, syms Symbols, err error) {
	modDir := filepath.Join(root, "sys", "module", Module)
	if _, err := os.Stat(modDir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil, fmt.Errorf("%w (%s does not exist)", ErrModuleNotLoaded, modDir)
		}
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrModuleNotLoaded, err)
	}
	modBTF := filepath.Join(root, "sys", "kernel", "btf", Module)
	mf, err := os.Open(modBTF)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil, fmt.Errorf("%w (%s does not exist: a kernel without CONFIG_DEBUG_INFO_BTF_MODULES, or a module built without BTF)", ErrNoModuleBTF, modBTF)
		}
		return nil, nil, nil, fmt.Errorf("%w: %v", ErrNoModuleBTF, err)
	}
	defer mf.Close()
	vf, err := os.Open(filepath.Join(root, "sys", "kernel", "btf", "vmlinux"))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: the kernel's own BTF: %v", ErrNoModuleBTF, err)
	}
	defer vf.Close()
	if vmlinux, err = btf.LoadSpecFromReader(vf); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: parse the kernel's BTF: %v", ErrNoModuleBTF, err)
	}
	if mod, err = btf.LoadSplitSpecFromReader(mf, vmlinux); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: parse %s: %v", ErrNoModuleBTF, modBTF, err)
	}
	// Without kallsyms (a container that hides it) the symbol check is
	// skipped: the kernel still refuses a target without a symbol, only
	// with a less specific error.
	if kf, err := os.Open(filepath.Join(root, "proc", "kallsyms")); err == nil {
		syms, err = ReadSymbols(kf, Module)
		kf.Close()
		if err != nil || len(syms) == 0 {
			syms = nil
		}
	}
	return vmlinux, mod, syms, nil
}

// refused wraps a load or attach error in ErrKernelRefused, saying why
// where the kernel gives a reason to guess: EPERM under lockdown is the
// common case on Secure Boot machines.
func refused(root, what string, err error) error {
	if !errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: %s: %v", ErrKernelRefused, what, err)
	}
	if mode := LockdownMode(root); mode != "" && mode != "none" {
		return fmt.Errorf("%w: %s: %v (kernel lockdown is in %s mode, which refuses BPF tracing of kernel functions)", ErrKernelRefused, what, err, mode)
	}
	if tracingCapable(root) {
		return fmt.Errorf("%w: %s: %v (the collector has CAP_BPF and CAP_PERFMON, so most likely kernel lockdown; "+
			"mount securityfs to read its mode in /sys/kernel/security/lockdown)", ErrKernelRefused, what, err)
	}
	return fmt.Errorf("%w: %s: %v (needs CAP_BPF and CAP_PERFMON, or root)", ErrKernelRefused, what, err)
}

// tracingCapable reports whether this process's effective capabilities
// (root/proc/self/status) include CAP_BPF and CAP_PERFMON, or
// CAP_SYS_ADMIN.
func tracingCapable(root string) bool {
	b, err := os.ReadFile(filepath.Join(root, "proc", "self", "status"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				return false
			}
			const sysAdmin, perfmon, bpf = 21, 38, 39
			return caps&(1<<sysAdmin) != 0 || caps&(1<<perfmon) != 0 && caps&(1<<bpf) != 0
		}
	}
	return false
}

// LockdownMode is the kernel's lockdown mode (none, integrity,
// confidentiality), "" when the kernel does not say.
func LockdownMode(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "sys", "kernel", "security", "lockdown"))
	if err != nil {
		return ""
	}
	s := string(b)
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

// Skipped lists the optional hooks not attached in this driver.
func (p *Probe) Skipped() []Skipped { return p.skipped }

// Run reads records until Close, or until Drain and the end of the ring,
// passing each to handle on the calling goroutine. Records that do not
// decode are counted (Malformed) and skipped.
func (p *Probe) Run(handle func(Record)) error {
	var rec ringbuf.Record
	for {
		if err := p.rd.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, ringbuf.ErrFlushed) {
				return nil
			}
			return fmt.Errorf("uvmfentry: read ring: %w", err)
		}
		r, err := Decode(rec.RawSample)
		if err != nil {
			p.bad.Add(1)
			continue
		}
		handle(r)
	}
}

// Track adds pid to the processes whose records are sent (Options.FilterPIDs).
func (p *Probe) Track(pid uint32) error {
	return p.coll.Maps["uvm_pids"].Update(pid, uint8(1), ebpf.UpdateAny)
}

// Untrack removes pid (no error if it was not there).
func (p *Probe) Untrack(pid uint32) {
	_ = p.coll.Maps["uvm_pids"].Delete(pid)
}

// Drops sums the kernel side's drop counters over the CPUs.
func (p *Probe) Drops() Drops {
	sum := func(reason uint32) uint64 {
		var per []uint64
		if err := p.coll.Maps["uvm_drops"].Lookup(reason, &per); err != nil {
			return 0
		}
		var n uint64
		for _, v := range per {
			n += v
		}
		return n
	}
	return Drops{RingFull: sum(dropRingFull), EntryTableFull: sum(dropInflightFull), Unmatched: sum(dropUnmatched)}
}

// Indexes of the drops map (enum gpuext_drop).
const (
	dropRingFull     = 0
	dropInflightFull = 1
	dropUnmatched    = 2
)

// Malformed is the number of records that did not decode.
func (p *Probe) Malformed() uint64 { return p.bad.Load() }

// Drain detaches the programs, so that nothing is added to the ring, and
// makes Run return once it has read every record the ring holds: at
// shutdown, what the driver did up to then is accounted, not dropped with
// the ring. Close afterwards releases the rest.
func (p *Probe) Drain() error {
	if p.closed.Load() {
		return fmt.Errorf("uvmfentry: drain: %w", os.ErrClosed)
	}
	errs := []error{p.detach()}
	if p.rd != nil {
		errs = append(errs, p.rd.Flush())
	}
	return errors.Join(errs...)
}

// detach closes the links, once.
func (p *Probe) detach() error {
	p.mu.Lock()
	links := p.links
	p.links = nil
	p.mu.Unlock()
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// Close detaches the programs and stops Run.
func (p *Probe) Close() error {
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	if p.rd != nil {
		errs = append(errs, p.rd.Close())
	}
	errs = append(errs, p.detach())
	if p.coll != nil {
		p.coll.Close()
	}
	return errors.Join(errs...)
}
