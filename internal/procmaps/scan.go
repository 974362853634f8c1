package procmaps

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// maxLineLen bounds one line of a maps file. The kernel's lines are at most
// a header and a PATH_MAX path with escaped newlines (about 12 KiB); the
// bound only stops a broken or hostile file from using unbounded memory.
const maxLineLen = 1 << 20

// Library is one file mapped by a process.
type Library struct {
	// Path is the file's path as the process sees it, in its own mount
	// namespace; without " (deleted)".
	Path string
	// Dev and Inode identify the file: Dev as stat(2) reports st_dev
	// (see Mkdev). Uprobes are attached once per (Dev, Inode).
	Dev   uint64
	Inode uint64
	// Start is the lowest address the file is mapped at, and Offset the
	// file offset mapped there: Start-Offset is the load bias for
	// position-independent libraries.
	Start  uint64
	Offset uint64
	// MapFilesPath is <procRoot>/<pid>/map_files/<start>-<end> for the
	// mapping at Start. Opening it opens the mapped file itself, even in
	// another mount namespace or after it was deleted; the kernel allows
	// that only to a reader with CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE).
	MapFilesPath string
	// Deleted reports that the file was unlinked after it was mapped.
	Deleted bool
}

// Scan reads /proc/<pid>/maps under procRoot and returns one Library per
// file, identified by device and inode, whose path match accepts; a nil match
// accepts every file. Libraries are in the order of their lowest mapping.
// Anonymous memory and pseudo-files such as [vdso] are never returned.
//
// A process without an address space (a kernel thread, a zombie) has no
// libraries. When the process has exited the error satisfies
// errors.Is(err, fs.ErrNotExist).
func Scan(procRoot string, pid int, match func(path string) bool) ([]Library, error) {
	if procRoot == "" {
		return nil, errors.New("procmaps: procRoot must not be empty")
	}
	if pid <= 0 {
		return nil, fmt.Errorf("procmaps: invalid pid %d", pid)
	}
	pidDir := filepath.Join(procRoot, strconv.Itoa(pid))
	mapsPath := filepath.Join(pidDir, "maps")
	f, err := os.Open(mapsPath)
	if err != nil {
		return nil, readError(err)
	}
	defer f.Close()

	type fileID struct{ dev, inode uint64 }
	var (
		libs     []Library
		index    = make(map[fileID]int)      // position in libs
		rejected = make(map[fileID]struct{}) // seen, not matched
	)
	// The kernel produces maps as it is read, a buffer at a time; a large
	// buffer keeps the number of read calls low for processes with
	// thousands of mappings (CUDA processes have many).
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineLen)
	for n := 1; sc.Scan(); n++ {
		m, path, err := parseMapsLine(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("procmaps: %s line %d: %w", mapsPath, n, err)
		}
		if m.Inode == 0 {
			continue // anonymous memory, [heap], [vdso], ...
		}
		id := fileID{m.Dev(), m.Inode}
		if i, ok := index[id]; ok {
			if m.Start < libs[i].Start {
				libs[i].Start, libs[i].Offset = m.Start, m.Offset
				libs[i].MapFilesPath = mapFilesPath(pidDir, m)
			}
			continue
		}
		if _, ok := rejected[id]; ok {
			continue
		}
		p := string(path)
		if match != nil && !match(p) {
			rejected[id] = struct{}{}
			continue
		}
		index[id] = len(libs)
		libs = append(libs, Library{
			Path:         p,
			Dev:          id.dev,
			Inode:        m.Inode,
			Start:        m.Start,
			Offset:       m.Offset,
			MapFilesPath: mapFilesPath(pidDir, m),
			Deleted:      m.Deleted,
		})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("procmaps: %s: line longer than %d bytes", mapsPath, maxLineLen)
		}
		return nil, readError(err)
	}
	return libs, nil
}

// mapFilesPath names m's entry in /proc/<pid>/map_files, which the kernel
// names "%lx-%lx" after the mapping's addresses.
func mapFilesPath(pidDir string, m Mapping) string {
	return filepath.Join(pidDir, "map_files",
		strconv.FormatUint(m.Start, 16)+"-"+strconv.FormatUint(m.End, 16))
}

// readError wraps an error from reading a /proc/<pid> file. Reading a file
// of a process that exited after it was opened fails with ESRCH rather than
// ENOENT; both satisfy fs.ErrNotExist, since they mean the same to a caller.
func readError(err error) error {
	if errors.Is(err, syscall.ESRCH) && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("procmaps: %w: %w", fs.ErrNotExist, err)
	}
	return fmt.Errorf("procmaps: %w", err)
}
