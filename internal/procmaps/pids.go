package procmaps

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
)

// ListPIDs returns the pids of the processes in the procfs tree at
// procRoot, in ascending order: the names of its entries that are decimal
// numbers. Threads other than the main one are not listed, as procfs lists
// only thread-group leaders.
//
// Processes start and exit while the directory is read, so the list is a
// snapshot that may already be stale; a later read of a listed process may
// find it gone.
func ListPIDs(procRoot string) ([]int, error) {
	if procRoot == "" {
		return nil, errors.New("procmaps: procRoot must not be empty")
	}
	dir, err := os.Open(procRoot)
	if err != nil {
		return nil, fmt.Errorf("procmaps: %w", err)
	}
	defer dir.Close()
	// Readdirnames, unlike ReadDir, does not stat every entry.
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("procmaps: %w", err)
	}
	pids := make([]int, 0, len(names))
	for _, name := range names {
		if pid, ok := parsePID(name); ok {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// parsePID accepts the names procfs gives process directories: positive
// decimal numbers without sign or leading zeros.
func parsePID(name string) (int, bool) {
	if name == "" || name[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	pid, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(pid), true
}
