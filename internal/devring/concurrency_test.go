package devring

import (
	"encoding/binary"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// concurrentRecord is record number i of producer w: w and i in the first
// 8 bytes, a size that depends on both (1 to 4 slots), filler checked by
// the consumer.
func concurrentRecord(w, i int) []byte {
	sizes := []int{8, SlotPayload + 3, 2*SlotPayload + 40, 680}
	b := record(uint32(i), sizes[(w+i)%len(sizes)])
	binary.LittleEndian.PutUint32(b[4:], uint32(w))
	return b
}

func checkRecord(t testing.TB, rec []byte) (w, i int) {
	i, w = int(binary.LittleEndian.Uint32(rec)), int(binary.LittleEndian.Uint32(rec[4:]))
	want := concurrentRecord(w, i)
	if string(want) != string(rec) {
		t.Fatalf("record %d of producer %d damaged", i, w)
	}
	return w, i
}

// TestConcurrentProducersNoLoss: producers write into a real mapped file
// while the consumer drains it through its own mapping; the ring is large
// enough for everything, so every record arrives once, whole, and in each
// producer's order.
func TestConcurrentProducersNoLoss(t *testing.T) {
	// 8 × 3000 records of 1 to 4 slots (2.5 on average): 60000 slots, so
	// even a consumer that never runs loses nothing.
	const producers, each = 8, 3000
	path := filepath.Join(t.TempDir(), "ring")
	h := testHeader
	h.Capacity = 1 << 16
	p, err := Create(path, h)
	require.NoError(t, err)
	defer p.Close()
	r, err := Open(path)
	require.NoError(t, err)
	defer r.Close()

	var wg sync.WaitGroup
	for w := 0; w < producers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if !p.Write(concurrentRecord(w, i)) {
					t.Errorf("producer %d record %d dropped", w, i)
					return
				}
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	next := make([]int, producers)
	total := 0
	consume := func() {
		_, err := r.Drain(func(rec []byte) error {
			w, i := checkRecord(t, rec)
			require.Equal(t, next[w], i, "producer %d out of order", w)
			next[w]++
			total++
			return nil
		})
		require.NoError(t, err)
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		consume()
	}
	consume()
	require.Equal(t, producers*each, total)
	c, err := r.Counters()
	require.NoError(t, err)
	require.Equal(t, uint64(producers*each), c.Records)
	require.Zero(t, c.Drops[DropFull])
	require.Equal(t, c.Head, r.Tail())
}

// TestConcurrentProducersExactDrops: with nobody draining, producers racing
// for a ring of 256 slots fill it exactly (one-slot records) and every
// other record is counted as dropped.
func TestConcurrentProducersExactDrops(t *testing.T) {
	const producers, each = 8, 1000
	for _, slots := range []int{1, 2} {
		h := testHeader
		h.Capacity = 256
		_, p, r := memRing(t, h)
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted := 0
		for w := 0; w < producers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := 0
				for i := 0; i < each; i++ {
					rec := record(uint32(i), slots*SlotPayload)
					binary.LittleEndian.PutUint32(rec[4:], uint32(w))
					if p.Write(rec) {
						n++
					}
				}
				mu.Lock()
				accepted += n
				mu.Unlock()
			}()
		}
		wg.Wait()
		require.Equal(t, 256/slots, accepted, "%d-slot records", slots)
		c, _ := r.Counters()
		require.Equal(t, uint64(producers*each-256/slots), c.Drops[DropFull])
		require.Equal(t, uint64(256/slots), c.Records)
		require.Len(t, drainAll(t, r), 256/slots)
	}
}
