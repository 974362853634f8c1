package uvmtools

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/fuzzseed"
)

// FuzzDecode: Decode never panics, accepts only whole V1/V2 entries of a
// known type, and reads the fields every layout shares where they are.
// Seeds: testdata/fuzz/FuzzDecode (one per decode table case, written by
// UVMTOOLS_WRITE_SEEDS=1 go test -run TestWriteFuzzSeeds).
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases() {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			if e != (Event{}) {
				t.Fatalf("error %v with a non-zero event %+v", err, e)
			}
			return
		}
		if len(b) != EntrySizeV1 && len(b) != EntrySizeV2 {
			t.Fatalf("accepted %d bytes", len(b))
		}
		if want := Version(1 + (len(b)-EntrySizeV1)/(EntrySizeV2-EntrySizeV1)); e.Version != want {
			t.Fatalf("version %d for %d bytes", e.Version, len(b))
		}
		if e.Type != EventType(b[0]) || e.Type == EventInvalid || e.Type >= numEventTypes {
			t.Fatalf("type %d accepted from byte %d", e.Type, b[0])
		}
		// Fields whose place does not depend on the version.
		le := binary.LittleEndian
		switch e.Type {
		case EventCPUFault:
			if e.Address != le.Uint64(b[8:]) || e.PC != le.Uint64(b[32:]) || e.Processor != CPU {
				t.Fatalf("cpu fault %+v", e)
			}
		case EventGPUFault:
			if e.Address != le.Uint64(b[8:]) || e.TimeGPU != le.Uint64(b[24:]) || e.Batch != le.Uint32(b[32:]) {
				t.Fatalf("gpu fault %+v", e)
			}
		case EventMapRemote:
			if e.Address != le.Uint64(b[8:]) || e.Size != le.Uint64(b[16:]) {
				t.Fatalf("map remote %+v", e)
			}
		case EventMigration:
			if e.Version == V1 && e.Size != le.Uint64(b[16:]) || e.Version == V2 && e.Size != le.Uint64(b[24:]) {
				t.Fatalf("migration %+v", e)
			}
			_ = e.Direction().String()
		}
		_ = e.Access.String() + e.FaultType.String() + e.Cause.String() + e.MapCause.String() + e.Fatal.String() + e.FaultClient.String()
		_ = e.Processors.List()
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("UVMTOOLS_WRITE_SEEDS") == "" {
		t.Skip("set UVMTOOLS_WRITE_SEEDS=1 to rewrite testdata/fuzz/FuzzDecode")
	}
	for _, c := range decodeCases() {
		require.NoError(t, fuzzseed.Write("", "FuzzDecode", c.name, []byte(c.in)))
	}
	// A few rejects too: wrong sizes, test and unknown types.
	for name, b := range map[string][]byte{
		"reject_short": make([]byte, 63), "reject_test_type": entry(72, 63), "reject_unknown": entry(64, 40),
	} {
		require.NoError(t, fuzzseed.Write("", "FuzzDecode", name, []byte(b)))
	}
}
