//go:build cgo

package nvml

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml/internal/metadata"
)

// fakeLib is an NVML library built on go-nvml's mock: the methods the
// source calls are overridden below, every other one panics (the embedded
// mock's func fields are nil), so an unexpected call shows up as a
// recovered panic that the tests check for.
type fakeLib struct {
	mock.Interface
	initRet   nvml.Return
	driver    string
	gpus      []*fakeGPU
	missing   map[string]bool // symbols the "library" lacks
	events    *fakeEventSet
	handleRet map[int]nvml.Return // DeviceGetHandleByIndex failures by index
	inits     int
	shutdowns int
}

func (l *fakeLib) Init() nvml.Return {
	l.inits++
	if l.initRet != 0 {
		return l.initRet
	}
	return nvml.SUCCESS
}
func (l *fakeLib) Shutdown() nvml.Return                         { l.shutdowns++; return nvml.SUCCESS }
func (l *fakeLib) SystemGetDriverVersion() (string, nvml.Return) { return l.driver, nvml.SUCCESS }
func (l *fakeLib) DeviceGetCount() (int, nvml.Return)            { return len(l.gpus), nvml.SUCCESS }
func (l *fakeLib) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	if i < 0 || i >= len(l.gpus) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	if r, ok := l.handleRet[i]; ok {
		return nil, r
	}
	return l.gpus[i], nvml.SUCCESS
}
func (l *fakeLib) EventSetCreate() (nvml.EventSet, nvml.Return) {
	if l.events == nil {
		l.events = newFakeEventSet()
	}
	return l.events, nvml.SUCCESS
}
func (l *fakeLib) Extensions() nvml.ExtendedInterface {
	return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
		if l.missing[s] {
			return errors.New("symbol not found")
		}
		return nil
	}}
}

// fakeEventSet delivers the events a test pushes.
type fakeEventSet struct {
	mock.EventSet
	ch    chan nvml.EventData
	mu    sync.Mutex
	freed int
	fail  nvml.Return // returned by every Wait when set
	waits int
}

func newFakeEventSet() *fakeEventSet { return &fakeEventSet{ch: make(chan nvml.EventData, 16)} }

func (e *fakeEventSet) Wait(ms uint32) (nvml.EventData, nvml.Return) {
	e.mu.Lock()
	e.waits++
	fail := e.fail
	e.mu.Unlock()
	if fail != 0 {
		return nvml.EventData{}, fail
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case d := <-e.ch:
		return d, nvml.SUCCESS
	case <-t.C:
		return nvml.EventData{}, nvml.ERROR_TIMEOUT
	}
}
func (e *fakeEventSet) Free() nvml.Return { e.mu.Lock(); e.freed++; e.mu.Unlock(); return nvml.SUCCESS }
func (e *fakeEventSet) freedCount() int   { e.mu.Lock(); defer e.mu.Unlock(); return e.freed }

// fakeGPU is a GPU (or MIG device) whose readings the test sets.
type fakeGPU struct {
	mock.Device
	uuid, name, busID, serial, vbios string

	fail  map[string]nvml.Return   // method name → what it returns instead of SUCCESS
	hang  map[string]chan struct{} // method name → the call blocks until the channel closes
	calls map[string]int
	lost  bool

	util           nvml.Utilization
	enc, dec       uint32
	mem            nvml.Memory_v2
	powerMW        uint32
	energyMJ       uint64
	tempC          uint32
	clocksMHz      [4]uint32 // by nvml.ClockType
	throttle       uint64
	throttleMask   uint64
	pstate         nvml.Pstates
	fanPct         uint32
	ecc            [2]uint64 // corrected, uncorrected
	retired        [2]int    // single-bit, double-bit cause
	retiredPending bool
	remapCorr      int
	remapUnc       int
	remapPending   bool
	remapFailed    bool
	pcieKBps       [2]uint32 // tx, rx
	replay         int
	fields         map[uint32]nvml.FieldValue
	procs          []nvml.ProcessInfo
	samples        []nvml.ProcessUtilizationSample
	lastSeenArgs   []uint64
	migMode        int
	migs           []*fakeGPU // nil: empty slot
	maxMIG         int        // GetMaxMigDeviceCount when not 0, else len(migs)
	gi, ci         int
	sms            uint32
	eventTypes     uint64
	registered     uint64
}

func (g *fakeGPU) ret(method string) nvml.Return {
	if g.calls == nil {
		g.calls = map[string]int{}
	}
	g.calls[method]++
	if ch := g.hang[method]; ch != nil {
		<-ch
	}
	if g.lost {
		return nvml.ERROR_GPU_IS_LOST
	}
	if r, ok := g.fail[method]; ok {
		return r
	}
	return nvml.SUCCESS
}

// Call names of methods with an argument that tests tell apart.
var (
	clockCalls   = [4]string{"GetClockInfo(0)", "GetClockInfo(1)", "GetClockInfo(2)", "GetClockInfo(3)"}
	eccCalls     = [2]string{"GetTotalEccErrors(0)", "GetTotalEccErrors(1)"}
	retiredCalls = [2]string{"GetRetiredPages(0)", "GetRetiredPages(1)"}
	pcieCalls    = [2]string{"GetPcieThroughput(0)", "GetPcieThroughput(1)"}
)

func (g *fakeGPU) GetUUID() (string, nvml.Return)         { return g.uuid, g.ret("GetUUID") }
func (g *fakeGPU) GetName() (string, nvml.Return)         { return g.name, g.ret("GetName") }
func (g *fakeGPU) GetSerial() (string, nvml.Return)       { return g.serial, g.ret("GetSerial") }
func (g *fakeGPU) GetVbiosVersion() (string, nvml.Return) { return g.vbios, g.ret("GetVbiosVersion") }
func (g *fakeGPU) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	var p nvml.PciInfo
	copy(p.BusId[:], g.busID)
	return p, g.ret("GetPciInfo")
}
func (g *fakeGPU) GetSupportedClocksEventReasons() (uint64, nvml.Return) {
	return g.throttleMask, g.ret("GetSupportedClocksEventReasons")
}
func (g *fakeGPU) GetSupportedClocksThrottleReasons() (uint64, nvml.Return) {
	return g.throttleMask, g.ret("GetSupportedClocksThrottleReasons")
}
func (g *fakeGPU) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return g.util, g.ret("GetUtilizationRates")
}
func (g *fakeGPU) GetEncoderUtilization() (uint32, uint32, nvml.Return) {
	return g.enc, 167000, g.ret("GetEncoderUtilization")
}
func (g *fakeGPU) GetDecoderUtilization() (uint32, uint32, nvml.Return) {
	return g.dec, 167000, g.ret("GetDecoderUtilization")
}
func (g *fakeGPU) GetMemoryInfo_v2() (nvml.Memory_v2, nvml.Return) {
	return g.mem, g.ret("GetMemoryInfo_v2")
}
func (g *fakeGPU) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	// v1 counts reserved memory as used.
	return nvml.Memory{Total: g.mem.Total, Free: g.mem.Free, Used: g.mem.Used + g.mem.Reserved}, g.ret("GetMemoryInfo")
}
func (g *fakeGPU) GetPowerUsage() (uint32, nvml.Return) { return g.powerMW, g.ret("GetPowerUsage") }
func (g *fakeGPU) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	return g.energyMJ, g.ret("GetTotalEnergyConsumption")
}
func (g *fakeGPU) GetTemperature(s nvml.TemperatureSensors) (uint32, nvml.Return) {
	if s != nvml.TEMPERATURE_GPU {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return g.tempC, g.ret("GetTemperature")
}
func (g *fakeGPU) GetClockInfo(c nvml.ClockType) (uint32, nvml.Return) {
	return g.clocksMHz[c], g.ret(clockCalls[c])
}
func (g *fakeGPU) GetCurrentClocksEventReasons() (uint64, nvml.Return) {
	return g.throttle, g.ret("GetCurrentClocksEventReasons")
}
func (g *fakeGPU) GetCurrentClocksThrottleReasons() (uint64, nvml.Return) {
	return g.throttle, g.ret("GetCurrentClocksThrottleReasons")
}
func (g *fakeGPU) GetPerformanceState() (nvml.Pstates, nvml.Return) {
	return g.pstate, g.ret("GetPerformanceState")
}
func (g *fakeGPU) GetFanSpeed() (uint32, nvml.Return) { return g.fanPct, g.ret("GetFanSpeed") }
func (g *fakeGPU) GetTotalEccErrors(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
	if c != nvml.VOLATILE_ECC {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return g.ecc[t], g.ret(eccCalls[t])
}
func (g *fakeGPU) GetRetiredPages(c nvml.PageRetirementCause) ([]uint64, nvml.Return) {
	return make([]uint64, g.retired[c]), g.ret(retiredCalls[c])
}
func (g *fakeGPU) GetRetiredPagesPendingStatus() (nvml.EnableState, nvml.Return) {
	st := nvml.FEATURE_DISABLED
	if g.retiredPending {
		st = nvml.FEATURE_ENABLED
	}
	return st, g.ret("GetRetiredPagesPendingStatus")
}
func (g *fakeGPU) GetRemappedRows() (int, int, bool, bool, nvml.Return) {
	return g.remapCorr, g.remapUnc, g.remapPending, g.remapFailed, g.ret("GetRemappedRows")
}
func (g *fakeGPU) GetPcieThroughput(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
	return g.pcieKBps[c], g.ret(pcieCalls[c])
}
func (g *fakeGPU) GetPcieReplayCounter() (int, nvml.Return) {
	return g.replay, g.ret("GetPcieReplayCounter")
}
func (g *fakeGPU) GetFieldValues(values []nvml.FieldValue) nvml.Return {
	if r := g.ret("GetFieldValues"); r != nvml.SUCCESS {
		return r
	}
	for i := range values {
		v, ok := g.fields[values[i].FieldId]
		if !ok {
			values[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			continue
		}
		values[i].ValueType, values[i].Value, values[i].NvmlReturn = v.ValueType, v.Value, v.NvmlReturn // 0: SUCCESS
	}
	return nvml.SUCCESS
}
func (g *fakeGPU) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return g.procs, g.ret("GetComputeRunningProcesses")
}
func (g *fakeGPU) GetProcessUtilization(lastSeen uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
	if len(g.lastSeenArgs) < 16 {
		g.lastSeenArgs = append(g.lastSeenArgs, lastSeen)
	}
	if r := g.ret("GetProcessUtilization"); r != nvml.SUCCESS {
		return nil, r
	}
	var out []nvml.ProcessUtilizationSample
	for _, s := range g.samples {
		if s.TimeStamp > lastSeen {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return out, nvml.SUCCESS
}
func (g *fakeGPU) GetMigMode() (int, int, nvml.Return) {
	return g.migMode, g.migMode, g.ret("GetMigMode")
}
func (g *fakeGPU) GetMaxMigDeviceCount() (int, nvml.Return) {
	if g.maxMIG != 0 {
		return g.maxMIG, g.ret("GetMaxMigDeviceCount")
	}
	return len(g.migs), g.ret("GetMaxMigDeviceCount")
}
func (g *fakeGPU) GetMigDeviceHandleByIndex(i int) (nvml.Device, nvml.Return) {
	if r := g.ret("GetMigDeviceHandleByIndex"); r != nvml.SUCCESS {
		return nil, r
	}
	if i >= len(g.migs) || g.migs[i] == nil {
		return nil, nvml.ERROR_NOT_FOUND
	}
	return g.migs[i], nvml.SUCCESS
}
func (g *fakeGPU) GetGpuInstanceId() (int, nvml.Return) { return g.gi, g.ret("GetGpuInstanceId") }
func (g *fakeGPU) GetComputeInstanceId() (int, nvml.Return) {
	return g.ci, g.ret("GetComputeInstanceId")
}
func (g *fakeGPU) GetAttributes() (nvml.DeviceAttributes, nvml.Return) {
	return nvml.DeviceAttributes{MultiprocessorCount: g.sms}, g.ret("GetAttributes")
}
func (g *fakeGPU) GetSupportedEventTypes() (uint64, nvml.Return) {
	return g.eventTypes, g.ret("GetSupportedEventTypes")
}
func (g *fakeGPU) RegisterEvents(mask uint64, _ nvml.EventSet) nvml.Return {
	g.registered = mask
	return g.ret("RegisterEvents")
}

// u64Field and u32Field make field values as NVML fills them.
func u64Field(v uint64) nvml.FieldValue {
	f := nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)}
	binary.LittleEndian.PutUint64(f.Value[:], v)
	return f
}

func u32Field(v uint32) nvml.FieldValue {
	f := nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_UNSIGNED_INT)}
	binary.LittleEndian.PutUint32(f.Value[:], v)
	return f
}

const (
	uuid0 = "GPU-11111111-2222-3333-4444-555555555555"
	uuid1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
	mig0  = "MIG-00000000-0000-0000-0000-000000000001"
	mig1  = "MIG-00000000-0000-0000-0000-000000000002"
	gib   = 1 << 30
)

// newH100 is a busy GPU that supports everything.
func newH100(uuid, bus string) *fakeGPU {
	return &fakeGPU{
		uuid: uuid, name: "NVIDIA H100 80GB HBM3", busID: bus, serial: "1650123456789", vbios: "96.00.99.00.01",
		util:         nvml.Utilization{Gpu: 87, Memory: 42},
		enc:          3,
		dec:          5,
		mem:          nvml.Memory_v2{Total: 80 * gib, Reserved: 512 << 20, Used: 20 * gib, Free: 60*gib - 512<<20},
		powerMW:      312500,
		energyMJ:     123456789,
		tempC:        54,
		clocksMHz:    [4]uint32{nvml.CLOCK_GRAPHICS: 1980, nvml.CLOCK_SM: 1980, nvml.CLOCK_MEM: 2619, nvml.CLOCK_VIDEO: 1545},
		throttle:     nvml.ClocksEventReasonSwPowerCap,
		throttleMask: nvml.ClocksEventReasonGpuIdle | nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwSlowdown,
		pstate:       nvml.PSTATE_0,
		fanPct:       30,
		ecc:          [2]uint64{7, 0},
		retired:      [2]int{0, 0},
		remapCorr:    2,
		remapUnc:     0,
		pcieKBps:     [2]uint32{1000, 3000},
		replay:       1,
		fields: map[uint32]nvml.FieldValue{
			nvml.FI_DEV_MEMORY_TEMP:               u32Field(61),
			nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX: u64Field(1000),
			nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX: u64Field(2000),
		},
		eventTypes: nvml.EventTypeAll,
	}
}

// newTwoGPUs: gpu0 runs two processes; gpu1 is in MIG mode with two MIG
// devices (and an empty slot between them), one process on the second.
func newTwoGPUs() *fakeLib {
	g0 := newH100(uuid0, "00000000:17:00.0")
	g0.procs = []nvml.ProcessInfo{
		{Pid: 100, UsedGpuMemory: 4 * gib},
		{Pid: 200, UsedGpuMemory: 1 * gib},
	}
	g0.samples = []nvml.ProcessUtilizationSample{
		{Pid: 100, TimeStamp: 1000, SmUtil: 80, MemUtil: 40, EncUtil: 0, DecUtil: 0},
		{Pid: 100, TimeStamp: 2000, SmUtil: 90, MemUtil: 50, EncUtil: 2, DecUtil: 4},
		{Pid: 300, TimeStamp: 1500, SmUtil: 10, MemUtil: 0, EncUtil: 0, DecUtil: 0},
	}
	g1 := newH100(uuid1, "00000000:2A:00.0")
	g1.migMode = nvml.DEVICE_MIG_ENABLE
	g1.fail = map[string]nvml.Return{
		// In MIG mode the parent has no utilization; processes live on MIG devices.
		"GetUtilizationRates":   nvml.ERROR_NOT_SUPPORTED,
		"GetEncoderUtilization": nvml.ERROR_NOT_SUPPORTED,
		"GetDecoderUtilization": nvml.ERROR_NOT_SUPPORTED,
	}
	m0 := &fakeGPU{uuid: mig0, name: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", gi: 1, ci: 0, sms: 60,
		mem: nvml.Memory_v2{Total: 40 * gib, Used: 10 * gib, Free: 30 * gib}}
	m1 := &fakeGPU{uuid: mig1, name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb", gi: 9, ci: 0, sms: 16,
		mem:   nvml.Memory_v2{Total: 10 * gib, Used: 2 * gib, Free: 8 * gib},
		procs: []nvml.ProcessInfo{{Pid: 400, UsedGpuMemory: 2 * gib}},
		fail:  map[string]nvml.Return{"GetProcessUtilization": nvml.ERROR_NOT_SUPPORTED}}
	m0.fail = map[string]nvml.Return{"GetProcessUtilization": nvml.ERROR_NOT_SUPPORTED}
	g1.migs = []*fakeGPU{m0, nil, m1}
	return &fakeLib{driver: "580.65.06", gpus: []*fakeGPU{g0, g1}}
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

// testAttributor describes pids as containers of pods.
var testAttributor = AttributorFunc(func(pid uint32) Process {
	switch pid {
	case 100:
		return Process{PID: pid, ExecutableName: "python3", ContainerID: strings.Repeat("ab", 32), PodUID: "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}
	case 400:
		return Process{PID: pid, ExecutableName: "trainer", ContainerID: strings.Repeat("cd", 32), PodUID: "11111111-2222-4333-8444-555555555555"}
	}
	return Process{PID: pid}
})

type harness struct {
	t     *testing.T
	lib   *fakeLib
	src   *Source
	clock *fakeClock
}

func newHarness(t *testing.T, lib *fakeLib, mutate func(*Config), opts ...Option) *harness {
	t.Helper()
	cfg := NewDefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	clock := &fakeClock{t: t0}
	opts = append([]Option{WithInterface(lib), WithClock(clock.now), WithHostName("node-1"), WithEventTimeout(10 * time.Millisecond)}, opts...)
	src := New(cfg, receivertest.NewNopSettings(metadata.Type), testAttributor, opts...)
	h := &harness{t: t, lib: lib, src: src, clock: clock}
	t.Cleanup(func() {
		_ = src.Shutdown(t.Context())
		if src.panics != 0 {
			t.Errorf("%d panics recovered while scraping (an unexpected NVML call?)", src.panics)
		}
	})
	return h
}

func (h *harness) start() {
	h.t.Helper()
	if err := h.src.Start(h.t.Context()); err != nil {
		h.t.Fatalf("Start: %v", err)
	}
}

func (h *harness) scrape() pmetric.Metrics {
	h.t.Helper()
	md, err := h.src.Scrape(h.t.Context())
	if err != nil {
		h.t.Fatalf("Scrape: %v", err)
	}
	return md
}

// points flattens metrics into "resource metric{attrs}" → value, where the
// resource is named by hw.id (and process.pid), or "host".
func points(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		res := resourceKey(rm.Resource())
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				}
				for l := 0; l < dps.Len(); l++ {
					dp := dps.At(l)
					key := res + " " + m.Name() + attrString(dp.Attributes())
					v := dp.DoubleValue()
					if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
						v = float64(dp.IntValue())
					}
					out[key] = v
				}
			}
		}
	}
	return out
}

func resourceKey(r pcommon.Resource) string {
	id, ok := r.Attributes().Get("hw.id")
	if !ok {
		return "host"
	}
	key := id.Str()
	if pid, ok := r.Attributes().Get("process.pid"); ok {
		key += fmt.Sprintf("/pid=%d", pid.Int())
	}
	return key
}

func attrString(m pcommon.Map) string {
	if m.Len() == 0 {
		return ""
	}
	var kv []string
	m.Range(func(k string, v pcommon.Value) bool {
		kv = append(kv, k+"="+v.AsString())
		return true
	})
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

// resources returns the attributes of every resource, by resourceKey.
func resources(md pmetric.Metrics) map[string]map[string]any {
	out := map[string]map[string]any{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		r := rms.At(i).Resource()
		out[resourceKey(r)] = r.Attributes().AsRaw()
	}
	return out
}
