package devring

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// Producer writes records into a ring the way devrt does, following the
// protocol of gpuext_abi.h to the letter. The collector never produces:
// this is for tests, benchmarks and replaying recorded traces, so the
// consumer is exercised by concurrent producers before (and besides) the C
// library. Safe for concurrent use by many goroutines.
type Producer struct {
	mem    []byte
	mask   uint64
	mapped bool
}

// Create makes a ring file at path (which must not exist) as devrt does:
// sized, header and control page written, every slot's sequence set to its
// index, the magic stored last so a consumer never sees half a header.
func Create(path string, h Header) (*Producer, error) {
	if h.Capacity < MinSlots || h.Capacity > MaxSlots || h.Capacity&(h.Capacity-1) != 0 {
		return nil, fmt.Errorf("capacity %d is not a power of two in [%d, %d]", h.Capacity, MinSlots, MaxSlots)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := DataOffset + int(h.Capacity)*SlotSize
	if err := f.Truncate(int64(size)); err != nil {
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	p := &Producer{mem: mem, mask: uint64(h.Capacity) - 1, mapped: true}
	p.init(h)
	return p, nil
}

// NewMemory returns a ring initialised as Create does, in ordinary memory
// (fuzz seeds, benchmarks without a file).
func NewMemory(h Header) []byte {
	mem := make([]byte, DataOffset+int(h.Capacity)*SlotSize)
	p := &Producer{mem: mem, mask: uint64(h.Capacity) - 1}
	p.init(h)
	return mem
}

// ProducerFor writes into a ring made by NewMemory.
func ProducerFor(mem []byte) *Producer {
	capacity := binary.LittleEndian.Uint32(mem[hdrCapacity:])
	return &Producer{mem: mem, mask: uint64(capacity) - 1}
}

func (p *Producer) init(h Header) {
	le := binary.LittleEndian
	b := p.mem
	le.PutUint32(b[hdrABIVersion:], ABIVersion)
	le.PutUint32(b[hdrSlotSize:], SlotSize)
	le.PutUint32(b[hdrCapacity:], h.Capacity)
	le.PutUint32(b[hdrPID:], h.PID)
	le.PutUint64(b[hdrStartTime:], h.StartTime)
	le.PutUint64(b[hdrCreated:], h.CreatedNS)
	le.PutUint32(b[hdrCtlOffset:], CtlOffset)
	le.PutUint32(b[hdrDataOffset:], DataOffset)
	le.PutUint32(b[hdrState:], StateActive)
	copy(b[hdrVersion:hdrVersion+versionLen-1], h.Version)
	le.PutUint64(b[hdrPIDNS:], h.PIDNS)
	le.PutUint32(b[CtlOffset+ctlClasses:], ClassAll)
	le.PutUint32(b[CtlOffset+ctlSampleEvery:], 32)
	le.PutUint32(b[CtlOffset+ctlSampleGap:], 50000)
	le.PutUint64(b[CtlOffset+ctlMagic:], CtlMagic)
	for i := uint64(0); i <= p.mask; i++ {
		le.PutUint64(b[p.slotOff(i)+slotSeq:], i)
	}
	atomic.StoreUint64(p.u64(hdrMagic), Magic)
}

func (p *Producer) slotOff(pos uint64) int { return DataOffset + int(pos&p.mask)*SlotSize }
func (p *Producer) u64(off int) *uint64    { return (*uint64)(unsafe.Pointer(&p.mem[off])) }
func (p *Producer) u32(off int) *uint32    { return (*uint32)(unsafe.Pointer(&p.mem[off])) }

// Write commits rec (1 to MaxRecordSize bytes), or counts it in
// drops[DropFull] and returns false when the ring has no room for it.
func (p *Producer) Write(rec []byte) bool {
	if len(rec) == 0 || len(rec) > MaxRecordSize {
		panic(fmt.Sprintf("devring: record of %d bytes", len(rec)))
	}
	n := uint64(slotsFor(uint32(len(rec))))
	head := p.u64(hdrHead)
	var pos uint64
	for {
		pos = atomic.LoadUint64(head)
		last := pos + n - 1
		seq := atomic.LoadUint64(p.u64(p.slotOff(last) + slotSeq))
		if seq < last {
			atomic.AddUint64(p.u64(hdrDrops+8*DropFull), 1)
			return false
		}
		if seq == last && atomic.CompareAndSwapUint64(head, pos, pos+n) {
			break
		}
		// Another producer moved head: look again.
	}
	le := binary.LittleEndian
	first := p.slotOff(pos)
	le.PutUint32(p.mem[first+slotLen:], uint32(len(rec)))
	le.PutUint16(p.mem[first+slotNSlots:], uint16(n))
	for i, done := uint64(0), 0; done < len(rec); i++ {
		off := p.slotOff(pos+i) + slotData
		done += copy(p.mem[off:off+SlotPayload], rec[done:])
	}
	// Commit: each slot's sequence to its position + 1, the first slot
	// last, so a consumer that sees the first sees them all.
	for i := n; i > 0; i-- {
		q := pos + i - 1
		atomic.StoreUint64(p.u64(p.slotOff(q)+slotSeq), q+1)
	}
	atomic.AddUint64(p.u64(hdrRecords), 1)
	if ev.RecordKind(rec) == ev.KindGPUExec {
		atomic.AddUint64(p.u64(hdrTimed), 1)
	}
	return true
}

// SetState sets the ring's state and disabled reason, as devrt does when it
// turns itself off or the process exits.
func (p *Producer) SetState(state, reason uint32) {
	atomic.StoreUint32(p.u32(hdrDisabledReason), reason)
	atomic.StoreUint32(p.u32(hdrState), state)
}

// AddDrops adds n to drop counter i.
func (p *Producer) AddDrops(i int, n uint64) { atomic.AddUint64(p.u64(hdrDrops+8*i), n) }

// Close unmaps a ring made by Create.
func (p *Producer) Close() error {
	if !p.mapped || p.mem == nil {
		return nil
	}
	mem := p.mem
	p.mem = nil
	return unix.Munmap(mem)
}
