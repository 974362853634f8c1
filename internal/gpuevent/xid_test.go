package gpuevent

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

func TestXIDLayoutMatchesBTF(t *testing.T) {
	spec, err := bpf.LoadXid()
	require.NoError(t, err)
	var st *btf.Struct
	require.NoError(t, spec.Types.TypeByName("gpuext_xid_event", &st))
	require.Equal(t, uint32(XIDEventSize), st.Size)
	got := map[string]uint32{}
	for _, m := range st.Members {
		if !strings.HasPrefix(m.Name, "_") {
			got[m.Name] = m.Offset.Bytes()
		}
	}
	require.Equal(t, map[string]uint32{"kind": xidOffKind, "pid": xidOffPID, "ts_ns": xidOffTS,
		"xid": xidOffCode, "dev": xidOffDev, "msg": xidOffMsg}, got)
}

func TestDecodeXID(t *testing.T) {
	in := XID{Code: 79, PID: 4242, Time: 99, BusID: "0000:00:06.0", Msg: "GPU has fallen off the bus."}
	got, err := DecodeXID(AppendXID(nil, in))
	require.NoError(t, err)
	require.Equal(t, in, got)

	long := AppendXID(nil, XID{Code: 31, Msg: strings.Repeat("m", 500)})
	got, err = DecodeXID(long)
	require.NoError(t, err)
	require.Len(t, got.Msg, xidMsgMax-1, "truncated, still terminated")

	_, err = DecodeXID(long[:100])
	require.True(t, errors.Is(err, ErrSize))
	bad := AppendXID(nil, in)
	bad[0] = 1
	_, err = DecodeXID(bad)
	require.True(t, errors.Is(err, ErrKind))
	unterminated := AppendXID(nil, in)
	for i := xidOffMsg; i < XIDEventSize; i++ {
		unterminated[i] = 'x'
	}
	_, err = DecodeXID(unterminated)
	require.True(t, errors.Is(err, ErrNoName))
}

func FuzzDecodeXID(f *testing.F) {
	f.Add(AppendXID(nil, XID{Code: 79, BusID: "0000:00:06.0", Msg: "GPU has fallen off the bus."}))
	f.Add(make([]byte, XIDEventSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := DecodeXID(b)
		if err != nil {
			return
		}
		again, err := DecodeXID(AppendXID(nil, x))
		require.NoError(t, err)
		require.Equal(t, x, again)
	})
}
