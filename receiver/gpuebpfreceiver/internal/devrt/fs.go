package devrt

import (
	"errors"
	"fmt"
	"os"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
)

// The ring files are opened, listed and removed with internal/nsfs (shared
// with the device probes' regions): without following links, inside a
// container's root as if it were "/".

// openDir returns an O_PATH descriptor of dir as seen from root ("" for
// the collector's own root): nsfs.OpenDir.
func openDir(root, dir string) (int, error) { return nsfs.OpenDir(root, dir) }

// listRings returns the ring file names in the directory dirfd, those of
// devrt pid pid only when pid is not 0.
func listRings(dirfd int, pid uint32) ([]string, error) {
	return nsfs.ListNames(dirfd, 0, func(n string) bool {
		p, ok := parseName(n)
		return ok && (pid == 0 || p == pid)
	})
}

// openRingFile opens name, a file of the directory dirfd, read-write, if it
// is a regular file (nsfs.OpenRegular); anything else but a link is
// devring.ErrInvalid.
func openRingFile(dirfd int, name string) (*os.File, error) {
	f, err := nsfs.OpenRegular(dirfd, name)
	if errors.Is(err, nsfs.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", devring.ErrInvalid, err)
	}
	return f, err
}

// removeRing unlinks name from dirfd if it is still the file (dev, ino).
func removeRing(dirfd int, name string, dev, ino uint64) error {
	return nsfs.RemoveIfSame(dirfd, name, dev, ino)
}

// mountNS identifies the mount namespace of pid.
func mountNS(procRoot string, pid int) (string, error) { return nsfs.MountNS(procRoot, pid) }

// nsPID is pid's pid in its own (innermost) pid namespace.
func nsPID(procRoot string, pid int) (uint32, error) { return nsfs.NSPID(procRoot, pid) }

func parseNSpid(status []byte) (uint32, error) { return nsfs.ParseNSPID(status) }
