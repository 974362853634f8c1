package devrtinject

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

const testPTX = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n)\n{\n\tret;\n}\n"

func testRequest() *Request {
	return &Request{PID: 42, SMArch: 90, API: 83, Image: ImagePTX,
		Hash: sha256.Sum256([]byte(testPTX)), PTX: []byte(testPTX), Kernels: []string{"k", "k2"}}
}

func TestRequestRoundTrip(t *testing.T) {
	q := testRequest()
	b, err := AppendRequest(nil, q)
	require.NoError(t, err)
	require.Len(t, b, ReqHeaderSize+len(testPTX)+len("k\x00k2\x00"))
	got, err := ReadRequest(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, q, got)
}

// corrupt returns the encoded test request with fn applied to its bytes.
func corrupt(t *testing.T, fn func(b []byte) []byte) []byte {
	t.Helper()
	b, err := AppendRequest(nil, testRequest())
	require.NoError(t, err)
	return fn(b)
}

func TestReadRequestErrors(t *testing.T) {
	le := binary.LittleEndian
	tests := []struct {
		name    string
		b       []byte
		err     error
		withHdr bool // the error comes with the header's fields
	}{
		{"empty", nil, io.EOF, false},
		{"short header", corrupt(t, func(b []byte) []byte { return b[:40] }), io.ErrUnexpectedEOF, false},
		{"magic", corrupt(t, func(b []byte) []byte { b[0] ^= 1; return b }), ErrMagic, false},
		{"version", corrupt(t, func(b []byte) []byte { le.PutUint16(b[4:], Version+1); return b }), ErrVersion, false},
		{"header size", corrupt(t, func(b []byte) []byte { le.PutUint16(b[6:], 96); return b }), ErrVersion, false},
		{"no PTX", corrupt(t, func(b []byte) []byte { le.PutUint64(b[16:], 0); return b }), ErrLimit, true},
		{"PTX too long", corrupt(t, func(b []byte) []byte { le.PutUint64(b[16:], MaxPTX+1); return b }), ErrLimit, true},
		{"names too long", corrupt(t, func(b []byte) []byte { le.PutUint32(b[24:], MaxNames+1); return b }), ErrLimit, true},
		{"too many kernels", corrupt(t, func(b []byte) []byte { le.PutUint32(b[28:], MaxKernels+1); return b }), ErrLimit, true},
		{"image", corrupt(t, func(b []byte) []byte { le.PutUint16(b[34:], uint16(ImageTriton)+1); return b }), ErrFields, true},
		{"short body", corrupt(t, func(b []byte) []byte { return b[:len(b)-1] }), io.ErrUnexpectedEOF, false},
		{"NUL in PTX", corrupt(t, func(b []byte) []byte { b[ReqHeaderSize+3] = 0; return b }), ErrFields, true},
		{"one name fewer", corrupt(t, func(b []byte) []byte { le.PutUint32(b[28:], 1); return b }), ErrNames, true},
		{"one name more", corrupt(t, func(b []byte) []byte { le.PutUint32(b[28:], 3); return b }), ErrNames, true},
		{"empty name", corrupt(t, func(b []byte) []byte { b[len(b)-5] = 0; return b }), ErrNames, true},
		{"hash", corrupt(t, func(b []byte) []byte { b[ReqHeaderSize] = '/'; return b }), ErrHash, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := ReadRequest(bytes.NewReader(tc.b))
			require.ErrorIs(t, err, tc.err)
			if tc.withHdr {
				require.NotNil(t, q)
				require.Equal(t, uint32(42), q.PID)
				require.Nil(t, q.PTX)
			} else {
				require.Nil(t, q)
			}
		})
	}
}

func TestResponseRoundTrip(t *testing.T) {
	tests := []Response{
		{Status: StatusPatched, Flags: RespCached, SharedSize: 4096, ProbeVersion: 7,
			Hash: [32]byte{1, 2}, Reason: "ok", PTX: []byte(testPTX), Kernels: []string{"k"}},
		{Status: StatusPatched, SharedSize: 4096, PTX: []byte(testPTX), Kernels: []string{"k"},
			Init: []InitRange{{Offset: 0, Data: []byte{1, 2, 3}}, {Offset: 4000, Data: make([]byte, 96)}}},
		{Status: StatusUnchanged, Hash: [32]byte{3}},
		{Status: StatusRejected, Reason: "rejected: k has .maxnreg 16"},
		{Status: StatusError, Reason: "bad request"},
	}
	for _, p := range tests {
		t.Run(p.Status.String(), func(t *testing.T) {
			b, err := AppendResponse(nil, &p)
			require.NoError(t, err)
			got, err := ReadResponse(bytes.NewReader(b))
			require.NoError(t, err)
			require.Equal(t, &p, got)
		})
	}
}

func TestAppendResponseRefuses(t *testing.T) {
	tests := []struct {
		name string
		p    Response
		err  error
	}{
		{"status 0", Response{}, ErrFields},
		{"status 5", Response{Status: 5}, ErrFields},
		{"patched without PTX", Response{Status: StatusPatched, Kernels: []string{"k"}}, ErrFields},
		{"patched without kernels", Response{Status: StatusPatched, PTX: []byte("x")}, ErrFields},
		{"unchanged with PTX", Response{Status: StatusUnchanged, PTX: []byte("x")}, ErrFields},
		{"NUL in PTX", Response{Status: StatusPatched, PTX: []byte("a\x00b"), Kernels: []string{"k"}}, ErrFields},
		{"empty name", Response{Status: StatusPatched, PTX: []byte("x"), Kernels: []string{""}}, ErrNames},
		{"long reason", Response{Status: StatusError, Reason: string(make([]byte, MaxReason+1))}, ErrLimit},
		{"huge region", Response{Status: StatusUnchanged, SharedSize: MaxShared + 1}, ErrLimit},
		{"init outside the region", Response{Status: StatusPatched, PTX: []byte("x"), Kernels: []string{"k"},
			SharedSize: 64, Init: []InitRange{{Offset: 60, Data: make([]byte, 8)}}}, ErrFields},
		{"empty init", Response{Status: StatusPatched, PTX: []byte("x"), Kernels: []string{"k"},
			SharedSize: 64, Init: []InitRange{{Offset: 0}}}, ErrFields},
		{"init too long", Response{Status: StatusPatched, PTX: []byte("x"), Kernels: []string{"k"},
			SharedSize: MaxShared, Init: []InitRange{{Data: make([]byte, MaxInit)}}}, ErrLimit},
		{"unchanged with init", Response{Status: StatusUnchanged, SharedSize: 64,
			Init: []InitRange{{Data: []byte{1}}}}, ErrFields},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AppendResponse(nil, &tc.p)
			require.ErrorIs(t, err, tc.err)
		})
	}
}

func TestStatusString(t *testing.T) {
	require.Equal(t, []string{"status(0)", "patched", "unchanged", "rejected", "error", "status(5)"},
		[]string{Status(0).String(), StatusPatched.String(), StatusUnchanged.String(),
			StatusRejected.String(), StatusError.String(), Status(5).String()})
}

func FuzzReadRequest(f *testing.F) {
	b, _ := AppendRequest(nil, testRequest())
	f.Add(b)
	f.Add(b[:ReqHeaderSize])
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := ReadRequest(bytes.NewReader(data))
		if err != nil {
			return
		}
		// What decodes encodes to the same bytes.
		again, err := AppendRequest(nil, q)
		require.NoError(t, err)
		require.Equal(t, data[:len(again)], again)
		require.Equal(t, sha256.Sum256(q.PTX), q.Hash)
	})
}

func FuzzReadResponse(f *testing.F) {
	for _, p := range []Response{
		{Status: StatusPatched, PTX: []byte(testPTX), Kernels: []string{"k"}, SharedSize: 64},
		{Status: StatusPatched, PTX: []byte(testPTX), Kernels: []string{"k"}, SharedSize: 256,
			Init: []InitRange{{Offset: 128, Data: []byte("header")}}},
		{Status: StatusRejected, Reason: "no"},
	} {
		b, _ := AppendResponse(nil, &p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadResponse(bytes.NewReader(data))
		if err != nil {
			return
		}
		again, err := AppendResponse(nil, p)
		require.NoError(t, err)
		// Reserved header bytes are not kept.
		require.Equal(t, data[RespHeaderSize:len(again)], again[RespHeaderSize:])
	})
}
