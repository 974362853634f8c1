//go:build cgo

package nvml

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/collector/pdata/plog"
)

// record is one log record with its resource, flattened for comparison.
type record struct {
	Resource   map[string]any
	Scope      string
	Time       time.Time
	Severity   plog.SeverityNumber
	SevText    string
	EventName  string
	Body       string
	Attributes map[string]any
}

func (h *harness) nextLog() record {
	h.t.Helper()
	select {
	case l, ok := <-h.src.Logs():
		if !ok {
			h.t.Fatal("Logs closed")
		}
		if n := l.LogRecordCount(); n != 1 {
			h.t.Fatalf("%d records in one plog.Logs, want 1", n)
		}
		rl := l.ResourceLogs().At(0)
		sl := rl.ScopeLogs().At(0)
		lr := sl.LogRecords().At(0)
		return record{
			Resource:   rl.Resource().Attributes().AsRaw(),
			Scope:      sl.Scope().Name(),
			Time:       lr.Timestamp().AsTime(),
			Severity:   lr.SeverityNumber(),
			SevText:    lr.SeverityText(),
			EventName:  lr.EventName(),
			Body:       lr.Body().Str(),
			Attributes: lr.Attributes().AsRaw(),
		}
	case <-time.After(2 * time.Second):
		h.t.Fatal("no log record")
	}
	return record{}
}

func (h *harness) noLog() {
	h.t.Helper()
	select {
	case l := <-h.src.Logs():
		h.t.Fatalf("unexpected log record: %v", l.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str())
	case <-time.After(50 * time.Millisecond):
	}
}

func gpu0Resource() map[string]any {
	return map[string]any{
		"host.name": "node-1", "hw.id": uuid0, "hw.name": "gpu0", "hw.model": "NVIDIA H100 80GB HBM3",
		"hw.vendor": "NVIDIA", "hw.type": "gpu", "hw.driver_version": "580.65.06",
		"hw.firmware_version": "96.00.99.00.01", "pci.bus.id": "00000000:17:00.0",
	}
}

const scope = "github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml"

func xidEvent(g *fakeGPU, xid uint64) nvml.EventData {
	return nvml.EventData{Device: g, EventType: nvml.EventTypeXidCriticalError, EventData: xid,
		GpuInstanceId: noInstance, ComputeInstanceId: noInstance}
}

func TestXIDEventBecomesLogRecordCountAndStatus(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, nil)
	h.start()
	if got, want := lib.gpus[0].registered, uint64(wantedEvents); got != want {
		t.Errorf("registered events %#x, want %#x", got, want)
	}
	lib.events.ch <- xidEvent(lib.gpus[0], 79)
	got := h.nextLog()
	want := record{
		Resource:  gpu0Resource(),
		Scope:     scope,
		Time:      t0,
		Severity:  plog.SeverityNumberError,
		SevText:   "ERROR",
		EventName: "gpu.xid",
		Body:      "XID 79: GPU has fallen off the bus",
		Attributes: map[string]any{
			"gpu.xid":             int64(79),
			"gpu.xid.description": "GPU has fallen off the bus",
			"gpu.xid.source":      "nvml_event",
			"hw.state":            "failed",
			// Two processes run on the GPU: suspects, none chosen.
			"gpu.xid.gpu_processes": []any{int64(100), int64(200)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("log record (-want +got):\n%s", diff)
	}

	pts := points(h.scrape())
	for k, v := range map[string]float64{
		"hw.errors{error.type=xid}":                           1,
		"hw.status{gpu.status.reason=xid_79,hw.state=failed}": 1,
		"hw.status{gpu.status.reason=xid_79,hw.state=ok}":     0,
	} {
		if pts[uuid0+" "+k] != v {
			t.Errorf("%s = %v, want %v", k, pts[uuid0+" "+k], v)
		}
	}
	if pts[uuid1+" hw.errors{error.type=xid}"] != 0 {
		t.Error("XID counted on the other GPU")
	}

	// The hold ends; the count stays.
	h.clock.add(10*time.Minute + time.Second)
	pts = points(h.scrape())
	if pts[uuid0+" hw.status{gpu.status.reason=none,hw.state=ok}"] != 1 || pts[uuid0+" hw.errors{error.type=xid}"] != 1 {
		t.Errorf("after the hold: %v", pts)
	}
}

func TestInformationalXIDIsAWarningAndLeavesStatus(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, nil)
	h.start()
	lib.events.ch <- xidEvent(lib.gpus[0], 13)
	got := h.nextLog()
	if got.SevText != "WARN" || got.Severity != plog.SeverityNumberWarn || got.Attributes["hw.state"] != "ok" ||
		got.Body != "XID 13: Graphics engine exception (usually an application error such as an out-of-range or illegal memory access)" {
		t.Errorf("record: %+v", got)
	}
	pts := points(h.scrape())
	if pts[uuid0+" hw.status{gpu.status.reason=none,hw.state=ok}"] != 1 || pts[uuid0+" hw.errors{error.type=xid}"] != 1 {
		t.Error("informational XID changed status or was not counted")
	}
}

func TestXIDOnMIGDevice(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, nil)
	h.start()
	h.scrape()                              // learn the MIG devices
	ev := xidEvent(lib.gpus[1].migs[2], 31) // the event names the MIG handle
	ev.GpuInstanceId, ev.ComputeInstanceId = 9, 0
	lib.events.ch <- ev
	got := h.nextLog()
	if got.Resource["hw.id"] != uuid1 || got.Attributes["gpu.mig.gpu_instance.id"] != int64(9) ||
		got.Attributes["gpu.mig.compute_instance.id"] != int64(0) {
		t.Errorf("record: %+v", got)
	}
	if pts := points(h.scrape()); pts[uuid1+" hw.errors{error.type=xid}"] != 1 {
		t.Error("XID on a MIG device not counted on its GPU")
	}
}

// TestXIDAttributedToTheOnlyProcess: with one process on the GPU, an Xid
// that names none is attributed to it.
func TestXIDAttributedToTheOnlyProcess(t *testing.T) {
	lib := newTwoGPUs()
	lib.gpus[0].procs = lib.gpus[0].procs[:1]
	h := newHarness(t, lib, nil)
	h.start()
	h.src.RecordXID("0000:17:00.0", 31, 0, "MMU Fault")
	got := h.nextLog()
	if got.Resource["process.pid"] != int64(lib.gpus[0].procs[0].Pid) {
		t.Fatalf("resource %v: want the GPU's only process", got.Resource)
	}
	if diff := cmp.Diff([]any{int64(lib.gpus[0].procs[0].Pid)}, got.Attributes["gpu.xid.gpu_processes"]); diff != "" {
		t.Fatal(diff)
	}
}

func TestRecordXIDFromTracepoint(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, nil)
	h.start()
	h.src.RecordXID("0000:17:00.0", 48, 100, " NVRM: Xid (PCI:0000:17:00): 48, pid=100, name=python3, DBE ")
	got := h.nextLog()
	res := gpu0Resource()
	res["process.pid"] = int64(100)
	res["process.executable.name"] = "python3"
	res["container.id"] = "abababababababababababababababababababababababababababababababab"
	res["k8s.pod.uid"] = "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"
	want := record{
		Resource: res, Scope: scope, Time: t0,
		Severity: plog.SeverityNumberError, SevText: "ERROR", EventName: "gpu.xid",
		Body: "XID 48: Double-bit ECC error",
		Attributes: map[string]any{
			"gpu.xid": int64(48), "gpu.xid.description": "Double-bit ECC error", "gpu.xid.source": "tracepoint",
			"hw.state": "degraded", "gpu.xid.message": "NVRM: Xid (PCI:0000:17:00): 48, pid=100, name=python3, DBE",
			"gpu.xid.gpu_processes": []any{int64(100), int64(200)},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("log record (-want +got):\n%s", diff)
	}
	// NVML reports the same XID a moment later: merged.
	h.clock.add(300 * time.Millisecond)
	lib.events.ch <- xidEvent(lib.gpus[0], 48)
	h.noLog()
	pts := points(h.scrape())
	if pts[uuid0+" hw.errors{error.type=xid}"] != 1 || pts[uuid0+" hw.status{gpu.status.reason=xid_48,hw.state=degraded}"] != 1 {
		t.Errorf("after the duplicate: %v %v", pts[uuid0+" hw.errors{error.type=xid}"], pts[uuid0+" hw.status{gpu.status.reason=xid_48,hw.state=degraded}"])
	}
	// The same source twice is two XIDs; by UUID this time.
	h.src.RecordXID(uuid0, 48, 0, "")
	h.nextLog()
	if pts := points(h.scrape()); pts[uuid0+" hw.errors{error.type=xid}"] != 2 {
		t.Error("second XID from the tracepoint not counted")
	}
	// A worse XID takes over the status; a milder one later does not lower it.
	h.src.RecordXID(uuid0, 95, 0, "")
	h.nextLog()
	h.src.RecordXID(uuid0, 92, 0, "")
	h.nextLog()
	if pts := points(h.scrape()); pts[uuid0+" hw.status{gpu.status.reason=xid_95,hw.state=failed}"] != 1 {
		t.Error("failed XID did not take over, or a milder one lowered it")
	}
}

func TestRecordXIDForUnknownGPU(t *testing.T) {
	h := newHarness(t, newTwoGPUs(), nil)
	h.start()
	h.src.RecordXID("GPU-99999999-0000-0000-0000-000000000000", 31, 0, "")
	got := h.nextLog()
	wantRes := map[string]any{"host.name": "node-1", "hw.id": "GPU-99999999-0000-0000-0000-000000000000",
		"hw.type": "gpu", "hw.vendor": "NVIDIA"}
	if diff := cmp.Diff(wantRes, got.Resource); diff != "" {
		t.Errorf("resource (-want +got):\n%s", diff)
	}
	h.src.RecordXID("0000:99:00.0", 31, 0, "")
	if got := h.nextLog(); got.Resource["pci.bus.id"] != "0000:99:00.0" {
		t.Errorf("resource: %v", got.Resource)
	}
}

func TestRecordXIDBeforeStart(t *testing.T) {
	h := newHarness(t, newTwoGPUs(), nil)
	h.src.RecordXID("GPU-1", 79, 0, "") // NVML unavailable: the tracepoint still reports
	if got := h.nextLog(); got.Body != "XID 79: GPU has fallen off the bus" {
		t.Errorf("record: %+v", got)
	}
}

func TestOtherNVMLEvents(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, nil)
	h.start()
	lib.events.ch <- nvml.EventData{Device: lib.gpus[0], EventType: nvml.EventTypeDoubleBitEccError, EventData: 0}
	got := h.nextLog()
	want := record{
		Resource: gpu0Resource(), Scope: scope, Time: t0,
		Severity: plog.SeverityNumberError, SevText: "ERROR", EventName: "gpu.nvml.event",
		Body:       "Double-bit ECC error",
		Attributes: map[string]any{"gpu.nvml.event": "ecc_double_bit", "hw.state": "degraded"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("log record (-want +got):\n%s", diff)
	}
	if pts := points(h.scrape()); pts[uuid0+" hw.status{gpu.status.reason=ecc_double_bit,hw.state=degraded}"] != 1 {
		t.Error("status not degraded after a double-bit ECC event")
	}
	if pts := points(h.scrape()); pts[uuid0+" hw.errors{error.type=xid}"] != 0 {
		t.Error("a non-XID event counted as XID")
	}
	// Unknown event types are logged at info.
	lib.events.ch <- nvml.EventData{Device: lib.gpus[1], EventType: nvml.EventTypeClock, EventData: 7}
	got = h.nextLog()
	if got.SevText != "INFO" || got.Attributes["gpu.nvml.event"] != "event_16" || got.Attributes["gpu.nvml.event.data"] != int64(7) {
		t.Errorf("record: %+v", got)
	}
}

func TestXIDStatusHoldZero(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, func(c *Config) { c.XIDStatusHold = 0 })
	h.start()
	h.src.RecordXID(uuid0, 79, 0, "")
	h.nextLog()
	pts := points(h.scrape())
	if pts[uuid0+" hw.status{gpu.status.reason=none,hw.state=ok}"] != 1 || pts[uuid0+" hw.errors{error.type=xid}"] != 1 {
		t.Error("with xid_status_hold 0 an XID changed status, or was not counted")
	}
}

func TestLogRecordsDroppedWhenConsumerLags(t *testing.T) {
	h := newHarness(t, newTwoGPUs(), nil, WithLogBuffer(1))
	h.start()
	for _, xid := range []uint64{13, 31, 43} {
		h.src.RecordXID(uuid0, xid, 0, "")
	}
	if pts := points(h.scrape()); pts["host gpu.nvml.log_records.dropped"] != 2 {
		t.Errorf("dropped = %v, want 2", pts["host gpu.nvml.log_records.dropped"])
	}
	if got := h.nextLog(); got.Attributes["gpu.xid"] != int64(13) {
		t.Errorf("kept record: %v", got.Attributes)
	}
	if pts := points(h.scrape()); pts[uuid0+" hw.errors{error.type=xid}"] != 3 {
		t.Error("dropped records not counted as XIDs")
	}
}

func TestEventsOff(t *testing.T) {
	lib := newTwoGPUs()
	h := newHarness(t, lib, func(c *Config) { c.Events = false })
	h.start()
	if lib.events != nil || lib.gpus[0].registered != 0 {
		t.Error("event set created with events off")
	}
}

func TestEventWaitErrorsDoNotSpin(t *testing.T) {
	lib := newTwoGPUs()
	lib.events = newFakeEventSet()
	lib.events.fail = nvml.ERROR_UNKNOWN
	h := newHarness(t, lib, nil, WithEventTimeout(100*time.Millisecond))
	h.start()
	time.Sleep(300 * time.Millisecond)
	lib.events.mu.Lock()
	waits := lib.events.waits
	lib.events.mu.Unlock()
	// Back-off 50, 100, 100, ... ms: about 4 waits in 300 ms.
	if waits > 10 {
		t.Errorf("%d waits in 300 ms: the loop spins on errors", waits)
	}
}
