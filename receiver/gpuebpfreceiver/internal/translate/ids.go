package translate

import (
	"crypto/rand"
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// idSource makes trace and span ids without a syscall or lock per span: a
// random 64-bit prefix drawn once, then a counter mixed through splitmix64 so
// ids are unique within a run and well spread across runs.
type idSource struct {
	prefix uint64
	n      uint64
}

func newIDSource() idSource {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return idSource{prefix: binary.LittleEndian.Uint64(b[:]) | 1}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (s *idSource) next() (pcommon.TraceID, pcommon.SpanID) {
	s.n++
	var t pcommon.TraceID
	var sp pcommon.SpanID
	binary.BigEndian.PutUint64(t[:8], s.prefix)
	binary.BigEndian.PutUint64(t[8:], splitmix(s.n))
	binary.BigEndian.PutUint64(sp[:], splitmix(s.n^s.prefix)|1)
	return t, sp
}
