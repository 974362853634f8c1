package gpuextsim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SysfsDir is where the gpu_ext module publishes its state.
const SysfsDir = "/sys/kernel/gpu_ext"

// HookStats are one hook's counters (see gpu_ext.h for their meaning).
type HookStats struct {
	Hook                       string
	Calls, Policy, Requests    uint64
	Applied, Rejected, Clamped uint64
}

// Stats is what /sys/kernel/gpu_ext/ says.
type Stats struct {
	ABIVersion             uint32
	MemPolicy, SchedPolicy string // "-" when none is attached
	Hooks                  [HookMax]HookStats
}

// Sub returns the counters of s minus those of before, hook by hook.
func (s Stats) Sub(before Stats) [HookMax]HookStats {
	var d [HookMax]HookStats
	for i, h := range s.Hooks {
		b := before.Hooks[i]
		d[i] = HookStats{Hook: h.Hook, Calls: h.Calls - b.Calls, Policy: h.Policy - b.Policy,
			Requests: h.Requests - b.Requests, Applied: h.Applied - b.Applied,
			Rejected: h.Rejected - b.Rejected, Clamped: h.Clamped - b.Clamped}
	}
	return d
}

// ReadStats reads /sys/kernel/gpu_ext/{abi_version,mem_policy,sched_policy,stats}.
func ReadStats() (Stats, error) { return readStats(SysfsDir) }

func readStats(dir string) (Stats, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("gpu_ext stats: %w", err)
		}
		return string(b), nil
	}
	var s Stats
	abi, err := read("abi_version")
	if err != nil {
		return s, err
	}
	if s.ABIVersion, err = ParseABIVersion(abi); err != nil {
		return s, err
	}
	for _, p := range []struct {
		file string
		dst  *string
	}{{"mem_policy", &s.MemPolicy}, {"sched_policy", &s.SchedPolicy}} {
		v, err := read(p.file)
		if err != nil {
			return s, err
		}
		if *p.dst, err = ParsePolicyName(v); err != nil {
			return s, fmt.Errorf("gpu_ext stats: %s: %w", p.file, err)
		}
	}
	text, err := read("stats")
	if err != nil {
		return s, err
	}
	s.Hooks, err = ParseStats(text)
	return s, err
}

// ParseABIVersion parses abi_version: a decimal number and a newline.
func ParseABIVersion(text string) (uint32, error) {
	v, ok := strings.CutSuffix(text, "\n")
	if !ok {
		return 0, fmt.Errorf("gpu_ext stats: abi_version %q: no newline", text)
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("gpu_ext stats: abi_version %q: %w", v, err)
	}
	return uint32(n), nil
}

// ParsePolicyName parses mem_policy or sched_policy: a name of 1..15
// printable non-space characters (or "-") and a newline.
func ParsePolicyName(text string) (string, error) {
	v, ok := strings.CutSuffix(text, "\n")
	if !ok {
		return "", fmt.Errorf("policy name %q: no newline", text)
	}
	if len(v) == 0 || len(v) > 15 {
		return "", fmt.Errorf("policy name %q: want 1..15 bytes", v)
	}
	for _, c := range []byte(v) {
		if c <= ' ' || c > '~' {
			return "", fmt.Errorf("policy name %q: byte %#x", v, c)
		}
	}
	return v, nil
}

var statFields = [...]string{"calls", "policy", "requests", "applied", "rejected", "clamped"}

// ParseStats parses the stats file: one line per hook in hook order,
// "<hook> calls N policy N requests N applied N rejected N clamped N".
// Anything else (a missing, extra or reordered line or field, a number
// that is not a decimal uint64) is an error.
func ParseStats(text string) ([HookMax]HookStats, error) {
	var out [HookMax]HookStats
	body, ok := strings.CutSuffix(text, "\n")
	if !ok {
		return out, fmt.Errorf("gpu_ext stats: does not end in a newline")
	}
	lines := strings.Split(body, "\n")
	if len(lines) != int(HookMax) {
		return out, fmt.Errorf("gpu_ext stats: %d lines, want %d", len(lines), HookMax)
	}
	for i, line := range lines {
		f := strings.Split(line, " ")
		if len(f) != 1+2*len(statFields) {
			return out, fmt.Errorf("gpu_ext stats: line %d %q: %d fields, want %d", i+1, line, len(f), 1+2*len(statFields))
		}
		if f[0] != HookNames[i] {
			return out, fmt.Errorf("gpu_ext stats: line %d: hook %q, want %q", i+1, f[0], HookNames[i])
		}
		var v [len(statFields)]uint64
		for k, name := range statFields {
			if f[1+2*k] != name {
				return out, fmt.Errorf("gpu_ext stats: line %d: field %q, want %q", i+1, f[1+2*k], name)
			}
			n, err := strconv.ParseUint(f[2+2*k], 10, 64)
			if err != nil {
				return out, fmt.Errorf("gpu_ext stats: line %d: %s: %w", i+1, name, err)
			}
			v[k] = n
		}
		out[i] = HookStats{Hook: f[0], Calls: v[0], Policy: v[1], Requests: v[2],
			Applied: v[3], Rejected: v[4], Clamped: v[5]}
	}
	return out, nil
}
