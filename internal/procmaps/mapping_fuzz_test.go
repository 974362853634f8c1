package procmaps

import (
	"fmt"
	"strings"
	"testing"
)

// formatMapping writes m the way the kernel's show_map_vma does: addresses
// and offset zero-padded to 8 hex digits, device numbers to 2, the path
// padded to column 74 and " (deleted)" after it.
func formatMapping(m Mapping) string {
	line := fmt.Sprintf("%08x-%08x %s %08x %02x:%02x %d ", m.Start, m.End, m.Perms, m.Offset, m.DevMajor, m.DevMinor, m.Inode)
	if m.Path == "" && !m.Deleted {
		return line + "\n"
	}
	if len(line) < 73 {
		line += strings.Repeat(" ", 73-len(line))
	}
	line += m.Path
	if m.Deleted {
		line += deletedSuffix
	}
	return line + "\n"
}

// FuzzParseMapsLine checks that ParseMapsLine never panics, that what it
// accepts is a well-formed mapping, and that printing a mapping as the
// kernel would and parsing it again gives the same mapping. Seeds:
// testdata/fuzz/FuzzParseMapsLine and the table of TestParseMapsLine.
func FuzzParseMapsLine(f *testing.F) {
	for _, tt := range mapsLineCases {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := ParseMapsLine(line)
		if err != nil {
			if m != (Mapping{}) {
				t.Fatalf("error %v with non-zero result %+v", err, m)
			}
			return
		}
		if m.End <= m.Start {
			t.Errorf("range %#x-%#x is empty", m.Start, m.End)
		}
		if _, ok := parsePerms([]byte(m.Perms)); !ok {
			t.Errorf("bad Perms %q", m.Perms)
		}
		if strings.ContainsAny(m.Path, "\n\x00") {
			t.Errorf("Path %q holds a newline or NUL", m.Path)
		}
		if strings.HasPrefix(m.Path, " ") {
			t.Errorf("Path %q starts with padding", m.Path)
		}

		again, err := ParseMapsLine([]byte(formatMapping(m)))
		if err != nil {
			t.Fatalf("reparsing %q: %v", formatMapping(m), err)
		}
		if again != m {
			t.Fatalf("round trip of %q:\n got %+v\nwant %+v", line, again, m)
		}
	})
}
