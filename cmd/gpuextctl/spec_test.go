package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in    string
		task  gpuext.Task
		class gpuext.Class
		err   string
	}{
		{in: "pid:123=lc", task: gpuext.Task{PID: 123}, class: gpuext.ClassLC},
		{in: "cgroup:9876543210=be", task: gpuext.Task{Cgroup: 9876543210}, class: gpuext.ClassBE},
		{in: "comm:python3=5", task: gpuext.Task{Comm: "python3"}, class: 5},
		{in: "comm:a=b=lc", err: `rule "comm:a=b=lc": class "b=lc": want default, lc, be or 0..7`},
		{in: "pid:0=lc", err: `rule "pid:0": pid must be a number > 0`},
		{in: "pid:x=lc", err: `rule "pid:x": pid must be a number > 0`},
		{in: "pid:123", err: `rule "pid:123": want pid:<pid>=<class>, cgroup:<id>=<class> or comm:<name>=<class>`},
		{in: "uid:1=lc", err: `rule "uid:1": want pid:<pid>, cgroup:<id> or comm:<name>`},
		{in: "comm:0123456789abcdef=lc", err: `rule "comm:0123456789abcdef": comm longer than 15 bytes`},
		{in: "pid:1=9", err: `rule "pid:1=9": class "9": want default, lc, be or 0..7`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			task, class, err := parseRule(tc.in)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.task, task)
			require.Equal(t, tc.class, class)
		})
	}
}

func TestParsePriority(t *testing.T) {
	for _, tc := range []struct {
		in    string
		owner gpuext.Owner
		prio  uint32
		err   string
	}{
		{in: "pid:4242=7", owner: gpuext.Owner{PID: 4242}, prio: 7},
		{in: "cgroup:55=0", owner: gpuext.Owner{Cgroup: 55}, prio: 0},
		{in: "pid:1=8", err: `priority "pid:1=8": want 0..7 after =`},
		{in: "comm:x=1", err: `priority "comm:x": want pid:<pid>, cgroup:<id>`},
		{in: "pid:1", err: `priority "pid:1": want pid:<pid>=<0..7> or cgroup:<id>=<0..7>`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			o, p, err := parsePriority(tc.in)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.owner, o)
			require.Equal(t, tc.prio, p)
		})
	}
}

func TestParsePidPrefetch(t *testing.T) {
	pid, p, err := parsePidPrefetch("pid:31=always_max")
	require.NoError(t, err)
	require.Equal(t, uint32(31), pid)
	require.Equal(t, gpuext.PrefetchAlwaysMax, p)
	for in, msg := range map[string]string{
		"pid:31":        `pid prefetch "pid:31": want pid:<pid>=<algorithm>`,
		"cgroup:4=none": `pid prefetch "cgroup:4=none": want pid:<pid>=<algorithm>`,
		"pid:0=none":    `pid prefetch "pid:0=none": want pid:<pid>=<algorithm>`,
		"pid:3=max":     `pid prefetch "pid:3=max": prefetch "max": want one of default, none, always_max, sequential, stride, threshold`,
	} {
		_, _, err := parsePidPrefetch(in)
		require.EqualError(t, err, msg)
	}
}

func TestParseClass(t *testing.T) {
	for _, tc := range []struct {
		in    string
		class gpuext.Class
		p     gpuext.ClassParams
		err   string
	}{
		{in: "lc=1000000", class: gpuext.ClassLC, p: gpuext.ClassParams{TimesliceUS: 1000000}},
		{in: "be=200,interleave=low", class: gpuext.ClassBE, p: gpuext.ClassParams{TimesliceUS: 200, Interleave: gpuext.InterleaveLow}},
		{in: "3=0,reject,interleave=high", class: 3, p: gpuext.ClassParams{Reject: true, Interleave: gpuext.InterleaveHigh}},
		{in: "lc", err: `class "lc": want <class>=<timeslice µs>[,interleave=<level>][,reject]`},
		{in: "lc=1ms", err: `class "lc=1ms": timeslice "1ms" is not a number of µs`},
		{in: "lc=1,reject=yes", err: `class "lc=1,reject=yes": reject takes no value`},
		{in: "lc=1,interleave=max", err: `class "lc=1,interleave=max": interleave "max": want one of default, low, medium, high`},
		{in: "lc=1,fast", err: `class "lc=1,fast": unknown option "fast" (want interleave=<level> or reject)`},
		{in: "x=1", err: `class "x": want default, lc, be or 0..7`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, p, err := parseClass(tc.in)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.class, c)
			require.Equal(t, tc.p, p)
		})
	}
}

// FuzzSpecs: no input crashes a parser, and whatever parses is valid for the loader.
func FuzzSpecs(f *testing.F) {
	for _, s := range []string{"pid:1=lc", "cgroup:2=be", "comm:py=3", "lc=100,interleave=high,reject",
		"pid:1=7", "pid:2=stride", "=", ":", "pid:=", "comm:=", "lc=,", "be=18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if task, class, err := parseRule(s); err == nil {
			require.NoError(t, gpuext.SchedParams{Rules: map[gpuext.Task]gpuext.Class{task: class}}.Validate())
		}
		if o, prio, err := parsePriority(s); err == nil {
			require.True(t, (o.PID == 0) != (o.Cgroup == 0))
			require.LessOrEqual(t, prio, uint32(gpuext.MaxPriority))
		}
		if pid, p, err := parsePidPrefetch(s); err == nil {
			require.NotZero(t, pid)
			require.Less(t, p, gpuext.PrefetchThreshold+1)
		}
		if c, _, err := parseClass(s); err == nil {
			require.Less(t, c, gpuext.Class(gpuext.SchedClasses))
		}
	})
}
