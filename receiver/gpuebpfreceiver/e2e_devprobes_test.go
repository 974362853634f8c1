package gpuebpfreceiver

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

// latestPoints returns the data points of metric name in the latest
// emission that has it, by the value of attribute key.
func latestPoints(sink *consumertest.MetricsSink, name, key string) map[string]int64 {
	all := sink.AllMetrics()
	for i := len(all) - 1; i >= 0; i-- {
		out := map[string]int64{}
		rms := all[i].ResourceMetrics()
		for j := 0; j < rms.Len(); j++ {
			sms := rms.At(j).ScopeMetrics()
			for k := 0; k < sms.Len(); k++ {
				ms := sms.At(k).Metrics()
				for m := 0; m < ms.Len(); m++ {
					if ms.At(m).Name() != name {
						continue
					}
					var dps pmetric.NumberDataPointSlice
					if ms.At(m).Type() == pmetric.MetricTypeSum {
						dps = ms.At(m).Sum().DataPoints()
					} else {
						dps = ms.At(m).Gauge().DataPoints()
					}
					for d := 0; d < dps.Len(); d++ {
						v, _ := dps.At(d).Attributes().Get(key)
						out[v.AsString()] = dps.At(d).IntValue()
					}
				}
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// TestEndToEndDeviceProbes: the fake workload's inject scenario under devrt,
// with the receiver's devrt.probes on: the receiver's injection server
// patches each PTX module with the shipped probes (devrt/jit/probepatch
// through internal/probeset), devrt loads the twins, redirects launches and
// creates the shared regions, which the receiver opens; devrt's injection
// records are counted by outcome, none as a decode error. The fake driver
// runs no PTX, so the regions stay empty (tests of their contents run the
// probes on devrt/jit's interpreter: internal/devprobes).
func TestEndToEndDeviceProbes(t *testing.T) {
	lib := devrtLibrary(t)
	// A unix socket path must be short: not t.TempDir's.
	ringDir, err := os.MkdirTemp("/tmp", "gxprobes")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(ringDir) })
	cfg := devrtConfig(ringDir)
	withDevrt(ringDir)(cfg)
	cfg.DevRT.Probes.Enabled = true
	traces, metrics := startDevrtOnly(t, cfg)
	h := &harness{t: t, dir: fakeCUDA(t), traces: traces, metrics: metrics}
	_, err = os.Stat(filepath.Join(ringDir, devrtinject.SocketName))
	require.NoError(t, err, "the receiver's injection server listens in the devrt directory")

	res := h.run(devrtEnv(lib, ringDir, "FAKECUDA_KERNEL_NS=100000"), "inject", "10")
	ringsGone(t, ringDir, res.PID)
	want := map[string]int64{"patched": 5, "not_instrumentable": 1, "unchanged": 0, "rejected": 0, "failed": 0}
	var got map[string]int64
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got = latestPoints(metrics, "gpu.devrt.modules", "gpu.devrt.module.status"); got["patched"]+got["not_instrumentable"] >= 6 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, want, got)
	_, self := h.lastMetrics(res.PID)
	requireNoDevrtLoss(t, self)
	regions := latestPoints(metrics, "gpu.devrt.probes.regions", "state")
	require.Equal(t, map[string]int64{"active": 0, "broken": 0}, regions, "every region opened cleanly and closed after its unload")
	left, err := filepath.Glob(filepath.Join(ringDir, "gpuext-devmaps-*.maps"))
	require.NoError(t, err)
	require.Empty(t, left, "devrt removed the regions at unload")
}
