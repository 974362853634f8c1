package procattr

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeProc is one process of a fake procfs tree. Empty exe, comm or cgroup
// leave the file out, as the kernel does for what cannot be read.
type fakeProc struct {
	pid    int
	comm   string
	start  uint64
	exe    string
	cgroup string
}

// write creates (or overwrites) the process's files under root.
func (p fakeProc) write(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(p.pid))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(statLine(p.pid, p.comm, p.start)), 0o644))
	for name, content := range map[string]string{"comm": p.comm + "\n", "cgroup": p.cgroup} {
		path := filepath.Join(dir, name)
		if content == "\n" || content == "" {
			require.NoError(t, os.RemoveAll(path))
			continue
		}
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	exe := filepath.Join(dir, "exe")
	require.NoError(t, os.RemoveAll(exe))
	if p.exe != "" {
		require.NoError(t, os.Symlink(p.exe, exe))
	}
}

const (
	dockerCgroup = "0::/system.slice/docker-" + cid + ".scope\n"
	hostCgroup   = "0::/user.slice/user-1000.slice/session-2.scope\n"
)

func newTestResolver(t *testing.T, root string, opts ...Option) *Resolver {
	t.Helper()
	r, err := NewResolver(root, opts...)
	require.NoError(t, err)
	return r
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name string
		proc fakeProc
		want Process
	}{
		{
			name: "container process",
			proc: fakeProc{pid: 4242, comm: "pt_main_thread", start: 123456, exe: "/opt/conda/bin/python3.11", cgroup: dockerCgroup},
			want: Process{
				PID: 4242, StartTime: 123456, ExeName: "python3.11", ExePath: "/opt/conda/bin/python3.11",
				Cgroup: Cgroup{Path: "/system.slice/docker-" + cid + ".scope", ContainerID: cid, Runtime: RuntimeDocker},
			},
		},
		{
			name: "comm with spaces and parentheses",
			proc: fakeProc{pid: 7, comm: "my (odd) name", start: 9, exe: "/usr/bin/odd", cgroup: hostCgroup},
			want: Process{
				PID: 7, StartTime: 9, ExeName: "odd", ExePath: "/usr/bin/odd",
				Cgroup: Cgroup{Path: "/user.slice/user-1000.slice/session-2.scope"},
			},
		},
		{
			name: "replaced executable",
			proc: fakeProc{pid: 8, comm: "trainer", start: 10, exe: "/srv/trainer (deleted)", cgroup: hostCgroup},
			want: Process{
				PID: 8, StartTime: 10, ExeName: "trainer", ExePath: "/srv/trainer",
				Cgroup: Cgroup{Path: "/user.slice/user-1000.slice/session-2.scope"},
			},
		},
		{
			name: "no exe falls back to comm",
			proc: fakeProc{pid: 2, comm: "kthreadd", start: 1, cgroup: "0::/\n"},
			want: Process{PID: 2, StartTime: 1, ExeName: "kthreadd", Cgroup: Cgroup{Path: "/"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.proc.write(t, root)
			r := newTestResolver(t, root)

			got, err := r.Resolve(tt.proc.pid)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, 1, r.Len())
		})
	}
}

func TestResolveCommFallbacks(t *testing.T) {
	root := t.TempDir()
	fakeProc{pid: 3, comm: "from-stat", start: 1, cgroup: "0::/\n"}.write(t, root)
	dir := filepath.Join(root, "3")
	r := newTestResolver(t, root)

	// comm is preferred over stat's copy of the same name.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "comm"), []byte("from-comm\n"), 0o644))
	got, err := r.Resolve(3)
	require.NoError(t, err)
	assert.Equal(t, "from-comm", got.ExeName)

	// Without comm, stat's copy is used.
	r.Forget(3)
	require.NoError(t, os.Remove(filepath.Join(dir, "comm")))
	got, err = r.Resolve(3)
	require.NoError(t, err)
	assert.Equal(t, "from-stat", got.ExeName)
	assert.Equal(t, "", got.ExePath)
}

func TestResolveCaches(t *testing.T) {
	root := t.TempDir()
	p := fakeProc{pid: 100, comm: "python3", start: 500, exe: "/usr/bin/python3", cgroup: hostCgroup}
	p.write(t, root)
	r := newTestResolver(t, root)

	first, err := r.Resolve(100)
	require.NoError(t, err)

	// Same process (same start time): the cached entry is returned even
	// though the files changed.
	changed := p
	changed.exe, changed.cgroup = "/usr/bin/other", dockerCgroup
	changed.write(t, root)
	got, err := r.Resolve(100)
	require.NoError(t, err)
	assert.Equal(t, first, got)

	// The pid was reused by a new process: it is read again.
	reused := changed
	reused.start = 900
	reused.write(t, root)
	got, err = r.Resolve(100)
	require.NoError(t, err)
	assert.Equal(t, Process{
		PID: 100, StartTime: 900, ExeName: "other", ExePath: "/usr/bin/other",
		Cgroup: Cgroup{Path: "/system.slice/docker-" + cid + ".scope", ContainerID: cid, Runtime: RuntimeDocker},
	}, got)
	assert.Equal(t, 1, r.Len())

	// Forget drops the entry, so the next Resolve reads again.
	r.Forget(100)
	assert.Equal(t, 0, r.Len())
	r.Forget(100) // forgetting twice is fine
	p.start = 900
	p.write(t, root)
	got, err = r.Resolve(100)
	require.NoError(t, err)
	assert.Equal(t, "python3", got.ExeName)
	assert.Equal(t, 1, r.Len())
}

// TestResolveAfterExec: a process resolved between its fork and its exec
// (its parent's program) keeps its pid and start time across the exec;
// the new comm its stat shows makes the next Resolve read it again,
// without a Forget.
func TestResolveAfterExec(t *testing.T) {
	root := t.TempDir()
	p := fakeProc{pid: 100, comm: "bash", start: 500, exe: "/usr/bin/bash", cgroup: hostCgroup}
	p.write(t, root)
	r := newTestResolver(t, root)
	got, err := r.Resolve(100)
	require.NoError(t, err)
	assert.Equal(t, "bash", got.ExeName)

	execd := p
	execd.comm, execd.exe = "workload", "/opt/bin/workload"
	execd.write(t, root)
	got, err = r.Resolve(100)
	require.NoError(t, err)
	assert.Equal(t, []any{100, uint64(500), "workload", "/opt/bin/workload"},
		[]any{got.PID, got.StartTime, got.ExeName, got.ExePath})
	assert.Equal(t, 1, r.Len())
}

func TestResolveEvictsLeastRecentlyUsed(t *testing.T) {
	root := t.TempDir()
	for pid := 1; pid <= 3; pid++ {
		fakeProc{pid: pid, comm: "p", start: 1, exe: fmt.Sprintf("/bin/p%d", pid), cgroup: hostCgroup}.write(t, root)
	}
	r := newTestResolver(t, root, WithCacheSize(2))

	resolve := func(pid int) string {
		t.Helper()
		p, err := r.Resolve(pid)
		require.NoError(t, err)
		return p.ExeName
	}
	resolve(1)
	resolve(2)
	resolve(1) // 2 is now the least recently used
	resolve(3)
	assert.Equal(t, 2, r.Len())

	// Change every exe without changing start times: only entries that
	// were evicted are read again.
	for pid := 1; pid <= 3; pid++ {
		fakeProc{pid: pid, comm: "p", start: 1, exe: fmt.Sprintf("/bin/new%d", pid), cgroup: hostCgroup}.write(t, root)
	}
	assert.Equal(t, "p1", resolve(1))
	assert.Equal(t, "p3", resolve(3))
	assert.Equal(t, "new2", resolve(2)) // evicted, re-read; evicts 1
	assert.Equal(t, "new1", resolve(1))
	assert.Equal(t, 2, r.Len())
}

func TestResolveGone(t *testing.T) {
	root := t.TempDir()
	fakeProc{pid: 55, comm: "short", start: 1, exe: "/bin/short", cgroup: hostCgroup}.write(t, root)
	r := newTestResolver(t, root)
	_, err := r.Resolve(55)
	require.NoError(t, err)

	require.NoError(t, os.RemoveAll(filepath.Join(root, "55")))
	_, err = r.Resolve(55)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "procattr: process 55: ")

	_, err = r.Resolve(56)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestResolveMissingCgroup(t *testing.T) {
	// The cgroup file goes away when the process exits between reads.
	root := t.TempDir()
	fakeProc{pid: 9, comm: "x", start: 1, exe: "/bin/x"}.write(t, root)
	r := newTestResolver(t, root)
	_, err := r.Resolve(9)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Equal(t, 0, r.Len())
}

func TestResolveBadFiles(t *testing.T) {
	tests := []struct {
		name   string
		stat   string
		cgroup string
		want   string
	}{
		{
			name: "truncated stat", stat: "9 (x) S 1", cgroup: hostCgroup,
			want: "procattr: process 9: stat: 4 fields, want at least 22",
		},
		{
			name: "garbage cgroup", stat: statLine(9, "x", 1), cgroup: "\x00\x00",
			want: `procattr: process 9: cgroup line 1: control byte 0x00 in "\x00\x00": not a cgroup file`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			fakeProc{pid: 9, comm: "x", start: 1, exe: "/bin/x", cgroup: hostCgroup}.write(t, root)
			dir := filepath.Join(root, "9")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(tt.stat), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup"), []byte(tt.cgroup), 0o644))
			r := newTestResolver(t, root)

			_, err := r.Resolve(9)
			require.EqualError(t, err, tt.want)
			assert.False(t, errors.Is(err, fs.ErrNotExist))
			assert.Equal(t, 0, r.Len())
		})
	}
}

func TestResolveInvalidPID(t *testing.T) {
	r := newTestResolver(t, t.TempDir())
	for _, pid := range []int{0, -1} {
		_, err := r.Resolve(pid)
		require.EqualError(t, err, fmt.Sprintf("procattr: invalid pid %d", pid))
	}
}

func TestNewResolverErrors(t *testing.T) {
	_, err := NewResolver("")
	require.EqualError(t, err, "procattr: procRoot must not be empty")
	_, err = NewResolver("/proc", WithCacheSize(0))
	require.EqualError(t, err, "procattr: cache size 0 must be at least 1")
	_, err = NewResolver("/proc", WithCacheSize(-3))
	require.EqualError(t, err, "procattr: cache size -3 must be at least 1")
}

func TestResolveConcurrent(t *testing.T) {
	root := t.TempDir()
	const procs = 50
	for pid := 1; pid <= procs; pid++ {
		fakeProc{pid: pid, comm: "w", start: uint64(pid), exe: fmt.Sprintf("/bin/w%d", pid), cgroup: dockerCgroup}.write(t, root)
	}
	r := newTestResolver(t, root, WithCacheSize(16))

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				pid := (g*31+i)%procs + 1
				p, err := r.Resolve(pid)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, fmt.Sprintf("w%d", pid), p.ExeName)
				assert.Equal(t, uint64(pid), p.StartTime)
				if i%7 == 0 {
					r.Forget(pid)
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, r.Len(), 16)
}

// TestResolveSelf reads the real /proc for the test binary itself.
func TestResolveSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no procfs:", err)
	}
	r := newTestResolver(t, "/proc")
	p, err := r.Resolve(os.Getpid())
	require.NoError(t, err)

	exe, err := os.Executable()
	require.NoError(t, err)
	stat, err := os.ReadFile("/proc/self/stat")
	require.NoError(t, err)
	_, start, err := parseStat(stat)
	require.NoError(t, err)
	cg, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	wantCgroup, err := ParseCgroup(cg)
	require.NoError(t, err)

	assert.Equal(t, Process{
		PID:       os.Getpid(),
		StartTime: start,
		ExeName:   filepath.Base(exe),
		ExePath:   exe,
		Cgroup:    wantCgroup,
	}, p)
}

func TestProcError(t *testing.T) {
	// Reading through a /proc/<pid> handle after the process exited fails
	// with ESRCH, not ENOENT.
	esrch := &fs.PathError{Op: "openat", Path: "stat", Err: syscall.ESRCH}
	err := procError(12, esrch)
	require.EqualError(t, err, "procattr: process 12: file does not exist: openat stat: no such process")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, err, syscall.ESRCH)

	enoent := &fs.PathError{Op: "open", Path: "/proc/12/stat", Err: syscall.ENOENT}
	err = procError(12, enoent)
	require.EqualError(t, err, "procattr: process 12: open /proc/12/stat: no such file or directory")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	eacces := &fs.PathError{Op: "open", Path: "/proc/12/stat", Err: syscall.EACCES}
	err = procError(12, eacces)
	assert.ErrorIs(t, err, fs.ErrPermission)
	assert.False(t, errors.Is(err, fs.ErrNotExist))
}
