package procmaps

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeMaps creates <root>/<pid>/maps with the given content.
func writeMaps(t *testing.T, root string, pid int, content string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "maps"), []byte(content), 0o644))
}

// pytorchMaps is an excerpt of the maps of a PyTorch process in a container
// (overlayfs, device 00:1a3) on a host whose driver was upgraded after the
// process started, so libcuda shows as deleted; the host also bind-mounts a
// second libcuda (another device) into the container.
const pytorchMaps = `55d4c8a00000-55d4c8a6e000 r--p 00000000 00:1a3 1311                       /usr/bin/python3.11
55d4c8a6e000-55d4c8d1b000 r-xp 0006e000 00:1a3 1311                       /usr/bin/python3.11
55d4c9a1d000-55d4c9f2a000 rw-p 00000000 00:00 0                          [heap]
7f1e3b200000-7f1e3b228000 r--p 00000000 00:1a3 4522                       /usr/local/cuda/lib64/libcudart.so.12.4.127
7f1e3b228000-7f1e3b2b2000 r-xp 00028000 00:1a3 4522                       /usr/local/cuda/lib64/libcudart.so.12.4.127
7f1e3b2b2000-7f1e3b2f5000 r--p 000b2000 00:1a3 4522                       /usr/local/cuda/lib64/libcudart.so.12.4.127
7f2a10000000-7f2a10200000 rw-s 00000000 00:05 1035                       /dev/nvidia0
7f3c2a000000-7f3c2a1f0000 r--p 00000000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05 (deleted)
7f3c2a1f0000-7f3c2a7b0000 r-xp 001f0000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05 (deleted)
7f3c2a7b0000-7f3c2a9f0000 r--p 007b0000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05 (deleted)
7f3c2a9f0000-7f3c2aa10000 rw-p 009f0000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05 (deleted)
7f3c2aa10000-7f3c2aa40000 rw-p 00000000 00:00 0 
7f4000000000-7f4000100000 r-xp 00000000 103:02 1234567                    /usr/lib64/libcuda.so.1
7f5e1c000000-7f5e1c022000 r--p 00000000 00:1a3 220                        /usr/lib/x86_64-linux-gnu/libc.so.6
7f5e1c022000-7f5e1c19a000 r-xp 00022000 00:1a3 220                        /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd4a1b6000-7ffd4a1d8000 rw-p 00000000 00:00 0                          [stack]
7ffd4a1f2000-7ffd4a1f4000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
`

func TestScan(t *testing.T) {
	root := t.TempDir()
	writeMaps(t, root, 4242, pytorchMaps)
	mapFiles := filepath.Join(root, "4242", "map_files")

	tests := []struct {
		name  string
		match func(string) bool
		want  []Library
	}{
		{
			name:  "cuda libraries",
			match: LibraryMatcher("libcuda.so*", "libcudart.so*"),
			want: []Library{
				{
					Path: "/usr/local/cuda/lib64/libcudart.so.12.4.127", Dev: 0x1000a3, Inode: 4522,
					Start: 0x7f1e3b200000, Offset: 0, MapFilesPath: mapFiles + "/7f1e3b200000-7f1e3b228000",
				},
				{
					Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", Dev: 0xfd01, Inode: 1234567,
					Start: 0x7f3c2a000000, Offset: 0, MapFilesPath: mapFiles + "/7f3c2a000000-7f3c2a1f0000", Deleted: true,
				},
				{
					// Same inode number on another device: another file.
					Path: "/usr/lib64/libcuda.so.1", Dev: 0x10302, Inode: 1234567,
					Start: 0x7f4000000000, Offset: 0, MapFilesPath: mapFiles + "/7f4000000000-7f4000100000",
				},
			},
		},
		{
			name:  "no match",
			match: LibraryMatcher("libnvidia-ml.so*"),
			want:  nil,
		},
		{
			name:  "nil match takes every file",
			match: nil,
			want: []Library{
				{Path: "/usr/bin/python3.11", Dev: 0x1000a3, Inode: 1311, Start: 0x55d4c8a00000, MapFilesPath: mapFiles + "/55d4c8a00000-55d4c8a6e000"},
				{Path: "/usr/local/cuda/lib64/libcudart.so.12.4.127", Dev: 0x1000a3, Inode: 4522, Start: 0x7f1e3b200000, MapFilesPath: mapFiles + "/7f1e3b200000-7f1e3b228000"},
				{Path: "/dev/nvidia0", Dev: 0x5, Inode: 1035, Start: 0x7f2a10000000, MapFilesPath: mapFiles + "/7f2a10000000-7f2a10200000"},
				{Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", Dev: 0xfd01, Inode: 1234567, Start: 0x7f3c2a000000, MapFilesPath: mapFiles + "/7f3c2a000000-7f3c2a1f0000", Deleted: true},
				{Path: "/usr/lib64/libcuda.so.1", Dev: 0x10302, Inode: 1234567, Start: 0x7f4000000000, MapFilesPath: mapFiles + "/7f4000000000-7f4000100000"},
				{Path: "/usr/lib/x86_64-linux-gnu/libc.so.6", Dev: 0x1000a3, Inode: 220, Start: 0x7f5e1c000000, MapFilesPath: mapFiles + "/7f5e1c000000-7f5e1c022000"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(root, 4242, tt.match)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestScanMatchesOncePerFile(t *testing.T) {
	root := t.TempDir()
	writeMaps(t, root, 1, pytorchMaps)
	calls := map[string]int{}
	_, err := Scan(root, 1, func(p string) bool {
		calls[p]++
		return false
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]int{
		"/usr/bin/python3.11":                             1,
		"/usr/local/cuda/lib64/libcudart.so.12.4.127":     1,
		"/dev/nvidia0":                                    1,
		"/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05": 1,
		"/usr/lib64/libcuda.so.1":                         1,
		"/usr/lib/x86_64-linux-gnu/libc.so.6":             1,
	}, calls)
}

func TestScanKeepsLowestMapping(t *testing.T) {
	// The kernel lists mappings in address order; Scan does not rely on it.
	root := t.TempDir()
	writeMaps(t, root, 1, ""+
		"7f0000003000-7f0000004000 r-xp 00003000 fe:00 9 /lib/libcuda.so.1\n"+
		"7f0000000000-7f0000001000 r--p 00000000 fe:00 9 /lib/libcuda.so.1\n")
	got, err := Scan(root, 1, LibraryMatcher("libcuda.so*"))
	require.NoError(t, err)
	assert.Equal(t, []Library{{
		Path: "/lib/libcuda.so.1", Dev: 0xfe00, Inode: 9, Start: 0x7f0000000000, Offset: 0,
		MapFilesPath: filepath.Join(root, "1", "map_files", "7f0000000000-7f0000001000"),
	}}, got)
}

func TestScanEmptyAddressSpace(t *testing.T) {
	// Kernel threads and zombies have empty maps.
	root := t.TempDir()
	writeMaps(t, root, 2, "")
	got, err := Scan(root, 2, nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestScanLongLines(t *testing.T) {
	root := t.TempDir()
	long := "/" + strings.Repeat("d", 200<<10) + "/libcuda.so.1"
	writeMaps(t, root, 3, "1000-2000 r-xp 00000000 fe:00 9 "+long+"\n")
	got, err := Scan(root, 3, LibraryMatcher("libcuda.so*"))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, long, got[0].Path)

	tooLong := "/" + strings.Repeat("d", maxLineLen)
	writeMaps(t, root, 4, "1000-2000 r-xp 00000000 fe:00 9 "+tooLong+"\n")
	_, err = Scan(root, 4, nil)
	require.EqualError(t, err, "procmaps: "+filepath.Join(root, "4", "maps")+": line longer than 1048576 bytes")
}

func TestScanErrors(t *testing.T) {
	root := t.TempDir()
	writeMaps(t, root, 5, "1000-2000 r-xp 00000000 fe:00 9 /lib/a.so\nnot a maps line at all\n")

	_, err := Scan(root, 5, nil)
	require.EqualError(t, err, "procmaps: "+filepath.Join(root, "5", "maps")+
		` line 2: bad maps line "not a maps line at all": address range "not": want start-end in hex`)

	_, err = Scan(root, 6, nil)
	require.ErrorIs(t, err, fs.ErrNotExist)

	_, err = Scan(root, 0, nil)
	require.EqualError(t, err, "procmaps: invalid pid 0")
	_, err = Scan("", 1, nil)
	require.EqualError(t, err, "procmaps: procRoot must not be empty")
}

func TestReadError(t *testing.T) {
	// Reading maps of a process that exited after it was opened fails with
	// ESRCH.
	err := readError(&fs.PathError{Op: "read", Path: "/proc/7/maps", Err: syscall.ESRCH})
	require.EqualError(t, err, "procmaps: file does not exist: read /proc/7/maps: no such process")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, err, syscall.ESRCH)

	err = readError(&fs.PathError{Op: "open", Path: "/proc/7/maps", Err: syscall.EACCES})
	require.EqualError(t, err, "procmaps: open /proc/7/maps: permission denied")
	assert.ErrorIs(t, err, fs.ErrPermission)
}

// TestScanSelf scans the test process itself in the real /proc, for its
// own executable and, when it is dynamically linked, libc.
func TestScanSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/maps"); err != nil {
		t.Skip("no procfs:", err)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	exe, err = filepath.EvalSymlinks(exe)
	require.NoError(t, err)

	libs, err := Scan("/proc", os.Getpid(), LibraryMatcher(filepath.Base(exe), "libc.so*"))
	require.NoError(t, err)
	require.NotEmpty(t, libs)
	assert.Equal(t, exe, libs[0].Path, "the executable is mapped lowest")

	for _, lib := range libs {
		t.Run(filepath.Base(lib.Path), func(t *testing.T) {
			var want syscall.Stat_t
			require.NoError(t, syscall.Stat(lib.Path, &want))
			assert.Equal(t, want.Dev, lib.Dev, "Dev as stat(2) reports it")
			assert.Equal(t, want.Ino, lib.Inode)
			assert.False(t, lib.Deleted)
			assert.Regexp(t, `^/proc/`+strconv.Itoa(os.Getpid())+`/map_files/[0-9a-f]+-[0-9a-f]+$`, lib.MapFilesPath)

			if os.Geteuid() != 0 {
				t.Skip("opening map_files needs CAP_SYS_ADMIN")
			}
			// map_files opens the mapped file itself.
			var got syscall.Stat_t
			require.NoError(t, syscall.Stat(lib.MapFilesPath, &got))
			assert.Equal(t, want.Dev, got.Dev)
			assert.Equal(t, want.Ino, got.Ino)
		})
	}
}
