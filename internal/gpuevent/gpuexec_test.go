package gpuevent

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func kernelExec() GPUExec {
	return GPUExec{API: APICuLaunchKernel, Source: SourceDevrt, Flags: ExecFlagClamped, PID: 42, TID: 43,
		CallStart: 1000, GPUStart: 1500, GPUEnd: 4500, Stream: 0x7, Handle: 0xf00, Corr: 17}
}

func TestDecodeGPUExec(t *testing.T) {
	in := kernelExec()
	raw := AppendGPUExec(nil, &in)
	require.Len(t, raw, GPUExecSize)
	require.Equal(t, KindGPUExec, RecordKind(raw))
	var out GPUExec
	require.NoError(t, DecodeGPUExec(raw, &out))
	require.Equal(t, in, out)
	require.Equal(t, uint64(3000), out.Duration())
	require.Equal(t, uint64(500), out.QueueDelay())

	// Bytes at their C offsets, so a test producer and devrt agree.
	le := binary.LittleEndian
	require.Equal(t, uint16(6), le.Uint16(raw[0:]))
	require.Equal(t, uint64(1500), le.Uint64(raw[24:]))
	require.Equal(t, uint32(17), le.Uint32(raw[64:]))
}

func TestDecodeGPUExecRejects(t *testing.T) {
	mutate := func(f func(x *GPUExec)) []byte {
		x := kernelExec()
		f(&x)
		return AppendGPUExec(nil, &x)
	}
	wrongKind := AppendGPUExec(nil, &GPUExec{API: APICuLaunchKernel})
	binary.LittleEndian.PutUint16(wrongKind, uint16(KindCall))
	for _, tt := range []struct {
		name string
		raw  []byte
		want error
	}{
		{"short", AppendGPUExec(nil, &GPUExec{})[:GPUExecSize-1], ErrSize},
		{"long", append(AppendGPUExec(nil, &GPUExec{API: APICuLaunchKernel}), 0), ErrSize},
		{"empty", nil, ErrSize},
		{"kind", wrongKind, ErrKind},
		{"unknown api", mutate(func(x *GPUExec) { x.API = 127 }), ErrAPI},
		{"api beyond the table", mutate(func(x *GPUExec) { x.API = 60000 }), ErrAPI},
		{"a sync enqueues nothing", mutate(func(x *GPUExec) { x.API = APICuCtxSynchronize }), ErrNotEnqueuing},
		{"an allocation enqueues nothing", mutate(func(x *GPUExec) { x.API = APICuMemAlloc }), ErrNotEnqueuing},
		{"ends before it starts", mutate(func(x *GPUExec) { x.GPUEnd = x.GPUStart - 1 }), ErrTimeBack},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var x GPUExec
			err := DecodeGPUExec(tt.raw, &x)
			require.True(t, errors.Is(err, tt.want), "got %v", err)
		})
	}
}

func TestGPUExecAcceptsEveryEnqueuingAPI(t *testing.T) {
	n := 0
	for _, api := range APIs() {
		x := kernelExec()
		x.API = api
		var out GPUExec
		err := DecodeGPUExec(AppendGPUExec(nil, &x), &out)
		if c := api.Class(); c == ClassLaunch || c == ClassCopy {
			require.NoError(t, err, api.String())
			n++
		} else {
			require.ErrorIs(t, err, ErrNotEnqueuing, api.String())
		}
	}
	require.Equal(t, 7+15+12, n, "launches, copies and sets")
}

func TestGPUExecQueueDelayWithSkew(t *testing.T) {
	x := GPUExec{CallStart: 2000, GPUStart: 1500, GPUEnd: 1600}
	require.Zero(t, x.QueueDelay())
	require.Equal(t, uint64(100), x.Duration())
}

func TestRecordKind(t *testing.T) {
	require.Equal(t, Kind(0), RecordKind(nil))
	require.Equal(t, Kind(0), RecordKind([]byte{1}))
	require.Equal(t, KindCallNamed, RecordKind([]byte{2, 0, 9}))
}

func FuzzDecodeGPUExec(f *testing.F) {
	x := kernelExec()
	f.Add(AppendGPUExec(nil, &x))
	f.Add(AppendGPUExec(nil, &GPUExec{API: APICuMemcpyHtoDAsync, Bytes: 1 << 20, GPUStart: 5, GPUEnd: 5}))
	f.Add(make([]byte, GPUExecSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		var x GPUExec
		if err := DecodeGPUExec(b, &x); err != nil {
			return
		}
		require.LessOrEqual(t, x.GPUStart, x.GPUEnd)
		var again GPUExec
		require.NoError(t, DecodeGPUExec(AppendGPUExec(nil, &x), &again))
		require.Equal(t, x, again)
	})
}
