package devring

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

func TestDrainRecordsOfEverySize(t *testing.T) {
	_, p, r := memRing(t, testHeader)
	sizes := []int{1, 4, SlotPayload - 1, SlotPayload, SlotPayload + 1, ev.EventSize, ev.NamedSize, ev.GPUExecSize, MaxRecordSize}
	var want [][]byte
	for i, n := range sizes {
		rec := record(uint32(i), n)
		require.True(t, p.Write(rec), "size %d", n)
		want = append(want, rec)
	}
	require.Equal(t, want, drainAll(t, r))
	// 1+1+1+1+2+1+4+1+8 slots.
	require.Equal(t, uint64(20), r.Tail())
	c, err := r.Counters()
	require.NoError(t, err)
	require.Equal(t, uint64(20), c.Head)
	require.Equal(t, uint64(len(sizes)), c.Records)
	require.Empty(t, drainAll(t, r), "nothing twice")
}

func TestDrainCountsTimedRecords(t *testing.T) {
	_, p, r := memRing(t, testHeader)
	x := ev.GPUExec{API: ev.APICuLaunchKernel}
	require.True(t, p.Write(ev.AppendGPUExec(nil, &x)))
	require.True(t, p.Write(ev.AppendRecord(nil, &ev.Event{Kind: ev.KindCall, API: ev.APICuLaunchKernel})))
	require.Len(t, drainAll(t, r), 2)
	c, _ := r.Counters()
	require.Equal(t, uint64(2), c.Records)
	require.Equal(t, uint64(1), c.Timed)
}

// TestDrainWrapsAround: positions run past the capacity many times; records
// spanning the end of the slot array come out whole.
func TestDrainWrapsAround(t *testing.T) {
	_, p, r := memRing(t, testHeader)
	seq := uint32(0)
	for round := 0; round < 50; round++ {
		var want [][]byte
		for _, n := range []int{ev.NamedSize, ev.EventSize, 3*SlotPayload + 5, 9} {
			rec := record(seq, n)
			seq++
			require.True(t, p.Write(rec))
			want = append(want, rec)
		}
		require.Equal(t, want, drainAll(t, r), "round %d", round)
	}
	require.Equal(t, uint64(50*(4+1+4+1)), r.Tail())
}

// TestFullRingDropsExactly: with no consumer, a ring of 64 slots takes 64
// one-slot records and drops the rest; freed slots take new records.
func TestFullRingDropsExactly(t *testing.T) {
	_, p, r := memRing(t, testHeader)
	written := 0
	for i := 0; i < 100; i++ {
		if p.Write(record(uint32(i), 8)) {
			written++
		}
	}
	require.Equal(t, 64, written)
	// A two-slot record does not fit in one free slot.
	require.Len(t, drainAll(t, r), 64)
	c, _ := r.Counters()
	require.Equal(t, uint64(36), c.Drops[DropFull])

	for i := 0; i < 63; i++ {
		require.True(t, p.Write(record(uint32(i), 8)))
	}
	require.False(t, p.Write(record(0, SlotPayload+1)), "one slot left, the record needs two")
	require.True(t, p.Write(record(0, SlotPayload)))
	c, _ = r.Counters()
	require.Equal(t, uint64(37), c.Drops[DropFull])
}

// TestDrainStopsAfterALap: a producer that never stops cannot keep the
// consumer in Drain: one call reads at most capacity slots.
func TestDrainStopsAfterALap(t *testing.T) {
	_, p, r := memRing(t, testHeader)
	for i := 0; i < 64; i++ {
		require.True(t, p.Write(record(uint32(i), 8)))
	}
	n, err := r.Drain(func(rec []byte) error {
		p.Write(record(999, 8)) // refills the slot just freed
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 64, n)
	n, err = r.Drain(func([]byte) error { return nil })
	require.NoError(t, err)
	require.Equal(t, 64, n, "the refills, next time")

	// The lap ends where a record would cross it: that record waits.
	for i := 0; i < 20; i++ {
		require.True(t, p.Write(record(uint32(i), 3*SlotPayload))) // 60 slots
	}
	require.True(t, p.Write(record(20, 1)))
	refills := 0
	n, err = r.Drain(func([]byte) error {
		if p.Write(record(1000, 2*SlotPayload)) {
			refills++
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 21+1, n, "60+1 slots, one 2-slot refill, and the next refill would cross the lap")
	n, err = r.Drain(func([]byte) error { return nil })
	require.NoError(t, err)
	require.Equal(t, refills-1, n)
}

func TestDrainReturnsCallbackError(t *testing.T) {
	_, p, r := memRing(t, testHeader)
	for i := 0; i < 3; i++ {
		require.True(t, p.Write(record(uint32(i), 8)))
	}
	stop := errors.New("stop")
	n, err := r.Drain(func(rec []byte) error {
		if binary.LittleEndian.Uint32(rec) == 1 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 2, n, "the record that failed counts as consumed")
	require.Nil(t, r.Broken(), "a consumer error does not break the ring")
	require.Equal(t, [][]byte{record(2, 8)}, drainAll(t, r))
}

func TestDrainResumesFromStoredTail(t *testing.T) {
	mem, p, r := memRing(t, testHeader)
	for i := 0; i < 5; i++ {
		require.True(t, p.Write(record(uint32(i), 8)))
	}
	require.Len(t, drainAll(t, r), 5)
	require.Equal(t, uint64(5), binary.LittleEndian.Uint64(mem[hdrTail:]), "the tail is published")
	require.True(t, p.Write(record(5, 8)))
	again, err := fromMemory(mem) // a restarted collector
	require.NoError(t, err)
	require.Equal(t, [][]byte{record(5, 8)}, drainAll(t, again))
}

// TestCorruptRecordsBreakTheRing: each way a producer can break the
// protocol, and that a broken ring stays broken.
func TestCorruptRecordsBreakTheRing(t *testing.T) {
	first := DataOffset // slot of position 0
	second := DataOffset + SlotSize
	for _, tt := range []struct {
		name   string
		mutate func(mem []byte)
		msg    string
	}{
		{"sequence from the future", func(m []byte) { putU64(m, first+slotSeq, 99) }, "position 0: slot sequence 99, want 0 or 1"},
		{"sequence of all ones", func(m []byte) { putU64(m, first+slotSeq, ^uint64(0)) }, "slot sequence 18446744073709551615"},
		{"zero length", func(m []byte) { putU32(m, first+slotLen, 0) }, "record of 0 bytes in 2 slots"},
		{"length beyond the maximum", func(m []byte) {
			putU32(m, first+slotLen, MaxRecordSize+1)
			binary.LittleEndian.PutUint16(m[first+slotNSlots:], MaxRecordSlots+1)
		}, "record of 1409 bytes in 9 slots"},
		{"huge length", func(m []byte) { putU32(m, first+slotLen, 0xffffffff) }, "record of 4294967295 bytes in 2 slots"},
		{"slot count too small", func(m []byte) { binary.LittleEndian.PutUint16(m[first+slotNSlots:], 1) }, "record of 200 bytes in 1 slots"},
		{"slot count too large", func(m []byte) { binary.LittleEndian.PutUint16(m[first+slotNSlots:], 0xffff) }, "record of 200 bytes in 65535 slots"},
		{"slot count zero", func(m []byte) { binary.LittleEndian.PutUint16(m[first+slotNSlots:], 0) }, "in 0 slots"},
		{"continuation not committed", func(m []byte) { putU64(m, second+slotSeq, 1) }, "continuation slot 1 has sequence 1, want 2"},
		{"continuation from another lap", func(m []byte) { putU64(m, second+slotSeq, 2+64) }, "continuation slot 1 has sequence 66, want 2"},
		{"tail beyond head", func(m []byte) { putU64(m, hdrTail, 1000) }, "position 1000: slot sequence 40, want 1000 or 1001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mem := NewMemory(testHeader)
			require.True(t, ProducerFor(mem).Write(record(0, 200)))
			tt.mutate(mem)
			r, err := fromMemory(mem)
			require.NoError(t, err)
			called := false
			_, err = r.Drain(func([]byte) error { called = true; return nil })
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), tt.msg)
			require.False(t, called)
			// Broken for good, even if the producer "repairs" it.
			mem2 := NewMemory(testHeader)
			copy(mem[DataOffset:], mem2[DataOffset:])
			_, err = r.Drain(func([]byte) error { called = true; return nil })
			require.ErrorIs(t, err, ErrCorrupt)
			require.False(t, called)
		})
	}
}

// TestCorruptionAfterGoodRecords: records before the corrupt one are
// handed over; the tail stops at the corrupt one.
func TestCorruptionAfterGoodRecords(t *testing.T) {
	mem, p, r := memRing(t, testHeader)
	for i := 0; i < 3; i++ {
		require.True(t, p.Write(record(uint32(i), 8)))
	}
	putU64(mem, DataOffset+2*SlotSize+slotSeq, 7)
	var got int
	n, err := r.Drain(func([]byte) error { got++; return nil })
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, 2, n)
	require.Equal(t, 2, got)
	require.Equal(t, uint64(2), r.Tail())
}

func TestCounters(t *testing.T) {
	_, p, r := memRing(t, testHeader)
	p.AddDrops(DropDisabled, 5)
	p.AddDrops(DropTiming, 2)
	p.SetState(StateDisabled, 17)
	c, err := r.Counters()
	require.NoError(t, err)
	require.Equal(t, Counters{State: StateDisabled, DisabledReason: 17, Drops: [NumDrops]uint64{0, 5, 2}}, c)
	require.Equal(t, "disabled", StateName(c.State))
	require.Equal(t, "unknown", StateName(9))
}
