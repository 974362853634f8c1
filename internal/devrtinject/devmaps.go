package devrtinject

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"unsafe"
)

// The device record at the end of a region file (struct
// gpuext_devmaps_info): which GPU the region's context runs on.
const (
	DeviceInfoMagic   = 0x4f464e49 // GPUEXT_DEVMAPS_INFO_MAGIC, "INFO"
	DeviceInfoVersion = 1          // GPUEXT_DEVMAPS_INFO_VERSION
	DeviceInfoSize    = 64         // GPUEXT_DEVMAPS_INFO_SIZE
	DeviceTrailer     = 4096       // GPUEXT_DEVMAPS_TRAILER: bytes after the region's
	deviceInfoUUID    = 1 << 0     // GPUEXT_DMI_UUID
)

// Offsets in struct gpuext_devmaps_info (abi_test.go checks them).
const (
	diOffMagic     = 0
	diOffVersion   = 4
	diOffSize      = 6
	diOffRegionLen = 8
	diOffDevice    = 16
	diOffFlags     = 20
	diOffUUID      = 24
	diOffCtx       = 40
)

// Offsets of copy_start_ns and copy_end_ns in the record, which devrt
// updates after every copy of the device's memory into the file (readers
// of a live file load the end, then the start: CopyTimes).
const (
	DeviceInfoOffCopyStart = 48
	DeviceInfoOffCopyEnd   = 56
)

// CopyTimes reads devrt's times of its last copy into the file from b, the
// device record of a live file (devrt writes it while the host reads; b
// 8-aligned, as a mapped page is): the end, then the start, since a start
// newer than the end read is the next copy's, whose data may not be whole
// yet. Zeros: no record, no copy yet, or torn.
func CopyTimes(b []byte) (start, end uint64) {
	if len(b) < DeviceInfoSize || binary.LittleEndian.Uint32(b[diOffMagic:]) != DeviceInfoMagic {
		return 0, 0
	}
	end = atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[DeviceInfoOffCopyEnd])))
	start = atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[DeviceInfoOffCopyStart])))
	if start == 0 || start > end {
		return 0, 0
	}
	return start, end
}

// DeviceInfo is what devrt knows of a region's device.
type DeviceInfo struct {
	RegionLen uint64 // the file's bytes before the trailer page
	Device    int32  // the context's CUdevice ordinal in the process; -1: unknown
	UUID      [16]byte
	HasUUID   bool
	Ctx       uint64 // the CUcontext
	// CopyStartNS and CopyEndNS are when devrt issued its last copy of
	// the device's memory into the file and saw it complete
	// (CLOCK_MONOTONIC; 0: none yet).
	CopyStartNS, CopyEndNS uint64
}

// HWID is the GPU's hw.id, "GPU-" and its UUID as 8-4-4-4-12 hex digits
// (as NVML and nvidia-smi name it), or "" without a UUID.
func (d DeviceInfo) HWID() string {
	if !d.HasUUID {
		return ""
	}
	u := d.UUID
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Encode is the record as devrt writes it: the last DeviceInfoSize bytes of
// a region file of RegionLen + DeviceTrailer bytes (tests write region
// files with it).
func (d DeviceInfo) Encode() []byte {
	b := make([]byte, DeviceInfoSize)
	le := binary.LittleEndian
	le.PutUint32(b[diOffMagic:], DeviceInfoMagic)
	le.PutUint16(b[diOffVersion:], DeviceInfoVersion)
	le.PutUint16(b[diOffSize:], DeviceInfoSize)
	le.PutUint64(b[diOffRegionLen:], d.RegionLen)
	le.PutUint32(b[diOffDevice:], uint32(d.Device))
	if d.HasUUID {
		le.PutUint32(b[diOffFlags:], deviceInfoUUID)
		copy(b[diOffUUID:], d.UUID[:])
	}
	le.PutUint64(b[diOffCtx:], d.Ctx)
	le.PutUint64(b[DeviceInfoOffCopyStart:], d.CopyStartNS)
	le.PutUint64(b[DeviceInfoOffCopyEnd:], d.CopyEndNS)
	return b
}

// ReadDeviceInfo reads the device record of a region file of size bytes.
// ok is false, with no error, for a file without one (devrt before the
// record existed, or a file a test wrote): the region then names no
// device. A record that is there but inconsistent with the file is an
// error.
func ReadDeviceInfo(r io.ReaderAt, size int64) (d DeviceInfo, ok bool, err error) {
	if size < DeviceTrailer {
		return d, false, nil
	}
	var b [DeviceInfoSize]byte
	if _, err := r.ReadAt(b[:], size-DeviceInfoSize); err != nil {
		return d, false, fmt.Errorf("device record: %w", err)
	}
	return DecodeDeviceInfo(b[:], size)
}

// DecodeDeviceInfo decodes the last DeviceInfoSize bytes of a region file
// of size bytes (see ReadDeviceInfo).
func DecodeDeviceInfo(b []byte, size int64) (d DeviceInfo, ok bool, err error) {
	le := binary.LittleEndian
	if len(b) < DeviceInfoSize || le.Uint32(b[diOffMagic:]) != DeviceInfoMagic {
		return d, false, nil
	}
	if v := le.Uint16(b[diOffVersion:]); v != DeviceInfoVersion {
		return d, false, fmt.Errorf("device record: version %d, want %d", v, DeviceInfoVersion)
	}
	if s := le.Uint16(b[diOffSize:]); s != DeviceInfoSize {
		return d, false, fmt.Errorf("device record: %d bytes, want %d", s, DeviceInfoSize)
	}
	d.RegionLen = le.Uint64(b[diOffRegionLen:])
	if size < DeviceTrailer || d.RegionLen != uint64(size)-DeviceTrailer {
		return DeviceInfo{}, false, fmt.Errorf("device record: region of %d bytes in a file of %d", d.RegionLen, size)
	}
	d.Device = int32(le.Uint32(b[diOffDevice:]))
	d.HasUUID = le.Uint32(b[diOffFlags:])&deviceInfoUUID != 0
	if d.HasUUID {
		copy(d.UUID[:], b[diOffUUID:diOffUUID+16])
	}
	d.Ctx = le.Uint64(b[diOffCtx:])
	d.CopyStartNS, d.CopyEndNS = le.Uint64(b[DeviceInfoOffCopyStart:]), le.Uint64(b[DeviceInfoOffCopyEnd:])
	return d, true, nil
}
