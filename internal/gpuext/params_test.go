package gpuext

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/policy"
)

func TestParseNames(t *testing.T) {
	for i, n := range []string{"lru", "lfu", "mru", "fifo", "priority"} {
		e, err := ParseEviction(n)
		require.NoError(t, err)
		require.Equal(t, Eviction(i), e)
		require.Equal(t, n, e.String())
	}
	for i, n := range []string{"default", "none", "always_max", "sequential", "stride", "threshold"} {
		p, err := ParsePrefetch(n)
		require.NoError(t, err)
		require.Equal(t, Prefetch(i), p)
		require.Equal(t, n, p.String())
	}
	for i, n := range []string{"default", "low", "medium", "high"} {
		v, err := ParseInterleave(n)
		require.NoError(t, err)
		require.Equal(t, Interleave(i), v)
	}
	for in, want := range map[string]Class{"default": 0, "lc": 1, "be": 2, "5": 5, "0": 0} {
		c, err := ParseClass(in)
		require.NoError(t, err)
		require.Equal(t, want, c)
	}
	for _, tc := range []struct {
		parse func(string) error
		in    string
		msg   string
	}{
		{func(s string) error { _, err := ParseEviction(s); return err }, "LRU", `eviction "LRU": want one of lru, lfu, mru, fifo, priority`},
		{func(s string) error { _, err := ParsePrefetch(s); return err }, "max", `prefetch "max": want one of default, none, always_max, sequential, stride, threshold`},
		{func(s string) error { _, err := ParseInterleave(s); return err }, "4", `interleave "4": want one of default, low, medium, high`},
		{func(s string) error { _, err := ParseClass(s); return err }, "8", `class "8": want default, lc, be or 0..7`},
		{func(s string) error { _, err := ParseKind(s); return err }, "both", `policy kind "both": want mem or sched`},
	} {
		require.EqualError(t, tc.parse(tc.in), tc.msg)
	}
	require.Equal(t, "eviction(9)", Eviction(9).String())
	require.Equal(t, "7", Class(7).String())
}

func TestMemParamsValidate(t *testing.T) {
	ok := DefaultMemParams()
	require.NoError(t, ok.Validate())
	for _, tc := range []struct {
		name string
		edit func(*MemParams)
		msg  string
	}{
		{"eviction", func(p *MemParams) { p.Eviction = 5 }, "eviction 5: want one of lru, lfu, mru, fifo, priority"},
		{"prefetch", func(p *MemParams) { p.Prefetch = 6 }, "prefetch 6: want one of default, none, always_max, sequential, stride, threshold"},
		{"seq", func(p *MemParams) { p.SequentialPages = 513 }, "sequential pages 513: want 0..512"},
		{"conf0", func(p *MemParams) { p.StrideMinConfidence = 0 }, "stride confidence 0: want 1..15"},
		{"conf16", func(p *MemParams) { p.StrideMinConfidence = 16 }, "stride confidence 16: want 1..15"},
		{"ahead", func(p *MemParams) { p.StrideAhead = 65 }, "stride ahead 65: want 1..64"},
		{"threshold", func(p *MemParams) { p.ThresholdPercent = 101 }, "threshold 101%: want 0..100"},
		{"lfu", func(p *MemParams) { p.LFUHot = 0 }, "lfu hot 0: want >= 1"},
		{"protect", func(p *MemParams) { p.ProtectPriority = 8 }, "protect priority 8: want 1..7"},
		{"default prio", func(p *MemParams) { p.DefaultPriority = 8 }, "default priority 8: want 0..7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultMemParams()
			tc.edit(&p)
			require.EqualError(t, p.Validate(), tc.msg)
		})
	}
}

func TestMemParamsRecord(t *testing.T) {
	p := MemParams{Eviction: EvictPriority, Prefetch: PrefetchStride, SequentialPages: 64, StrideMinConfidence: 3,
		StrideAhead: 8, ThresholdPercent: 10, LFUHot: 4, LFUDecayPeriod: 1000, ProtectPriority: 5, DefaultPriority: 2}
	r := p.record()
	require.Equal(t, policy.ParamsGpuextMemCfg{Eviction: 4, Prefetch: 4, SeqPages: 64, StrideMinConf: 3, StrideAhead: 8,
		ThresholdPct: 10, LfuHot: 4, LfuDecayPeriod: 1000, ProtectPriority: 5, DefaultPriority: 2}, r)
	require.Equal(t, p, memParamsFrom(r))
}

func TestSchedParamsValidate(t *testing.T) {
	require.NoError(t, LCBE(1_000_000, 200).Validate())
	for _, tc := range []struct {
		name string
		p    SchedParams
		msg  string
	}{
		{"default class", SchedParams{DefaultClass: 8}, "default class 8: want 0..7"},
		{"class", SchedParams{Classes: map[Class]ClassParams{9: {}}}, "class 9: want 0..7"},
		{"short slice", SchedParams{Classes: map[Class]ClassParams{ClassBE: {TimesliceUS: 99}}}, "class be: timeslice 99 µs: want 0 or 100..10000000"},
		{"long slice", SchedParams{Classes: map[Class]ClassParams{ClassLC: {TimesliceUS: 10_000_001}}}, "class lc: timeslice 10000001 µs: want 0 or 100..10000000"},
		{"interleave", SchedParams{Classes: map[Class]ClassParams{3: {Interleave: 4}}}, "class 3: interleave 4: want one of default, low, medium, high"},
		{"two keys", SchedParams{Rules: map[Task]Class{{PID: 1, Comm: "x"}: 1}}, "task: want exactly one of a pid, a cgroup id or a comm"},
		{"no key", SchedParams{Rules: map[Task]Class{{}: 1}}, "task: want exactly one of a pid, a cgroup id or a comm"},
		{"long comm", SchedParams{Rules: map[Task]Class{{Comm: "0123456789abcdef"}: 1}}, `comm "0123456789abcdef": longer than 15 bytes`},
		{"rule class", SchedParams{Rules: map[Task]Class{{PID: 4}: 8}}, "pid 4: class 8: want 0..7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.EqualError(t, tc.p.Validate(), tc.msg)
		})
	}
}

func TestRecords(t *testing.T) {
	require.Equal(t, policy.ParamsGpuextClassParams{TimesliceUs: 200, Interleave: 3, Reject: 1},
		ClassParams{TimesliceUS: 200, Interleave: InterleaveHigh, Reject: true}.record())
	k := commKey("python3")
	require.Equal(t, [16]int8{'p', 'y', 't', 'h', 'o', 'n', '3'}, k.Comm)
	require.Equal(t, "python3", commString(k))
	require.Equal(t, "0123456789abcde", commString(commKey("0123456789abcde")))
	require.EqualError(t, Owner{}.validate(), "owner: want exactly one of a pid or a cgroup id")
	require.EqualError(t, Owner{PID: 1, Cgroup: 2}.validate(), "owner: want exactly one of a pid or a cgroup id")
	require.Equal(t, "cgroup 9", Owner{Cgroup: 9}.String())
}
