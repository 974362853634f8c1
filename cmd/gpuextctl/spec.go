package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
)

// The command-line forms of the policies' table entries:
//
//	priority  pid:<pid>=<0..7>  cgroup:<id>=<0..7>
//	prefetch  pid:<pid>=<algorithm>
//	rule      pid:<pid>=<class>  cgroup:<id>=<class>  comm:<comm>=<class>
//	class     <class>=<timeslice µs>[,interleave=<level>][,reject]

// parseTarget splits "pid:123", "cgroup:9" or "comm:name" (comm only when allowed).
func parseTarget(s string, comm bool) (gpuext.Task, error) {
	kind, val, ok := strings.Cut(s, ":")
	if !ok || val == "" {
		return gpuext.Task{}, fmt.Errorf("%q: want pid:<pid>, cgroup:<id>%s", s, map[bool]string{true: " or comm:<name>"}[comm])
	}
	switch kind {
	case "pid":
		n, err := strconv.ParseUint(val, 10, 32)
		if err != nil || n == 0 {
			return gpuext.Task{}, fmt.Errorf("%q: pid must be a number > 0", s)
		}
		return gpuext.Task{PID: uint32(n)}, nil
	case "cgroup":
		n, err := strconv.ParseUint(val, 10, 64)
		if err != nil || n == 0 {
			return gpuext.Task{}, fmt.Errorf("%q: cgroup id must be a number > 0", s)
		}
		return gpuext.Task{Cgroup: n}, nil
	case "comm":
		if comm {
			if len(val) > 15 {
				return gpuext.Task{}, fmt.Errorf("%q: comm longer than 15 bytes", s)
			}
			return gpuext.Task{Comm: val}, nil
		}
	}
	return gpuext.Task{}, fmt.Errorf("%q: want pid:<pid>, cgroup:<id>%s", s, map[bool]string{true: " or comm:<name>"}[comm])
}

// parsePriority parses pid:<pid>=<prio> or cgroup:<id>=<prio>.
func parsePriority(s string) (gpuext.Owner, uint32, error) {
	target, val, ok := strings.Cut(s, "=")
	if !ok {
		return gpuext.Owner{}, 0, fmt.Errorf("priority %q: want pid:<pid>=<0..7> or cgroup:<id>=<0..7>", s)
	}
	t, err := parseTarget(target, false)
	if err != nil {
		return gpuext.Owner{}, 0, fmt.Errorf("priority %w", err)
	}
	n, err := strconv.ParseUint(val, 10, 32)
	if err != nil || n > gpuext.MaxPriority {
		return gpuext.Owner{}, 0, fmt.Errorf("priority %q: want 0..%d after =", s, gpuext.MaxPriority)
	}
	return gpuext.Owner{PID: t.PID, Cgroup: t.Cgroup}, uint32(n), nil
}

// parseOwner parses pid:<pid> or cgroup:<id>.
func parseOwner(s string) (gpuext.Owner, error) {
	t, err := parseTarget(s, false)
	if err != nil {
		return gpuext.Owner{}, fmt.Errorf("owner %w", err)
	}
	return gpuext.Owner{PID: t.PID, Cgroup: t.Cgroup}, nil
}

// parseRule parses <target>=<class>.
func parseRule(s string) (gpuext.Task, gpuext.Class, error) {
	target, val, ok := strings.Cut(s, "=")
	if !ok {
		return gpuext.Task{}, 0, fmt.Errorf("rule %q: want pid:<pid>=<class>, cgroup:<id>=<class> or comm:<name>=<class>", s)
	}
	t, err := parseTarget(target, true)
	if err != nil {
		return gpuext.Task{}, 0, fmt.Errorf("rule %w", err)
	}
	c, err := gpuext.ParseClass(val)
	if err != nil {
		return gpuext.Task{}, 0, fmt.Errorf("rule %q: %w", s, err)
	}
	return t, c, nil
}

// parseClass parses <class>=<timeslice µs>[,interleave=<level>][,reject].
func parseClass(s string) (gpuext.Class, gpuext.ClassParams, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok {
		return 0, gpuext.ClassParams{}, fmt.Errorf("class %q: want <class>=<timeslice µs>[,interleave=<level>][,reject]", s)
	}
	c, err := gpuext.ParseClass(name)
	if err != nil {
		return 0, gpuext.ClassParams{}, err
	}
	parts := strings.Split(rest, ",")
	var p gpuext.ClassParams
	if p.TimesliceUS, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return 0, gpuext.ClassParams{}, fmt.Errorf("class %q: timeslice %q is not a number of µs", s, parts[0])
	}
	for _, opt := range parts[1:] {
		switch k, v, _ := strings.Cut(opt, "="); k {
		case "interleave":
			if p.Interleave, err = gpuext.ParseInterleave(v); err != nil {
				return 0, gpuext.ClassParams{}, fmt.Errorf("class %q: %w", s, err)
			}
		case "reject":
			if v != "" {
				return 0, gpuext.ClassParams{}, fmt.Errorf("class %q: reject takes no value", s)
			}
			p.Reject = true
		default:
			return 0, gpuext.ClassParams{}, fmt.Errorf("class %q: unknown option %q (want interleave=<level> or reject)", s, opt)
		}
	}
	return c, p, nil
}

// parsePidPrefetch parses pid:<pid>=<prefetch algorithm>.
func parsePidPrefetch(s string) (uint32, gpuext.Prefetch, error) {
	target, val, ok := strings.Cut(s, "=")
	if !ok {
		return 0, 0, fmt.Errorf("pid prefetch %q: want pid:<pid>=<algorithm>", s)
	}
	t, err := parseTarget(target, false)
	if err != nil || t.PID == 0 {
		return 0, 0, fmt.Errorf("pid prefetch %q: want pid:<pid>=<algorithm>", s)
	}
	p, err := gpuext.ParsePrefetch(val)
	if err != nil {
		return 0, 0, fmt.Errorf("pid prefetch %q: %w", s, err)
	}
	return t.PID, p, nil
}
