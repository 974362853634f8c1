package gpuextsim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// statsText is what gpu_ext prints, in gpu_ext_stats.c's format.
func statsText(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func zeroLine(h string) string {
	return h + " calls 0 policy 0 requests 0 applied 0 rejected 0 clamped 0"
}

func goodStats() []string {
	var l []string
	for _, h := range HookNames {
		l = append(l, zeroLine(h))
	}
	l[2] = "evict_prepare calls 18446744073709551615 policy 5 requests 4 applied 3 rejected 2 clamped 1"
	return l
}

func TestParseStats(t *testing.T) {
	got, err := ParseStats(statsText(goodStats()...))
	require.NoError(t, err)
	require.Equal(t, HookStats{Hook: "evict_prepare", Calls: 18446744073709551615, Policy: 5, Requests: 4,
		Applied: 3, Rejected: 2, Clamped: 1}, got[HookEvictPrepare])
	require.Equal(t, HookStats{Hook: "task_destroy"}, got[HookTaskDestroy])

	bad := func(mut func(l []string) []string) string { return statsText(mut(goodStats())...) }
	tests := []struct {
		name, text, err string
	}{
		{"empty", "", "newline"},
		{"no newline", strings.TrimSuffix(statsText(goodStats()...), "\n"), "newline"},
		{"missing line", bad(func(l []string) []string { return l[:7] }), "7 lines, want 8"},
		{"extra line", bad(func(l []string) []string { return append(l, zeroLine("x")) }), "9 lines"},
		{"reordered", bad(func(l []string) []string { l[0], l[1] = l[1], l[0]; return l }), `hook "block_access", want "block_activate"`},
		{"field name", bad(func(l []string) []string { l[3] = strings.Replace(l[3], "applied", "applid", 1); return l }), `field "applid"`},
		{"missing field", bad(func(l []string) []string { l[4] = strings.TrimSuffix(l[4], " clamped 0"); return l }), "11 fields"},
		{"negative", bad(func(l []string) []string { l[5] = strings.Replace(l[5], "calls 0", "calls -1", 1); return l }), "calls"},
		{"overflow", bad(func(l []string) []string {
			l[5] = strings.Replace(l[5], "calls 0", "calls 18446744073709551616", 1)
			return l
		}), "out of range"},
		{"double space", bad(func(l []string) []string { l[6] = strings.Replace(l[6], " ", "  ", 1); return l }), "fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseStats(tt.text)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestParseABIVersionAndName(t *testing.T) {
	v, err := ParseABIVersion("1\n")
	require.NoError(t, err)
	require.Equal(t, uint32(1), v)
	for _, s := range []string{"1", "x\n", "-1\n", "4294967296\n", ""} {
		_, err := ParseABIVersion(s)
		require.Error(t, err, "%q", s)
	}
	for in, want := range map[string]string{"-\n": "-", "lfu\n": "lfu", "prio_evict_123\n": "prio_evict_123"} {
		got, err := ParsePolicyName(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	for _, s := range []string{"lfu", "\n", "a b\n", "0123456789abcdef\n", "\x01\n"} {
		_, err := ParsePolicyName(s)
		require.Error(t, err, "%q", s)
	}
}

// TestReadStatsDir reads a directory laid out like /sys/kernel/gpu_ext.
func TestReadStatsDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("abi_version", "1\n")
	write("mem_policy", "lfu\n")
	write("sched_policy", "-\n")
	write("stats", statsText(goodStats()...))
	s, err := readStats(dir)
	require.NoError(t, err)
	require.Equal(t, uint32(1), s.ABIVersion)
	require.Equal(t, "lfu", s.MemPolicy)
	require.Equal(t, "-", s.SchedPolicy)
	require.Equal(t, uint64(5), s.Hooks[HookEvictPrepare].Policy)

	before := s
	before.Hooks[HookEvictPrepare].Calls -= 10
	require.Equal(t, uint64(10), s.Sub(before)[HookEvictPrepare].Calls)

	write("sched_policy", "two words\n")
	_, err = readStats(dir)
	require.ErrorContains(t, err, "sched_policy")
	require.NoError(t, os.Remove(filepath.Join(dir, "stats")))
	write("sched_policy", "-\n")
	_, err = readStats(dir)
	require.ErrorContains(t, err, "stats")
}

// FuzzParseStats: no input panics, and whatever parses prints back to the
// same text.
func FuzzParseStats(f *testing.F) {
	f.Add(statsText(goodStats()...))
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ParseStats(text)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, h := range got {
			b.WriteString(h.Hook)
			for _, kv := range []struct {
				k string
				v uint64
			}{{"calls", h.Calls}, {"policy", h.Policy}, {"requests", h.Requests},
				{"applied", h.Applied}, {"rejected", h.Rejected}, {"clamped", h.Clamped}} {
				b.WriteString(" " + kv.k + " " + uitoa(kv.v))
			}
			b.WriteString("\n")
		}
		again, err := ParseStats(b.String())
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}

func uitoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var d []byte
	for ; v > 0; v /= 10 {
		d = append([]byte{byte('0' + v%10)}, d...)
	}
	return string(d)
}

// FuzzDecodeResults: the result decoders take any bytes the kernel could
// return without panicking, and refuse counts beyond the records' arrays.
func FuzzDecodeResults(f *testing.F) {
	f.Add(make([]byte, memResultSize))
	f.Add(make([]byte, schedResultSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := decodeMemResult(b); err == nil {
			require.Len(t, b, memResultSize)
			require.LessOrEqual(t, len(m.Tenants), MaxTenants)
		}
		if s, err := decodeSchedResult(b); err == nil {
			require.Len(t, b, schedResultSize)
			require.LessOrEqual(t, len(s.Tasks), MaxTasks)
		}
	})
}
