//go:build cgo

package gpuebpfreceiver

import (
	"context"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/metadata"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/nvml"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvmtools"
)

// These tests run the receiver without BPF (no CUDA source, no devrt): its
// NVML and UVM sources get fakes of NVML and of the UVM driver's trackers
// (sourceOptions), and what reaches the pipelines at Shutdown is checked.

const (
	testGPU  = "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d"
	testBus  = "00000000:17:00.0"
	testAddr = 0x7f0000000000
)

var testGPUUUID = uvmtools.UUID{0x94, 0x8a, 0xd2, 0x4a, 0xc6, 0x2e, 0x62, 0xf7, 0xd2, 0xbd, 0xad, 0x21, 0x81, 0x9f, 0x9f, 0x3d}

// fakeUVMTracker is the UVM tools tracker of one process: Read hands out
// what the test queued; Wait waits for poll_interval, or until released
// when gate is set.
type fakeUVMTracker struct {
	mu     sync.Mutex
	events []uvmtools.Event
	reads  atomic.Int64 // Reads that returned events
	gate   chan struct{}
	gated  chan struct{} // closed when a Wait first blocks on gate
	once   sync.Once
	closed atomic.Bool
}

func (f *fakeUVMTracker) queue(evs ...uvmtools.Event) {
	f.mu.Lock()
	f.events = append(f.events, evs...)
	f.mu.Unlock()
}

func (f *fakeUVMTracker) Read(fn func(uvmtools.Event)) (int, uint64, error) {
	f.mu.Lock()
	evs := f.events
	f.events = nil
	f.mu.Unlock()
	for _, e := range evs {
		fn(e)
	}
	if len(evs) > 0 {
		f.reads.Add(1)
	}
	return len(evs), 0, nil
}

func (f *fakeUVMTracker) Wait(d time.Duration) (bool, error) {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		f.once.Do(func() { close(f.gated) })
		<-gate
		return false, nil
	}
	time.Sleep(d)
	return false, nil
}
func (f *fakeUVMTracker) Flush() error { return nil }
func (f *fakeUVMTracker) Processors() (uvmtools.ProcessorTable, error) {
	return uvmtools.NewProcessorTable(uvmtools.V2,
		uvmtools.ProcessorInfo{Index: uvmtools.CPU, UUID: uvmtools.CPUUUID, Parent: uvmtools.CPUUUID},
		uvmtools.ProcessorInfo{Index: 1, UUID: testGPUUUID, Parent: testGPUUUID}), nil
}
func (f *fakeUVMTracker) Stats() uvmtools.Stats { return uvmtools.Stats{} }
func (f *fakeUVMTracker) Exited() bool          { return false }
func (f *fakeUVMTracker) Close() error          { f.closed.Store(true); return nil }

func gpuFault(i int) uvmtools.Event {
	return uvmtools.Event{Type: uvmtools.EventGPUFault, Processor: 1, Access: uvmtools.AccessWrite,
		FaultType: uvmtools.FaultInvalidPTE, Address: testAddr + uint64(i)<<12, Batch: 1,
		Time: 1e9 + uint64(i)*1000, TimeGPU: 1e9 + uint64(i)*1000}
}

// fakeNVML is one GPU behind go-nvml's mock: every method it does not set
// answers ERROR_NOT_SUPPORTED (the source then stops asking), energy is
// what the test sets, and NVML events are what it sends on xids.
type fakeNVML struct {
	lib       *mock.Interface
	energyMJ  atomic.Uint64
	xids      chan uint64
	hang      atomic.Pointer[chan struct{}] // set: the energy read blocks until it closes
	shutdowns atomic.Int32
}

func newFakeNVML() *fakeNVML {
	f := &fakeNVML{xids: make(chan uint64, 4)}
	dev := &mock.Device{}
	notSupported(dev)
	dev.GetUUIDFunc = func() (string, gonvml.Return) { return testGPU, gonvml.SUCCESS }
	dev.GetNameFunc = func() (string, gonvml.Return) { return "NVIDIA H200", gonvml.SUCCESS }
	dev.GetPciInfoFunc = func() (gonvml.PciInfo, gonvml.Return) {
		var p gonvml.PciInfo
		for i, c := range testBus {
			p.BusId[i] = uint8(c)
		}
		return p, gonvml.SUCCESS
	}
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, gonvml.Return) {
		if ch := f.hang.Load(); ch != nil {
			<-*ch
		}
		return f.energyMJ.Load(), gonvml.SUCCESS
	}
	dev.GetSupportedEventTypesFunc = func() (uint64, gonvml.Return) { return gonvml.EventTypeXidCriticalError, gonvml.SUCCESS }
	dev.RegisterEventsFunc = func(uint64, gonvml.EventSet) gonvml.Return { return gonvml.SUCCESS }
	set := &mock.EventSet{
		WaitFunc: func(ms uint32) (gonvml.EventData, gonvml.Return) {
			select {
			case x := <-f.xids:
				return gonvml.EventData{Device: dev, EventType: gonvml.EventTypeXidCriticalError, EventData: x,
					GpuInstanceId: ^uint32(0), ComputeInstanceId: ^uint32(0)}, gonvml.SUCCESS
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return gonvml.EventData{}, gonvml.ERROR_TIMEOUT
			}
		},
		FreeFunc: func() gonvml.Return { return gonvml.SUCCESS },
	}
	lib := &mock.Interface{}
	notSupported(lib)
	lib.InitFunc = func() gonvml.Return { return gonvml.SUCCESS }
	lib.ShutdownFunc = func() gonvml.Return { f.shutdowns.Add(1); return gonvml.SUCCESS }
	lib.SystemGetDriverVersionFunc = func() (string, gonvml.Return) { return "580.159.04", gonvml.SUCCESS }
	lib.DeviceGetCountFunc = func() (int, gonvml.Return) { return 1, gonvml.SUCCESS }
	lib.DeviceGetHandleByIndexFunc = func(int) (gonvml.Device, gonvml.Return) { return dev, gonvml.SUCCESS }
	lib.EventSetCreateFunc = func() (gonvml.EventSet, gonvml.Return) { return set, gonvml.SUCCESS }
	f.lib = lib
	return f
}

// notSupported sets every XxxFunc field of a go-nvml mock to return zero
// values and ERROR_NOT_SUPPORTED.
func notSupported(m any) {
	v := reflect.ValueOf(m).Elem()
	ret := reflect.TypeFor[gonvml.Return]()
	for i := range v.NumField() {
		f := v.Field(i)
		if !strings.HasSuffix(v.Type().Field(i).Name, "Func") || f.Kind() != reflect.Func || !f.CanSet() {
			continue
		}
		ft := f.Type()
		f.Set(reflect.MakeFunc(ft, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, ft.NumOut())
			for o := range out {
				out[o] = reflect.New(ft.Out(o)).Elem()
				if ft.Out(o) == ret {
					out[o].Set(reflect.ValueOf(gonvml.ERROR_NOT_SUPPORTED))
				}
			}
			return out
		}))
	}
}

// shutdownHarness is a receiver of every signal whose UVM source tracks
// this test process through tracker and whose NVML is fake.
type shutdownHarness struct {
	rcv     *gpuReceiver
	metrics *consumertest.MetricsSink
	logs    *consumertest.LogsSink
	tracker *fakeUVMTracker
	nvml    *fakeNVML
	pid     int64
}

func startShutdownHarness(t *testing.T, mutate func(*Config)) *shutdownHarness {
	t.Helper()
	h := &shutdownHarness{metrics: new(consumertest.MetricsSink), logs: new(consumertest.LogsSink),
		tracker: &fakeUVMTracker{}, nvml: newFakeNVML(), pid: int64(os.Getpid())}
	h.nvml.energyMJ.Store(5_000_000)
	saved := sourceOptions
	sourceOptions.nvml = []nvml.Option{nvml.WithInterface(h.nvml.lib), nvml.WithEventTimeout(10 * time.Millisecond)}
	sourceOptions.uvm = []uvm.Option{uvm.WithOpener(func(int, uvmtools.Options) (uvm.Tracker, error) { return h.tracker, nil })}
	t.Cleanup(func() { sourceOptions = saved })

	cfg := createDefaultConfig().(*Config)
	cfg.CollectionInterval = time.Hour // no periodic emission: what arrives is the final one
	cfg.CUDA.Enabled = false
	cfg.DevRT.Enabled = false
	cfg.UVM.Backend = uvm.BackendTools
	cfg.UVM.PollInterval = 20 * time.Millisecond
	cfg.UVM.FaultSamples = uvm.FaultSamplesConfig{Enabled: true, MaxPerSecond: 1000}
	if mutate != nil {
		mutate(cfg)
	}
	require.NoError(t, cfg.Validate())
	set := receivertest.NewNopSettings(metadata.Type)
	r, err := createMetrics(context.Background(), set, cfg, h.metrics)
	require.NoError(t, err)
	_, err = createLogs(context.Background(), set, cfg, h.logs)
	require.NoError(t, err)
	h.rcv = r.(*gpuReceiver)
	require.NoError(t, h.rcv.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { _ = h.rcv.Shutdown(context.Background()) })
	if cfg.UVM.Enabled {
		require.NoError(t, h.rcv.uvm.Track(int(h.pid)))
	}
	return h
}

// TestShutdownFinalEmission: with no periodic emission yet, Shutdown hands
// the pipelines one final metrics emission that holds the UVM source's
// counts (read before Shutdown, or by the trackers' last read at
// Shutdown), a last NVML scrape (energy and Xids since the start), and
// the receiver's own metrics; and the log records still pending: UVM
// fault samples, Xids. Exact values.
func TestShutdownFinalEmission(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nvml  bool
		setup func(t *testing.T, h *shutdownHarness) // before Shutdown
		want  map[string]float64
		logs  []string
	}{
		{
			name: "UVM events read before Shutdown",
			setup: func(t *testing.T, h *shutdownHarness) {
				h.tracker.queue(gpuFault(0), gpuFault(1), gpuFault(2))
				require.Eventually(t, func() bool { return h.tracker.reads.Load() == 1 }, 5*time.Second, time.Millisecond)
			},
			want: map[string]float64{
				"pid/" + testGPU + " gpu.uvm.faults{gpu.uvm.access.type=write,gpu.uvm.fault.type=invalid_pte,gpu.uvm.processor=gpu}": 3,
			},
			logs: []string{"gpu fault write 0x7f0000000000", "gpu fault write 0x7f0000001000", "gpu fault write 0x7f0000002000"},
		},
		{
			name: "UVM events of the last read",
			setup: func(t *testing.T, h *shutdownHarness) {
				h.tracker.queue(gpuFault(0), gpuFault(1),
					uvmtools.Event{Type: uvmtools.EventMigration, Src: uvmtools.CPU, Dst: 1, Cause: uvmtools.CausePrefetch,
						Size: 1 << 20, Time: 1e9 + 5000})
			},
			want: map[string]float64{
				"pid/" + testGPU + " gpu.uvm.faults{gpu.uvm.access.type=write,gpu.uvm.fault.type=invalid_pte,gpu.uvm.processor=gpu}": 2,
				"pid/" + testGPU + " gpu.uvm.migrated{gpu.uvm.migration.cause=prefetch,gpu.uvm.migration.direction=htod}":            1 << 20,
				"pid/" + testGPU + " gpu.uvm.migrations{gpu.uvm.migration.cause=prefetch,gpu.uvm.migration.direction=htod}":          1,
				"pid/" + testGPU + " gpu.uvm.prefetch{gpu.uvm.migration.direction=htod}":                                             1 << 20,
			},
			logs: []string{"gpu fault write 0x7f0000000000", "gpu fault write 0x7f0000001000"},
		},
		{
			name: "NVML last scrape and Xid",
			nvml: true,
			setup: func(t *testing.T, h *shutdownHarness) {
				h.nvml.energyMJ.Store(5_250_000)
				h.nvml.xids <- 79
				require.Eventually(t, func() bool { return h.logs.LogRecordCount() == 1 }, 5*time.Second, time.Millisecond)
			},
			want: map[string]float64{
				testGPU + " hw.energy":                                           5250,
				testGPU + " hw.errors{error.type=xid}":                           1,
				testGPU + " hw.status{gpu.status.reason=xid_79,hw.state=failed}": 1,
			},
			logs: []string{"XID 79: GPU has fallen off the bus"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startShutdownHarness(t, func(c *Config) { c.NVML.Enabled = tc.nvml })
			tc.setup(t, h)
			require.NoError(t, h.rcv.Shutdown(context.Background()))

			all := h.metrics.AllMetrics()
			require.Len(t, all, 1, "one final emission")
			got := flatten(all[0], h.pid)
			for k, v := range tc.want {
				assert.Equal(t, v, got[k], k)
			}
			assert.Contains(t, got, "host gpu.ebpf.processes.tracked", "the receiver's own metrics in the same emission")
			assert.Equal(t, tc.logs, logBodies(h.logs))
			assert.True(t, h.tracker.closed.Load(), "the tracker closed")
			if tc.nvml {
				assert.EqualValues(t, 1, h.nvml.shutdowns.Load(), "NVML released")
			}

			// Nothing after Shutdown.
			time.Sleep(50 * time.Millisecond)
			assert.Len(t, h.metrics.AllMetrics(), 1)
			assert.Equal(t, len(tc.logs), h.logs.LogRecordCount())
		})
	}
}

// TestShutdownWithEndedContext: when Shutdown's context ends while a UVM
// tracker is still in its wait and NVML's last scrape is held up in the
// driver, Shutdown returns that context's error at once, and nothing
// reaches the pipelines once it has returned.
func TestShutdownWithEndedContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startShutdownHarness(t, nil)
			gate := make(chan struct{})
			h.tracker.mu.Lock()
			h.tracker.gate, h.tracker.gated = gate, make(chan struct{})
			h.tracker.mu.Unlock()
			<-h.tracker.gated // the reader is in its wait
			h.tracker.queue(gpuFault(0))
			hang := make(chan struct{})
			h.nvml.hang.Store(&hang)

			ctx, cancel := tc.ctx()
			defer cancel()
			begin := time.Now()
			err := h.rcv.Shutdown(ctx)
			took := time.Since(begin)
			require.ErrorIs(t, err, tc.want)
			assert.Less(t, took, time.Second)
			metrics, logs := len(h.metrics.AllMetrics()), h.logs.LogRecordCount()

			close(gate)
			close(hang)
			require.Eventually(t, h.tracker.closed.Load, 5*time.Second, time.Millisecond)
			require.Eventually(t, func() bool { return h.nvml.shutdowns.Load() == 1 }, 5*time.Second, time.Millisecond,
				"NVML released once its call returned")
			time.Sleep(100 * time.Millisecond)
			assert.Len(t, h.metrics.AllMetrics(), metrics, "no metrics after Shutdown returned")
			assert.Equal(t, logs, h.logs.LogRecordCount(), "no logs after Shutdown returned")
		})
	}
}

// flatten maps "resource metric{attributes}" to the value of each number
// point of md; the resource is "host", "<hw.id>", "pid", or "pid/<hw.id>"
// (pid: the test process).
func flatten(md pmetric.Metrics, pid int64) map[string]float64 {
	out := map[string]float64{}
	for _, rm := range md.ResourceMetrics().All() {
		a := rm.Resource().Attributes()
		var res []string
		if v, ok := a.Get("process.pid"); ok {
			if v.Int() != pid {
				continue
			}
			res = append(res, "pid")
		}
		if v, ok := a.Get("hw.id"); ok {
			res = append(res, v.Str())
		}
		key := strings.Join(res, "/")
		if key == "" {
			key = "host"
		}
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				default:
					continue
				}
				for _, dp := range dps.All() {
					v := dp.DoubleValue()
					if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
						v = float64(dp.IntValue())
					}
					out[key+" "+m.Name()+attrString(dp.Attributes())] = v
				}
			}
		}
	}
	return out
}

func attrString(m pcommon.Map) string {
	if m.Len() == 0 {
		return ""
	}
	var kv []string
	for k, v := range m.All() {
		kv = append(kv, k+"="+v.AsString())
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

func logBodies(sink *consumertest.LogsSink) []string {
	var out []string
	for _, ld := range sink.AllLogs() {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, r := range sl.LogRecords().All() {
					out = append(out, r.Body().Str())
				}
			}
		}
	}
	return out
}
