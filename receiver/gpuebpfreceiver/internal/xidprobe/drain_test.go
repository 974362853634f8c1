package xidprobe

import (
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/ringbuftest"
)

// readerProbe is a Probe over the real program's ring, without the
// tracepoint (NVIDIA's module is not here): the test writes the Xids.
func readerProbe(t *testing.T) (*Probe, *ringbuftest.Producer) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	p := &Probe{}
	require.NoError(t, bpf.LoadXidObjects(&p.objs, nil))
	rd, err := ringbuf.NewReader(p.objs.Xids)
	require.NoError(t, err)
	p.rd = rd
	t.Cleanup(func() { _ = p.Close() })
	return p, ringbuftest.New(t, p.objs.Xids, ev.XIDEventSize)
}

// TestDrainReadsTheRingToItsEnd: after Drain, Run hands on every Xid the
// ring held, then returns; with an empty ring it returns at once. Close
// alone would drop them.
func TestDrainReadsTheRingToItsEnd(t *testing.T) {
	for _, tc := range []struct {
		name string
		xids []ev.XID
	}{
		{"empty", nil},
		{"three", []ev.XID{
			{Code: 79, BusID: "0000:17:00.0", Msg: "GPU has fallen off the bus."},
			{Code: 31, BusID: "0000:2a:00.0", Msg: "MMU Fault: ENGINE GRAPHICS"},
			{Code: 48, BusID: "0000:17:00.0", Msg: "DBE (double bit error) ECC error"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, w := readerProbe(t)
			for _, x := range tc.xids {
				w.Write(t, ev.AppendXID(nil, x))
			}
			require.NoError(t, p.Drain())
			var got []ev.XID
			done := make(chan error, 1)
			go func() { done <- p.Run(func(x ev.XID) { got = append(got, x) }) }()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return after Drain")
			}
			require.Equal(t, tc.xids, got)
			require.NoError(t, p.Close())
			require.Error(t, p.Drain(), "after Close")
		})
	}
}
