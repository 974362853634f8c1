package devrtinject

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// devmapsFile is a region file of regionLen bytes with devrt's device
// record after it.
func devmapsFile(regionLen uint64, device int32, uuid []byte, ctx uint64) []byte {
	f := make([]byte, regionLen+DeviceTrailer)
	d := DeviceInfo{RegionLen: regionLen, Device: device, HasUUID: uuid != nil, Ctx: ctx, CopyStartNS: ctx + 1, CopyEndNS: ctx + 2}
	copy(d.UUID[:], uuid)
	copy(f[len(f)-DeviceInfoSize:], d.Encode())
	return f
}

func TestReadDeviceInfo(t *testing.T) {
	uuid := []byte{0x78, 0xfd, 0x69, 0x99, 0x84, 0xed, 0xc9, 0x79, 0x19, 0xd1, 0x8b, 0xe1, 0x5d, 0xe7, 0xc0, 0x8c}
	good := devmapsFile(8192, 1, uuid, 0x5555aaaa0000)
	noUUID := devmapsFile(4096, 0, nil, 7)
	tests := []struct {
		name    string
		file    []byte
		want    DeviceInfo
		hwid    string
		ok      bool
		wantErr string
	}{
		{"record", good, DeviceInfo{RegionLen: 8192, Device: 1, UUID: [16]byte(uuid), HasUUID: true, Ctx: 0x5555aaaa0000,
			CopyStartNS: 0x5555aaaa0001, CopyEndNS: 0x5555aaaa0002},
			"GPU-78fd6999-84ed-c979-19d1-8be15de7c08c", true, ""},
		{"no uuid", noUUID, DeviceInfo{RegionLen: 4096, Device: 0, Ctx: 7, CopyStartNS: 8, CopyEndNS: 9}, "", true, ""},
		{"no record", make([]byte, 12288), DeviceInfo{}, "", false, ""},
		{"shorter than a trailer", make([]byte, 100), DeviceInfo{}, "", false, ""},
		{"region length not the file's", append(bytes.Clone(good[:4096]), good[8192:]...), DeviceInfo{}, "", false,
			"device record: region of 8192 bytes in a file of 8192"},
		{"version", func() []byte { f := bytes.Clone(good); f[len(f)-DeviceInfoSize+diOffVersion] = 2; return f }(),
			DeviceInfo{}, "", false, "device record: version 2, want 1"},
		{"size", func() []byte { f := bytes.Clone(good); f[len(f)-DeviceInfoSize+diOffSize] = 48; return f }(),
			DeviceInfo{}, "", false, "device record: 48 bytes, want 64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok, err := ReadDeviceInfo(bytes.NewReader(tc.file), int64(len(tc.file)))
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, d)
			require.Equal(t, tc.hwid, d.HWID())
		})
	}
}

func FuzzDecodeDeviceInfo(f *testing.F) {
	f.Add(devmapsFile(4096, 1, make([]byte, 16), 1)[8192-DeviceInfoSize:], int64(8192))
	f.Add(devmapsFile(0, -1, nil, 0)[4096-DeviceInfoSize:], int64(4096))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		d, ok, err := DecodeDeviceInfo(b, size)
		if err != nil || !ok {
			require.Equal(t, DeviceInfo{}, d)
			return
		}
		require.Equal(t, uint64(size)-DeviceTrailer, d.RegionLen)
		if !d.HasUUID {
			require.Empty(t, d.HWID())
		} else {
			require.Len(t, d.HWID(), 40)
		}
	})
}
