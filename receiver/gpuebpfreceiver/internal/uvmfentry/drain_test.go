package uvmfentry

import (
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/ringbuftest"
)

// TestDrainReadsTheRingToItsEnd: after Drain, Run hands on every record
// the ring held (and counts the one that does not decode), then returns;
// with an empty ring it returns at once. The ring is a map of the same
// kind as the program's (nvidia_uvm is not here to load the programs);
// the test writes the records.
func TestDrainReadsTheRingToItsEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	fault := Record{Type: TypeGPUFault, PID: 100, Start: 1e9, End: 1e9, GPU: testGPU, Src: 1,
		Address: 0x7f0000000000, Batch: 9, Count: 1, Access: AccessWrite, Value: 1e9 + 5}
	migration := Record{Type: TypeMigration, PID: 100, Start: 2e9, End: 2e9 + 7000, GPU: testGPU, Src: 0, Dst: 1,
		Bytes: 2 << 20, Cause: CauseReplayableFault}
	bad := encode(fault)
	bad[offType] = 0 // no record type
	for _, tc := range []struct {
		name      string
		in        [][]byte
		want      []Record
		malformed uint64
	}{
		{name: "empty"},
		{name: "records", in: [][]byte{encode(fault), bad, encode(migration)}, want: []Record{fault, migration}, malformed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ring, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 16})
			require.NoError(t, err)
			defer ring.Close()
			rd, err := ringbuf.NewReader(ring)
			require.NoError(t, err)
			p := &Probe{rd: rd}
			defer p.Close()
			ringbuftest.New(t, ring, RecordSize).Write(t, tc.in...)

			require.NoError(t, p.Drain())
			var got []Record
			done := make(chan error, 1)
			go func() { done <- p.Run(func(r Record) { got = append(got, r) }) }()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return after Drain")
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.malformed, p.Malformed())
			require.NoError(t, p.Close())
			require.Error(t, p.Drain(), "after Close")
		})
	}
}
