package devring

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

var testHeader = Header{Capacity: 64, PID: 4242, StartTime: 777, CreatedNS: 123456789, Version: "0.1.0-test"}

// record returns n bytes: a little-endian sequence number, then filler
// derived from it, so a test can tell records apart and check each byte.
func record(seq uint32, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(int(seq)*7 + i)
	}
	if n >= 4 {
		binary.LittleEndian.PutUint32(b, seq)
	}
	return b
}

// memRing is a ring in ordinary memory with a producer and a consumer.
func memRing(t testing.TB, h Header) ([]byte, *Producer, *Ring) {
	t.Helper()
	mem := NewMemory(h)
	r, err := fromMemory(mem)
	require.NoError(t, err)
	return mem, ProducerFor(mem), r
}

// drainAll drains and returns copies of the records.
func drainAll(t testing.TB, r *Ring) [][]byte {
	t.Helper()
	var out [][]byte
	_, err := r.Drain(func(rec []byte) error {
		out = append(out, append([]byte(nil), rec...))
		return nil
	})
	require.NoError(t, err)
	return out
}

func putU64(mem []byte, off int, v uint64) { binary.LittleEndian.PutUint64(mem[off:], v) }
func putU32(mem []byte, off int, v uint32) { binary.LittleEndian.PutUint32(mem[off:], v) }

func ptr(mem []byte, off int) unsafe.Pointer { return unsafe.Pointer(&mem[off]) }
