package procmaps

import (
	"bytes"
	"errors"
	"fmt"
)

// deletedSuffix is what the kernel appends to the path of a file that was
// unlinked after it was mapped, for example a driver library replaced by an
// upgrade while a process still runs the old one.
const deletedSuffix = " (deleted)"

// Mapping is one line of /proc/<pid>/maps: one virtual memory area.
type Mapping struct {
	Start, End uint64 // [Start, End) virtual addresses
	Offset     uint64 // file offset mapped at Start
	Perms      string // "r-xp": read, write, execute, then p(rivate) or s(hared)
	// DevMajor and DevMinor identify the device of the file's filesystem;
	// Mkdev combines them as stat(2) does.
	DevMajor, DevMinor uint32
	// Inode is the file's inode number, 0 for anonymous memory.
	Inode uint64
	// Path is the file's path in the process's mount namespace, a
	// pseudo-path such as "[heap]", "[vdso]" or "[anon:name]", or "" for
	// anonymous memory. The kernel writes a newline in a file name as
	// "\012" and does not escape anything else; Path is left as written.
	Path string
	// Deleted reports that the kernel marked the file as unlinked; the
	// " (deleted)" marker is not part of Path.
	Deleted bool
}

// Dev returns the mapped file's device number as stat(2) reports it.
func (m Mapping) Dev() uint64 {
	return Mkdev(m.DevMajor, m.DevMinor)
}

// ParseMapsLine parses one line of /proc/<pid>/maps, with or without its
// trailing newline:
//
//	7f3c2a000000-7f3c2a200000 r-xp 00000000 fd:01 1234567   /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14
//
// Addresses, offset and device numbers are hexadecimal, the inode decimal.
// Everything after the inode and the padding that follows it is the path,
// spaces included.
func ParseMapsLine(line []byte) (Mapping, error) {
	m, path, err := parseMapsLine(line)
	if err != nil {
		return Mapping{}, err
	}
	m.Path = string(path)
	return m, nil
}

// parseMapsLine is ParseMapsLine leaving Path empty and returning the path
// bytes instead, so that Scan allocates only for the lines it keeps.
func parseMapsLine(line []byte) (Mapping, []byte, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	var m Mapping
	rest, err := m.parseHeader(line)
	if err != nil {
		return Mapping{}, nil, fmt.Errorf("bad maps line %s: %w", quote(line), err)
	}
	path := bytes.TrimLeft(rest, " ")
	// The kernel escapes newlines in names and names cannot hold NUL: a
	// path with either is more than one line, or not from maps at all.
	if i := bytes.IndexAny(path, "\n\x00"); i >= 0 {
		return Mapping{}, nil, fmt.Errorf("bad maps line %s: path contains byte 0x%02x", quote(line), path[i])
	}
	if p, ok := bytes.CutSuffix(path, []byte(deletedSuffix)); ok {
		path, m.Deleted = p, true
	}
	return m, path, nil
}

// errFieldCount is returned for a line that ends before the inode.
var errFieldCount = errors.New("want address range, permissions, offset, device and inode before the path")

// parseHeader parses the five fields before the path and returns what
// follows the inode.
func (m *Mapping) parseHeader(line []byte) (rest []byte, err error) {
	rest = line
	var f [5][]byte
	for i := range f {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		if end == 0 {
			return nil, errFieldCount
		}
		f[i], rest = rest[:end], rest[end:]
	}

	start, end, ok := bytes.Cut(f[0], []byte{'-'})
	if m.Start, ok = parseHex(start, 64, ok); !ok {
		return nil, fmt.Errorf("address range %s: want start-end in hex", quote(f[0]))
	}
	if m.End, ok = parseHex(end, 64, ok); !ok {
		return nil, fmt.Errorf("address range %s: want start-end in hex", quote(f[0]))
	}
	if m.End <= m.Start {
		return nil, fmt.Errorf("address range %s: end is not above start", quote(f[0]))
	}
	if m.Perms, ok = parsePerms(f[1]); !ok {
		return nil, fmt.Errorf("permissions %s: want [r-][w-][x-][ps]", quote(f[1]))
	}
	if m.Offset, ok = parseHex(f[2], 64, true); !ok {
		return nil, fmt.Errorf("offset %s: want hex", quote(f[2]))
	}
	major, minor, ok := bytes.Cut(f[3], []byte{':'})
	maj, ok := parseHex(major, 32, ok)
	mnr, ok2 := parseHex(minor, 32, ok)
	if !ok || !ok2 {
		return nil, fmt.Errorf("device %s: want major:minor in hex", quote(f[3]))
	}
	m.DevMajor, m.DevMinor = uint32(maj), uint32(mnr)
	if m.Inode, ok = parseDec(f[4]); !ok {
		return nil, fmt.Errorf("inode %s: want a decimal number", quote(f[4]))
	}
	return rest, nil
}

// perms holds every valid permission string, indexed by its bits (r=8, w=4,
// x=2, s=1), so that parsing one does not allocate.
var perms = func() (p [16]string) {
	for i := range p {
		b := []byte("---p")
		if i&8 != 0 {
			b[0] = 'r'
		}
		if i&4 != 0 {
			b[1] = 'w'
		}
		if i&2 != 0 {
			b[2] = 'x'
		}
		if i&1 != 0 {
			b[3] = 's'
		}
		p[i] = string(b)
	}
	return p
}()

func parsePerms(b []byte) (string, bool) {
	if len(b) != 4 {
		return "", false
	}
	i := 0
	for j, want := range [4]byte{'r', 'w', 'x', 's'} {
		other := byte('-')
		if j == 3 {
			other = 'p'
		}
		switch b[j] {
		case want:
			i |= 8 >> j
		case other:
		default:
			return "", false
		}
	}
	return perms[i], true
}

// parseHex parses an unsigned hexadecimal number of at most bits bits. It
// takes and returns ok so that a chain of parses can report one failure.
func parseHex(b []byte, bits int, ok bool) (uint64, bool) {
	if !ok || len(b) == 0 {
		return 0, false
	}
	// Leading zeros are padding ("00000000" offsets).
	for len(b) > 1 && b[0] == '0' {
		b = b[1:]
	}
	if len(b) > bits/4 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// parseDec parses an unsigned decimal number that fits in 64 bits.
func parseDec(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// quote formats untrusted input for an error message, shortened so that a
// garbage line cannot produce a huge error.
func quote(b []byte) string {
	const limit = 128
	if len(b) > limit {
		return fmt.Sprintf("%q...", b[:limit])
	}
	return fmt.Sprintf("%q", b)
}
