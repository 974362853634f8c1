package devrtinject

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// eventBytes encodes e the way devrt writes struct gpuext_inject_event.
func eventBytes(e *Event) []byte {
	b := make([]byte, EventSize)
	le := binary.LittleEndian
	le.PutUint16(b[evOffKind:], KindInject)
	le.PutUint16(b[evOffAPI:], e.API)
	le.PutUint16(b[evOffSource:], e.Source)
	le.PutUint16(b[evOffFlags:], e.Flags)
	le.PutUint32(b[evOffPID:], e.PID)
	le.PutUint32(b[evOffTID:], e.TID)
	for off, v := range map[int]uint64{evOffTS: e.TS, evOffModule: e.Module,
		evOffPatched: e.Patched, evOffSharedDptr: e.SharedDptr, evOffSharedSize: e.SharedSize,
		evOffAskNS: e.AskNS, evOffLoadNS: e.LoadNS, evOffTotalNS: e.TotalNS, evOffPTXLen: e.PTXLen} {
		le.PutUint64(b[off:], v)
	}
	le.PutUint32(b[evOffOutcome:], uint32(e.Outcome))
	le.PutUint32(b[evOffReason:], uint32(e.Reason))
	le.PutUint32(b[evOffSMArch:], e.SMArch)
	le.PutUint32(b[evOffKernels:], e.Kernels)
	le.PutUint32(b[evOffCUDAResult:], uint32(e.CUDAResult))
	copy(b[evOffSHA256:], e.SHA256[:])
	copy(b[evOffText:evOffText+evTextLen], e.Text)
	return b
}

func TestDecodeEvent(t *testing.T) {
	full := Event{API: 84, Source: 2, Flags: FlagCollectorCache | FlagLibrary, PID: 7, TID: 8,
		TS: 1e9, Module: 0x1000, Patched: 0x2000, SharedDptr: 0x7f0000000000, SharedSize: 8192,
		AskNS: 1, LoadNS: 2, TotalNS: 4, PTXLen: 900, Outcome: OutPatched, SMArch: 90,
		Kernels: 3, SHA256: [16]byte{9}}
	text := Event{Outcome: OutRejected, Text: "rejected: a reason of exactly forty-eight bytes!"}
	failed := Event{Outcome: OutFailed, Reason: ReasonLoad, CUDAResult: -218}
	tests := []struct {
		name string
		b    []byte
		want Event
		err  error
	}{
		{"patched", eventBytes(&full), full, nil},
		{"text fills the field", eventBytes(&text), text, nil},
		{"negative result", eventBytes(&failed), failed, nil},
		{"longer record", append(eventBytes(&full), 1, 2, 3), full, nil},
		{"empty", nil, Event{}, ErrEventKind},
		{"other kind", []byte{1, 0, 0, 0}, Event{}, ErrEventKind},
		{"short", eventBytes(&full)[:EventSize-1], Event{}, ErrEventSize},
		{"outcome 0", eventBytes(&Event{}), Event{}, ErrEventBad},
		{"outcome 6", eventBytes(&Event{Outcome: 6}), Event{}, ErrEventBad},
		{"reason 19", eventBytes(&Event{Outcome: OutFailed, Reason: 19}), Event{}, ErrEventBad},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e Event
			err := DecodeEvent(tc.b, &e)
			require.ErrorIs(t, err, tc.err)
			if tc.err == nil {
				require.Equal(t, tc.want, e)
			}
		})
	}
}

func TestOutcomeAndReasonNames(t *testing.T) {
	require.Equal(t, "not_instrumentable", OutNotInstrumentable.String())
	require.Equal(t, "outcome(9)", Outcome(9).String())
	require.Equal(t, "sass_only", ReasonSASSOnly.String())
	require.Equal(t, "table_full", ReasonTableFull.String())
	require.Equal(t, "refused", ReasonRefused.String())
	require.Equal(t, "file", ReasonFile.String())
	require.Equal(t, "vars_limits", ReasonVarsLimits.String())
	require.Equal(t, "reason(19)", Reason(19).String())
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(eventBytes(&Event{Outcome: OutPatched, Text: "x"}))
	f.Add(eventBytes(&Event{Outcome: OutFailed, Reason: ReasonTimeout}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e Event
		if DecodeEvent(data, &e) != nil {
			return
		}
		// A decoded record encodes to its bytes but for the padding after
		// cuda_result, the text's tail after a NUL, and bytes past the
		// record.
		b := eventBytes(&e)
		require.Equal(t, data[:evOffCUDAResult+4], b[:evOffCUDAResult+4])
		require.Equal(t, data[evOffSHA256:evOffText], b[evOffSHA256:evOffText])
	})
}
