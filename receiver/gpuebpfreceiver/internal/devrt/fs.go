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
