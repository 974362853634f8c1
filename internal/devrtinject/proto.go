package devrtinject

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The protocol's constants, as bpf/include/gpuext_abi.h defines them.
const (
	ReqMagic   = 0x51524a47 // GPUEXT_INJ_REQ_MAGIC
	RespMagic  = 0x53524a47 // GPUEXT_INJ_RESP_MAGIC
	Version    = 2          // GPUEXT_INJ_VERSION
	MaxPTX     = 64 << 20   // GPUEXT_INJ_MAX_PTX
	MaxNames   = 4 << 20    // GPUEXT_INJ_MAX_NAMES
	MaxKernels = 65536      // GPUEXT_INJ_MAX_KERNELS
	MaxReason  = 1024       // GPUEXT_INJ_MAX_REASON
	MaxShared  = 1 << 30    // GPUEXT_INJ_MAX_SHARED
	MaxInit    = 1 << 20    // GPUEXT_INJ_MAX_INIT
	// InitHeaderSize is sizeof(struct gpuext_inj_init).
	InitHeaderSize = 16
	SocketName     = "gpuext-inject.sock"
	SharedGlobal   = "__gpuext_shared"
	Grid1DSuffix   = "__gx1d" // GPUEXT_INJ_GRID1D_SUFFIX: a kernel's entry for 1-D grids
	// PlainSuffix (GPUEXT_INJ_PLAIN_SUFFIX) names a patched kernel's
	// uninstrumented copy in a module whose twin owns its variables: what
	// devrt runs where the twin refuses a launch.
	PlainSuffix   = "__gxplain"
	ReqHeaderSize = 80 // sizeof(struct gpuext_inj_req)
	// RespHeaderSize is sizeof(struct gpuext_inj_resp).
	RespHeaderSize = 88
)

// Status is what the collector did with a module (enum gpuext_inj_status).
type Status uint32

// Statuses.
const (
	StatusPatched   Status = 1
	StatusUnchanged Status = 2
	StatusRejected  Status = 3
	StatusError     Status = 4
)

func (s Status) String() string {
	switch s {
	case StatusPatched:
		return "patched"
	case StatusUnchanged:
		return "unchanged"
	case StatusRejected:
		return "rejected"
	case StatusError:
		return "error"
	}
	return fmt.Sprintf("status(%d)", uint32(s))
}

// Image is where devrt found the PTX (enum gpuext_inj_image).
type Image uint16

// Images.
const (
	ImagePTX    Image = 1
	ImageFatbin Image = 2
	// ImageTriton: the program loaded a cubin; devrt sent the PTX that
	// Triton cached beside it.
	ImageTriton Image = 3
)

// Response flags (GPUEXT_INJ_RF_*).
const (
	// RespCached: answered from the cache.
	RespCached = 1 << 0
	// RespVars: the module declares variables of its own, which its twin
	// must own (Result.Vars; GPUEXT_INJ_RF_VARS in gpuext_abi.h).
	RespVars = 1 << 1
)

// ReqVars is GPUEXT_INJ_QF_VARS: the asking devrt honours RespVars.
const ReqVars = 1 << 0

// Request is one module devrt asks about.
type Request struct {
	PID     uint32
	SMArch  uint32 // compute capability major*10+minor; 0: unknown
	API     uint16 // the load call (enum gpuext_api)
	Image   Image
	Flags   uint32
	Hash    [32]byte // SHA-256 of PTX, as devrt computed it
	PTX     []byte
	Kernels []string // the .entry names devrt found (a hint)
}

// InitRange is part of a shared region's initial contents (struct
// gpuext_inj_init and its bytes); the rest of the region starts zero.
type InitRange struct {
	Offset uint64
	Data   []byte
}

// Response is the collector's answer.
type Response struct {
	Status       Status
	Flags        uint32
	SharedSize   uint64
	ProbeVersion uint64
	Hash         [32]byte // the request's
	Reason       string
	PTX          []byte      // Patched only
	Kernels      []string    // Patched only: the kernels launches go to
	Init         []InitRange // Patched only: the region's initial contents
}

// initLen is the bytes init takes on the wire.
func initLen(init []InitRange) uint64 {
	n := uint64(0)
	for _, r := range init {
		n += InitHeaderSize + (uint64(len(r.Data))+7)&^7
	}
	return n
}

func appendInit(b []byte, init []InitRange) []byte {
	le := binary.LittleEndian
	for _, r := range init {
		b = le.AppendUint64(b, r.Offset)
		b = le.AppendUint32(b, uint32(len(r.Data)))
		b = le.AppendUint32(b, 0)
		b = append(b, r.Data...)
		b = append(b, make([]byte, (8-len(r.Data)%8)%8)...)
	}
	return b
}

// splitInit reads the entries that fill b exactly, each inside shared bytes.
func splitInit(b []byte, shared uint64) ([]InitRange, error) {
	var out []InitRange
	le := binary.LittleEndian
	for len(b) > 0 {
		if len(b) < InitHeaderSize {
			return nil, fmt.Errorf("%w: %d bytes left of the initial contents", ErrFields, len(b))
		}
		off, n, pad := le.Uint64(b), uint64(le.Uint32(b[8:])), le.Uint32(b[12:])
		b = b[InitHeaderSize:]
		if n == 0 || pad != 0 || off > shared || n > shared-off || (n+7)&^7 > uint64(len(b)) {
			return nil, fmt.Errorf("%w: initial contents [%d,+%d) in a region of %d bytes", ErrFields, off, n, shared)
		}
		for _, z := range b[n : (n+7)&^7] {
			if z != 0 {
				return nil, fmt.Errorf("%w: initial contents padded with non-zero bytes", ErrFields)
			}
		}
		out = append(out, InitRange{Offset: off, Data: b[:n]})
		b = b[(n+7)&^7:]
	}
	return out, nil
}

// Request and response decoding errors.
var (
	ErrMagic   = errors.New("devrtinject: bad magic")
	ErrVersion = errors.New("devrtinject: unsupported version or header size")
	ErrLimit   = errors.New("devrtinject: length over the protocol's limits")
	ErrNames   = errors.New("devrtinject: kernel names do not match their count")
	ErrHash    = errors.New("devrtinject: SHA-256 does not match the PTX")
	ErrFields  = errors.New("devrtinject: inconsistent fields")
)

// splitNames reads n NUL-terminated, non-empty names that fill b exactly.
func splitNames(b []byte, n uint32) ([]string, error) {
	out := make([]string, 0, min(n, 1024))
	for i := uint32(0); i < n; i++ {
		j := bytes.IndexByte(b, 0)
		if j <= 0 {
			return nil, ErrNames
		}
		out = append(out, string(b[:j]))
		b = b[j+1:]
	}
	if len(b) != 0 {
		return nil, ErrNames
	}
	return out, nil
}

func joinNames(names []string) ([]byte, error) {
	var b []byte
	for _, n := range names {
		if n == "" || bytes.IndexByte([]byte(n), 0) >= 0 {
			return nil, ErrNames
		}
		b = append(b, n...)
		b = append(b, 0)
	}
	return b, nil
}

// ReadRequest reads one request from r and checks it: header, limits,
// names, and the hash against the PTX received. Once the header is read, an
// error comes with the request's header fields (PTX and kernels unset).
func ReadRequest(r io.Reader) (*Request, error) {
	var h [ReqHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if le.Uint32(h[0:]) != ReqMagic {
		return nil, ErrMagic
	}
	if le.Uint16(h[4:]) != Version || le.Uint16(h[6:]) != ReqHeaderSize {
		return nil, ErrVersion
	}
	q := &Request{PID: le.Uint32(h[8:]), SMArch: le.Uint32(h[12:])}
	ptxLen := le.Uint64(h[16:])
	namesLen := le.Uint32(h[24:])
	nk := le.Uint32(h[28:])
	q.API = le.Uint16(h[32:])
	q.Image = Image(le.Uint16(h[34:]))
	q.Flags = le.Uint32(h[36:])
	copy(q.Hash[:], h[40:72])
	// From here on the header is known: errors come with q, so that the
	// server can say why in an answer devrt reads.
	if ptxLen == 0 || ptxLen > MaxPTX || namesLen > MaxNames || nk > MaxKernels {
		return q, ErrLimit
	}
	if q.Image < ImagePTX || q.Image > ImageTriton {
		return q, ErrFields
	}
	body := make([]byte, ptxLen+uint64(namesLen))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	var err error
	if bytes.IndexByte(body[:ptxLen], 0) >= 0 {
		return q, ErrFields
	}
	if q.Kernels, err = splitNames(body[ptxLen:], nk); err != nil {
		return q, err
	}
	if sha256.Sum256(body[:ptxLen]) != q.Hash {
		return q, ErrHash
	}
	q.PTX = body[:ptxLen]
	return q, nil
}

// AppendRequest encodes q (its Hash as given) after b.
func AppendRequest(b []byte, q *Request) ([]byte, error) {
	names, err := joinNames(q.Kernels)
	if err != nil {
		return nil, err
	}
	if len(q.PTX) > MaxPTX || len(names) > MaxNames || len(q.Kernels) > MaxKernels {
		return nil, ErrLimit
	}
	le := binary.LittleEndian
	b = le.AppendUint32(b, ReqMagic)
	b = le.AppendUint16(b, Version)
	b = le.AppendUint16(b, ReqHeaderSize)
	b = le.AppendUint32(b, q.PID)
	b = le.AppendUint32(b, q.SMArch)
	b = le.AppendUint64(b, uint64(len(q.PTX)))
	b = le.AppendUint32(b, uint32(len(names)))
	b = le.AppendUint32(b, uint32(len(q.Kernels)))
	b = le.AppendUint16(b, q.API)
	b = le.AppendUint16(b, uint16(q.Image))
	b = le.AppendUint32(b, q.Flags)
	b = append(b, q.Hash[:]...)
	b = le.AppendUint64(b, 0)
	b = append(b, q.PTX...)
	return append(b, names...), nil
}

// AppendResponse encodes p after b, checking what devrt will check.
func AppendResponse(b []byte, p *Response) ([]byte, error) {
	if err := p.valid(); err != nil {
		return nil, err
	}
	names, err := joinNames(p.Kernels)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	b = le.AppendUint32(b, RespMagic)
	b = le.AppendUint16(b, Version)
	b = le.AppendUint16(b, RespHeaderSize)
	b = le.AppendUint32(b, uint32(p.Status))
	b = le.AppendUint32(b, uint32(len(p.Reason)))
	b = le.AppendUint64(b, uint64(len(p.PTX)))
	b = le.AppendUint32(b, uint32(len(names)))
	b = le.AppendUint32(b, uint32(len(p.Kernels)))
	b = le.AppendUint64(b, p.SharedSize)
	b = le.AppendUint64(b, p.ProbeVersion)
	b = le.AppendUint32(b, p.Flags)
	b = le.AppendUint32(b, uint32(initLen(p.Init)))
	b = append(b, p.Hash[:]...)
	b = append(b, p.Reason...)
	b = append(b, p.PTX...)
	b = append(b, names...)
	return appendInit(b, p.Init), nil
}

// valid is what devrt requires of an answer (devrt/src/inject_ask.c).
func (p *Response) valid() error {
	switch {
	case p.Status < StatusPatched || p.Status > StatusError:
		return fmt.Errorf("%w: status %d", ErrFields, p.Status)
	case len(p.Reason) > MaxReason || len(p.PTX) > MaxPTX ||
		len(p.Kernels) > MaxKernels || p.SharedSize > MaxShared:
		return ErrLimit
	case initLen(p.Init) > MaxInit:
		return ErrLimit
	case p.Status != StatusPatched && (len(p.PTX) > 0 || len(p.Kernels) > 0 || len(p.Init) > 0):
		return fmt.Errorf("%w: %v with PTX, kernels or initial contents", ErrFields, p.Status)
	case (p.Status == StatusPatched) != (len(p.PTX) > 0 && len(p.Kernels) > 0):
		return fmt.Errorf("%w: %v with %d bytes of PTX and %d kernels",
			ErrFields, p.Status, len(p.PTX), len(p.Kernels))
	case bytes.IndexByte(p.PTX, 0) >= 0:
		return fmt.Errorf("%w: NUL in the patched PTX", ErrFields)
	}
	for _, r := range p.Init {
		if len(r.Data) == 0 || r.Offset > p.SharedSize || uint64(len(r.Data)) > p.SharedSize-r.Offset {
			return fmt.Errorf("%w: initial contents [%d,+%d) in a region of %d bytes",
				ErrFields, r.Offset, len(r.Data), p.SharedSize)
		}
	}
	return nil
}

// ReadResponse reads one response from r (what devrt does, for Go clients
// and tests).
func ReadResponse(r io.Reader) (*Response, error) {
	var h [RespHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	if le.Uint32(h[0:]) != RespMagic {
		return nil, ErrMagic
	}
	if le.Uint16(h[4:]) != Version || le.Uint16(h[6:]) != RespHeaderSize {
		return nil, ErrVersion
	}
	p := &Response{Status: Status(le.Uint32(h[8:]))}
	reasonLen := le.Uint32(h[12:])
	ptxLen := le.Uint64(h[16:])
	namesLen := le.Uint32(h[24:])
	nk := le.Uint32(h[28:])
	p.SharedSize = le.Uint64(h[32:])
	p.ProbeVersion = le.Uint64(h[40:])
	p.Flags = le.Uint32(h[48:])
	iLen := le.Uint32(h[52:])
	copy(p.Hash[:], h[56:88])
	if reasonLen > MaxReason || ptxLen > MaxPTX || namesLen > MaxNames || nk > MaxKernels || iLen > MaxInit {
		return nil, ErrLimit
	}
	body := make([]byte, uint64(reasonLen)+ptxLen+uint64(namesLen)+uint64(iLen))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	p.Reason = string(body[:reasonLen])
	if ptxLen > 0 {
		p.PTX = body[reasonLen : uint64(reasonLen)+ptxLen]
	}
	var err error
	nameEnd := uint64(reasonLen) + ptxLen + uint64(namesLen)
	if p.Kernels, err = splitNames(body[uint64(reasonLen)+ptxLen:nameEnd], nk); err != nil {
		return nil, err
	}
	if p.Init, err = splitInit(body[nameEnd:], p.SharedSize); err != nil {
		return nil, err
	}
	if len(p.Kernels) == 0 {
		p.Kernels = nil
	}
	if err := p.valid(); err != nil {
		return nil, err
	}
	return p, nil
}
