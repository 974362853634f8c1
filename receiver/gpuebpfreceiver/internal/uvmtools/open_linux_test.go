//go:build linux

package uvmtools

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fakeProc makes procRoot/<pid>/fd with the given fd -> target links.
func fakeProc(t *testing.T, pid int, links map[string]string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, strconv.Itoa(pid), "fd")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	return root
}

func TestFindUVMFds(t *testing.T) {
	root := fakeProc(t, 42, map[string]string{
		"0": "/dev/pts/0", "3": "/dev/nvidia-uvm", "10": "/dev/nvidia-uvm", "4": "/dev/nvidiactl",
		"5": "socket:[1234]", "6": "/dev/nvidia-uvm-tools", "7": "/dev/nvidia-uvm (deleted)",
	})
	fds, err := FindUVMFds(root, 42)
	require.NoError(t, err)
	assert.Equal(t, []int{3, 10}, fds)

	_, err = FindUVMFds(fakeProc(t, 42, map[string]string{"3": "/dev/nvidia0"}), 42)
	assert.ErrorIs(t, err, ErrNotCUDA)
	assert.ErrorContains(t, err, "pid 42 has no /dev/nvidia-uvm open")

	_, err = FindUVMFds(root, 43)
	assert.ErrorIs(t, err, ErrNoProcess)
	_, err = FindUVMFds(root, 0)
	assert.ErrorIs(t, err, ErrNoProcess)
}

func TestFindUVMFdsPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any directory")
	}
	root := fakeProc(t, 42, map[string]string{"3": "/dev/nvidia-uvm"})
	dir := filepath.Join(root, "42", "fd")
	require.NoError(t, os.Chmod(dir, 0))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	_, err := FindUVMFds(root, 42)
	assert.ErrorIs(t, err, ErrPermission)
}

func TestOpenOptions(t *testing.T) {
	for _, c := range []struct {
		opts Options
		msg  string
	}{
		{Options{QueueEntries: 3}, "QueueEntries 3: want a power of two"},
		{Options{QueueEntries: 1}, "QueueEntries 1"},
		{Options{QueueEntries: MaxQueueEntries * 2}, "QueueEntries"},
		{Options{Events: 1}, "bits outside AllEvents"},
		{Options{Events: 1 << 63}, "bits outside AllEvents"},
		{Options{Version: 3}, "Options.Version 3"},
		{Options{QueueEntries: 16, NotificationThreshold: 16}, "NotificationThreshold 16"},
	} {
		_, err := Open("/proc", os.Getpid(), c.opts)
		assert.ErrorContains(t, err, c.msg)
	}
	o, err := Options{}.normalized()
	require.NoError(t, err)
	assert.Equal(t, Options{Events: AllEvents, QueueEntries: DefaultQueueEntries, ToolsDevice: ToolsDevicePath}, o)
}

func TestOpenNoProcess(t *testing.T) {
	_, err := Open("/proc", 1<<30, Options{ToolsDevice: os.DevNull})
	assert.ErrorIs(t, err, ErrNoProcess)
	_, err = Open(t.TempDir(), 42, Options{ToolsDevice: os.DevNull})
	assert.ErrorIs(t, err, ErrNoProcess)
	_, err = Open("/proc", -1, Options{})
	assert.ErrorIs(t, err, ErrNoProcess)
}

func TestOpenNoDevice(t *testing.T) {
	root := fakeProc(t, 42, map[string]string{"3": "/dev/nvidia-uvm"})
	_, err := Open(root, 42, Options{ToolsDevice: filepath.Join(t.TempDir(), "nvidia-uvm-tools")})
	require.ErrorIs(t, err, ErrNoDevice)
	assert.ErrorContains(t, err, "no such file")

	regular := filepath.Join(t.TempDir(), "nvidia-uvm-tools")
	require.NoError(t, os.WriteFile(regular, nil, 0o600))
	_, err = Open(root, 42, Options{ToolsDevice: regular})
	require.ErrorIs(t, err, ErrNoDevice)
	assert.ErrorContains(t, err, "not a character device")
}

func TestOpenNotCUDA(t *testing.T) {
	root := fakeProc(t, 42, map[string]string{"0": "/dev/null", "3": "/dev/nvidiactl"})
	_, err := Open(root, 42, Options{ToolsDevice: os.DevNull})
	require.ErrorIs(t, err, ErrNotCUDA)
	assert.ErrorContains(t, err, "has no /dev/nvidia-uvm open")
}

// A /proc entry says /dev/nvidia-uvm but the fd duplicated is something else
// (the process closed it and reused the number): refused by device number.
func TestOpenRejectsReusedFd(t *testing.T) {
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	pid := os.Getpid()
	root := fakeProc(t, pid, map[string]string{strconv.Itoa(int(f.Fd())): "/dev/nvidia-uvm"})
	_, err = Open(root, pid, Options{ToolsDevice: os.DevNull, QueueEntries: 2})
	if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrPermission) {
		t.Skipf("pidfd_getfd not usable here: %v", err)
	}
	require.ErrorIs(t, err, ErrNotCUDA)
	assert.ErrorContains(t, err, "not /dev/nvidia-uvm (device 1:3")
}

func TestCheckUVMFd(t *testing.T) {
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(f.Fd()), &st))
	assert.Contains(t, checkUVMFd(int(f.Fd()), st.Rdev), "not /dev/nvidia-uvm")
	// Same major, minor 0 is what nvidia-uvm looks like.
	assert.Contains(t, checkUVMFd(int(f.Fd()), unix.Mkdev(1, 1)), "device 1:3")
	assert.Contains(t, checkUVMFd(-1, 0), "fstat")
}

// A tracker over a fake queue: Read decodes, skips and counts bad entries,
// reports drops; Close makes everything return ErrClosed.
func TestTrackerRead(t *testing.T) {
	d, r := newFakeQueue(t, 8, EntrySizeV2)
	tr := &Tracker{pid: 1, version: V2, ring: r, toolsFD: -1, countFD: -1, uvmFD: -1, pidFD: -1}
	require.True(t, d.enqueue(seqEntry(1)))
	require.True(t, d.enqueue(make([]byte, EntrySizeV2))) // type 0: bad
	require.True(t, d.enqueue(seqEntry(2)))
	for i := 0; i < 6; i++ {
		d.enqueue(seqEntry(100))
	}
	var got []uint64
	n, dropped, err := tr.Read(func(e Event) { got = append(got, e.Address) })
	require.NoError(t, err)
	assert.Equal(t, 6, n)
	assert.Equal(t, []uint64{1, 2, 100, 100, 100, 100}, got)
	assert.Equal(t, uint64(2), dropped)
	s := tr.Stats()
	assert.Equal(t, Stats{Entries: 7, DecodeErrors: 1, Dropped: 2, DroppedByType: map[EventType]uint64{EventCPUFault: 2}}, s)
	assert.Equal(t, 0, tr.Pending())
	assert.Equal(t, 72, tr.EntrySize())

	require.NoError(t, tr.Close())
	require.NoError(t, tr.Close())
	_, _, err = tr.Read(func(Event) {})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = tr.Wait(time.Millisecond)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, tr.Flush(), ErrClosed)
	_, err = tr.Processors()
	assert.ErrorIs(t, err, ErrClosed)
	_, ok := tr.Counters()
	assert.False(t, ok)
	assert.True(t, tr.Exited())
}

func TestMmapAnon(t *testing.T) {
	b, err := mmapAnon(100)
	require.NoError(t, err)
	defer unix.Munmap(b)
	assert.Equal(t, os.Getpagesize(), len(b))
	assert.Zero(t, uintptr(unsafe.Pointer(&b[0]))%uintptr(os.Getpagesize()), "page aligned, as the driver requires")
}
