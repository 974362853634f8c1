// Package xidprobe reads Xid errors from the nvidia:nvidia_dev_xid
// tracepoint of NVIDIA's kernel module (bpf/xid.bpf.c): every Xid the driver
// reports, with its message, whoever caused it, without NVML.
package xidprobe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// ErrNoTracepoint means the running kernel has no nvidia:nvidia_dev_xid
// tracepoint: NVIDIA's module is not loaded, or is older than driver 580.
var ErrNoTracepoint = errors.New("tracepoint nvidia:nvidia_dev_xid not found (NVIDIA kernel module not loaded, or a driver without it)")

// Tracefs is where the tracepoint's id is looked up; mounted there when
// absent.
const Tracefs = "/sys/kernel/tracing"

// Probe owns the program, its link and the ring reader.
type Probe struct {
	objs  bpf.XidObjects
	mu    sync.Mutex // link: detached by Drain or Close
	link  link.Link
	rd    *ringbuf.Reader
	bad   atomic.Uint64
	close atomic.Bool
}

// New loads the program and attaches it to the tracepoint.
func New() (*Probe, error) {
	_ = rlimit.RemoveMemlock()
	if err := ensureTracefs(Tracefs); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(Tracefs, "events", "nvidia", "nvidia_dev_xid")); err != nil {
		return nil, ErrNoTracepoint
	}
	p := &Probe{}
	if err := bpf.LoadXidObjects(&p.objs, nil); err != nil {
		return nil, fmt.Errorf("load xid program: %w", err)
	}
	l, err := link.Tracepoint("nvidia", "nvidia_dev_xid", p.objs.NvidiaDevXid, nil)
	if err != nil {
		p.objs.Close()
		return nil, fmt.Errorf("attach nvidia:nvidia_dev_xid: %w", err)
	}
	p.link = l
	if p.rd, err = ringbuf.NewReader(p.objs.Xids); err != nil {
		p.Close()
		return nil, fmt.Errorf("open xid ring: %w", err)
	}
	return p, nil
}

// ensureTracefs mounts tracefs at dir when nothing is mounted there (a
// container that did not mount the host's). Needs CAP_SYS_ADMIN; without it
// the error says what to mount.
func ensureTracefs(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "events")); err == nil {
		return nil
	}
	if err := syscall.Mount("nodev", dir, "tracefs", 0, ""); err != nil {
		return fmt.Errorf("tracefs is not mounted at %s and mounting it failed (%w): mount it, or the host's, there", dir, err)
	}
	return nil
}

// Run reads Xids until Close, or until Drain and the end of the ring,
// passing each to handle. Malformed records are counted (Malformed) and
// skipped.
func (p *Probe) Run(handle func(ev.XID)) error {
	var rec ringbuf.Record
	for {
		if err := p.rd.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, ringbuf.ErrFlushed) {
				return nil
			}
			return fmt.Errorf("read xid ring: %w", err)
		}
		x, err := ev.DecodeXID(rec.RawSample)
		if err != nil {
			p.bad.Add(1)
			continue
		}
		handle(x)
	}
}

// Dropped is the number of Xids lost because the ring was full.
func (p *Probe) Dropped() uint64 {
	var n uint64
	_ = p.objs.XidDrops.Lookup(uint32(0), &n)
	return n
}

// Malformed is the number of records that did not decode.
func (p *Probe) Malformed() uint64 { return p.bad.Load() }

// Drain detaches the program, so that no Xid is added to the ring, and
// makes Run return once it has read every Xid the ring holds: at shutdown
// the Xids the driver reported until then are still handed on. Close
// afterwards releases the rest.
func (p *Probe) Drain() error {
	if p.close.Load() {
		return fmt.Errorf("xidprobe: drain: %w", os.ErrClosed)
	}
	errs := []error{p.detach()}
	if p.rd != nil {
		errs = append(errs, p.rd.Flush())
	}
	return errors.Join(errs...)
}

// detach closes the link, once.
func (p *Probe) detach() error {
	p.mu.Lock()
	l := p.link
	p.link = nil
	p.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.Close()
}

// Close detaches the program and stops Run.
func (p *Probe) Close() error {
	if !p.close.CompareAndSwap(false, true) {
		return nil
	}
	var errs []error
	if p.rd != nil {
		errs = append(errs, p.rd.Close())
	}
	errs = append(errs, p.detach())
	errs = append(errs, p.objs.Close())
	return errors.Join(errs...)
}
