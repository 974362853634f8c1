package nsfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestListNamesBounded: a listing reads at most max entries (0: all), in
// chunks, and returns those keep accepts.
func TestListNamesBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 2000 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o600))
	}
	fd, err := OpenDir("", dir)
	require.NoError(t, err)
	defer unix.Close(fd)
	all := func(string) bool { return true }
	for _, tt := range []struct {
		max  int
		keep func(string) bool
		want int
	}{
		{0, all, 2000},
		{3, all, 3},
		{1500, all, 1500},
		{5000, all, 2000},
		{0, func(n string) bool { return len(n) == 1 }, 10},
	} {
		names, err := ListNames(fd, tt.max, tt.keep)
		require.NoError(t, err)
		require.Len(t, names, tt.want, "max %d", tt.max)
	}
}

// TestOpenRegularRefusesSlashes: the name is one component.
func TestOpenRegularRefusesSlashes(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "f"), nil, 0o600))
	fd, err := OpenDir("", dir)
	require.NoError(t, err)
	defer unix.Close(fd)
	_, err = OpenRegular(fd, "sub/f")
	require.EqualError(t, err, `"sub/f": a name with a slash`)
}

// TestOpenRegularKinds: only a regular file opens; a link is ELOOP and
// never followed, a FIFO or a directory is ErrNotRegular (a FIFO opened
// read-write would not block, but it is not a ring to map).
func TestOpenRegularKinds(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "reg"), []byte("x"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(dir, "reg"), filepath.Join(dir, "link")))
	require.NoError(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "dir"), 0o700))
	fd, err := OpenDir("", dir)
	require.NoError(t, err)
	defer unix.Close(fd)
	for _, tt := range []struct {
		name string
		want error
	}{
		{"reg", nil},
		{"link", unix.ELOOP},
		{"fifo", ErrNotRegular},
		{"dir", ErrNotRegular},
		{"missing", unix.ENOENT},
	} {
		f, err := OpenRegular(fd, tt.name)
		if tt.want == nil {
			require.NoError(t, err, tt.name)
			require.NoError(t, f.Close())
			continue
		}
		require.ErrorIs(t, err, tt.want, tt.name)
		require.Nil(t, f, tt.name)
	}
}

// TestRemoveIfSame: a file replaced under the same name is left alone.
func TestRemoveIfSame(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	var st unix.Stat_t
	require.NoError(t, unix.Stat(p, &st))
	fd, err := OpenDir("", dir)
	require.NoError(t, err)
	defer unix.Close(fd)

	require.NoError(t, os.Remove(p))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "g"), nil, 0o600)) // keeps the inode busy
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	var st2 unix.Stat_t
	require.NoError(t, unix.Stat(p, &st2))
	if st2.Ino != st.Ino {
		require.NoError(t, RemoveIfSame(fd, "f", uint64(st.Dev), st.Ino))
		require.FileExists(t, p)
	}
	require.NoError(t, RemoveIfSame(fd, "f", uint64(st2.Dev), st2.Ino))
	require.NoFileExists(t, p)
	require.NoError(t, RemoveIfSame(fd, "f", uint64(st2.Dev), st2.Ino), "gone already")
}

func TestParseNSPID(t *testing.T) {
	for _, tt := range []struct {
		status string
		want   uint32
		err    string
	}{
		{"Name:\tx\nNSpid:\t4242\n", 4242, ""},
		{"NSpid:\t4242\t17\t1\n", 1, ""},
		{"Name:\tx\n", 0, "status: no NSpid line"},
		{"NSpid:\t0\n", 0, `status: NSpid "\t0"`},
		{"NSpid:\tx\n", 0, `status: NSpid "\tx"`},
		{"NSpid:\n", 0, "status: no NSpid line"},
	} {
		got, err := ParseNSPID([]byte(tt.status))
		if tt.err != "" {
			require.EqualError(t, err, tt.err, tt.status)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
}

// TestHostMountNS: pid 1's namespace where it can be read; where it
// cannot, the reader's own (self) when the proc is the reader's own, else
// ""; "" where neither can be read.
func TestHostMountNS(t *testing.T) {
	for _, tt := range []struct {
		name      string
		pid1, slf string // "": no link
		own       bool
		want      string
	}{
		{"pid 1 readable", "mnt:[1]", "mnt:[2]", true, "mnt:[1]"},
		{"pid 1 readable, another proc", "mnt:[1]", "mnt:[2]", false, "mnt:[1]"},
		{"pid 1 hidden", "", "mnt:[2]", true, "mnt:[2]"},
		{"pid 1 hidden, another proc (the host's, in a container)", "", "mnt:[2]", false, ""},
		{"neither", "", "", true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for dir, target := range map[string]string{"1": tt.pid1, "self": tt.slf} {
				require.NoError(t, os.MkdirAll(filepath.Join(root, dir, "ns"), 0o755))
				if target != "" {
					require.NoError(t, os.Symlink(target, filepath.Join(root, dir, "ns", "mnt")))
				}
			}
			require.Equal(t, tt.want, hostMountNS(root, tt.own))
			if !tt.own {
				require.Equal(t, tt.want, HostMountNS(root), "a root that is not /proc is not the reader's own")
			}
		})
	}
}

func TestParseNSLink(t *testing.T) {
	for _, tt := range []struct {
		target, kind string
		want         uint64
		err          bool
	}{
		{"pid:[4026531836]", "pid", 4026531836, false},
		{"mnt:[4026531841]", "mnt", 4026531841, false},
		{"pid:[0]", "pid", 0, false},
		{"mnt:[4026531841]", "pid", 0, true},
		{"pid:[4026531836", "pid", 0, true},
		{"pid:[]", "pid", 0, true},
		{"pid:[-1]", "pid", 0, true},
		{"pid:[12]x", "pid", 0, true},
		{"pid:[18446744073709551616]", "pid", 0, true},
		{"", "pid", 0, true},
	} {
		got, err := ParseNSLink(tt.target, tt.kind)
		if tt.err {
			require.EqualError(t, err, fmt.Sprintf("namespace link %q: want %s:[N]", tt.target, tt.kind), tt.target)
			continue
		}
		require.NoError(t, err, tt.target)
		require.Equal(t, tt.want, got, tt.target)
	}
}

// TestPIDNS: the number of a process's pid namespace link; an error where
// the link cannot be read.
func TestPIDNS(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "7", "ns"), 0o755))
	require.NoError(t, os.Symlink("pid:[4026532001]", filepath.Join(root, "7", "ns", "pid")))
	got, err := PIDNS(root, 7)
	require.NoError(t, err)
	require.Equal(t, uint64(4026532001), got)
	_, err = PIDNS(root, 8)
	require.ErrorIs(t, err, fs.ErrNotExist)
	self, err := PIDNS("/proc", os.Getpid())
	require.NoError(t, err, "this process's own")
	require.NotZero(t, self)
}

// FuzzParseNSLink: any target parses or is refused without a panic; one
// that parses is "<kind>:[digits]", and every number round-trips.
func FuzzParseNSLink(f *testing.F) {
	f.Add("pid:[4026531836]", uint64(4026531836))
	f.Add("pid:[", uint64(0))
	f.Add("pid:[1]]", uint64(1))
	f.Fuzz(func(t *testing.T, target string, n uint64) {
		if v, err := ParseNSLink(target, "pid"); err == nil {
			require.True(t, strings.HasPrefix(target, "pid:[") && strings.HasSuffix(target, "]"), target)
			digits := target[len("pid:[") : len(target)-1]
			require.NotEmpty(t, digits)
			require.Equal(t, -1, strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }), target)
			w, _ := strconv.ParseUint(digits, 10, 64)
			require.Equal(t, w, v)
		}
		v, err := ParseNSLink("pid:["+strconv.FormatUint(n, 10)+"]", "pid")
		require.NoError(t, err)
		require.Equal(t, n, v)
	})
}
