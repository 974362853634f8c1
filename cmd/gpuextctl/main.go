// Command gpuextctl loads, tunes, reports and detaches gpu_ext's struct_ops
// policies (bpf/policy) through internal/gpuext. A loaded policy is pinned
// under /sys/fs/bpf/gpuext/, so it keeps running after gpuextctl exits and
// later calls (or the gpupolicy processor) tune it in place.
//
//	gpuextctl load mem [flags]     attach the memory policy
//	gpuextctl load sched [flags]   attach the scheduling policy
//	gpuextctl set mem|sched [flags] change a running policy
//	gpuextctl status               what the module and the pinned policies hold
//	gpuextctl detach mem|sched     detach and unpin
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
)

const usage = `usage:
  gpuextctl load mem [--name N] [memory flags]
  gpuextctl load sched [--name N] [scheduling flags]
  gpuextctl set mem [memory flags]        only the flags given change
  gpuextctl set sched [scheduling flags]  classes and rules given are added or replaced
  gpuextctl status
  gpuextctl detach mem|sched
run "gpuextctl load mem -h" or "gpuextctl load sched -h" for the flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, gpuext.New()))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer, l *gpuext.Loader) int {
	err := dispatch(args, stdout, stderr, l)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "gpuextctl: %v\n%s", err, usage)
		return 2
	}
	fmt.Fprintf(stderr, "gpuextctl: %v\n", err)
	return 1
}

var errUsage = errors.New("bad usage")

func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

func dispatch(args []string, stdout, stderr io.Writer, l *gpuext.Loader) error {
	if len(args) == 0 {
		return usageError("no command")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "status":
		if len(rest) != 0 {
			return usageError("status takes no arguments")
		}
		st, err := l.Status()
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, st)
		return nil
	case "load", "set", "detach":
	default:
		return usageError("unknown command %q", cmd)
	}
	if len(rest) == 0 {
		return usageError("%s needs mem or sched", cmd)
	}
	kind, err := gpuext.ParseKind(rest[0])
	if err != nil {
		return usageError("%v", err)
	}
	rest = rest[1:]
	switch cmd {
	case "detach":
		if len(rest) != 0 {
			return usageError("detach %s takes no flags", kind)
		}
		if err := l.Detach(kind); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s policy detached\n", kind)
		return nil
	case "load":
		if kind == gpuext.Mem {
			return loadMem(rest, stdout, stderr, l)
		}
		return loadSched(rest, stdout, stderr, l)
	}
	if kind == gpuext.Mem {
		return setMem(rest, stdout, stderr, l)
	}
	return setSched(rest, stdout, stderr, l)
}

// list is a repeatable string flag.
type list []string

func (s *list) String() string     { return strings.Join(*s, " ") }
func (s *list) Set(v string) error { *s = append(*s, v); return nil }

// memFlags declares the memory policy's flags over p.
type memFlags struct {
	eviction, prefetch string
	p                  gpuext.MemParams
	priorities, unset  list
	pidPrefetch        list
	noPidPrefetch      list
}

func newMemFlags(fs *flag.FlagSet, p gpuext.MemParams) *memFlags {
	m := &memFlags{p: p}
	fs.StringVar(&m.eviction, "eviction", p.Eviction.String(), "lru, lfu, mru, fifo or priority")
	fs.StringVar(&m.prefetch, "prefetch", p.Prefetch.String(), "default, none, always_max, sequential, stride or threshold")
	u32 := func(v *uint32, name, help string) {
		fs.Func(name, help, func(s string) error { return parseU32(s, v) })
	}
	u32(&m.p.SequentialPages, "seq-pages", "sequential: pages from the faulting one, 0 = to the block's end (0..512)")
	u32(&m.p.StrideMinConfidence, "stride-confidence", "stride: repeats of one stride before prefetching (1..15)")
	u32(&m.p.StrideAhead, "stride-ahead", "stride: strides prefetched (1..64)")
	u32(&m.p.ThresholdPercent, "threshold", "threshold: prefetch a tree node more than this % resident (0..100)")
	u32(&m.p.LFUHot, "lfu-hot", "lfu: spare candidates with at least this many accesses (>= 1)")
	u32(&m.p.LFUDecayPeriod, "lfu-decay", "lfu: halve counts every this many accesses, 0 = never")
	u32(&m.p.ProtectPriority, "protect", "priority: spare chunks of owners at or above this priority (1..7)")
	u32(&m.p.DefaultPriority, "default-priority", "priority: of owners without an entry (0..7)")
	fs.Var(&m.priorities, "priority", "pid:<pid>=<0..7> or cgroup:<id>=<0..7> (repeatable)")
	fs.Var(&m.pidPrefetch, "pid-prefetch", "pid:<pid>=<algorithm>: that process's own prefetch (repeatable)")
	return m
}

// parse parses the command line into the parameters and checks the table
// flags, before anything is attached or written.
func (m *memFlags) parse(fs *flag.FlagSet, args []string) (gpuext.MemParams, error) {
	if err := parse(fs, args); err != nil {
		return m.p, err
	}
	if err := m.check(); err != nil {
		return m.p, err
	}
	var err error
	if m.p.Eviction, err = gpuext.ParseEviction(m.eviction); err != nil {
		return m.p, err
	}
	if m.p.Prefetch, err = gpuext.ParsePrefetch(m.prefetch); err != nil {
		return m.p, err
	}
	return m.p, m.p.Validate()
}

// check parses the table flags.
func (m *memFlags) check() error {
	for _, s := range m.priorities {
		if _, _, err := parsePriority(s); err != nil {
			return err
		}
	}
	for _, s := range m.pidPrefetch {
		if _, _, err := parsePidPrefetch(s); err != nil {
			return err
		}
	}
	for _, s := range m.unset {
		if _, err := parseOwner(s); err != nil {
			return err
		}
	}
	for _, s := range m.noPidPrefetch {
		if _, err := parseTarget(s, false); err != nil {
			return fmt.Errorf("no-pid-prefetch %w", err)
		}
	}
	return nil
}

// applyTables writes the priority and per-pid prefetch flags.
func (m *memFlags) applyTables(l *gpuext.Loader) error {
	for _, s := range m.noPidPrefetch {
		t, _ := parseTarget(s, false)
		if t.PID == 0 {
			return fmt.Errorf("no-pid-prefetch %q: want pid:<pid>", s)
		}
		if err := l.ClearPrefetchFor(t.PID); err != nil {
			return err
		}
	}
	for _, s := range m.pidPrefetch {
		pid, p, _ := parsePidPrefetch(s)
		if err := l.SetPrefetchFor(pid, p); err != nil {
			return err
		}
	}
	for _, s := range m.unset {
		o, err := parseOwner(s)
		if err != nil {
			return err
		}
		if err := l.DeletePriority(o); err != nil {
			return err
		}
	}
	for _, s := range m.priorities {
		o, prio, err := parsePriority(s)
		if err != nil {
			return err
		}
		if err := l.SetPriority(o, prio); err != nil {
			return err
		}
	}
	return nil
}

func parseU32(s string, v *uint32) error {
	var n uint64
	if _, err := fmt.Sscan(s, &n); err != nil || n > 1<<32-1 || fmt.Sprint(n) != s {
		return fmt.Errorf("%q is not a number", s)
	}
	*v = uint32(n)
	return nil
}

func flagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError("%v", err)
	}
	if fs.NArg() != 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

func loadMem(args []string, stdout, stderr io.Writer, l *gpuext.Loader) error {
	fs := flagSet("load mem", stderr)
	name := fs.String("name", policy.DefaultMemName, "the name the module shows (1..15 of a-z, 0-9, _)")
	m := newMemFlags(fs, gpuext.DefaultMemParams())
	p, err := m.parse(fs, args)
	if err != nil {
		return err
	}
	if err := l.AttachMem(*name, p); err != nil {
		return err
	}
	if err := m.applyTables(l); err != nil {
		return fmt.Errorf("memory policy %s attached, but: %w", *name, err)
	}
	fmt.Fprintf(stdout, "mem policy %s attached: eviction %s, prefetch %s\n", *name, p.Eviction, p.Prefetch)
	return nil
}

func setMem(args []string, stdout, stderr io.Writer, l *gpuext.Loader) error {
	cur, err := l.MemParams()
	if err != nil {
		return err
	}
	fs := flagSet("set mem", stderr)
	m := newMemFlags(fs, cur)
	fs.Var(&m.unset, "no-priority", "pid:<pid> or cgroup:<id>: drop its priority (repeatable)")
	fs.Var(&m.noPidPrefetch, "no-pid-prefetch", "pid:<pid>: back to the policy-wide prefetch (repeatable)")
	p, err := m.parse(fs, args)
	if err != nil {
		return err
	}
	if err := l.SetMem(p); err != nil {
		return err
	}
	if err := m.applyTables(l); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "mem policy updated: eviction %s, prefetch %s\n", p.Eviction, p.Prefetch)
	return nil
}

// schedFlags apply scheduling flags onto p.
type schedFlags struct {
	classes, rules, unrules list
	defaultClass            string
}

func newSchedFlags(fs *flag.FlagSet, p gpuext.SchedParams) *schedFlags {
	s := &schedFlags{defaultClass: p.DefaultClass.String()}
	fs.Var(&s.classes, "class", "<class>=<timeslice µs>[,interleave=low|medium|high][,reject] (repeatable)")
	fs.Var(&s.rules, "rule", "pid:<pid>=<class>, cgroup:<id>=<class> or comm:<name>=<class> (repeatable)")
	fs.StringVar(&s.defaultClass, "default-class", s.defaultClass, "class of tasks no rule names")
	return s
}

func (s *schedFlags) apply(p *gpuext.SchedParams) error {
	var err error
	if p.DefaultClass, err = gpuext.ParseClass(s.defaultClass); err != nil {
		return err
	}
	if p.Classes == nil {
		p.Classes = map[gpuext.Class]gpuext.ClassParams{}
	}
	if p.Rules == nil {
		p.Rules = map[gpuext.Task]gpuext.Class{}
	}
	for _, c := range s.classes {
		class, cp, err := parseClass(c)
		if err != nil {
			return err
		}
		p.Classes[class] = cp
	}
	for _, r := range s.unrules {
		t, err := parseTarget(r, true)
		if err != nil {
			return fmt.Errorf("no-rule %w", err)
		}
		delete(p.Rules, t)
	}
	for _, r := range s.rules {
		t, c, err := parseRule(r)
		if err != nil {
			return err
		}
		p.Rules[t] = c
	}
	return p.Validate()
}

func loadSched(args []string, stdout, stderr io.Writer, l *gpuext.Loader) error {
	fs := flagSet("load sched", stderr)
	name := fs.String("name", policy.DefaultSchedName, "the name the module shows (1..15 of a-z, 0-9, _)")
	var p gpuext.SchedParams
	s := newSchedFlags(fs, p)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := s.apply(&p); err != nil {
		return err
	}
	if err := l.AttachSched(*name, p); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sched policy %s attached: %d classes, %d rules\n", *name, len(p.Classes), len(p.Rules))
	return nil
}

func setSched(args []string, stdout, stderr io.Writer, l *gpuext.Loader) error {
	st, err := l.Status()
	if err != nil {
		return err
	}
	if st.Sched == nil {
		return fmt.Errorf("%w: load sched first", gpuext.ErrNotAttached)
	}
	p := st.Sched.Params
	fs := flagSet("set sched", stderr)
	s := newSchedFlags(fs, p)
	fs.Var(&s.unrules, "no-rule", "pid:<pid>, cgroup:<id> or comm:<name>: drop its rule (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := s.apply(&p); err != nil {
		return err
	}
	if err := l.SetSched(p); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "sched policy updated: %d classes, %d rules\n", len(p.Classes), len(p.Rules))
	return nil
}
