package cudaprobe

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

type benchResult struct {
	Calls     int     `json:"calls"`
	NsPerCall float64 `json:"ns_per_call"`
	Rate      float64 `json:"rate"`
}

func callbench(b *testing.B, dir string, args ...string) benchResult {
	b.Helper()
	cmd := exec.Command(filepath.Join(dir, "callbench"), args...)
	cmd.Env = append(os.Environ(), "FAKECUDA_COUNT=0", "LD_LIBRARY_PATH="+dir)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("callbench %v: %v %s", args, err, out)
	}
	var r benchResult
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkProbeOverhead times cuLaunchKernel on the fake driver with and
// without the entry+return probes, side by side in one run. The metric that
// matters is ns/call; ns/op includes starting the program.
func BenchmarkProbeOverhead(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	driver := fakeDriver(b)
	dir := filepath.Dir(driver)

	b.Run("unprobed", func(b *testing.B) {
		r := callbench(b, dir, "launch", strconv.Itoa(b.N))
		b.ReportMetric(r.NsPerCall, "ns/call")
	})
	b.Run("probed", func(b *testing.B) { benchProbed(b, driver, Options{}) })
	b.Run("probed-launch-entry-only", func(b *testing.B) {
		benchProbed(b, driver, Options{LaunchEntryOnly: true})
	})
}

// benchProbed runs callbench under the probes, draining the ring as the
// receiver would, and checks that every call arrived once.
func benchProbed(b *testing.B, driver string, opts Options) {
	dir := filepath.Dir(driver)
	tr, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.AttachLibrary(driver); err != nil {
		b.Fatal(err)
	}
	// Drain the ring as the receiver would, decoding every record.
	done := make(chan uint64)
	go func() {
		var rec ringbuf.Record
		var e ev.Event
		var got uint64
		for {
			err := tr.ReadInto(&rec, time.Now().Add(100*time.Millisecond))
			if errors.Is(err, ringbuf.ErrClosed) || errors.Is(err, os.ErrClosed) {
				done <- got
				return
			}
			if err == nil && ev.Decode(rec.RawSample, &e) == nil && (e.Kind == ev.KindCall || e.Kind == ev.KindCallNamed) {
				got++
			}
		}
	}()
	r := callbench(b, dir, "launch", strconv.Itoa(b.N))
	time.Sleep(200 * time.Millisecond)
	tr.CloseReader()
	got := <-done
	ringFull, _, _, _ := tr.Drops()
	b.ReportMetric(r.NsPerCall, "ns/call")
	b.ReportMetric(float64(got), "events")
	b.ReportMetric(float64(ringFull), "dropped")
	// Every launch arrives once, plus the program's three probed setup calls
	// (primary context, module load, function lookup) and its synchronise.
	if want := uint64(b.N) + 4; got != want || ringFull != 0 {
		b.Fatalf("got %d events (want %d), %d dropped", got, want, ringFull)
	}
}
