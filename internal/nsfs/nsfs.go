// Package nsfs opens the files that traced programs make in their own
// directories, possibly inside a container's mount namespace, for a
// privileged collector that must not let them redirect it, and tells a
// process's pid in its own pid namespace.
//
// The files (devrt's rings and probe regions) are untrusted: a directory is
// opened inside a process's root with every symbolic link resolved as if
// that root were "/" (openat2 RESOLVE_IN_ROOT), a file is opened only if
// it is a regular file, never through a link, and removed only if it is
// still the file that was looked at. Shared by the devrt ring source and
// the device probes' region source.
package nsfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is returned by OpenRegular for a name that is not a
// regular file (nor a symbolic link: that is unix.ELOOP).
var ErrNotRegular = errors.New("not a regular file")

// OpenDir returns an O_PATH descriptor of dir as seen from root ("" for
// the collector's own root). Inside another root every symbolic link is
// resolved as if root were "/", so a container cannot point the collector
// at the host's files.
func OpenDir(root, dir string) (int, error) {
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

// ListNames returns the names in the directory dirfd that keep accepts.
// max bounds the entries read (0: all), so that a directory a program
// filled with names costs a bounded amount of work.
func ListNames(dirfd, max int, keep func(name string) bool) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "directory")
	defer f.Close()
	var out []string
	for read := 0; max <= 0 || read < max; {
		n := 1024
		if max > 0 {
			n = min(n, max-read)
		}
		names, err := f.Readdirnames(n)
		for _, name := range names {
			if keep(name) {
				out = append(out, name)
			}
		}
		read += len(names)
		if err == io.EOF {
			break // all read
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// OpenRegular opens name, a file of the directory dirfd, read-write, if it
// is a regular file. name must have no slash, so O_NOFOLLOW on its one
// component is all it takes not to follow a link (unix.ELOOP). What the
// name stands for is looked at through an O_PATH descriptor first, and
// that very file reopened: opening a FIFO or a device node read-write (a
// watchdog, a tty, a disk a traced program made a node of) can act on it
// (ErrNotRegular).
func OpenRegular(dirfd int, name string) (*os.File, error) {
	if strings.ContainsRune(name, '/') {
		return nil, fmt.Errorf("%q: a name with a slash", name)
	}
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
		return nil, fmt.Errorf("%w (mode %#o)", ErrNotRegular, st.Mode&unix.S_IFMT)
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

// RemoveIfSame unlinks name from dirfd if it is still the file (dev, ino):
// a file made since under the same name is not the caller's to remove.
func RemoveIfSame(dirfd int, name string, dev, ino uint64) error {
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

// MountNS identifies the mount namespace of pid ("mnt:[4026531841]").
func MountNS(procRoot string, pid int) (string, error) {
	return os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "ns", "mnt"))
}

// HostMountNS is the mount namespace of the host (pid 1's). Where pid 1's
// cannot be read (a sandbox whose pid 1 is not ptrace-readable) and
// procRoot is the reader's own /proc, it is the reader's own: a collector
// that reads its own /proc runs on the host or sees no host processes
// anyway. Otherwise "" (a collector in a container reading the host's
// /proc without access to pid 1: its own namespace is its container's),
// with which the caller takes every process for a container's and looks
// for its files through /proc/<pid>/root.
func HostMountNS(procRoot string) string {
	return hostMountNS(procRoot, filepath.Clean(procRoot) == "/proc")
}

// hostMountNS is HostMountNS, falling back to procRoot/self when own.
func hostMountNS(procRoot string, own bool) string {
	if ns, err := MountNS(procRoot, 1); err == nil || !own {
		return ns
	}
	ns, _ := os.Readlink(filepath.Join(procRoot, "self", "ns", "mnt"))
	return ns
}

// PIDNS is the number of pid's pid namespace (N of /proc/<pid>/ns/pid's
// "pid:[N]", the namespace's inode): what devrt writes in its ring's
// header.
func PIDNS(procRoot string, pid int) (uint64, error) {
	l, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "ns", "pid"))
	if err != nil {
		return 0, err
	}
	return ParseNSLink(l, "pid")
}

// ParseNSLink returns N of a namespace link's target "<kind>:[N]".
func ParseNSLink(target, kind string) (uint64, error) {
	rest, ok := strings.CutPrefix(target, kind+":[")
	if n, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); ok && strings.HasSuffix(rest, "]") && err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("namespace link %q: want %s:[N]", target, kind)
}

// NSPID is pid's pid in its own (innermost) pid namespace: the last field
// of NSpid in /proc/<pid>/status, what getpid() returns there.
func NSPID(procRoot string, pid int) (uint32, error) {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	return ParseNSPID(data)
}

// ParseNSPID returns the innermost pid of the NSpid line of a
// /proc/<pid>/status.
func ParseNSPID(status []byte) (uint32, error) {
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
