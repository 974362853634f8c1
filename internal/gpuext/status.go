package gpuext

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuextsim"
)

// MemStatNames name the memory policy's counters (enum gpuext_mem_stat order).
var MemStatNames = []string{"activate", "access", "evict", "spared", "prefetch", "region", "stride_hit", "table_full"}

// SchedStatNames name the scheduling policy's per-class counters (enum gpuext_sched_stat order).
var SchedStatNames = []string{"init", "bind", "reject", "destroy"}

// MemStatus is what the pinned memory policy holds.
type MemStatus struct {
	Params     MemParams
	Stats      map[string]uint64 // MemStatNames, summed over CPUs
	Priorities map[Owner]uint32
	Prefetch   map[uint32]Prefetch // per-pid prefetch algorithms
}

// SchedStatus is what the pinned scheduling policy holds.
type SchedStatus struct {
	Params SchedParams
	Stats  map[Class]map[string]uint64 // classes with any count; SchedStatNames
}

// Status is the module's view (attached policy names, per-hook counters)
// and each pinned policy's parameters and counters (nil when none is pinned).
type Status struct {
	MemPolicy   string // /sys/kernel/gpu_ext/mem_policy ("-": none)
	SchedPolicy string
	Hooks       [gpuextsim.HookMax]gpuextsim.HookStats // /sys/kernel/gpu_ext/stats
	Mem         *MemStatus
	Sched       *SchedStatus
}

// Status reads the module's and the pinned policies' state.
func (l *Loader) Status() (Status, error) {
	if err := CheckModule(l.Paths); err != nil {
		return Status{}, err
	}
	var st Status
	dir := filepath.Join(l.Paths.Sys, ModuleName)
	for _, f := range []struct {
		file  string
		parse func(string) error
	}{
		{"mem_policy", func(s string) (err error) { st.MemPolicy, err = gpuextsim.ParsePolicyName(s); return }},
		{"sched_policy", func(s string) (err error) { st.SchedPolicy, err = gpuextsim.ParsePolicyName(s); return }},
		{"stats", func(s string) (err error) { st.Hooks, err = gpuextsim.ParseStats(s); return }},
	} {
		raw, err := os.ReadFile(filepath.Join(dir, f.file))
		if err == nil {
			err = f.parse(string(raw))
		}
		if err != nil {
			return st, fmt.Errorf("gpu_ext %s: %w", f.file, err)
		}
	}
	var err error
	if st.Mem, err = l.memStatus(); err != nil && !errors.Is(err, ErrNotAttached) {
		return st, err
	}
	if st.Sched, err = l.schedStatus(); err != nil && !errors.Is(err, ErrNotAttached) {
		return st, err
	}
	return st, nil
}

func (l *Loader) pinned(k Kind) bool {
	_, err := os.Stat(filepath.Join(l.dir(k), linkPin))
	return err == nil
}

func (l *Loader) memStatus() (*MemStatus, error) {
	if !l.pinned(Mem) {
		return nil, ErrNotAttached
	}
	p, err := l.MemParams()
	if err != nil {
		return nil, err
	}
	ms := &MemStatus{Params: p, Priorities: map[Owner]uint32{}, Prefetch: map[uint32]Prefetch{}}
	if ms.Stats, err = l.perCPUCounters(Mem, "mem_stats", MemStatNames); err != nil {
		return nil, err
	}
	for _, name := range []string{"prio_pid", "prio_cgroup", "prefetch_pid"} {
		m, err := l.pinnedMap(Mem, name)
		if err != nil {
			return nil, err
		}
		it := m.Iterate()
		var prio uint32
		switch name {
		case "prio_pid":
			var pid uint32
			for it.Next(&pid, &prio) {
				ms.Priorities[Owner{PID: pid}] = prio
			}
		case "prefetch_pid":
			var pid, algo uint32
			for it.Next(&pid, &algo) {
				ms.Prefetch[pid] = Prefetch(algo)
			}
		default:
			var cg uint64
			for it.Next(&cg, &prio) {
				ms.Priorities[Owner{Cgroup: cg}] = prio
			}
		}
		err = it.Err()
		m.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return ms, nil
}

// perCPUCounters sums a per-CPU array of u64 counters and names them.
func (l *Loader) perCPUCounters(k Kind, mapName string, names []string) (map[string]uint64, error) {
	m, err := l.pinnedMap(k, mapName)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	out := map[string]uint64{}
	for i, n := range names {
		var per []uint64
		if err := m.Lookup(uint32(i), &per); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", mapName, i, err)
		}
		for _, v := range per {
			out[n] += v
		}
	}
	return out, nil
}

func (l *Loader) schedStatus() (*SchedStatus, error) {
	if !l.pinned(Sched) {
		return nil, ErrNotAttached
	}
	maps := map[string]*ebpf.Map{}
	defer func() {
		for _, m := range maps {
			m.Close()
		}
	}()
	for _, name := range append(schedMaps, "sched_stats") {
		m, err := l.pinnedMap(Sched, name)
		if err != nil {
			return nil, err
		}
		maps[name] = m
	}
	ss := &SchedStatus{Params: SchedParams{Classes: map[Class]ClassParams{}, Rules: map[Task]Class{}},
		Stats: map[Class]map[string]uint64{}}
	var cfg policy.ParamsGpuextSchedCfg
	if err := maps["sched_cfg"].Lookup(uint32(0), &cfg); err != nil {
		return nil, fmt.Errorf("sched_cfg: %w", err)
	}
	ss.Params.DefaultClass = Class(cfg.DefaultClass)
	for c := Class(0); c < SchedClasses; c++ {
		var r policy.ParamsGpuextClassParams
		if err := maps["class_params"].Lookup(uint32(c), &r); err != nil {
			return nil, fmt.Errorf("class_params[%d]: %w", c, err)
		}
		if r != (policy.ParamsGpuextClassParams{}) {
			ss.Params.Classes[c] = ClassParams{TimesliceUS: r.TimesliceUs, Interleave: Interleave(r.Interleave), Reject: r.Reject != 0}
		}
		for i, n := range SchedStatNames {
			var per []uint64
			if err := maps["sched_stats"].Lookup(uint32(c)*uint32(len(SchedStatNames))+uint32(i), &per); err != nil {
				return nil, fmt.Errorf("sched_stats: %w", err)
			}
			for _, v := range per {
				if v == 0 {
					continue
				}
				if ss.Stats[c] == nil {
					ss.Stats[c] = map[string]uint64{}
				}
				ss.Stats[c][n] += v
			}
		}
	}
	var class uint32
	var pid uint32
	for it := maps["class_pid"].Iterate(); it.Next(&pid, &class); {
		ss.Params.Rules[Task{PID: pid}] = Class(class)
	}
	var cg uint64
	for it := maps["class_cgroup"].Iterate(); it.Next(&cg, &class); {
		ss.Params.Rules[Task{Cgroup: cg}] = Class(class)
	}
	var comm policy.ParamsGpuextCommKey
	for it := maps["class_comm"].Iterate(); it.Next(&comm, &class); {
		ss.Params.Rules[Task{Comm: commString(comm)}] = Class(class)
	}
	return ss, nil
}

// String renders a status for people, one fact a line, sorted.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "module: mem_policy %s, sched_policy %s\n", s.MemPolicy, s.SchedPolicy)
	for _, h := range s.Hooks {
		fmt.Fprintf(&b, "module: %s calls %d policy %d requests %d applied %d rejected %d clamped %d\n",
			h.Hook, h.Calls, h.Policy, h.Requests, h.Applied, h.Rejected, h.Clamped)
	}
	if s.Mem == nil {
		b.WriteString("mem: not pinned\n")
	} else {
		p := s.Mem.Params
		fmt.Fprintf(&b, "mem: eviction %s prefetch %s seq_pages %d stride_conf %d stride_ahead %d threshold %d%% lfu_hot %d lfu_decay %d protect %d default_prio %d\n",
			p.Eviction, p.Prefetch, p.SequentialPages, p.StrideMinConfidence, p.StrideAhead, p.ThresholdPercent,
			p.LFUHot, p.LFUDecayPeriod, p.ProtectPriority, p.DefaultPriority)
		var lines []string
		for o, pr := range s.Mem.Priorities {
			lines = append(lines, fmt.Sprintf("mem: priority %s = %d", o, pr))
		}
		for pid, pf := range s.Mem.Prefetch {
			lines = append(lines, fmt.Sprintf("mem: prefetch pid %d = %s", pid, pf))
		}
		writeSorted(&b, lines)
		b.WriteString("mem: stats")
		for _, n := range MemStatNames {
			fmt.Fprintf(&b, " %s %d", n, s.Mem.Stats[n])
		}
		b.WriteString("\n")
	}
	if s.Sched == nil {
		b.WriteString("sched: not pinned\n")
		return b.String()
	}
	fmt.Fprintf(&b, "sched: default class %s\n", s.Sched.Params.DefaultClass)
	var lines []string
	for c, p := range s.Sched.Params.Classes {
		lines = append(lines, fmt.Sprintf("sched: class %s timeslice %d us interleave %s reject %t", c, p.TimesliceUS, p.Interleave, p.Reject))
	}
	for t, c := range s.Sched.Params.Rules {
		lines = append(lines, fmt.Sprintf("sched: rule %s -> %s", t, c))
	}
	for c, st := range s.Sched.Stats {
		line := fmt.Sprintf("sched: stats class %s", c)
		for _, n := range SchedStatNames {
			line += fmt.Sprintf(" %s %d", n, st[n])
		}
		lines = append(lines, line)
	}
	writeSorted(&b, lines)
	return b.String()
}

func writeSorted(b *strings.Builder, lines []string) {
	sort.Strings(lines)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\n")
	}
}
