package gpuebpfreceiver

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkReceiverRing drives the whole path — uprobes on the fake driver,
// ring buffer, decoder, translator, pdata, a consumer — with one process
// launching kernels, and reports what arrived and what was lost.
//
//   - paced-100k: 100,000 calls/s for b.N calls; the target is zero loss.
//   - flood: as fast as one thread can call through the probes.
func BenchmarkReceiverRing(b *testing.B) {
	for _, mode := range []struct {
		name string
		rate int
	}{{"paced-100k", 100000}, {"flood", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			// Every span counts: callbench under a name of its own (the
			// devrt benchmarks run callbench too, maybe at the same time).
			name := "cb-" + strconv.Itoa(os.Getpid())
			h := startHarness(b, func(c *Config) {
				c.CollectionInterval = time.Hour // metrics on shutdown only
				c.Spans.FlushInterval = 100 * time.Millisecond
				c.CUDA.Include = []ProcessRule{{Executable: name}}
			})
			require.Equal(b, name, h.alias("cb-", "callbench"))
			args := []string{"launch", strconv.Itoa(b.N)}
			if mode.rate > 0 {
				args = []string{"paced", strconv.Itoa(b.N), strconv.Itoa(mode.rate)}
			}
			cmd := exec.Command(h.dir+"/"+name, args...)
			cmd.Env = append(os.Environ(), "FAKECUDA_COUNT=0", "LD_LIBRARY_PATH="+h.dir)
			b.ResetTimer()
			out, err := cmd.Output()
			require.NoError(b, err, string(out))
			var r struct {
				Rate float64 `json:"rate"`
			}
			require.NoError(b, json.Unmarshal(out, &r))
			want := b.N + 4
			deadline := time.Now().Add(30 * time.Second)
			for h.traces.SpanCount() < want && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			b.StopTimer()
			ringFull, inflightFull, unmatched, err := h.rcv.tracer.Drops()
			require.NoError(b, err)
			b.ReportMetric(r.Rate, "calls/s")
			b.ReportMetric(float64(h.traces.SpanCount()), "spans")
			b.ReportMetric(float64(ringFull+inflightFull+unmatched), "dropped")
			if mode.rate > 0 {
				require.Equal(b, want, h.traces.SpanCount(), "every call becomes a span")
				require.Zero(b, ringFull+inflightFull+unmatched, "zero loss at %d calls/s", mode.rate)
			}
		})
	}
}
