package gpuext

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
)

// Kind is which of the module's two struct_ops a policy implements.
type Kind string

const (
	Mem   Kind = "mem"
	Sched Kind = "sched"
)

// ParseKind accepts mem and sched.
func ParseKind(s string) (Kind, error) {
	switch Kind(s) {
	case Mem, Sched:
		return Kind(s), nil
	}
	return "", fmt.Errorf("policy kind %q: want mem or sched", s)
}

// The link pin's name inside <BPFFS>/<kind>/; every other pin is a map,
// named as in the C source.
const linkPin = "link"

// ErrAttached says a policy of that kind is already attached (pinned here,
// or attached by someone else: the module takes one per kind).
var ErrAttached = errors.New("a policy of this kind is already attached")

// ErrNotAttached says no pinned policy of that kind was found.
var ErrNotAttached = errors.New("no policy of this kind is attached")

// Loader loads, pins, tunes, reports and detaches policies.
type Loader struct {
	Paths Paths
}

// New returns a loader over the real kernel's paths.
func New() *Loader { return &Loader{Paths: DefaultPaths} }

func (l *Loader) dir(k Kind) string { return filepath.Join(l.Paths.BPFFS, string(k)) }

// AttachMem loads the memory policy with p, attaches it under name and pins
// it, so it stays attached after the caller exits.
func (l *Loader) AttachMem(name string, p MemParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	spec, err := policy.MemSpec(name)
	if err != nil {
		return err
	}
	return l.attach(Mem, spec, func(c *ebpf.Collection) error {
		return c.Maps["mem_cfg"].Put(uint32(0), p.record())
	})
}

// AttachSched loads the scheduling policy with p, attaches and pins it.
func (l *Loader) AttachSched(name string, p SchedParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	spec, err := policy.SchedSpec(name)
	if err != nil {
		return err
	}
	return l.attach(Sched, spec, func(c *ebpf.Collection) error {
		return writeSched(c.Maps, p)
	})
}

func (l *Loader) attach(k Kind, spec *ebpf.CollectionSpec, configure func(*ebpf.Collection) error) (err error) {
	if err := CheckModule(l.Paths); err != nil {
		return err
	}
	dir := l.dir(k)
	if _, err := os.Stat(filepath.Join(dir, linkPin)); err == nil {
		return fmt.Errorf("%w: %s is pinned; detach it first", ErrAttached, filepath.Join(dir, linkPin))
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return fmt.Errorf("load %s policy: %w", k, verifierDetail(err))
	}
	defer coll.Close()
	if err := configure(coll); err != nil {
		return fmt.Errorf("configure %s policy: %w", k, err)
	}
	lk, err := attachStructOps(coll.Maps[policy.OpsMap])
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("%w: the gpu_ext module already has a %s policy (%s); detach it first",
			ErrAttached, k, l.attachedName(k))
	}
	if err != nil {
		return fmt.Errorf("attach %s policy: %w", k, err)
	}
	defer lk.Close()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("pin dir: %w (is bpffs mounted at %s?)", err, filepath.Dir(l.Paths.BPFFS))
	}
	defer func() {
		if err != nil {
			_ = lk.Unpin()
			removePins(dir)
		}
	}()
	for name, m := range coll.Maps {
		if name == policy.OpsMap {
			continue
		}
		if err := m.Pin(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("pin map %s: %w", name, err)
		}
	}
	if err := lk.Pin(filepath.Join(dir, linkPin)); err != nil {
		return fmt.Errorf("pin link: %w", err)
	}
	return nil
}

// Detach detaches the pinned policy of kind k and removes its pins.
func (l *Loader) Detach(k Kind) error {
	dir := l.dir(k)
	lk, err := link.LoadPinnedLink(filepath.Join(dir, linkPin), nil)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: nothing pinned at %s", ErrNotAttached, filepath.Join(dir, linkPin))
	}
	if err != nil {
		return fmt.Errorf("open %s policy link: %w", k, err)
	}
	defer lk.Close()
	// Detach now rather than when the last reference goes, so that the
	// module has no policy when this returns.
	if err := lk.Detach(); err != nil && !errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("detach %s policy: %w", k, err)
	}
	removePins(dir)
	return nil
}

// removePins removes every pin in dir and dir itself.
func removePins(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
	_ = os.Remove(dir)
}

// attachedName is the module's name for the attached policy of kind k.
func (l *Loader) attachedName(k Kind) string {
	raw, err := os.ReadFile(filepath.Join(l.Paths.Sys, ModuleName, string(k)+"_policy"))
	if err != nil {
		return "name unknown: " + err.Error()
	}
	return strings.TrimSpace(string(raw))
}

// verifierDetail puts the verifier's reason into the error text (the
// default %v of a VerifierError keeps only its last line).
func verifierDetail(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("%w\n%+v", err, ve)
	}
	return err
}

func (l *Loader) pinnedMap(k Kind, name string) (*ebpf.Map, error) {
	path := filepath.Join(l.dir(k), name)
	m, err := ebpf.LoadPinnedMap(path, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s", ErrNotAttached, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return m, nil
}

// SetMem replaces every parameter of the running memory policy.
func (l *Loader) SetMem(p MemParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	m, err := l.pinnedMap(Mem, "mem_cfg")
	if err != nil {
		return err
	}
	defer m.Close()
	return m.Put(uint32(0), p.record())
}

// MemParams reads the running memory policy's parameters.
func (l *Loader) MemParams() (MemParams, error) {
	m, err := l.pinnedMap(Mem, "mem_cfg")
	if err != nil {
		return MemParams{}, err
	}
	defer m.Close()
	var r policy.ParamsGpuextMemCfg
	if err := m.Lookup(uint32(0), &r); err != nil {
		return MemParams{}, err
	}
	return memParamsFrom(r), nil
}

// SetPriority gives owner o priority prio (0..7) in the memory policy.
func (l *Loader) SetPriority(o Owner, prio uint32) error {
	if err := o.validate(); err != nil {
		return err
	}
	if prio > MaxPriority {
		return fmt.Errorf("priority %d: want 0..%d", prio, MaxPriority)
	}
	return l.withPrioMap(o, func(m *ebpf.Map, key any) error { return m.Put(key, prio) })
}

// DeletePriority drops owner o's priority (it gets the default again).
func (l *Loader) DeletePriority(o Owner) error {
	if err := o.validate(); err != nil {
		return err
	}
	return l.withPrioMap(o, func(m *ebpf.Map, key any) error { return m.Delete(key) })
}

func (l *Loader) withPrioMap(o Owner, do func(*ebpf.Map, any) error) error {
	name, key := "prio_pid", any(o.PID)
	if o.PID == 0 {
		name, key = "prio_cgroup", any(o.Cgroup)
	}
	m, err := l.pinnedMap(Mem, name)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := do(m, key); err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

// SetPrefetchFor makes pid's faults use prefetch algorithm p whatever the
// policy-wide one is (the gpupolicy processor's per-process advice).
func (l *Loader) SetPrefetchFor(pid uint32, p Prefetch) error {
	if pid == 0 {
		return errors.New("pid: want a number > 0")
	}
	if p >= prefetchMax {
		return fmt.Errorf("prefetch %d: want one of %s", p, strings.Join(prefetchNames, ", "))
	}
	m, err := l.pinnedMap(Mem, "prefetch_pid")
	if err != nil {
		return err
	}
	defer m.Close()
	return m.Put(pid, uint32(p))
}

// ClearPrefetchFor gives pid the policy-wide prefetch algorithm again.
func (l *Loader) ClearPrefetchFor(pid uint32) error {
	m, err := l.pinnedMap(Mem, "prefetch_pid")
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Delete(pid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("pid %d: %w", pid, err)
	}
	return nil
}

// SetSched replaces every parameter of the running scheduling policy: rules
// not in p are removed.
func (l *Loader) SetSched(p SchedParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	maps := map[string]*ebpf.Map{}
	defer func() {
		for _, m := range maps {
			m.Close()
		}
	}()
	for _, name := range schedMaps {
		m, err := l.pinnedMap(Sched, name)
		if err != nil {
			return err
		}
		maps[name] = m
	}
	for _, name := range []string{"class_pid", "class_cgroup", "class_comm"} {
		if err := clearMap(maps[name]); err != nil {
			return fmt.Errorf("clear %s: %w", name, err)
		}
	}
	return writeSched(maps, p)
}

var schedMaps = []string{"sched_cfg", "class_params", "class_pid", "class_cgroup", "class_comm"}

// writeSched writes p into the scheduling policy's maps.
func writeSched(maps map[string]*ebpf.Map, p SchedParams) error {
	if err := maps["sched_cfg"].Put(uint32(0), policy.ParamsGpuextSchedCfg{DefaultClass: uint32(p.DefaultClass)}); err != nil {
		return fmt.Errorf("sched_cfg: %w", err)
	}
	for c := Class(0); c < SchedClasses; c++ {
		if err := maps["class_params"].Put(uint32(c), p.Classes[c].record()); err != nil {
			return fmt.Errorf("class_params %s: %w", c, err)
		}
	}
	for t, c := range p.Rules {
		var err error
		switch {
		case t.PID != 0:
			err = maps["class_pid"].Put(t.PID, uint32(c))
		case t.Cgroup != 0:
			err = maps["class_cgroup"].Put(t.Cgroup, uint32(c))
		default:
			err = maps["class_comm"].Put(commKey(t.Comm), uint32(c))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

func clearMap(m *ebpf.Map) error {
	var keys [][]byte
	k := make([]byte, m.KeySize())
	it := m.Iterate()
	var v []byte
	for it.Next(&k, &v) {
		keys = append(keys, append([]byte(nil), k...))
	}
	if err := it.Err(); err != nil {
		return err
	}
	for _, key := range keys {
		if err := m.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
	}
	return nil
}
