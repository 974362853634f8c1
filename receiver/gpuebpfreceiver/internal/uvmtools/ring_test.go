package uvmtools

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDriver is the producer side of the queue, step for step as
// uvm_tools.c's enqueue_event does it.
type fakeDriver struct {
	mu   sync.Mutex // the driver's queue->lock
	buf  []byte
	ctrl *controlData
	size uint32
	esz  int
}

func newFakeQueue(t *testing.T, size uint32, esz int) (*fakeDriver, *ring) {
	t.Helper()
	words := make([]uint64, unsafe.Sizeof(controlData{})/8)
	page := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	buf := make([]byte, int(size)*esz)
	d := &fakeDriver{buf: buf, ctrl: (*controlData)(unsafe.Pointer(&words[0])), size: size, esz: esz}
	return d, newRing(buf, page, size, esz)
}

func (d *fakeDriver) enqueue(entry []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	mask := d.size - 1
	getBehind := atomic.LoadUint32(&d.ctrl.GetBehind) & mask
	putBehind := atomic.LoadUint32(&d.ctrl.PutBehind) & mask
	putAhead := (putBehind + 1) & mask
	if (d.size+getBehind-putBehind)&mask == 1 { // one free slot: full
		atomic.AddUint64(&d.ctrl.Dropped[entry[0]], 1)
		return false
	}
	copy(d.buf[int(putBehind)*d.esz:], entry)
	atomic.StoreUint32(&d.ctrl.PutAhead, putAhead)
	atomic.StoreUint32(&d.ctrl.PutBehind, putAhead)
	return true
}

// seqEntry is a V2 CPU fault whose address is the sequence number.
func seqEntry(seq uint64) []byte {
	b := make([]byte, EntrySizeV2)
	b[0] = byte(EventCPUFault)
	binary.LittleEndian.PutUint64(b[8:], seq)
	return b
}

func drainSeqs(t *testing.T, r *ring) (seqs []uint64, dropped uint64) {
	t.Helper()
	_, dropped = r.drain(func(b []byte) {
		e, err := Decode(b)
		require.NoError(t, err)
		seqs = append(seqs, e.Address)
	})
	return seqs, dropped
}

func TestRingInOrder(t *testing.T) {
	d, r := newFakeQueue(t, 16, EntrySizeV2)
	for i := uint64(1); i <= 3; i++ {
		require.True(t, d.enqueue(seqEntry(i)))
	}
	assert.Equal(t, uint32(3), r.pending())
	seqs, dropped := drainSeqs(t, r)
	assert.Equal(t, []uint64{1, 2, 3}, seqs)
	assert.Zero(t, dropped)
	assert.Equal(t, uint32(3), atomic.LoadUint32(&d.ctrl.GetBehind))
	assert.Equal(t, uint32(3), atomic.LoadUint32(&d.ctrl.GetAhead))
	seqs, _ = drainSeqs(t, r)
	assert.Empty(t, seqs)
}

func TestRingFullDropsAndCounts(t *testing.T) {
	d, r := newFakeQueue(t, 8, EntrySizeV2)
	accepted := 0
	for i := uint64(0); i < 10; i++ {
		if d.enqueue(seqEntry(i)) {
			accepted++
		}
	}
	assert.Equal(t, 7, accepted, "the driver keeps one slot free")
	seqs, dropped := drainSeqs(t, r)
	assert.Equal(t, []uint64{0, 1, 2, 3, 4, 5, 6}, seqs)
	assert.Equal(t, uint64(3), dropped)
	assert.Equal(t, map[EventType]uint64{EventCPUFault: 3}, r.droppedByType())
	_, dropped = drainSeqs(t, r)
	assert.Zero(t, dropped, "dropped is reported once")
	// Room again.
	require.True(t, d.enqueue(seqEntry(100)))
	seqs, _ = drainSeqs(t, r)
	assert.Equal(t, []uint64{100}, seqs)
}

func TestRingWrapsAround(t *testing.T) {
	d, r := newFakeQueue(t, 4, EntrySizeV1)
	var next, want uint64
	for round := 0; round < 50; round++ {
		for i := 0; i < 1+round%3; i++ {
			b := make([]byte, EntrySizeV1)
			b[0] = byte(EventCPUFault)
			binary.LittleEndian.PutUint64(b[8:], next)
			require.True(t, d.enqueue(b))
			next++
		}
		r.drain(func(b []byte) {
			e, err := Decode(b)
			require.NoError(t, err)
			require.Equal(t, want, e.Address)
			want++
		})
	}
	assert.Equal(t, next, want)
}

func TestRingConcurrentProducer(t *testing.T) {
	d, r := newFakeQueue(t, 64, EntrySizeV2)
	const n = 200_000
	var rejected atomic.Uint64
	accepted := make(chan uint64, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(0); i < n; i++ {
			if d.enqueue(seqEntry(i)) {
				accepted <- i
			} else {
				rejected.Add(1)
			}
		}
	}()
	var got []uint64
	var dropped uint64
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		s, dr := drainSeqs(t, r)
		got = append(got, s...)
		dropped += dr
	}
	s, dr := drainSeqs(t, r)
	got = append(got, s...)
	dropped += dr
	close(accepted)
	var want []uint64
	for v := range accepted {
		want = append(want, v)
	}
	require.Equal(t, len(want), len(got))
	assert.Equal(t, want, got, "every accepted entry once, in order")
	assert.Equal(t, rejected.Load(), dropped)
	assert.Equal(t, uint64(n), uint64(len(got))+dropped)
}
