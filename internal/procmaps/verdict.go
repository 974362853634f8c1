package procmaps

// Verdict is what a scan of a process's maps said of one library (does it
// map it), kept so that the maps of a process are not read at every scan
// of the processes: the receiver's discoveries of devrt's files inside
// containers read it once per program, not once per second.
//
// A program is its start time and executable: execve keeps the pid and
// the start time, so the executable tells a program from the one whose
// maps were read. A "no" is read again until NegativeReads reads agree: a
// read between a process's execve and the loader mapping its LD_PRELOAD
// libraries sees the new executable without them, and the read after (the
// next scan: a second later, 100 ms while a ring file has no owner) sees
// them.
type Verdict struct {
	Start  uint64
	Exe    string
	Maps   bool
	misses int // reads that found no mapping, for this program
}

// NegativeReads is how many reads must find no mapping before a Verdict
// keeps that answer for the program's life.
const NegativeReads = 2

// Stale reports whether v must be read again for the program (start, exe):
// another program's, or a "no" fewer than NegativeReads reads agree on.
func (v *Verdict) Stale(start uint64, exe string) bool {
	return v == nil || v.Start != start || v.Exe != exe || !v.Maps && v.misses < NegativeReads
}

// Read returns the verdict after a read of the maps of program (start,
// exe) found the library (maps) or not, v being the verdict before (nil:
// none).
func (v *Verdict) Read(start uint64, exe string, maps bool) Verdict {
	n := Verdict{Start: start, Exe: exe, Maps: maps}
	if !maps {
		n.misses = 1
		if v != nil && v.Start == start && v.Exe == exe && !v.Maps {
			n.misses += v.misses
		}
	}
	return n
}
