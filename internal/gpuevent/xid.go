package gpuevent

import (
	"encoding/binary"
	"fmt"
)

// Layout of struct gpuext_xid_event (bpf/include/gpuext_abi.h).
const (
	xidOffKind = 0
	xidOffPID  = 4
	xidOffTS   = 8
	xidOffCode = 16
	xidOffDev  = 24
	xidDevMax  = 32
	xidOffMsg  = xidOffDev + xidDevMax
	xidMsgMax  = 224
	// XIDEventSize is the size of an Xid record.
	XIDEventSize = xidOffMsg + xidMsgMax
)

// XID is one Xid error reported by NVIDIA's kernel module.
type XID struct {
	Code  uint32
	PID   uint32 // thread group current when the driver reported it (often not the culprit)
	Time  uint64 // CLOCK_MONOTONIC ns
	BusID string // PCI bus id of the device, as the driver prints it
	Msg   string // the driver's message
}

// DecodeXID parses an Xid record. It never panics; malformed input returns
// an error saying why.
func DecodeXID(b []byte) (XID, error) {
	if len(b) != XIDEventSize {
		return XID{}, fmt.Errorf("%w: xid record of %d bytes, want %d", ErrSize, len(b), XIDEventSize)
	}
	le := binary.LittleEndian
	if k := Kind(le.Uint16(b[xidOffKind:])); k != KindXID {
		return XID{}, fmt.Errorf("%w: %d in an xid record", ErrKind, k)
	}
	dev, msg := b[xidOffDev:xidOffDev+xidDevMax], b[xidOffMsg:xidOffMsg+xidMsgMax]
	nd, nm := indexNUL(dev), indexNUL(msg)
	if nd < 0 || nm < 0 {
		return XID{}, ErrNoName
	}
	return XID{
		Code:  le.Uint32(b[xidOffCode:]),
		PID:   le.Uint32(b[xidOffPID:]),
		Time:  le.Uint64(b[xidOffTS:]),
		BusID: string(dev[:nd]),
		Msg:   string(msg[:nm]),
	}, nil
}

// AppendXID appends the wire form of x, for fixtures and tests.
func AppendXID(b []byte, x XID) []byte {
	start := len(b)
	b = append(b, make([]byte, XIDEventSize)...)
	r := b[start:]
	le := binary.LittleEndian
	le.PutUint16(r[xidOffKind:], uint16(KindXID))
	le.PutUint32(r[xidOffPID:], x.PID)
	le.PutUint64(r[xidOffTS:], x.Time)
	le.PutUint32(r[xidOffCode:], x.Code)
	copy(r[xidOffDev:xidOffDev+xidDevMax-1], x.BusID)
	copy(r[xidOffMsg:xidOffMsg+xidMsgMax-1], x.Msg)
	return b
}
