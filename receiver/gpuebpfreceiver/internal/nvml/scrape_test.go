//go:build cgo

package nvml

import (
	"maps"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// gpuPoints is what one fully supported GPU (newH100) reports at the
// first scrape, keyed as points() does, without the resource.
func gpuPoints() map[string]float64 {
	return map[string]float64{
		"hw.gpu.utilization{hw.gpu.task=general}":                     0.87,
		"hw.gpu.utilization{hw.gpu.task=encoder}":                     0.03,
		"hw.gpu.utilization{hw.gpu.task=decoder}":                     0.05,
		"gpu.memory.controller.utilization":                           0.42,
		"hw.gpu.memory.usage":                                         20 * gib,
		"hw.gpu.memory.limit":                                         80 * gib,
		"hw.gpu.memory.utilization":                                   0.25,
		"hw.power":                                                    312.5,
		"hw.energy":                                                   123456.789,
		"hw.temperature{hw.sensor_location=gpu}":                      54,
		"hw.temperature{hw.sensor_location=memory}":                   61,
		"gpu.clock.frequency{gpu.clock.type=graphics}":                1980e6,
		"gpu.clock.frequency{gpu.clock.type=sm}":                      1980e6,
		"gpu.clock.frequency{gpu.clock.type=memory}":                  2619e6,
		"gpu.clock.frequency{gpu.clock.type=video}":                   1545e6,
		"gpu.throttle.reasons{gpu.throttle.reason=gpu_idle}":          0,
		"gpu.throttle.reasons{gpu.throttle.reason=sw_power_cap}":      1,
		"gpu.throttle.reasons{gpu.throttle.reason=hw_slowdown}":       0,
		"gpu.performance_state":                                       0,
		"gpu.fan.speed":                                               0.3,
		"hw.errors{error.type=ecc_corrected}":                         7,
		"hw.errors{error.type=ecc_uncorrected}":                       0,
		"hw.errors{error.type=retired_pages_single_bit}":              0,
		"hw.errors{error.type=retired_pages_double_bit}":              0,
		"hw.errors{error.type=remapped_rows_correctable}":             2,
		"hw.errors{error.type=remapped_rows_uncorrectable}":           0,
		"hw.errors{error.type=pcie_replay}":                           1,
		"hw.errors{error.type=xid}":                                   0,
		"hw.gpu.io{gpu.io.link=pcie,network.io.direction=transmit}":   0,
		"hw.gpu.io{gpu.io.link=pcie,network.io.direction=receive}":    0,
		"hw.gpu.io{gpu.io.link=nvlink,network.io.direction=transmit}": 1000 * 1024,
		"hw.gpu.io{gpu.io.link=nvlink,network.io.direction=receive}":  2000 * 1024,
		"hw.status{gpu.status.reason=none,hw.state=ok}":               1,
		"hw.status{gpu.status.reason=none,hw.state=degraded}":         0,
		"hw.status{gpu.status.reason=none,hw.state=failed}":           0,
	}
}

func withResource(res string, pts map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range pts {
		out[res+" "+k] = v
	}
	return out
}

func TestScrapeTwoGPUsExactValues(t *testing.T) {
	h := newHarness(t, newTwoGPUs(), nil)
	h.start()
	got := points(h.scrape())

	want := withResource(uuid0, gpuPoints())
	gpu1 := gpuPoints()
	for _, k := range []string{"hw.gpu.utilization{hw.gpu.task=general}", "hw.gpu.utilization{hw.gpu.task=encoder}",
		"hw.gpu.utilization{hw.gpu.task=decoder}", "gpu.memory.controller.utilization"} {
		delete(gpu1, k) // not supported in MIG mode
	}
	maps.Copy(want, withResource(uuid1, gpu1))
	maps.Copy(want, map[string]float64{
		// Processes on gpu0: 100 and 200 from the compute list, 300 only from samples.
		uuid0 + "/pid=100 gpu.process.memory.usage":                    4 * gib,
		uuid0 + "/pid=100 gpu.process.utilization{gpu.engine=sm}":      0.85,
		uuid0 + "/pid=100 gpu.process.utilization{gpu.engine=memory}":  0.45,
		uuid0 + "/pid=100 gpu.process.utilization{gpu.engine=encoder}": 0.01,
		uuid0 + "/pid=100 gpu.process.utilization{gpu.engine=decoder}": 0.02,
		uuid0 + "/pid=200 gpu.process.memory.usage":                    1 * gib,
		uuid0 + "/pid=200 gpu.process.utilization{gpu.engine=sm}":      0,
		uuid0 + "/pid=200 gpu.process.utilization{gpu.engine=memory}":  0,
		uuid0 + "/pid=200 gpu.process.utilization{gpu.engine=encoder}": 0,
		uuid0 + "/pid=200 gpu.process.utilization{gpu.engine=decoder}": 0,
		uuid0 + "/pid=300 gpu.process.utilization{gpu.engine=sm}":      0.1,
		uuid0 + "/pid=300 gpu.process.utilization{gpu.engine=memory}":  0,
		uuid0 + "/pid=300 gpu.process.utilization{gpu.engine=encoder}": 0,
		uuid0 + "/pid=300 gpu.process.utilization{gpu.engine=decoder}": 0,
		// MIG devices of gpu1 (slot 1 is empty) and the process on the second.
		mig0 + " gpu.mig.memory.usage":             10 * gib,
		mig0 + " gpu.mig.memory.limit":             40 * gib,
		mig0 + " gpu.mig.multiprocessor.count":     60,
		mig1 + " gpu.mig.memory.usage":             2 * gib,
		mig1 + " gpu.mig.memory.limit":             10 * gib,
		mig1 + " gpu.mig.multiprocessor.count":     16,
		mig1 + "/pid=400 gpu.process.memory.usage": 2 * gib,
		"host gpu.nvml.log_records.dropped":        0,
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("points (-want +got):\n%s", diff)
	}
}

func TestScrapeResources(t *testing.T) {
	h := newHarness(t, newTwoGPUs(), nil)
	h.start()
	res := resources(h.scrape())
	gpu := func(id, bus, name string) map[string]any {
		return map[string]any{
			"host.name": "node-1", "hw.id": id, "hw.name": name, "hw.model": "NVIDIA H100 80GB HBM3",
			"hw.vendor": "NVIDIA", "hw.type": "gpu", "hw.driver_version": "580.65.06",
			"hw.firmware_version": "96.00.99.00.01", "pci.bus.id": bus,
		}
	}
	mig := func(id, name, model string, gi int64) map[string]any {
		return map[string]any{
			"host.name": "node-1", "hw.id": id, "hw.name": name, "hw.model": model, "hw.parent": uuid1,
			"hw.vendor": "NVIDIA", "hw.type": "gpu", "hw.driver_version": "580.65.06", "pci.bus.id": "00000000:2A:00.0",
			"gpu.mig.gpu_instance.id": gi, "gpu.mig.compute_instance.id": int64(0),
		}
	}
	withProc := func(base map[string]any, proc map[string]any) map[string]any {
		out := maps.Clone(base)
		maps.Copy(out, proc)
		return out
	}
	want := map[string]map[string]any{
		uuid0: gpu(uuid0, "00000000:17:00.0", "gpu0"),
		uuid1: gpu(uuid1, "00000000:2A:00.0", "gpu1"),
		uuid0 + "/pid=100": withProc(gpu(uuid0, "00000000:17:00.0", "gpu0"), map[string]any{
			"process.pid": int64(100), "process.executable.name": "python3",
			"container.id": "abababababababababababababababababababababababababababababababab",
			"k8s.pod.uid":  "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b",
		}),
		uuid0 + "/pid=200": withProc(gpu(uuid0, "00000000:17:00.0", "gpu0"), map[string]any{"process.pid": int64(200)}),
		uuid0 + "/pid=300": withProc(gpu(uuid0, "00000000:17:00.0", "gpu0"), map[string]any{"process.pid": int64(300)}),
		mig0:               mig(mig0, "gpu1/mig0", "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 1),
		mig1:               mig(mig1, "gpu1/mig2", "NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9),
		mig1 + "/pid=400": withProc(mig(mig1, "gpu1/mig2", "NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9), map[string]any{
			"process.pid": int64(400), "process.executable.name": "trainer",
			"container.id": "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
			"k8s.pod.uid":  "11111111-2222-4333-8444-555555555555",
		}),
		"host": {"host.name": "node-1"},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Fatalf("resources (-want +got):\n%s", diff)
	}
}

func TestMetricUnitsAndTypes(t *testing.T) {
	h := newHarness(t, newTwoGPUs(), nil)
	h.start()
	md := h.scrape()
	type desc struct {
		unit      string
		kind      pmetric.MetricType
		monotonic bool
		intValue  bool
	}
	gauge := func(unit string, isInt bool) desc { return desc{unit, pmetric.MetricTypeGauge, false, isInt} }
	sum := func(unit string, mono, isInt bool) desc { return desc{unit, pmetric.MetricTypeSum, mono, isInt} }
	want := map[string]desc{
		"hw.gpu.utilization":                gauge("1", false),
		"gpu.memory.controller.utilization": gauge("1", false),
		"hw.gpu.memory.usage":               sum("By", false, true),
		"hw.gpu.memory.limit":               sum("By", false, true),
		"hw.gpu.memory.utilization":         gauge("1", false),
		"hw.gpu.io":                         sum("By", true, true),
		"hw.power":                          gauge("W", false),
		"hw.energy":                         sum("J", true, false),
		"hw.temperature":                    gauge("Cel", false),
		"hw.errors":                         sum("{error}", true, true),
		"hw.status":                         sum("1", false, true),
		"gpu.clock.frequency":               gauge("Hz", true),
		"gpu.throttle.reasons":              gauge("1", true),
		"gpu.performance_state":             gauge("1", true),
		"gpu.fan.speed":                     gauge("1", false),
		"gpu.mig.memory.usage":              sum("By", false, true),
		"gpu.mig.memory.limit":              sum("By", false, true),
		"gpu.mig.multiprocessor.count":      sum("{multiprocessor}", false, true),
		"gpu.process.memory.usage":          sum("By", false, true),
		"gpu.process.utilization":           gauge("1", false),
		"gpu.nvml.log_records.dropped":      sum("{record}", true, true),
	}
	got := map[string]desc{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		ms := rms.At(i).ScopeMetrics().At(0).Metrics()
		for j := 0; j < ms.Len(); j++ {
			m := ms.At(j)
			d := desc{unit: m.Unit(), kind: m.Type()}
			var dp pmetric.NumberDataPoint
			if m.Type() == pmetric.MetricTypeSum {
				d.monotonic = m.Sum().IsMonotonic()
				if m.Sum().AggregationTemporality() != pmetric.AggregationTemporalityCumulative {
					t.Errorf("%s: not cumulative", m.Name())
				}
				dp = m.Sum().DataPoints().At(0)
				if dp.StartTimestamp() == 0 {
					t.Errorf("%s: no start timestamp", m.Name())
				}
			} else {
				dp = m.Gauge().DataPoints().At(0)
			}
			d.intValue = dp.ValueType() == pmetric.NumberDataPointValueTypeInt
			got[m.Name()] = d
		}
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(desc{})); diff != "" {
		t.Fatalf("metric descriptions (-want +got):\n%s", diff)
	}
}

func TestDisabledMetricsAndAttributesAbsent(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, func(c *Config) {
		c.Metrics.HwPower.Enabled = false
		c.Metrics.HwGpuIo.Enabled = false
		c.Metrics.GpuProcessUtilization.Enabled = false
		c.Metrics.GpuMigMultiprocessorCount.Enabled = false
		c.ResourceAttributes.PciBusID.Enabled = false
		c.ResourceAttributes.ContainerID.Enabled = false
	})
	h.start()
	md := h.scrape()
	for key := range points(md) {
		for _, name := range []string{" hw.power", " hw.gpu.io", " gpu.process.utilization", " gpu.mig.multiprocessor.count"} {
			if containsMetric(key, name) {
				t.Errorf("disabled metric present: %s", key)
			}
		}
	}
	for key, attrs := range resources(md) {
		if _, ok := attrs["pci.bus.id"]; ok {
			t.Errorf("%s: disabled pci.bus.id present", key)
		}
		if _, ok := attrs["container.id"]; ok {
			t.Errorf("%s: disabled container.id present", key)
		}
	}
	// Disabled metrics cost no NVML calls.
	g0 := lib.gpus[0]
	for _, m := range []string{"GetPowerUsage", "GetPcieThroughput(0)", "GetProcessUtilization", "GetAttributes"} {
		if g0.calls[m] != 0 || lib.gpus[1].migs[0].calls[m] != 0 {
			t.Errorf("%s called for a disabled metric", m)
		}
	}
	// NVLink counters are the only field values hw.gpu.io needs; memory
	// temperature still comes.
	if got := points(md)[uuid0+" hw.temperature{hw.sensor_location=memory}"]; got != 61 {
		t.Errorf("memory temperature = %v, want 61", got)
	}
	// Processes are still reported (memory).
	if got := points(md)[uuid0+"/pid=100 gpu.process.memory.usage"]; got != 4*gib {
		t.Errorf("process memory = %v", got)
	}
}

func containsMetric(key, name string) bool {
	// key is "<resource> <metric>{attrs}"; name is " <metric>".
	for i := 0; i+len(name) <= len(key); i++ {
		if key[i:i+len(name)] == name && (i+len(name) == len(key) || key[i+len(name)] == '{') {
			return true
		}
	}
	return false
}

func TestUnsupportedFieldsSkippedAndNotRetried(t *testing.T) {
	lib := newTwoGPUs()
	g0 := lib.gpus[0]
	g0.fail = map[string]nvml.Return{
		"GetPowerUsage":             nvml.ERROR_NOT_SUPPORTED,
		"GetFanSpeed":               nvml.ERROR_NO_PERMISSION,
		"GetTotalEnergyConsumption": nvml.ERROR_NOT_SUPPORTED,
		"GetRetiredPages(0)":        nvml.ERROR_NOT_SUPPORTED,
		"GetRetiredPages(1)":        nvml.ERROR_NOT_SUPPORTED,
	}
	delete(g0.fields, nvml.FI_DEV_MEMORY_TEMP) // per-field NOT_SUPPORTED
	h := newHarness(t, lib, nil)
	h.start()
	var got map[string]float64
	for range 3 {
		got = points(h.scrape())
		h.clock.add(10 * time.Second)
	}
	for _, k := range []string{"hw.power", "gpu.fan.speed", "hw.energy", "hw.temperature{hw.sensor_location=memory}",
		"hw.errors{error.type=retired_pages_single_bit}", "hw.errors{error.type=retired_pages_double_bit}"} {
		if _, ok := got[uuid0+" "+k]; ok {
			t.Errorf("unsupported %s reported", k)
		}
		if _, ok := got[uuid1+" "+k]; !ok {
			t.Errorf("%s missing on the GPU that supports it", k)
		}
	}
	for _, k := range []string{"hw.gpu.utilization{hw.gpu.task=general}", "hw.temperature{hw.sensor_location=gpu}",
		"hw.gpu.io{gpu.io.link=nvlink,network.io.direction=transmit}"} {
		if _, ok := got[uuid0+" "+k]; !ok {
			t.Errorf("supported %s missing", k)
		}
	}
	for _, m := range []string{"GetPowerUsage", "GetFanSpeed", "GetTotalEnergyConsumption", "GetRetiredPages(0)", "GetRetiredPages(1)"} {
		if n := g0.calls[m]; n != 1 {
			t.Errorf("%s called %d times over 3 scrapes, want 1", m, n)
		}
	}
	if n := g0.calls["GetFieldValues"]; n != 3 {
		t.Errorf("GetFieldValues called %d times, want 3 (still wanted for NVLink)", n)
	}
	// MIG parent: utilization asked once.
	if n := lib.gpus[1].calls["GetUtilizationRates"]; n != 1 {
		t.Errorf("GetUtilizationRates on a MIG-mode GPU called %d times, want 1", n)
	}
}

func TestTransientFailureRetried(t *testing.T) {
	lib := newTwoGPUs()
	g0 := lib.gpus[0]
	g0.fail = map[string]nvml.Return{"GetPowerUsage": nvml.ERROR_UNKNOWN, "GetMemoryInfo_v2": nvml.ERROR_TIMEOUT}
	h := newHarness(t, lib, nil)
	h.start()
	for range 2 {
		got := points(h.scrape())
		if _, ok := got[uuid0+" hw.power"]; ok {
			t.Fatal("failed read reported")
		}
		if _, ok := got[uuid0+" hw.gpu.memory.usage"]; ok {
			t.Fatal("memory reported from v1 after a transient v2 failure")
		}
	}
	delete(g0.fail, "GetPowerUsage")
	delete(g0.fail, "GetMemoryInfo_v2")
	got := points(h.scrape())
	if got[uuid0+" hw.power"] != 312.5 || got[uuid0+" hw.gpu.memory.usage"] != 20*gib {
		t.Fatalf("after recovery: power %v, memory %v", got[uuid0+" hw.power"], got[uuid0+" hw.gpu.memory.usage"])
	}
	if g0.calls["GetPowerUsage"] != 3 || g0.calls["GetMemoryInfo"] != 0 {
		t.Fatalf("calls: %v", g0.calls)
	}
}

func TestMissingSymbolsUseOlderFunctions(t *testing.T) {
	lib := newTwoGPUs()
	lib.missing = map[string]bool{
		"nvmlDeviceGetCurrentClocksEventReasons": true,
		"nvmlDeviceGetMemoryInfo_v2":             true,
		"nvmlDeviceGetTotalEnergyConsumption":    true,
	}
	h := newHarness(t, lib, nil)
	h.start()
	got := points(h.scrape())
	g0 := lib.gpus[0]
	for _, m := range []string{"GetCurrentClocksEventReasons", "GetSupportedClocksEventReasons", "GetMemoryInfo_v2", "GetTotalEnergyConsumption"} {
		if g0.calls[m] != 0 {
			t.Errorf("%s called although the library lacks it", m)
		}
	}
	if g0.calls["GetCurrentClocksThrottleReasons"] != 1 || got[uuid0+" gpu.throttle.reasons{gpu.throttle.reason=sw_power_cap}"] != 1 {
		t.Errorf("legacy throttle reasons not used")
	}
	// v1 counts reserved memory as used.
	if v := got[uuid0+" hw.gpu.memory.usage"]; v != 20*gib+512<<20 {
		t.Errorf("v1 memory usage = %v", v)
	}
	if _, ok := got[uuid0+" hw.energy"]; ok {
		t.Error("energy reported without the function")
	}
}

func TestDeviceVanishesBetweenScrapes(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, nil)
	h.start()
	h.scrape()
	g0 := lib.gpus[0]
	g0.lost = true
	got := points(h.scrape())
	want := map[string]float64{
		uuid0 + " hw.status{gpu.status.reason=gpu_lost,hw.state=ok}":       0,
		uuid0 + " hw.status{gpu.status.reason=gpu_lost,hw.state=degraded}": 0,
		uuid0 + " hw.status{gpu.status.reason=gpu_lost,hw.state=failed}":   1,
		uuid0 + " hw.errors{error.type=xid}":                               0,
	}
	for k, v := range got {
		if len(k) > len(uuid0) && k[:len(uuid0)] == uuid0 {
			if wv, ok := want[k]; !ok || wv != v {
				t.Errorf("lost GPU reports %s = %v", k, v)
			}
			delete(want, k)
		}
	}
	if len(want) != 0 {
		t.Errorf("missing for the lost GPU: %v", want)
	}
	if got[uuid1+" hw.power"] != 312.5 {
		t.Error("the other GPU stopped reporting")
	}
	// Not read again.
	before := sumCalls(g0)
	h.scrape()
	if after := sumCalls(g0); after != before {
		t.Errorf("lost GPU read again: %d calls", after-before)
	}
	// One log record says so.
	select {
	case l := <-h.src.Logs():
		lr := l.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
		if lr.Body().Str() != "GPU is lost (ERROR_GPU_IS_LOST)" || lr.SeverityText() != "ERROR" {
			t.Errorf("log: %q %s", lr.Body().Str(), lr.SeverityText())
		}
	case <-time.After(time.Second):
		t.Error("no log record for the lost GPU")
	}
}

func TestDeviceLostAtStart(t *testing.T) {
	lib := newTwoGPUs()
	lib.gpus[1].lost = true
	h := newHarness(t, lib, nil)
	h.start()
	// The lost GPU has no readable UUID: it is reported by hw.name only,
	// as failed.
	var failed int
	md := h.scrape()
	if got := points(md)["host hw.status{gpu.status.reason=gpu_lost,hw.state=failed}"]; got != 1 {
		t.Errorf("lost GPU status = %v", got)
	}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		r := rms.At(i).Resource().Attributes()
		if n, _ := r.Get("hw.name"); n.Str() == "gpu1" {
			if _, ok := r.Get("hw.id"); ok {
				t.Error("lost GPU has an hw.id")
			}
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("lost GPU resources: %d", failed)
	}
}

func sumCalls(g *fakeGPU) int {
	n := 0
	for _, c := range g.calls {
		n += c
	}
	return n
}

func TestProcessUtilizationSamplesConsumedOnce(t *testing.T) {
	lib := newTwoGPUs()
	g0 := lib.gpus[0]
	h := newHarness(t, lib, nil)
	h.start()
	h.scrape()
	// No new samples: every running process reports 0; pid 300 (samples
	// only) is gone.
	got := points(h.scrape())
	if v, ok := got[uuid0+"/pid=100 gpu.process.utilization{gpu.engine=sm}"]; !ok || v != 0 {
		t.Errorf("pid 100 sm = %v (present %v), want 0", v, ok)
	}
	if _, ok := got[uuid0+"/pid=300 gpu.process.utilization{gpu.engine=sm}"]; ok {
		t.Error("pid 300 reported without new samples")
	}
	// New samples after 2000 only.
	g0.samples = append(g0.samples, nvml.ProcessUtilizationSample{Pid: 100, TimeStamp: 3000, SmUtil: 20, MemUtil: 10})
	got = points(h.scrape())
	if v := got[uuid0+"/pid=100 gpu.process.utilization{gpu.engine=sm}"]; v != 0.2 {
		t.Errorf("pid 100 sm = %v, want 0.2 (old samples counted again?)", v)
	}
	if diff := cmp.Diff([]uint64{0, 2000, 2000}, g0.lastSeenArgs); diff != "" {
		t.Errorf("lastSeenTimeStamp passed to NVML (-want +got):\n%s", diff)
	}
}

func TestProcessUsageOff(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, func(c *Config) { c.ProcessUsage = false })
	h.start()
	for k := range points(h.scrape()) {
		if containsMetric(k, " gpu.process.memory.usage") || containsMetric(k, " gpu.process.utilization") {
			t.Errorf("process metric with process_usage off: %s", k)
		}
	}
	if lib.gpus[0].calls["GetComputeRunningProcesses"] != 0 {
		t.Error("processes read with process_usage off")
	}
}

func TestMIGOff(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, func(c *Config) { c.MIG = false })
	h.start()
	for k := range points(h.scrape()) {
		if containsMetric(k, " gpu.mig.memory.usage") {
			t.Errorf("MIG metric with mig off: %s", k)
		}
	}
	if lib.gpus[1].calls["GetMigMode"] != 0 {
		t.Error("MIG mode read with mig off")
	}
}

func TestMIGDevicesFollowReconfiguration(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, nil)
	h.start()
	h.scrape()
	g1 := lib.gpus[1]
	g1.migs = g1.migs[:1] // the 1g.10gb instance was destroyed
	got := points(h.scrape())
	if _, ok := got[mig1+" gpu.mig.memory.usage"]; ok {
		t.Error("destroyed MIG device still reported")
	}
	if _, ok := got[mig0+" gpu.mig.memory.usage"]; !ok {
		t.Error("remaining MIG device missing")
	}
	if n := len(h.src.devices[1].migs); n != 1 {
		t.Errorf("%d MIG devices remembered, want 1", n)
	}
	g1.migMode = 0 // MIG disabled: processes on the GPU again
	g1.procs = []nvml.ProcessInfo{{Pid: 500, UsedGpuMemory: 3 * gib}}
	got = points(h.scrape())
	if got[uuid1+"/pid=500 gpu.process.memory.usage"] != 3*gib {
		t.Error("process on the GPU after MIG was disabled missing")
	}
}

func TestPCIeIntegration(t *testing.T) {
	lib := newTwoGPUs()
	g0 := lib.gpus[0]
	h := newHarness(t, lib, nil)
	h.start()
	tx := uuid0 + " hw.gpu.io{gpu.io.link=pcie,network.io.direction=transmit}"
	rx := uuid0 + " hw.gpu.io{gpu.io.link=pcie,network.io.direction=receive}"
	steps := []struct {
		advance        time.Duration
		txKBps, rxKBps uint32
		tx, rx         float64
	}{
		{0, 1000, 3000, 0, 0},
		// trapezoid: (1000+1000)/2 KiB/s × 10 s, (3000+5000)/2 KiB/s × 10 s
		{10 * time.Second, 1000, 5000, 1000 * 1024 * 10, 4000 * 1024 * 10},
		// + (1000+0)/2 × 4 s, + (5000+0)/2 × 4 s
		{4 * time.Second, 0, 0, 1000*1024*10 + 500*1024*4, 4000*1024*10 + 2500*1024*4},
		// idle: no change
		{30 * time.Second, 0, 0, 1000*1024*10 + 500*1024*4, 4000*1024*10 + 2500*1024*4},
	}
	for i, st := range steps {
		h.clock.add(st.advance)
		g0.pcieKBps = [2]uint32{st.txKBps, st.rxKBps}
		got := points(h.scrape())
		if got[tx] != st.tx || got[rx] != st.rx {
			t.Errorf("step %d: tx %v rx %v, want %v %v", i, got[tx], got[rx], st.tx, st.rx)
		}
	}
}

func TestNVLinkAndEnergyCounters(t *testing.T) {
	lib := newTwoGPUs()
	g0 := lib.gpus[0]
	h := newHarness(t, lib, nil)
	h.start()
	h.scrape()
	g0.fields[nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX] = u64Field(1000 + 5_000_000)
	g0.energyMJ += 3_000_500
	h.clock.add(10 * time.Second)
	md := h.scrape()
	got := points(md)
	if v := got[uuid0+" hw.gpu.io{gpu.io.link=nvlink,network.io.direction=transmit}"]; v != (1000+5_000_000)*1024 {
		t.Errorf("nvlink tx = %v", v)
	}
	if v := got[uuid0+" hw.energy"]; v != (123456789+3_000_500)/1000.0 {
		t.Errorf("energy = %v", v)
	}
	// Cumulative points keep the start time of the first scrape's source.
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		ms := rms.At(i).ScopeMetrics().At(0).Metrics()
		for j := 0; j < ms.Len(); j++ {
			if m := ms.At(j); m.Name() == "hw.energy" {
				dp := m.Sum().DataPoints().At(0)
				if dp.StartTimestamp().AsTime() != t0 || dp.Timestamp().AsTime() != t0.Add(10*time.Second) {
					t.Errorf("energy start %v ts %v", dp.StartTimestamp().AsTime(), dp.Timestamp().AsTime())
				}
			}
		}
	}
}

func TestStatusFromRowRemappingAndRetiredPages(t *testing.T) {
	lib := newTwoGPUs()
	g0 := lib.gpus[0]
	h := newHarness(t, lib, nil)
	h.start()
	status := func(reason, state string) float64 {
		return points(h.scrape())[uuid0+" hw.status{gpu.status.reason="+reason+",hw.state="+state+"}"]
	}
	g0.retiredPending = true
	if status("retired_pages_pending", "degraded") != 1 {
		t.Error("retired pages pending: not degraded")
	}
	g0.remapPending = true
	if status("remapped_rows_pending", "degraded") != 1 {
		t.Error("row remapping pending: not degraded")
	}
	g0.remapFailed = true
	if status("remapped_rows_failure", "failed") != 1 {
		t.Error("row remapping failure: not failed")
	}
	// A transient failure keeps the last known condition.
	g0.fail = map[string]nvml.Return{"GetRemappedRows": nvml.ERROR_UNKNOWN}
	if status("remapped_rows_failure", "failed") != 1 {
		t.Error("condition forgotten on a transient failure")
	}
}

func TestScrapeBeforeStartAndAfterShutdown(t *testing.T) {
	h := newHarness(t, newTwoGPUs(), nil)
	if md := h.scrape(); md.ResourceMetrics().Len() != 0 {
		t.Error("metrics before Start")
	}
	h.start()
	if err := h.src.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if md := h.scrape(); md.ResourceMetrics().Len() != 0 {
		t.Error("metrics after Shutdown")
	}
}

func TestDisabledSourceDoesNothing(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, func(c *Config) { c.Enabled = false })
	h.start()
	if lib.inits != 0 {
		t.Error("NVML initialised while disabled")
	}
	if md := h.scrape(); md.ResourceMetrics().Len() != 0 {
		t.Error("metrics while disabled")
	}
}
