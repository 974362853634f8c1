package gpuext

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
)

// Eviction is the memory policy's eviction algorithm (enum gpuext_evict_algo).
type Eviction uint32

const (
	EvictLRU      = Eviction(policy.ParamsGpuextEvictAlgoGPUEXT_EVICT_LRU)
	EvictLFU      = Eviction(policy.ParamsGpuextEvictAlgoGPUEXT_EVICT_LFU)
	EvictMRU      = Eviction(policy.ParamsGpuextEvictAlgoGPUEXT_EVICT_MRU)
	EvictFIFO     = Eviction(policy.ParamsGpuextEvictAlgoGPUEXT_EVICT_FIFO)
	EvictPriority = Eviction(policy.ParamsGpuextEvictAlgoGPUEXT_EVICT_PRIORITY)
	evictMax      = Eviction(policy.ParamsGpuextEvictAlgoGPUEXT_EVICT_MAX)
)

var evictionNames = []string{"lru", "lfu", "mru", "fifo", "priority"}

func (e Eviction) String() string {
	if e < evictMax {
		return evictionNames[e]
	}
	return "eviction(" + strconv.FormatUint(uint64(e), 10) + ")"
}

// ParseEviction accepts lru, lfu, mru, fifo, priority.
func ParseEviction(s string) (Eviction, error) {
	for i, n := range evictionNames {
		if s == n {
			return Eviction(i), nil
		}
	}
	return 0, fmt.Errorf("eviction %q: want one of %s", s, strings.Join(evictionNames, ", "))
}

// Prefetch is the memory policy's prefetch algorithm (enum gpuext_prefetch_algo).
type Prefetch uint32

const (
	PrefetchDefault    = Prefetch(policy.ParamsGpuextPrefetchAlgoGPUEXT_PREFETCH_DEFAULT)
	PrefetchNone       = Prefetch(policy.ParamsGpuextPrefetchAlgoGPUEXT_PREFETCH_NONE)
	PrefetchAlwaysMax  = Prefetch(policy.ParamsGpuextPrefetchAlgoGPUEXT_PREFETCH_ALWAYS_MAX)
	PrefetchSequential = Prefetch(policy.ParamsGpuextPrefetchAlgoGPUEXT_PREFETCH_SEQUENTIAL)
	PrefetchStride     = Prefetch(policy.ParamsGpuextPrefetchAlgoGPUEXT_PREFETCH_STRIDE)
	PrefetchThreshold  = Prefetch(policy.ParamsGpuextPrefetchAlgoGPUEXT_PREFETCH_THRESHOLD)
	prefetchMax        = Prefetch(policy.ParamsGpuextPrefetchAlgoGPUEXT_PREFETCH_MAX)
)

var prefetchNames = []string{"default", "none", "always_max", "sequential", "stride", "threshold"}

func (p Prefetch) String() string {
	if p < prefetchMax {
		return prefetchNames[p]
	}
	return "prefetch(" + strconv.FormatUint(uint64(p), 10) + ")"
}

// ParsePrefetch accepts default, none, always_max, sequential, stride,
// threshold: the names the gpupolicy processor advises with.
func ParsePrefetch(s string) (Prefetch, error) {
	for i, n := range prefetchNames {
		if s == n {
			return Prefetch(i), nil
		}
	}
	return 0, fmt.Errorf("prefetch %q: want one of %s", s, strings.Join(prefetchNames, ", "))
}

// Bounds of the parameters (gpu_ext_policy.h).
const (
	MaxPriority       = 7
	MaxStrideConf     = 15
	MaxStrideAhead    = 64
	BlockPages        = 512
	TimesliceMinUS    = 100
	TimesliceMaxUS    = 10_000_000
	SchedClasses      = 8
	commLen           = 16
	defaultThreshold  = 51
	defaultStrideConf = 2
	defaultStrideAhd  = 4
	defaultLFUHot     = 2
)

// MemParams are every parameter of the memory policy (struct gpuext_mem_cfg).
type MemParams struct {
	Eviction            Eviction
	Prefetch            Prefetch
	SequentialPages     uint32 // sequential: pages from the faulting one; 0 = to the block's end
	StrideMinConfidence uint32 // stride: repeats of a stride before prefetching (1..15)
	StrideAhead         uint32 // stride: strides prefetched (1..64)
	ThresholdPercent    uint32 // threshold: a tree node more than this % in is prefetched (0..100)
	LFUHot              uint32 // lfu: candidates with at least this many accesses are spared (>= 1)
	LFUDecayPeriod      uint32 // lfu: counts halve every this many accesses; 0 = never
	ProtectPriority     uint32 // priority: owners at or above are spared (1..7)
	DefaultPriority     uint32 // priority: owners in no map (0..7)
}

// DefaultMemParams is LRU with the driver's prefetch and sane values for the rest.
func DefaultMemParams() MemParams {
	return MemParams{
		Eviction: EvictLRU, Prefetch: PrefetchDefault,
		StrideMinConfidence: defaultStrideConf, StrideAhead: defaultStrideAhd,
		ThresholdPercent: defaultThreshold, LFUHot: defaultLFUHot, ProtectPriority: 1,
	}
}

// Validate names the first field out of its bounds.
func (p MemParams) Validate() error {
	var errs []error
	if p.Eviction >= evictMax {
		errs = append(errs, fmt.Errorf("eviction %d: want one of %s", p.Eviction, strings.Join(evictionNames, ", ")))
	}
	if p.Prefetch >= prefetchMax {
		errs = append(errs, fmt.Errorf("prefetch %d: want one of %s", p.Prefetch, strings.Join(prefetchNames, ", ")))
	}
	if p.SequentialPages > BlockPages {
		errs = append(errs, fmt.Errorf("sequential pages %d: want 0..%d", p.SequentialPages, BlockPages))
	}
	if p.StrideMinConfidence < 1 || p.StrideMinConfidence > MaxStrideConf {
		errs = append(errs, fmt.Errorf("stride confidence %d: want 1..%d", p.StrideMinConfidence, MaxStrideConf))
	}
	if p.StrideAhead < 1 || p.StrideAhead > MaxStrideAhead {
		errs = append(errs, fmt.Errorf("stride ahead %d: want 1..%d", p.StrideAhead, MaxStrideAhead))
	}
	if p.ThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("threshold %d%%: want 0..100", p.ThresholdPercent))
	}
	if p.LFUHot < 1 {
		errs = append(errs, fmt.Errorf("lfu hot %d: want >= 1", p.LFUHot))
	}
	if p.ProtectPriority < 1 || p.ProtectPriority > MaxPriority {
		errs = append(errs, fmt.Errorf("protect priority %d: want 1..%d", p.ProtectPriority, MaxPriority))
	}
	if p.DefaultPriority > MaxPriority {
		errs = append(errs, fmt.Errorf("default priority %d: want 0..%d", p.DefaultPriority, MaxPriority))
	}
	return errors.Join(errs...)
}

func (p MemParams) record() policy.ParamsGpuextMemCfg {
	return policy.ParamsGpuextMemCfg{
		Eviction: uint32(p.Eviction), Prefetch: uint32(p.Prefetch),
		SeqPages: p.SequentialPages, StrideMinConf: p.StrideMinConfidence, StrideAhead: p.StrideAhead,
		ThresholdPct: p.ThresholdPercent, LfuHot: p.LFUHot, LfuDecayPeriod: p.LFUDecayPeriod,
		ProtectPriority: p.ProtectPriority, DefaultPriority: p.DefaultPriority,
	}
}

func memParamsFrom(r policy.ParamsGpuextMemCfg) MemParams {
	return MemParams{
		Eviction: Eviction(r.Eviction), Prefetch: Prefetch(r.Prefetch),
		SequentialPages: r.SeqPages, StrideMinConfidence: r.StrideMinConf, StrideAhead: r.StrideAhead,
		ThresholdPercent: r.ThresholdPct, LFUHot: r.LfuHot, LFUDecayPeriod: r.LfuDecayPeriod,
		ProtectPriority: r.ProtectPriority, DefaultPriority: r.DefaultPriority,
	}
}

// Owner is whose memory a priority applies to: a process or a cgroup.
type Owner struct {
	PID    uint32
	Cgroup uint64
}

func (o Owner) validate() error {
	if (o.PID == 0) == (o.Cgroup == 0) {
		return errors.New("owner: want exactly one of a pid or a cgroup id")
	}
	return nil
}

func (o Owner) String() string {
	if o.PID != 0 {
		return "pid " + strconv.FormatUint(uint64(o.PID), 10)
	}
	return "cgroup " + strconv.FormatUint(o.Cgroup, 10)
}

// Class is a scheduling class, 0..7; 0 is the default class.
type Class uint32

const (
	ClassDefault = Class(policy.ParamsGpuextSchedClassGPUEXT_CLASS_DEFAULT)
	ClassLC      = Class(policy.ParamsGpuextSchedClassGPUEXT_CLASS_LC)
	ClassBE      = Class(policy.ParamsGpuextSchedClassGPUEXT_CLASS_BE)
)

var classNames = map[string]Class{"default": ClassDefault, "lc": ClassLC, "be": ClassBE}

func (c Class) String() string {
	for n, v := range classNames {
		if v == c {
			return n
		}
	}
	return strconv.FormatUint(uint64(c), 10)
}

// ParseClass accepts default, lc, be or a number 0..7.
func ParseClass(s string) (Class, error) {
	if c, ok := classNames[s]; ok {
		return c, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n >= SchedClasses {
		return 0, fmt.Errorf("class %q: want default, lc, be or 0..%d", s, SchedClasses-1)
	}
	return Class(n), nil
}

// Interleave is enum gpuext_interleave.
type Interleave uint32

const (
	InterleaveDefault Interleave = iota
	InterleaveLow
	InterleaveMedium
	InterleaveHigh
)

var interleaveNames = []string{"default", "low", "medium", "high"}

func (i Interleave) String() string {
	if int(i) < len(interleaveNames) {
		return interleaveNames[i]
	}
	return "interleave(" + strconv.FormatUint(uint64(i), 10) + ")"
}

// ParseInterleave accepts default, low, medium, high.
func ParseInterleave(s string) (Interleave, error) {
	for i, n := range interleaveNames {
		if s == n {
			return Interleave(i), nil
		}
	}
	return 0, fmt.Errorf("interleave %q: want one of %s", s, strings.Join(interleaveNames, ", "))
}

// ClassParams is what a class asks the driver for (struct gpuext_class_params).
type ClassParams struct {
	TimesliceUS uint64     // 0: the driver's; else TimesliceMinUS..TimesliceMaxUS
	Interleave  Interleave // InterleaveDefault: the driver's
	Reject      bool       // refuse the class's binds
}

func (c ClassParams) validate() error {
	if c.TimesliceUS != 0 && (c.TimesliceUS < TimesliceMinUS || c.TimesliceUS > TimesliceMaxUS) {
		return fmt.Errorf("timeslice %d µs: want 0 or %d..%d", c.TimesliceUS, TimesliceMinUS, TimesliceMaxUS)
	}
	if c.Interleave > InterleaveHigh {
		return fmt.Errorf("interleave %d: want one of %s", c.Interleave, strings.Join(interleaveNames, ", "))
	}
	return nil
}

func (c ClassParams) record() policy.ParamsGpuextClassParams {
	r := policy.ParamsGpuextClassParams{TimesliceUs: c.TimesliceUS, Interleave: uint32(c.Interleave)}
	if c.Reject {
		r.Reject = 1
	}
	return r
}

// Task selects channel groups for a class: by pid, cgroup id or comm (exactly one).
type Task struct {
	PID    uint32
	Cgroup uint64
	Comm   string // up to 15 bytes, matched exactly
}

func (t Task) validate() error {
	n := 0
	for _, set := range []bool{t.PID != 0, t.Cgroup != 0, t.Comm != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("task: want exactly one of a pid, a cgroup id or a comm")
	}
	if len(t.Comm) >= commLen {
		return fmt.Errorf("comm %q: longer than %d bytes", t.Comm, commLen-1)
	}
	return nil
}

func (t Task) String() string {
	switch {
	case t.PID != 0:
		return "pid " + strconv.FormatUint(uint64(t.PID), 10)
	case t.Cgroup != 0:
		return "cgroup " + strconv.FormatUint(t.Cgroup, 10)
	}
	return "comm " + strconv.Quote(t.Comm)
}

func commKey(s string) policy.ParamsGpuextCommKey {
	var k policy.ParamsGpuextCommKey
	for i := 0; i < len(s) && i < commLen-1; i++ {
		k.Comm[i] = int8(s[i])
	}
	return k
}

func commString(k policy.ParamsGpuextCommKey) string {
	b := make([]byte, 0, commLen)
	for _, c := range k.Comm {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// SchedParams are every parameter of the scheduling policy.
type SchedParams struct {
	DefaultClass Class                 // class of tasks no rule names
	Classes      map[Class]ClassParams // classes not listed ask nothing
	Rules        map[Task]Class
}

// LCBE is the usual latency-critical/best-effort split: LC tasks get long
// timeslices (lcUS), BE tasks short ones (beUS).
func LCBE(lcUS, beUS uint64) SchedParams {
	return SchedParams{Classes: map[Class]ClassParams{
		ClassLC: {TimesliceUS: lcUS},
		ClassBE: {TimesliceUS: beUS},
	}, Rules: map[Task]Class{}}
}

// Validate names the first class or rule out of bounds.
func (p SchedParams) Validate() error {
	var errs []error
	if p.DefaultClass >= SchedClasses {
		errs = append(errs, fmt.Errorf("default class %d: want 0..%d", p.DefaultClass, SchedClasses-1))
	}
	classes := make([]Class, 0, len(p.Classes))
	for c := range p.Classes {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i] < classes[j] })
	for _, c := range classes {
		if c >= SchedClasses {
			errs = append(errs, fmt.Errorf("class %d: want 0..%d", c, SchedClasses-1))
			continue
		}
		if err := p.Classes[c].validate(); err != nil {
			errs = append(errs, fmt.Errorf("class %s: %w", c, err))
		}
	}
	for t, c := range p.Rules {
		if err := t.validate(); err != nil {
			errs = append(errs, err)
		}
		if c >= SchedClasses {
			errs = append(errs, fmt.Errorf("%s: class %d: want 0..%d", t, c, SchedClasses-1))
		}
	}
	return errors.Join(errs...)
}
