package devrt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
)

// TestOpenRingFileOnlyOpensRegularFiles: a file named like a ring that is
// not a regular file is refused before it is opened for reading and
// writing: a privileged collector must not open a FIFO or a device node
// (a watchdog, a tty, a disk) that a traced program put in the directory.
func TestOpenRingFileOnlyOpensRegularFiles(t *testing.T) {
	dir := t.TempDir()
	const name = "gpuext-devrt-5-1.ring"
	for _, tt := range []struct {
		name    string
		make    func(path string) error
		invalid bool // refused as not a ring (else: not opened, another error)
	}{
		{"regular", func(p string) error {
			prod, err := devring.Create(p, devring.Header{Capacity: 64, PID: 5, StartTime: 7, CreatedNS: 1})
			if err == nil {
				err = prod.Close()
			}
			return err
		}, false},
		{"fifo", func(p string) error { return unix.Mkfifo(p, 0o600) }, true},
		{"char device", func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))) }, true},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, true},
		{"symbolic link", func(p string) error { return os.Symlink("/dev/null", p) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sub := filepath.Join(dir, filepath.Base(t.Name()))
			require.NoError(t, os.Mkdir(sub, 0o700))
			if err := tt.make(filepath.Join(sub, name)); err != nil {
				t.Skip("cannot make it here:", err)
			}
			dirfd, err := nsfs.OpenDir("", sub)
			require.NoError(t, err)
			defer unix.Close(dirfd)
			f, err := openRingFile(dirfd, name)
			switch {
			case tt.name == "regular":
				require.NoError(t, err)
				r, err := devring.FromFile(f)
				require.NoError(t, err)
				require.Equal(t, uint32(5), r.Header().PID)
				require.NoError(t, r.Close())
				require.NoError(t, f.Close())
			case tt.invalid:
				require.ErrorIs(t, err, devring.ErrInvalid)
				require.Nil(t, f)
			default:
				require.Error(t, err)
				require.NotErrorIs(t, err, devring.ErrInvalid)
				require.Nil(t, f)
			}
		})
	}
}
