package devrt

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
)

// openDir returns an O_PATH descriptor of dir as seen from root ("" for
// the collector's own root). Inside another root every symbolic link is
// resolved as if root were "/", so a container cannot point the collector
// at the host's files.
func openDir(root, dir string) (int, error) {
	if root == "" {
		return unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	return unix.Openat2(rfd, strings.TrimPrefix(dir, "/"), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// listRings returns the ring file names in the directory dirfd, those of
// devrt pid pid only when pid is not 0.
func listRings(dirfd int, pid uint32) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "ring directory")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := names[:0]
	for _, n := range names {
		if p, ok := parseName(n); ok && (pid == 0 || p == pid) {
			out = append(out, n)
		}
	}
	return out, nil
}

// openRingFile opens name, a file of the directory dirfd, read-write, if it
// is a regular file. name has no slash (parseName accepted it), so
// O_NOFOLLOW on its one component is all it takes not to follow a link.
// What the name stands for is looked at through an O_PATH descriptor first,
// and that very file reopened: opening a FIFO or a device node read-write
// (a watchdog, a tty, a disk a traced program made a node of) can act on
// it.
func openRingFile(dirfd int, name string) (*os.File, error) {
	pfd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK: // O_PATH|O_NOFOLLOW opens the link itself
		return nil, unix.ELOOP
	default:
		return nil, fmt.Errorf("%w: not a regular file (mode %#o)", devring.ErrInvalid, st.Mode&unix.S_IFMT)
	}
	const flags = unix.O_RDWR | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), flags, 0)
	if err == unix.ENOENT {
		// No /proc here: by name again (it was a regular file a moment ago).
		fd, err = unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// removeRing unlinks name from dirfd if it is still the file (dev, ino):
// a file made since under the same name is not ours to remove.
func removeRing(dirfd int, name string, dev, ino uint64) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	if uint64(st.Dev) != dev || st.Ino != ino {
		return nil
	}
	return unix.Unlinkat(dirfd, name, 0)
}

// mountNS identifies the mount namespace of pid.
func mountNS(procRoot string, pid int) (string, error) {
	return os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "ns", "mnt"))
}

// nsPID is pid's pid in its own (innermost) pid namespace: the last field
// of NSpid in /proc/<pid>/status, what getpid() returns there.
func nsPID(procRoot string, pid int) (uint32, error) {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	return parseNSpid(data)
}

func parseNSpid(status []byte) (uint32, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("NSpid:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			break
		}
		v, err := strconv.ParseUint(string(f[len(f)-1]), 10, 32)
		if err != nil || v == 0 {
			return 0, fmt.Errorf("status: NSpid %q", rest)
		}
		return uint32(v), nil
	}
	return 0, fmt.Errorf("status: no NSpid line")
}
