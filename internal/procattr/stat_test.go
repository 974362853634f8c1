package procattr

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statLine returns a /proc/<pid>/stat line for a process named comm that
// started at start, with the other fields of a real one.
func statLine(pid int, comm string, start uint64) string {
	return fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 1253 0 0 0 3 1 0 0 20 0 1 0 %d "+
		"9392128 1024 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, pid, pid, start)
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantComm  string
		wantStart uint64
	}{
		{
			name:     "real",
			in:       "10305 (cat) R 10303 10303 4398 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 33112 3133440 413 18446744073709551615 94600859357184 94600859377065 140731668881104 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94600859393072 94600859394688 94601233747968 140731668888062 140731668888082 140731668888082 140731668889579 0\n",
			wantComm: "cat", wantStart: 33112,
		},
		{name: "space in comm", in: statLine(7, "tmux: server", 99), wantComm: "tmux: server", wantStart: 99},
		{name: "parentheses in comm", in: statLine(7, "(sd-pam)", 5), wantComm: "(sd-pam)", wantStart: 5},
		{name: "unbalanced parentheses", in: statLine(7, "a) S 1 2 (b", 12), wantComm: "a) S 1 2 (b", wantStart: 12},
		{name: "empty comm", in: statLine(7, "", 1), wantComm: "", wantStart: 1},
		{name: "largest start time", in: statLine(7, "x", 18446744073709551615), wantComm: "x", wantStart: 18446744073709551615},
		{name: "stops at starttime", in: "1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 42", wantComm: "init", wantStart: 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			comm, start, err := parseStat([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.wantComm, comm)
			assert.Equal(t, tt.wantStart, start)
		})
	}
}

func TestParseStatErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "stat: no parenthesised comm field"},
		{"no comm", "1 init S 0", "stat: no parenthesised comm field"},
		{"close before open", "1 )init( S 0", "stat: no parenthesised comm field"},
		{"truncated", "1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0\n", "stat: 21 fields, want at least 22"},
		{"nothing after comm", "1 (init)", "stat: 2 fields, want at least 22"},
		{"negative start", "1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 -5 0", `stat: starttime "-5" is not an unsigned number`},
		{"overflowing start", "1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 18446744073709551616", `stat: starttime "18446744073709551616" is not an unsigned number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseStat([]byte(tt.in))
			require.EqualError(t, err, tt.want)
		})
	}
}

// FuzzParseStat checks that parseStat never panics on what a hostile or
// truncated stat file could contain.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statLine(1, "init", 1)))
	f.Add([]byte(statLine(2, "a) (b", 2)))
	f.Fuzz(func(t *testing.T, data []byte) {
		comm, _, err := parseStat(data)
		if err == nil && len(comm) > len(data) {
			t.Fatalf("comm %q longer than input", comm)
		}
	})
}
