package devprobes

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion/probesim"
	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/devprobes/internal/metadata"
)

const (
	pid      = 4242
	base     = uint64(1_700_000_000_000_000_000) >> proberegion.OccShift << proberegion.OccShift
	offset   = uint64(1_699_000_000_000_000_000) // %globaltimer - CLOCK_MONOTONIC
	wallMono = int64(1_600_000_000_000_000_000)  // CLOCK_REALTIME - CLOCK_MONOTONIC
)

var wall = time.Unix(0, 1_700_000_100_000_000_000)

// dead are the processes the tests' sources take for ended.
var dead = map[uint32]bool{}

func newSource(t testing.TB, dir string) (*Source, *observer.ObservedLogs) {
	cfg := NewDefaultConfig()
	cfg.Enabled = true
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s, err := New(cfg, Options{Dirs: []string{dir}, Settings: set, HostName: "node", Alive: func(p uint32) bool { return !dead[p] },
		Now: func() time.Time { return wall }, Monotonic: func() uint64 { return uint64(wall.UnixNano() - wallMono) }})
	require.NoError(t, err)
	return s, logs
}

// mapRegion creates devrt's region file for pid and maps it as devrt does.
func mapRegion(t testing.TB, s *Source, dir string, created int) []byte {
	return mapRegionOn(t, s, dir, created, nil, 0)
}

// mapRegionOn is mapRegion with devrt's device record after the region,
// naming the GPU of UUID uuid and ordinal ord (no uuid: no record, as
// before devrt wrote it).
func mapRegionOn(t testing.TB, s *Source, dir string, created int, uuid []byte, ord int32) []byte {
	size := (s.Set().Layout().Size + 4095) &^ 4095
	p := filepath.Join(dir, "gpuext-devmaps-4242-"+strconv.Itoa(created)+".maps")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	require.NoError(t, err)
	defer f.Close()
	if uuid != nil {
		d := devrtinject.DeviceInfo{RegionLen: size, HasUUID: true, Device: ord}
		copy(d.UUID[:], uuid)
		_, err := f.WriteAt(d.Encode(), int64(size)+devrtinject.DeviceTrailer-devrtinject.DeviceInfoSize)
		require.NoError(t, err)
	}
	require.NoError(t, f.Truncate(int64(size)+map[bool]int64{true: devrtinject.DeviceTrailer}[uuid != nil]))
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	return mem
}

// injectRecord is a struct gpuext_inject_event of an outcome and reason.
func injectRecord(out devrtinject.Outcome, reason devrtinject.Reason, text string) []byte {
	b := make([]byte, devrtinject.EventSize)
	binary.LittleEndian.PutUint16(b, devrtinject.KindInject)
	binary.LittleEndian.PutUint32(b[8:], pid)
	binary.LittleEndian.PutUint32(b[88:], uint32(out))
	binary.LittleEndian.PutUint32(b[92:], uint32(reason))
	copy(b[128:], text)
	return b
}

type point struct {
	attrs map[string]any
	value float64
}

// metrics flattens md: metric name -> points (resource pid in attrs as "pid").
func metrics(md pmetric.Metrics) map[string][]point {
	out := map[string][]point{}
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		var rpid, hwid any
		if v, ok := rm.Resource().Attributes().Get("process.pid"); ok {
			rpid = v.Int()
		}
		if v, ok := rm.Resource().Attributes().Get("hw.id"); ok {
			hwid = v.Str()
		}
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				add := func(attrs pcommon.Map, v float64) {
					a := attrs.AsRaw()
					if rpid != nil {
						a["pid"] = rpid
					}
					if hwid != nil {
						a["hw.id"] = hwid
					}
					out[m.Name()] = append(out[m.Name()], point{a, v})
				}
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for d := 0; d < m.Sum().DataPoints().Len(); d++ {
						dp := m.Sum().DataPoints().At(d)
						add(dp.Attributes(), dp.DoubleValue()+float64(dp.IntValue()))
					}
				case pmetric.MetricTypeGauge:
					for d := 0; d < m.Gauge().DataPoints().Len(); d++ {
						dp := m.Gauge().DataPoints().At(d)
						add(dp.Attributes(), dp.DoubleValue()+float64(dp.IntValue()))
					}
				case pmetric.MetricTypeHistogram:
					for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
						dp := m.Histogram().DataPoints().At(d)
						a := dp.Attributes().AsRaw()
						a["pid"] = rpid
						if hwid != nil {
							a["hw.id"] = hwid
						}
						a["buckets"] = dp.BucketCounts().AsRaw()
						a["sum"] = dp.Sum()
						out[m.Name()] = append(out[m.Name()], point{a, float64(dp.Count())})
					}
				}
			}
		}
	}
	return out
}

// TestImbalancedKernelMetrics: the shipped probes run on the interpreter
// for an imbalanced launch (16 blocks of 64 threads on 4 SMs, every 8th
// block 8x longer) in a region file as devrt makes it; the source's OTel
// output is checked exactly.
func TestImbalancedKernelMetrics(t *testing.T) {
	dir := t.TempDir()
	s, logs := newSource(t, dir)
	s.Start()
	defer s.Shutdown()
	_, err := os.Stat(filepath.Join(dir, devrtinject.SocketName))
	require.NoError(t, err, "the injection server listens")

	// The module is patched first (its kernel names become known).
	src, err := os.ReadFile("../../../../devrt/ptx/testdata/corpus/nvcc_kernels.ptx")
	require.NoError(t, err)
	res, err := s.Set().Patch(context.Background(), &devrtinject.Module{PTX: src})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status)
	require.NoError(t, s.HandleInject(pid, injectRecord(devrtinject.OutPatched, 0, "")))
	require.NoError(t, s.HandleInject(pid, injectRecord(devrtinject.OutNotInstrumentable, devrtinject.ReasonSASSOnly, "")))
	require.NoError(t, s.HandleInject(pid, injectRecord(devrtinject.OutRejected, devrtinject.ReasonNone, "every kernel refused")))
	require.Error(t, s.HandleInject(pid, []byte{8, 0, 1}))
	require.Equal(t, 2, logs.FilterMessage("devrt did not instrument a module").Len())
	// a kernel's 1-D twin dropped: the module stays patched, not failed
	g1 := injectRecord(devrtinject.OutFailed, devrtinject.ReasonRefused, "launch (1-D twin)")
	binary.LittleEndian.PutUint16(g1[6:], devrtinject.FlagGrid1D)
	require.NoError(t, s.HandleInject(pid, g1))
	require.Equal(t, 1, logs.FilterMessage("devrt dropped a kernel's entry for 1-D grids; its launches run the general twin").Len())
	require.Equal(t, 2, logs.FilterMessage("devrt did not instrument a module").Len())
	// a twin that owns the variables refused a launch: the module stays
	// patched, not failed
	vr := injectRecord(devrtinject.OutFailed, devrtinject.ReasonRefused, "launch (plain copy now)")
	binary.LittleEndian.PutUint16(vr[6:], devrtinject.FlagVars)
	require.NoError(t, s.HandleInject(pid, vr))
	require.Equal(t, 1, logs.FilterMessage("a patched module's twin, which owns its variables, refused what the original took").Len())
	require.Equal(t, 2, logs.FilterMessage("devrt did not instrument a module").Len())

	mem := mapRegion(t, s, dir, 1)
	// A garbage region beside it is dropped; the good one is not affected.
	junk := make([]byte, s.Set().Layout().Size)
	for i := range junk {
		junk[i] = 0xa5
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gpuext-devmaps-4243-9.maps"), junk, 0o600))

	// The launch call (host clock) 5 µs before its first block, devrt's
	// timing of it exactly at the first block.
	blocks := probesim.Imbalanced(base, 16, 4)
	hostStart := base - offset - 5000
	s.Launch(pid, "imbalanced", -1, hostStart) // a region without a device record: -1
	s.Timed(pid, "imbalanced", -1, hostStart, base-offset, base-offset+100_000)
	// The region is read before the kernel runs (devrt makes it at the
	// module's load), after an earlier kernel of the process marked an
	// occupancy bucket 10 buckets before (SM 5, nothing counted): slots
	// the launch then writes first count from zero, as nothing can have
	// reached them between that read and their bucket.
	occ, ok := s.Set().Layout().Find(proberegion.MapOcc)
	require.True(t, ok)
	early := base>>proberegion.OccShift - 10
	off, ok := occ.ElemOffset(5, early%uint64(occ.MaxEntries))
	require.True(t, ok)
	binary.LittleEndian.PutUint64(mem[off:], early)
	s.Poll()
	require.NoError(t, probesim.Run(s.Set().Compiled(), mem, probesim.Launch{Kernel: "imbalanced", Grid: 16, Threads: 64, NSM: 4, Blocks: blocks, GridID: 0x2a}))
	s.Poll()
	require.Equal(t, 1, logs.FilterMessage("device probe region dropped").Len())
	// the launch's blocks all there (its records say 16, every one
	// sampled): its run is over with the read that brought them
	require.Equal(t, []point{{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid)}, 16}},
		metrics(s.Metrics())["gpu.kernel.blocks"])
	// a read by the host's clock a while later, for the occupancy's
	// buckets
	later := wall.Add(proberegion.QuietClose)
	s.opts.Now = func() time.Time { return later }
	s.opts.Monotonic = func() uint64 { return uint64(later.UnixNano() - wallMono) }
	s.Poll()
	md := s.Metrics()
	got := metrics(md)

	// SM 0 ran blocks 0, 4, 8, 12 (0 and 8 heavy); each block 2 warps.
	busy := func(heavy, light int) float64 {
		return float64(heavy*2*(2_400_000-100)+light*2*(300_000-100)) / 1e9 // warp-seconds
	}
	require.Equal(t, []point{
		{map[string]any{"gpu.sm.id": int64(0), "pid": int64(pid)}, 4}, {map[string]any{"gpu.sm.id": int64(1), "pid": int64(pid)}, 4},
		{map[string]any{"gpu.sm.id": int64(2), "pid": int64(pid)}, 4}, {map[string]any{"gpu.sm.id": int64(3), "pid": int64(pid)}, 4},
	}, got["gpu.kernel.sm.blocks"])
	require.Len(t, got["gpu.kernel.sm.busy"], 4)
	require.InDelta(t, busy(2, 2), got["gpu.kernel.sm.busy"][0].value, 1e-12)
	for sm := 1; sm < 4; sm++ {
		require.InDelta(t, busy(0, 4), got["gpu.kernel.sm.busy"][sm].value, 1e-12)
	}
	require.Len(t, got["gpu.kernel.sm.imbalance"], 1)
	require.InDelta(t, busy(2, 2)/((busy(2, 2)+3*busy(0, 4))/4), got["gpu.kernel.sm.imbalance"][0].value, 1e-9)
	require.InDelta(t, 2.4, got["gpu.kernel.sm.imbalance"][0].value, 1e-3)
	require.Equal(t, []point{{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid)}, 16}}, got["gpu.kernel.blocks"])

	// Block delays 0, 1, ..., 15 µs.
	require.Equal(t, []point{{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid),
		"buckets": []uint64{2, 1, 3, 5, 5, 0, 0, 0, 0,
			0, 0, 0, 0, 0, 0, 0, 0}, "sum": 120e-6}, 16}},
		roundSums(got["gpu.kernel.block.schedule.delay"]))
	// Launch latency 5 µs: bucket (2 µs, 5 µs].
	require.Equal(t, []point{{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid),
		"buckets": []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0,
			0, 0, 0, 0, 0, 0}, "sum": 5e-6}, 1}},
		roundSums(got["gpu.kernel.launch.latency"]))

	// Occupancy: the launch spans buckets base>>20 to +2 (the heavy
	// blocks' exits on SM 0, the newest: not complete). The gauge is
	// bucket +1, the newest complete: SM 0's two heavy blocks (2 warps
	// each) resident through it, 4 warps; SMs 1-3 idle in it (their light
	// blocks ended in the first bucket), 0.
	require.Len(t, got["gpu.warp.occupancy"], 4)
	for sm, p := range got["gpu.warp.occupancy"] {
		require.Equal(t, map[string]any{"gpu.sm.id": int64(sm), "pid": int64(pid)}, p.attrs)
		require.InDelta(t, map[bool]float64{true: 4, false: 0}[sm == 0], p.value, 1e-12)
	}

	require.Equal(t, []point{
		{map[string]any{"gpu.devrt.module.status": "patched"}, 1}, {map[string]any{"gpu.devrt.module.status": "unchanged"}, 0},
		{map[string]any{"gpu.devrt.module.status": "rejected"}, 1}, {map[string]any{"gpu.devrt.module.status": "not_instrumentable"}, 1},
		{map[string]any{"gpu.devrt.module.status": "failed"}, 0},
	}, got["gpu.devrt.modules"])
	require.Equal(t, []point{{map[string]any{"state": "active"}, 1}, {map[string]any{"state": "broken"}, 1}}, got["gpu.devrt.probes.regions"])
	for _, p := range got["gpu.devrt.probes.dropped"] {
		require.Zero(t, p.value, p.attrs)
	}

	// One span for the launch, on the host's clock through the offset.
	td, n := s.TakeSpans()
	require.Equal(t, 1, n)
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	require.Equal(t, "imbalanced blocks", sp.Name())
	require.Equal(t, pcommon.Timestamp(int64(base-offset)+wallMono), sp.StartTimestamp())
	require.Equal(t, pcommon.Timestamp(int64(base+8000+2_400_000-offset)+wallMono), sp.EndTimestamp())
	require.Equal(t, map[string]any{
		"gpu.cuda.kernel.name": "imbalanced", "gpu.kernel.blocks": int64(16), "gpu.kernel.threads": int64(1024),
		"gpu.kernel.sms": int64(4), "gpu.kernel.grid_id": int64(0x2a), "gpu.kernel.block.duration.min": 300e-6, "gpu.kernel.block.duration.mean": (2*2.4e-3 + 14*0.3e-3) / 16,
		"gpu.kernel.block.duration.max": 2.4e-3, "gpu.kernel.block.schedule.delay.max": 15e-6, "gpu.clock.calibrated": true,
	}, roundAttrs(sp.Attributes().AsRaw()))

	// The region file removed (module unloaded): read once more and closed;
	// the process's metrics are emitted twice more (devrt's last timings
	// may still come), then dropped.
	require.NoError(t, os.Remove(filepath.Join(dir, "gpuext-devmaps-4242-1.maps")))
	s.Poll()
	got = metrics(s.Metrics())
	require.Equal(t, []point{{map[string]any{"state": "active"}, 0}, {map[string]any{"state": "broken"}, 1}}, got["gpu.devrt.probes.regions"])
	require.Len(t, got["gpu.kernel.blocks"], 1)
	require.Len(t, metrics(s.Metrics())["gpu.kernel.blocks"], 1)
	got = metrics(s.Metrics())
	require.Empty(t, got["gpu.kernel.blocks"])

	// Processes that ended without unloading: their regions (read or
	// refused) are read a last time and removed.
	mapRegion(t, s, dir, 2)
	s.Poll()
	require.Equal(t, 1, len(s.regions))
	dead[pid], dead[4243] = true, true
	defer delete(dead, pid)
	defer delete(dead, 4243)
	s.Poll()
	require.Empty(t, s.regions)
	left, err := filepath.Glob(filepath.Join(dir, "gpuext-devmaps-*"))
	require.NoError(t, err)
	require.Empty(t, left)
}

// TestRegionBeingSized: devrt creates a region file, then sizes it; one
// seen short while young and of a live process is tried again, not dropped.
// TestRegionsOfTwoGPUs: one process, a region on each of two GPUs (devrt
// makes one per context): each GPU's blocks, SMs and imbalance are its own,
// under hw.id, and its block spans say which GPU ran them; SM 0 of one GPU
// is not SM 0 of the other.
// A span lasts what the GPU's clock says, from its converted start.
func TestSpanEnd(t *testing.T) {
	for _, tc := range []struct {
		name            string
		first, last, st uint64
		want            pcommon.Timestamp
	}{
		{"a 2 µs launch", 1_000_000, 1_002_000, 5_000_000, 5_002_000},
		{"one block, no length", 7, 7, 100, 100},
		{"an end before the start (dropped records)", 9, 3, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &proberegion.Run{FirstStart: tc.first, LastEnd: tc.last}
			require.Equal(t, tc.want, spanEnd(pcommon.Timestamp(tc.st), run))
		})
	}
}

func TestRegionsOfTwoGPUs(t *testing.T) {
	dir := t.TempDir()
	s, _ := newSource(t, dir)
	defer s.Shutdown()
	uA := []byte{0x78, 0xfd, 0x69, 0x99, 0x84, 0xed, 0xc9, 0x79, 0x19, 0xd1, 0x8b, 0xe1, 0x5d, 0xe7, 0xc0, 0x8c}
	uB := []byte{0x40, 0xc1, 0xf4, 0x41, 0xab, 0x03, 0x10, 0xa2, 0xd1, 0x95, 0x75, 0x7d, 0xf4, 0x61, 0xa8, 0xb4}
	const gpuA, gpuB = "GPU-78fd6999-84ed-c979-19d1-8be15de7c08c", "GPU-40c1f441-ab03-10a2-d195-757df461a8b4"
	patchCorpus(t, s) // the kernels' names become known
	memA := mapRegionOn(t, s, dir, 1, uA, 0)
	memB := mapRegionOn(t, s, dir, 2, uB, 1)
	require.NoError(t, probesim.Run(s.Set().Compiled(), memA, probesim.Launch{Kernel: "imbalanced", Grid: 16, Threads: 64, NSM: 4,
		Blocks: probesim.Imbalanced(base, 16, 4), GridID: 1}))
	require.NoError(t, probesim.Run(s.Set().Compiled(), memB, probesim.Launch{Kernel: "imbalanced", Grid: 8, Threads: 64, NSM: 2,
		Blocks: probesim.Imbalanced(base, 8, 2), GridID: 1}))
	// Each GPU has its own %globaltimer: B's reads 7 ms ahead of A's. The
	// same kernel is launched on B first (9 µs before its first block),
	// then on A (5 µs before); devrt timed both. Paired per GPU, each
	// latency is exact; paired per process (as before), B's call went with
	// A's first block and the other way round.
	const offB = offset + 7_000_000
	hA, hB := base-offset-5000, base-offB-9000
	s.Launch(pid, "imbalanced", 1, hB)
	s.Launch(pid, "imbalanced", 0, hA)
	s.Timed(pid, "imbalanced", 1, hB, base-offB, base-offB+100_000)
	s.Timed(pid, "imbalanced", 0, hA, base-offset, base-offset+100_000)
	s.Poll()
	later := wall.Add(proberegion.QuietClose)
	s.opts.Now = func() time.Time { return later }
	s.opts.Monotonic = func() uint64 { return uint64(later.UnixNano() - wallMono) }
	s.Poll()
	got := metrics(s.Metrics())
	sm := func(gpu string, id int64) point {
		return point{map[string]any{"gpu.sm.id": id, "pid": int64(pid), "hw.id": gpu}, 4}
	}
	require.Equal(t, []point{sm(gpuB, 0), sm(gpuB, 1), sm(gpuA, 0), sm(gpuA, 1), sm(gpuA, 2), sm(gpuA, 3)},
		got["gpu.kernel.sm.blocks"])
	blocks := map[any]float64{}
	for _, p := range got["gpu.kernel.blocks"] {
		blocks[p.attrs["hw.id"]] += p.value
	}
	require.Equal(t, map[any]float64{gpuA: 16, gpuB: 8}, blocks)
	require.Len(t, got["gpu.kernel.sm.imbalance"], 2, "one per GPU")
	lat := func(gpu string, bucket int, sum float64) point {
		b := make([]uint64, 15)
		b[bucket] = 1
		return point{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid), "hw.id": gpu,
			"buckets": b, "sum": sum}, 1}
	}
	require.Equal(t, []point{lat(gpuB, 3, 9e-6), lat(gpuA, 2, 5e-6)}, roundSums(got["gpu.kernel.launch.latency"]),
		"each GPU's launch, on its own resource: (5 µs, 10 µs] and (2 µs, 5 µs]")
	spans, n := s.TakeSpans()
	require.Equal(t, 2, n)
	type span struct {
		blocks int64
		start  pcommon.Timestamp
	}
	byGPU := map[string]span{}
	for i := 0; i < spans.ResourceSpans().Len(); i++ {
		rs := spans.ResourceSpans().At(i)
		h, ok := rs.Resource().Attributes().Get("hw.id")
		require.True(t, ok)
		sp := rs.ScopeSpans().At(0).Spans().At(0)
		b, _ := sp.Attributes().Get("gpu.kernel.blocks")
		byGPU[h.Str()] = span{b.Int(), sp.StartTimestamp()}
	}
	require.Equal(t, map[string]span{
		gpuA: {16, pcommon.Timestamp(int64(base-offset) + wallMono)},
		gpuB: {8, pcommon.Timestamp(int64(base-offB) + wallMono)},
	}, byGPU, "block counts, and each GPU's first block on the host clock through its own offset")
}

// TestRegionOfNoOrdinal: a device record whose ordinal no GPU has (a
// broken file) costs the region its launch latencies, nothing else.
func TestRegionOfNoOrdinal(t *testing.T) {
	dir := t.TempDir()
	s, _ := newSource(t, dir)
	defer s.Shutdown()
	patchCorpus(t, s)
	mem := mapRegionOn(t, s, dir, 1, []byte("fakecuda-gpu"), -7)
	require.NoError(t, probesim.Run(s.Set().Compiled(), mem, probesim.Launch{Kernel: "imbalanced", Grid: 8, Threads: 64, NSM: 2,
		Blocks: probesim.Imbalanced(base, 8, 2), GridID: 1}))
	s.Launch(pid, "imbalanced", -7, base-offset-5000)
	s.Poll()
	later := wall.Add(proberegion.QuietClose)
	s.opts.Now = func() time.Time { return later }
	s.Poll()
	got := metrics(s.Metrics())
	require.Equal(t, []point{{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid),
		"hw.id": "GPU-66616b65-6375-6461-2d67-707500000000"}, 8}}, got["gpu.kernel.blocks"])
	require.Empty(t, got["gpu.kernel.launch.latency"])
}

func TestRegionBeingSized(t *testing.T) {
	dir := t.TempDir()
	s, logs := newSource(t, dir)
	s.opts.Now = time.Now
	p := filepath.Join(dir, "gpuext-devmaps-4242-7.maps")
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	s.Poll()
	require.Empty(t, s.regions)
	require.Zero(t, s.broken)
	require.Zero(t, logs.FilterMessage("device probe region dropped").Len())
	require.NoError(t, os.Truncate(p, int64(s.Set().Layout().Size)))
	s.Poll()
	require.Len(t, s.regions, 1)
	s.Shutdown()

	// Short and old: dropped.
	s, logs = newSource(t, dir)
	s.opts.Now = func() time.Time { return time.Now().Add(time.Minute) }
	require.NoError(t, os.Truncate(p, 100))
	s.Poll()
	require.Empty(t, s.regions)
	require.Equal(t, int64(1), s.broken)
	require.Equal(t, 1, logs.FilterMessage("device probe region dropped").Len())
}

func roundSums(ps []point) []point {
	for _, p := range ps {
		p.attrs["sum"] = round(p.attrs["sum"].(float64))
	}
	return ps
}

func roundAttrs(m map[string]any) map[string]any {
	for k, v := range m {
		if f, ok := v.(float64); ok {
			m[k] = round(f)
		}
	}
	return m
}

// round drops float noise below 1e-15 s.
func round(f float64) float64 { return float64(int64(f*1e15+0.5)) / 1e15 }

// TestServerPatchesCorpus: devrt's request for every module of the PTX
// corpus (nvcc and Triton, from an H200), over the receiver's injection
// socket with the protocol devrt speaks, is answered PATCHED with every
// kernel, the region size of the probe set and PTX that parses; the second
// request of a module comes from the cache.
func TestServerPatchesCorpus(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "gxsrv")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	s, _ := newSource(t, dir)
	s.Start()
	defer s.Shutdown()
	files, err := filepath.Glob("../../../../devrt/ptx/testdata/corpus/*.ptx")
	require.NoError(t, err)
	require.Len(t, files, 7)
	ask := func(src []byte, kernels []string) *devrtinject.Response {
		c, err := net.Dial("unix", filepath.Join(dir, devrtinject.SocketName))
		require.NoError(t, err)
		defer c.Close()
		req, err := devrtinject.AppendRequest(nil, &devrtinject.Request{PID: pid, SMArch: 90, Image: devrtinject.ImagePTX,
			Hash: sha256.Sum256(src), PTX: src, Kernels: kernels, Flags: devrtinject.ReqVars})
		require.NoError(t, err)
		_, err = c.Write(req)
		require.NoError(t, err)
		resp, err := devrtinject.ReadResponse(c)
		require.NoError(t, err)
		return resp
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		m, err := ptx.Parse(string(src))
		require.NoError(t, err)
		resp := ask(src, m.KernelNames())
		require.Equal(t, devrtinject.StatusPatched, resp.Status, "%s: %s", f, resp.Reason)
		require.ElementsMatch(t, m.KernelNames(), resp.Kernels, f)
		// nvcc's kernels.cu has a __device__ and a __constant__ variable
		require.Equal(t, strings.HasPrefix(filepath.Base(f), "nvcc_"), resp.Flags&devrtinject.RespVars != 0, f)
		require.Equal(t, s.Set().Layout().Size, resp.SharedSize)
		_, err = ptx.Parse(string(resp.PTX))
		require.NoError(t, err, f)
		again := ask(src, m.KernelNames())
		require.Equal(t, resp.PTX, again.PTX)
		require.NotZero(t, again.Flags&devrtinject.RespCached, "the second answer is the cache's")
	}
	st := s.ServerStats()
	require.Equal(t, uint64(14), st.Requests)
	require.Equal(t, uint64(14), st.Patched)
	require.Equal(t, uint64(7), st.CacheHits)
	require.Equal(t, uint64(7), st.Patches)
}

// TestLatencyFlushedWhenRegionGoes: paired launches wait for a timed
// launch proberegion.OffsetSpan after them (their offset is the least of
// the timed launches' near them, final once those are seen); when the
// process's region goes (devrt unloaded the module) none will come, and
// they are reported then, through the nearest timed launch's offset.
func TestLatencyFlushedWhenRegionGoes(t *testing.T) {
	dir := t.TempDir()
	s, _ := newSource(t, dir)
	defer s.Shutdown()
	patchCorpus(t, s)
	mem := mapRegion(t, s, dir, 1)
	run := func(at uint64, grid uint64) {
		require.NoError(t, probesim.Run(s.Set().Compiled(), mem, probesim.Launch{Kernel: "imbalanced", Grid: 16, Threads: 64, NSM: 4,
			Blocks: probesim.Imbalanced(at, 16, 4), GridID: grid}))
	}
	h1, h2 := base-offset-5000, base+2_000_000-offset-7000
	s.opts.Monotonic = func() uint64 { return h2 } // the host's clock: no pair is MaxHold old
	s.Launch(pid, "imbalanced", -1, h1)
	s.Timed(pid, "imbalanced", -1, h1, base-offset, base-offset+100_000)
	run(base, 1)
	s.Launch(pid, "imbalanced", -1, h2)
	run(base+2_000_000, 2)
	s.Poll()
	lat := func(buckets map[int]uint64, sum float64, n float64) []point {
		b := make([]uint64, 15)
		for i, c := range buckets {
			b[i] = c
		}
		return []point{{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid),
			"buckets": b, "sum": sum}, n}}
	}
	require.Empty(t, metrics(s.Metrics())["gpu.kernel.launch.latency"], "both wait for a timed launch OffsetSpan after them")
	require.NoError(t, os.Remove(filepath.Join(dir, "gpuext-devmaps-4242-1.maps")))
	s.Poll()
	require.Equal(t, lat(map[int]uint64{2: 1, 3: 1}, 12e-6, 2), roundSums(metrics(s.Metrics())["gpu.kernel.launch.latency"]),
		"reported when the region went: 5 and 7 µs")
}

// TestLatencyAfterRegionCloses: devrt's timings come a poll behind the
// region's records, so a program that exits right after its last launch
// has its region read for the last time before the timing that settles
// the launch's offset. What the matcher releases then is reported at
// once; nothing reads it later. And at shutdown the launches waiting for
// their offset are reported with the nearest.
func TestLatencyAfterRegionCloses(t *testing.T) {
	lat := func(s *Source) []point {
		return roundSums(metrics(s.Metrics())["gpu.kernel.launch.latency"])
	}
	want := []point{{map[string]any{"gpu.cuda.kernel.name": "imbalanced", "pid": int64(pid),
		"buckets": []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "sum": 5e-6}, 1}}
	start := func(t *testing.T, dir string) (*Source, uint64) {
		s, _ := newSource(t, dir)
		patchCorpus(t, s)
		mem := mapRegion(t, s, dir, 1)
		h := base - offset - 5000
		s.opts.Monotonic = func() uint64 { return h } // the host's clock: no pair is MaxHold old
		s.Launch(pid, "imbalanced", -1, h)            // not timed yet: the matcher has no offset
		require.NoError(t, probesim.Run(s.Set().Compiled(), mem, probesim.Launch{Kernel: "imbalanced", Grid: 16, Threads: 64, NSM: 4,
			Blocks: probesim.Imbalanced(base, 16, 4), GridID: 1}))
		return s, h
	}
	t.Run("region closed", func(t *testing.T) {
		dir := t.TempDir()
		s, h := start(t, dir)
		defer s.Shutdown()
		s.Poll() // paired, no offset to report it with
		require.NoError(t, os.Remove(filepath.Join(dir, "gpuext-devmaps-4242-1.maps")))
		s.Poll() // the last read
		require.Empty(t, lat(s))
		s.Timed(pid, "imbalanced", -1, h, base-offset, base-offset+100_000)
		require.Equal(t, want, lat(s), "the timing a poll later settles it")
	})
	t.Run("shutdown", func(t *testing.T) {
		dir := t.TempDir()
		s, h := start(t, dir)
		s.Timed(pid, "imbalanced", -1, h, base-offset, base-offset+100_000)
		s.Poll() // paired and calibrated: waits for a timed launch OffsetSpan after it
		require.Empty(t, lat(s))
		s.Shutdown()
		require.Equal(t, want, lat(s), "reported at shutdown")
	})
}

// TestOccupancyFromCopyTimes: the source hands the tracker devrt's copy
// times (the device record after the region) and its own clock, so a
// program's first burst of work, read from a region the source read empty
// 20 ms before, gives its occupancy once the host's clock says its bucket
// is over, with no later work; without them (the record's times zero) the
// tracker could not know the first read's GPU time nor the bucket's end
// and gives none.
func TestOccupancyFromCopyTimes(t *testing.T) {
	for _, times := range []bool{true, false} {
		t.Run(map[bool]string{true: "copy times", false: "none"}[times], func(t *testing.T) {
			dir := t.TempDir()
			s, _ := newSource(t, dir)
			mem := mapRegionOn(t, s, dir, 1, []byte("uuid-of-the-gpu!"), 0)
			size := (s.Set().Layout().Size + 4095) &^ 4095
			f, err := os.OpenFile(filepath.Join(dir, "gpuext-devmaps-4242-1.maps"), os.O_RDWR, 0)
			require.NoError(t, err)
			defer f.Close()
			// poll at host time mono, devrt's last copy begun 0.5 ms before
			poll := func(mono uint64) {
				d := devrtinject.DeviceInfo{RegionLen: size, HasUUID: true, UUID: [16]byte([]byte("uuid-of-the-gpu!"))}
				if times {
					d.CopyStartNS, d.CopyEndNS = mono-500_000, mono-400_000
				}
				_, err := f.WriteAt(d.Encode(), int64(size)+devrtinject.DeviceTrailer-devrtinject.DeviceInfoSize)
				require.NoError(t, err)
				s.opts.Monotonic = func() uint64 { return mono }
				s.Poll()
			}
			mono := base - offset
			poll(mono - 20_000_000) // empty
			blocks := []probesim.Block{{Block: 0, SM: 1, Start: base, End: base + 300_000}}
			require.NoError(t, probesim.Run(s.Set().Compiled(), mem, probesim.Launch{Kernel: "k", Grid: 1, Threads: 64, NSM: 4, Blocks: blocks}))
			poll(mono + 20_000_000) // the burst's one bucket, the newest: not over
			poll(mono + 40_000_000) // by the host's clock it is
			got := metrics(s.Metrics())["gpu.warp.occupancy"]
			if !times {
				require.Empty(t, got)
				return
			}
			want := float64(2*300_000-probesim.WarpGap) / proberegion.BucketNS // its 2 warps' residence in the bucket, from warp 0's entry
			require.Len(t, got, 1)
			require.Equal(t, map[string]any{"gpu.sm.id": int64(1), "pid": int64(pid), "hw.id": got[0].attrs["hw.id"]}, got[0].attrs)
			require.InDelta(t, want, got[0].value, 1e-12)
		})
	}
}
