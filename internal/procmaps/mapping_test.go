package procmaps

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type mapsLineCase struct {
	name string
	in   string
	want Mapping
}

// mapsLineCases are lines as Linux prints them (64-bit: addresses padded to
// 8 digits, the path in column 74). FuzzParseMapsLine seeds its corpus with
// them too.
var mapsLineCases = []mapsLineCase{
	{
		name: "libcuda text",
		in:   "7f3c2a000000-7f3c2a200000 r-xp 00000000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14\n",
		want: Mapping{
			Start: 0x7f3c2a000000, End: 0x7f3c2a200000, Offset: 0, Perms: "r-xp",
			DevMajor: 0xfd, DevMinor: 0x01, Inode: 1234567,
			Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14",
		},
	},
	{
		name: "data segment with offset",
		in:   "7f3c2a5f3000-7f3c2a5f7000 rw-p 005f2000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14",
		want: Mapping{
			Start: 0x7f3c2a5f3000, End: 0x7f3c2a5f7000, Offset: 0x5f2000, Perms: "rw-p",
			DevMajor: 0xfd, DevMinor: 0x01, Inode: 1234567,
			Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14",
		},
	},
	{
		name: "anonymous with trailing space",
		in:   "55eea864e000-55eea865e000 rw-p 00000000 00:00 0 \n",
		want: Mapping{Start: 0x55eea864e000, End: 0x55eea865e000, Perms: "rw-p"},
	},
	{
		name: "anonymous without trailing space",
		in:   "55eea864e000-55eea865e000 ---p 00000000 00:00 0",
		want: Mapping{Start: 0x55eea864e000, End: 0x55eea865e000, Perms: "---p"},
	},
	{
		name: "heap",
		in:   "55de0b007000-55de0b028000 rw-p 00000000 00:00 0                          [heap]\n",
		want: Mapping{Start: 0x55de0b007000, End: 0x55de0b028000, Perms: "rw-p", Path: "[heap]"},
	},
	{
		name: "vdso",
		in:   "7f1a4dcfc000-7f1a4dcfe000 r-xp 00000000 00:00 0                          [vdso]\n",
		want: Mapping{Start: 0x7f1a4dcfc000, End: 0x7f1a4dcfe000, Perms: "r-xp", Path: "[vdso]"},
	},
	{
		name: "vsyscall",
		in:   "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n",
		want: Mapping{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: "--xp", Path: "[vsyscall]"},
	},
	{
		name: "named anonymous memory",
		in:   "7f0000000000-7f0000200000 rw-p 00000000 00:00 0                          [anon:cuda pinned]\n",
		want: Mapping{Start: 0x7f0000000000, End: 0x7f0000200000, Perms: "rw-p", Path: "[anon:cuda pinned]"},
	},
	{
		name: "path with spaces",
		in:   "7f5e1c000000-7f5e1c001000 r--p 00001000 103:02 42                         /home/me/My Models/lib cuda.so.1\n",
		want: Mapping{
			Start: 0x7f5e1c000000, End: 0x7f5e1c001000, Offset: 0x1000, Perms: "r--p",
			DevMajor: 0x103, DevMinor: 0x02, Inode: 42, Path: "/home/me/My Models/lib cuda.so.1",
		},
	},
	{
		name: "deleted",
		in:   "7f3c2a000000-7f3c2a200000 r-xp 00000000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05 (deleted)\n",
		want: Mapping{
			Start: 0x7f3c2a000000, End: 0x7f3c2a200000, Perms: "r-xp",
			DevMajor: 0xfd, DevMinor: 0x01, Inode: 1234567,
			Path: "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", Deleted: true,
		},
	},
	{
		name: "memfd shared",
		in:   "7f8b1c400000-7f8b1c600000 rw-s 00000000 00:01 3087                       /memfd:cuda-ipc (deleted)\n",
		want: Mapping{
			Start: 0x7f8b1c400000, End: 0x7f8b1c600000, Perms: "rw-s",
			DevMajor: 0, DevMinor: 1, Inode: 3087, Path: "/memfd:cuda-ipc", Deleted: true,
		},
	},
	{
		name: "device file",
		in:   "7f8b20000000-7f8b22000000 rw-s 00000000 00:05 1035                       /dev/nvidia0\n",
		want: Mapping{
			Start: 0x7f8b20000000, End: 0x7f8b22000000, Perms: "rw-s",
			DevMajor: 0, DevMinor: 5, Inode: 1035, Path: "/dev/nvidia0",
		},
	},
	{
		name: "overlayfs in a container, wide minor",
		in:   "7f1e3b200000-7f1e3b400000 r-xp 00000000 00:1a3 9876543210                 /usr/local/cuda/lib64/libcudart.so.12.4.127\n",
		want: Mapping{
			Start: 0x7f1e3b200000, End: 0x7f1e3b400000, Perms: "r-xp",
			DevMajor: 0, DevMinor: 0x1a3, Inode: 9876543210, Path: "/usr/local/cuda/lib64/libcudart.so.12.4.127",
		},
	},
	{
		// The kernel writes a newline in a name as \012.
		name: "escaped newline",
		in:   "7f0000000000-7f0000001000 r--p 00000000 fe:00 5                          /tmp/a\\012b\n",
		want: Mapping{
			Start: 0x7f0000000000, End: 0x7f0000001000, Perms: "r--p",
			DevMajor: 0xfe, Inode: 5, Path: `/tmp/a\012b`,
		},
	},
	{
		name: "32-bit process",
		in:   "08048000-08049000 r-xp 00000000 08:01 131                                /bin/app32\n",
		want: Mapping{
			Start: 0x08048000, End: 0x08049000, Perms: "r-xp",
			DevMajor: 8, DevMinor: 1, Inode: 131, Path: "/bin/app32",
		},
	},
	{
		name: "uppercase hex and largest values",
		in:   "0-FFFFFFFFFFFFFFFF rwxs FFFFFFFFFFFFFFFF FFFFFFFF:FFFFFFFF 18446744073709551615 /x",
		want: Mapping{
			Start: 0, End: 0xffffffffffffffff, Offset: 0xffffffffffffffff, Perms: "rwxs",
			DevMajor: 0xffffffff, DevMinor: 0xffffffff, Inode: 18446744073709551615, Path: "/x",
		},
	},
	{
		name: "trailing spaces in a name are kept",
		in:   "1000-2000 r--p 00000000 fe:00 7 /tmp/odd  \n",
		want: Mapping{Start: 0x1000, End: 0x2000, Perms: "r--p", DevMajor: 0xfe, Inode: 7, Path: "/tmp/odd  "},
	},
}

func TestParseMapsLine(t *testing.T) {
	for _, tt := range mapsLineCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMapsLine([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseMapsLineErrors(t *testing.T) {
	const fields = "want address range, permissions, offset, device and inode before the path"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", `bad maps line "": ` + fields},
		{"newline only", "\n", `bad maps line "": ` + fields},
		{"no inode", "1000-2000 r--p 00000000 fe:00", `bad maps line "1000-2000 r--p 00000000 fe:00": ` + fields},
		{"no dash", "1000 r--p 0 fe:00 1", `bad maps line "1000 r--p 0 fe:00 1": address range "1000": want start-end in hex`},
		{"no end", "1000- r--p 0 fe:00 1", `bad maps line "1000- r--p 0 fe:00 1": address range "1000-": want start-end in hex`},
		{"not hex", "1000-20g0 r--p 0 fe:00 1", `bad maps line "1000-20g0 r--p 0 fe:00 1": address range "1000-20g0": want start-end in hex`},
		{"0x prefix", "0x1000-0x2000 r--p 0 fe:00 1", `bad maps line "0x1000-0x2000 r--p 0 fe:00 1": address range "0x1000-0x2000": want start-end in hex`},
		{"overflow", "1000-10000000000000000 r--p 0 fe:00 1", `bad maps line "1000-10000000000000000 r--p 0 fe:00 1": address range "1000-10000000000000000": want start-end in hex`},
		{"inverted", "2000-1000 r--p 0 fe:00 1", `bad maps line "2000-1000 r--p 0 fe:00 1": address range "2000-1000": end is not above start`},
		{"empty range", "2000-2000 r--p 0 fe:00 1", `bad maps line "2000-2000 r--p 0 fe:00 1": address range "2000-2000": end is not above start`},
		{"short perms", "1000-2000 r-x 0 fe:00 1", `bad maps line "1000-2000 r-x 0 fe:00 1": permissions "r-x": want [r-][w-][x-][ps]`},
		{"perms out of order", "1000-2000 xr-p 0 fe:00 1", `bad maps line "1000-2000 xr-p 0 fe:00 1": permissions "xr-p": want [r-][w-][x-][ps]`},
		{"perms bad sharing", "1000-2000 r-x- 0 fe:00 1", `bad maps line "1000-2000 r-x- 0 fe:00 1": permissions "r-x-": want [r-][w-][x-][ps]`},
		{"offset", "1000-2000 r--p zz fe:00 1", `bad maps line "1000-2000 r--p zz fe:00 1": offset "zz": want hex`},
		{"device without colon", "1000-2000 r--p 0 fe00 1", `bad maps line "1000-2000 r--p 0 fe00 1": device "fe00": want major:minor in hex`},
		{"device minor", "1000-2000 r--p 0 fe: 1", `bad maps line "1000-2000 r--p 0 fe: 1": device "fe:": want major:minor in hex`},
		{"device too wide", "1000-2000 r--p 0 100000000:0 1", `bad maps line "1000-2000 r--p 0 100000000:0 1": device "100000000:0": want major:minor in hex`},
		{"inode hex", "1000-2000 r--p 0 fe:00 1a", `bad maps line "1000-2000 r--p 0 fe:00 1a": inode "1a": want a decimal number`},
		{"inode overflow", "1000-2000 r--p 0 fe:00 18446744073709551616", `bad maps line "1000-2000 r--p 0 fe:00 18446744073709551616": inode "18446744073709551616": want a decimal number`},
		{"inode glued to path", "1000-2000 r--p 0 fe:00 1/lib", `bad maps line "1000-2000 r--p 0 fe:00 1/lib": inode "1/lib": want a decimal number`},
		{"two lines", "1000-2000 r--p 0 fe:00 1 /a\n3000-4000 r--p 0 fe:00 1 /b", `bad maps line "1000-2000 r--p 0 fe:00 1 /a\n3000-4000 r--p 0 fe:00 1 /b": path contains byte 0x0a`},
		{"NUL in path", "1000-2000 r--p 0 fe:00 1 /a\x00b", `bad maps line "1000-2000 r--p 0 fe:00 1 /a\x00b": path contains byte 0x00`},
		{
			"long garbage is shortened",
			strings.Repeat("q", 300),
			`bad maps line "` + strings.Repeat("q", 128) + `"...: ` + fields,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMapsLine([]byte(tt.in))
			require.EqualError(t, err, tt.want)
			assert.Equal(t, Mapping{}, got)
		})
	}
}

func TestMkdev(t *testing.T) {
	tests := []struct {
		major, minor uint32
		want         uint64
	}{
		{0, 0, 0},
		{8, 1, 0x801},                // /dev/sda1
		{0xfe, 0, 0xfe00},            // device-mapper
		{0xfd, 0x01, 0xfd01},         // LVM
		{0x103, 0x02, 0x10302},       // NVMe partition (major 259)
		{0, 0x1a3, 0x1000a3},         // overlayfs anonymous device, minor > 255
		{0xfff, 0xfffff, 0xffffffff}, // largest kernel dev_t
		{0x1000, 0, 0x100000000000},  // beyond the kernel's 12-bit major
		{0, 0x100000, 0x100000000},   // beyond the kernel's 20-bit minor
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Mkdev(tt.major, tt.minor), "Mkdev(%#x, %#x)", tt.major, tt.minor)
	}
	assert.Equal(t, uint64(0x10302), Mapping{DevMajor: 0x103, DevMinor: 2}.Dev())
}
