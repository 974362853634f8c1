package gpuext

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// cilium/ebpf v0.20 creates struct_ops maps but has no struct_ops link, so
// this is BPF_LINK_CREATE by hand: the map fd sits where a program fd would.
const (
	bpfLinkCreate  = 28 // BPF_LINK_CREATE
	bpfStructOps   = 44 // enum bpf_attach_type BPF_STRUCT_OPS
	linkCreateSize = 64 // room for the attr's tail, zeroed
)

type linkCreateAttr struct {
	mapFD      uint32
	targetFD   uint32
	attachType uint32
	flags      uint32
	_          [linkCreateSize - 16]byte
}

// attachStructOps registers the struct_ops map's ops with the kernel (the
// module's .reg) and returns the link that keeps them attached.
func attachStructOps(m *ebpf.Map) (link.Link, error) {
	attr := linkCreateAttr{mapFD: uint32(m.FD()), attachType: bpfStructOps}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, bpfLinkCreate, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(m)
	if errno != 0 {
		return nil, errno
	}
	l, err := link.NewFromFD(int(fd))
	if err != nil {
		unix.Close(int(fd))
		return nil, fmt.Errorf("wrap struct_ops link: %w", err)
	}
	return l, nil
}
