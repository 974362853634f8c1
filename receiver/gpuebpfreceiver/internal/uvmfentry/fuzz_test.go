package uvmfentry

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/fuzzseed"
)

// FuzzDecode: Decode never panics, accepts only whole records of the UVM
// kind and a known type, reads every field where the ABI puts it, and
// fails with a zero Record. Seeds: testdata/fuzz/FuzzDecode, one per
// decode table case (UVMFENTRY_WRITE_SEEDS=1 go test -run TestWriteFuzzSeeds
// rewrites them).
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases() {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			if r != (Record{}) {
				t.Fatalf("error %v with a non-zero record %+v", err, r)
			}
			return
		}
		le := binary.LittleEndian
		if len(b) != RecordSize || le.Uint16(b) != KindUVM || r.Type == 0 || r.Type >= numTypes {
			t.Fatalf("accepted %d bytes of kind %d type %d", len(b), le.Uint16(b), r.Type)
		}
		if got := encode(r); string(got[:offFaultType+1]) != string(b[:offFaultType+1]) || string(got[offTID:]) != string(b[offTID:]) {
			// Everything but the padding byte must round-trip.
			t.Fatalf("record %+v does not re-encode to its bytes", r)
		}
		_ = r.Type.String() + r.Cause.String() + r.Access.String() + r.FaultType.String() + r.GPU.String()
		_ = r.Cause.ToolsCause().String() + r.Access.ToolsAccess().String()
		_ = r.Duration()
	})
}

func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("UVMFENTRY_WRITE_SEEDS") == "" {
		t.Skip("set UVMFENTRY_WRITE_SEEDS=1 to rewrite testdata/fuzz/FuzzDecode")
	}
	for _, c := range decodeCases() {
		require.NoError(t, fuzzseed.Write("", "FuzzDecode", c.name, c.in))
	}
}
