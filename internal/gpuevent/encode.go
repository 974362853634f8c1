package gpuevent

import "encoding/binary"

// AppendRecord appends the wire form of ev's raw fields (kind through aux,
// and the name of a named record) to b. It is the inverse of Decode for the
// raw fields, used to build fixtures, benchmarks and replayed traces.
func AppendRecord(b []byte, ev *Event) []byte {
	size := EventSize
	if ev.Kind == KindCallNamed {
		size = NamedSize
	}
	start := len(b)
	b = append(b, make([]byte, size)...)
	r := b[start:]
	le := binary.LittleEndian
	le.PutUint16(r[offKind:], uint16(ev.Kind))
	le.PutUint16(r[offAPI:], uint16(ev.API))
	le.PutUint16(r[offSource:], uint16(ev.Source))
	le.PutUint16(r[offFlags:], ev.Flags)
	le.PutUint32(r[offPID:], ev.PID)
	le.PutUint32(r[offTID:], ev.TID)
	le.PutUint64(r[offStart:], ev.Start)
	le.PutUint64(r[offEnd:], ev.End)
	le.PutUint64(r[offCgroupID:], ev.CgroupID)
	le.PutUint32(r[offResult:], uint32(ev.Result))
	le.PutUint32(r[offCorr:], ev.Corr)
	for i, v := range ev.Args {
		le.PutUint64(r[offArgs+8*i:], v)
	}
	le.PutUint64(r[offOut:], ev.Out)
	for i, v := range ev.Aux {
		le.PutUint64(r[offAux+8*i:], v)
	}
	if ev.Kind == KindCallNamed {
		copy(r[EventSize:EventSize+NameMax-1], ev.Name)
	}
	return b
}
