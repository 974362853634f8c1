package devring

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeaderValidation(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(mem []byte) []byte
		want   error
		msg    string
	}{
		{"valid", func(m []byte) []byte { return m }, nil, ""},
		{"shorter than two pages", func(m []byte) []byte { return m[:DataOffset-1] }, ErrNotReady, "8191 bytes"},
		{"empty", func(m []byte) []byte { return m[:0] }, ErrNotReady, "0 bytes"},
		{"no magic yet", func(m []byte) []byte { putU64(m, hdrMagic, 0); return m }, ErrNotReady, "no magic"},
		{"other magic", func(m []byte) []byte { putU64(m, hdrMagic, 0x1234); return m }, ErrInvalid, "magic 0x1234"},
		{"abi version", func(m []byte) []byte { putU32(m, hdrABIVersion, 2); return m }, ErrInvalid, "abi version 2, want 1"},
		{"slot size", func(m []byte) []byte { putU32(m, hdrSlotSize, 128); return m }, ErrInvalid, "slot size 128, want 192"},
		{"capacity not a power of two", func(m []byte) []byte { putU32(m, hdrCapacity, 96); return m }, ErrInvalid, "capacity 96 is not a power of two in [64, 1048576]"},
		{"capacity too small", func(m []byte) []byte { putU32(m, hdrCapacity, 32); return m }, ErrInvalid, "capacity 32"},
		{"capacity too large", func(m []byte) []byte { putU32(m, hdrCapacity, 1<<21); return m }, ErrInvalid, "capacity 2097152"},
		{"capacity zero", func(m []byte) []byte { putU32(m, hdrCapacity, 0); return m }, ErrInvalid, "capacity 0"},
		{"file shorter than the capacity", func(m []byte) []byte { return m[:len(m)-1] }, ErrInvalid, "20479 bytes, capacity 64 needs 20480"},
		{"capacity beyond the file", func(m []byte) []byte { putU32(m, hdrCapacity, 128); return m }, ErrInvalid, "20480 bytes, capacity 128 needs 32768"},
		{"control page offset", func(m []byte) []byte { putU32(m, hdrCtlOffset, 0); return m }, ErrInvalid, "control page at 0, want 4096"},
		{"data offset", func(m []byte) []byte { putU32(m, hdrDataOffset, 4096); return m }, ErrInvalid, "slots at 4096, want 8192"},
		{"pid 0", func(m []byte) []byte { putU32(m, hdrPID, 0); return m }, ErrInvalid, "pid 0"},
		{"state 0", func(m []byte) []byte { putU32(m, hdrState, 0); return m }, ErrInvalid, "state 0"},
		{"state 4", func(m []byte) []byte { putU32(m, hdrState, 4); return m }, ErrInvalid, "state 4"},
		{"no control magic yet", func(m []byte) []byte { putU64(m, CtlOffset, 0); return m }, ErrNotReady, "no control page magic"},
		{"other control magic", func(m []byte) []byte { putU64(m, CtlOffset, 7); return m }, ErrInvalid, "control page magic 0x7"},
		{"every fault at once", func(m []byte) []byte {
			putU32(m, hdrABIVersion, 9)
			putU32(m, hdrSlotSize, 9)
			putU32(m, hdrPID, 0)
			return m
		}, ErrInvalid, "abi version 9, want 1; slot size 9, want 192; pid 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := fromMemory(tt.mutate(NewMemory(testHeader)))
			if tt.want == nil {
				require.NoError(t, err)
				require.Equal(t, testHeader, r.Header())
				return
			}
			require.ErrorIs(t, err, tt.want)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestVersionIsCleaned(t *testing.T) {
	mem := NewMemory(testHeader)
	copy(mem[hdrVersion:], "1.0\xff\xfe\x00")
	r, err := fromMemory(mem)
	require.NoError(t, err)
	require.Equal(t, "1.0?", r.Header().Version)
	copy(mem[hdrVersion:], "0123456789abcdefXYZ") // no NUL within 16 bytes
	r, err = fromMemory(mem)
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef", r.Header().Version)
}

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gpuext-devrt-4242-1.ring")
	p, err := Create(path, testHeader)
	require.NoError(t, err)
	defer p.Close()
	require.True(t, p.Write(record(1, 100)))

	r, err := Open(path)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, testHeader, r.Header())
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	dev, ino := r.FileID()
	require.Equal(t, uint64(st.Dev), dev)
	require.Equal(t, st.Ino, ino)
	require.Equal(t, [][]byte{record(1, 100)}, drainAll(t, r))
	c, err := r.Counters()
	require.NoError(t, err)
	require.Equal(t, Counters{State: StateActive, Head: 1, Records: 1}, c)

	_, err = Create(path, testHeader)
	require.ErrorIs(t, err, os.ErrExist, "Create never overwrites")
}

func TestOpenRefusesWhatIsNotARing(t *testing.T) {
	dir := t.TempDir()
	ring := filepath.Join(dir, "ring")
	p, err := Create(ring, testHeader)
	require.NoError(t, err)
	defer p.Close()

	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(ring, link))
	_, err = Open(link)
	require.ErrorIs(t, err, syscall.ELOOP, "a symlink is not followed")

	hard := filepath.Join(dir, "hard")
	require.NoError(t, os.Link(ring, hard))
	_, err = Open(hard)
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), "2 links")
	require.NoError(t, os.Remove(hard))

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	_, err = Open(fifo)
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), "not a regular file")

	_, err = Open(dir)
	require.Error(t, err)

	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, make([]byte, 100), 0o600))
	_, err = Open(short)
	require.ErrorIs(t, err, ErrNotReady)

	zero := filepath.Join(dir, "zeros")
	require.NoError(t, os.WriteFile(zero, make([]byte, 3*PageSize), 0o600))
	_, err = Open(zero)
	require.ErrorIs(t, err, ErrNotReady)
}

// TestTruncatedUnderTheConsumer: the producer shrinks the file after the
// collector mapped it. Touching the lost pages raises SIGBUS; the ring
// breaks, the process lives on.
func TestTruncatedUnderTheConsumer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	p, err := Create(path, testHeader)
	require.NoError(t, err)
	defer p.Close()
	require.True(t, p.Write(record(1, 10)))
	r, err := Open(path)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, os.Truncate(path, 0))

	_, err = r.Drain(func([]byte) error { t.Fatal("no record from a truncated file"); return nil })
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "fault at offset")
	require.ErrorIs(t, r.Broken(), ErrCorrupt)
	_, err = r.Counters()
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, r.WriteControl(Control{}), ErrCorrupt)
	require.ErrorIs(t, r.Heartbeat(1), ErrCorrupt)
}

func TestClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	p, err := Create(path, testHeader)
	require.NoError(t, err)
	defer p.Close()
	r, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	_, err = r.Drain(func([]byte) error { return nil })
	require.True(t, errors.Is(err, ErrClosed))
	_, err = r.Counters()
	require.ErrorIs(t, err, ErrClosed)
}
