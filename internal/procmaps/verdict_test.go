package procmaps

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVerdict: a program's maps are read until one read finds the library
// or NegativeReads reads agree it is not there; another program (start
// time or executable) is read again.
func TestVerdict(t *testing.T) {
	var v *Verdict
	require.True(t, v.Stale(7, "/app"), "never read")
	for _, tt := range []struct {
		name      string
		reads     []bool // what each read found, in turn
		start     uint64
		exe       string
		wantStale bool
	}{
		{"found", []bool{true}, 7, "/app", false},
		{"one miss", []bool{false}, 7, "/app", true},
		{"two misses", []bool{false, false}, 7, "/app", false},
		{"a miss, then found", []bool{false, true}, 7, "/app", false},
		{"found, asked for another start", []bool{true}, 8, "/app", true},
		{"two misses, asked for another exe", []bool{false, false}, 7, "/bin/sh", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cur *Verdict
			for _, found := range tt.reads {
				require.True(t, cur.Stale(7, "/app"), "read while stale only")
				n := cur.Read(7, "/app", found)
				cur = &n
			}
			require.Equal(t, tt.reads[len(tt.reads)-1], cur.Maps)
			require.Equal(t, tt.wantStale, cur.Stale(tt.start, tt.exe))
		})
	}
	// Misses of another program do not count for this one.
	old := (*Verdict)(nil).Read(7, "/bin/sh", false)
	n := old.Read(7, "/app", false)
	require.True(t, n.Stale(7, "/app"), "one miss of /app")
}
