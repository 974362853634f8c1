package devrttest

// Device probe injection (devrt/src/inject.c) against the fake driver and
// the collector's injection server (internal/devrtinject): the workload's
// "inject" scenario loads a PTX module twice, a fat binary of PTX and SASS,
// a cubin, a library and (through the runtime) the fat binary again, and
// launches each kernel N times through five launch calls. The fake driver
// counts launches by the handle it was given (FAKECUDA_LAUNCH_FILE), so the
// tests see where launches went, and what devrt wrote into each patched
// module's __gpuext_shared.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject/injecttest"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// The inject scenario's modules, as workload.c has them.
const (
	vecaddPTX = "//\n// fakecuda workload: one kernel, no body worth running\n//\n" +
		".version 8.0\n.target sm_90\n.address_size 64\n\n" +
		".visible .entry _Z6vecAddPfS_S_i(\n\t.param .u64 a,\n\t.param .u64 b,\n\t.param .u64 c,\n" +
		"\t.param .u32 n\n)\n{\n\tret;\n}\n"
	scalePTX = "//\n// fakecuda workload: scale, the PTX entry of a fat binary\n//\n" +
		".version 8.0\n.target sm_80\n.address_size 64\n\n" +
		".visible .entry _Z5scalePfi(\n\t.param .u64 x,\n\t.param .u32 n\n)\n{\n\tret;\n}\n"
	libPTX = "//\n// fakecuda workload: a Triton-style library kernel\n//\n" +
		".version 8.0\n.target sm_90a\n.address_size 64\n\n" +
		".visible .entry add_kernel(\n\t.param .u64 x,\n\t.param .u64 y\n)\n.maxntid 128, 1, 1\n{\n\tret;\n}\n"
	injectN = 10
)

// launched is a line of the fake driver's launch file.
type launched struct {
	Module   string `json:"module"`
	Lib      bool   `json:"lib"`
	Unloaded bool   `json:"unloaded"`
	Name     string `json:"name"`
	Handle   string `json:"handle"`
	Launches int    `json:"launches"`
	Patched  bool   `json:"patched"`
	Shared   string `json:"shared"`
	Device   int    `json:"shared_device"` // the device allocation it points into
	// Contexts: the module's global in each context it was asked for in,
	// and the launches of its kernels there.
	Contexts []struct {
		Ctx      string `json:"ctx"`
		Shared   string `json:"shared"`
		Launches int    `json:"launches"`
	} `json:"contexts"`
	// Vars: the module's variables and their device pointers (0x0:
	// never asked for).
	Vars map[string]string `json:"vars"`
}

// injectRun is one run of the inject scenario.
type injectRun struct {
	raw      string
	handles  map[string]string // what the program got
	launches []launched
	events   []devrtinject.Event
	calls    []ev.Event
	dir      string
}

// runInject runs "workload inject N" with devrt (or without, if !devrt),
// its ring in dir and env added.
func runInject(t *testing.T, h *harness, devrt bool, dir string, env ...string) *injectRun {
	t.Helper()
	return runInjectScenario(t, h, devrt, dir, "inject", env...)
}

func runInjectScenario(t *testing.T, h *harness, devrt bool, dir, scenario string, env ...string) *injectRun {
	t.Helper()
	lf := filepath.Join(t.TempDir(), "launches.json")
	env = append(env, "FAKECUDA_LAUNCH_FILE="+lf)
	if devrt {
		env = append(env, "GPUEXT_DEVRT_DIR="+dir)
	}
	cmd, r := h.command(opts{devrt: devrt, env: env}, scenario, strconv.Itoa(injectN))
	out, err := cmd.Output()
	require.NoError(t, err, "workload: %s", out)
	h.finish(r, out)
	ir := &injectRun{raw: r.raw, dir: dir}
	var m struct {
		Handles map[string]string `json:"handles"`
	}
	require.NoError(t, json.Unmarshal(out, &m))
	ir.handles = m.Handles
	f, err := os.Open(lf)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l launched
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		ir.launches = append(ir.launches, l)
	}
	if devrt {
		paths, err := filepath.Glob(filepath.Join(dir, "gpuext-devrt-*.ring"))
		require.NoError(t, err)
		require.Len(t, paths, 1)
		ir.readRing(t, paths[0])
		maps, err := filepath.Glob(filepath.Join(dir, "gpuext-devmaps-*.maps"))
		require.NoError(t, err)
		require.Empty(t, maps, "regions are removed with their modules")
	}
	return ir
}

func (ir *injectRun) readRing(t *testing.T, path string) { ir.readRingTB(t, path) }

func (ir *injectRun) readRingTB(t testing.TB, path string) {
	t.Helper()
	rr, err := devring.Open(path)
	require.NoError(t, err)
	defer rr.Close()
	for {
		n, err := rr.Drain(func(b []byte) error {
			if binary.LittleEndian.Uint16(b) == devrtinject.KindInject {
				var e devrtinject.Event
				if err := devrtinject.DecodeEvent(b, &e); err != nil {
					return err
				}
				ir.events = append(ir.events, e)
				return nil
			}
			if ev.Kind(binary.LittleEndian.Uint16(b)) == ev.KindGPUExec {
				return nil
			}
			var e ev.Event
			if err := ev.Decode(b, &e); err != nil {
				return err
			}
			ir.calls = append(ir.calls, e)
			return nil
		})
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
}

// launchesOf sums the launches of kernel name: of the program's handles
// (original) and of the others (devrt's patched twins).
// launchesOfEach is launchesOf each name of want, as [orig, other].
func (ir *injectRun) launchesOfEach(want map[string][2]int) map[string][2]int {
	got := map[string][2]int{}
	for name := range want {
		orig, other := ir.launchesOf(name)
		got[name] = [2]int{orig, other}
	}
	return got
}

func (ir *injectRun) launchesOf(name string) (orig, other int) {
	mine := map[string]bool{}
	for _, h := range ir.handles {
		mine[h] = true
	}
	for _, l := range ir.launches {
		if l.Name != name {
			continue
		}
		if mine[l.Handle] {
			orig += l.Launches
		} else {
			other += l.Launches
		}
	}
	return orig, other
}

// sameRun is what must not change when devrt patches modules: the
// program's calls, results and launches (not its handles' values, which
// count the driver's handles, devrt's twins included).
func sameRun(t *testing.T, raw string) map[string]any {
	m := comparable(t, raw)
	delete(m, "handles")
	return m
}

// shortSocketDir is a directory whose socket path fits sun_path.
func shortSocketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "inj")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func serve(t *testing.T, dir string, p devrtinject.Patcher) *devrtinject.Server {
	t.Helper()
	s, err := devrtinject.Listen(devrtinject.Config{
		Path: filepath.Join(dir, devrtinject.SocketName), Patcher: p})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func sum16(s string) [16]byte {
	full := sha256.Sum256([]byte(s))
	var out [16]byte
	copy(out[:], full[:16])
	return out
}

// wantRecord is a module load's expected kind-8 record; module "" is not
// compared (a handle the program never saw).
type wantRecord struct {
	api     ev.API
	outcome devrtinject.Outcome
	reason  devrtinject.Reason
	flags   uint16
	module  string
	ptx     string
}

// checkRecords: ir's injection records are wants, in order; each patched
// one with its PTX's length and hash, one kernel, a twin and a region of
// sharedSize bytes.
func checkRecords(t *testing.T, ir *injectRun, sharedSize uint64, wants []wantRecord) {
	t.Helper()
	require.Len(t, ir.events, len(wants))
	for i, w := range wants {
		e := ir.events[i]
		require.Equal(t, uint16(w.api), e.API, "event %d", i)
		require.Equal(t, w.outcome, e.Outcome, "event %d", i)
		require.Equal(t, w.reason, e.Reason, "event %d", i)
		require.Equal(t, w.flags, e.Flags, "event %d", i)
		if w.module != "" {
			require.Equal(t, w.module, "0x"+strconv.FormatUint(e.Module, 16), "event %d", i)
		}
		require.Equal(t, uint32(90), e.SMArch)
		require.Equal(t, uint16(ev.SourceDevrt), e.Source)
		require.NotZero(t, e.TotalNS)
		if w.outcome != devrtinject.OutPatched {
			require.Zero(t, e.Patched)
			require.Zero(t, e.PTXLen)
			continue
		}
		require.Equal(t, uint64(len(w.ptx)), e.PTXLen, "event %d", i)
		require.Equal(t, sum16(w.ptx), e.SHA256, "event %d", i)
		require.Equal(t, uint32(1), e.Kernels)
		require.NotZero(t, e.Patched)
		require.NotZero(t, e.SharedDptr)
		require.Equal(t, sharedSize, e.SharedSize)
		require.NotZero(t, e.AskNS)
		require.LessOrEqual(t, e.AskNS+e.LoadNS, e.TotalNS)
	}
}

func TestInjectPatched(t *testing.T) {
	h := newHarness(t)
	plain := runInject(t, h, false, "")
	dir := shortSocketDir(t)
	p := &injecttest.Patcher{SharedSize: 5000}
	srv := serve(t, dir, p)
	ir := runInject(t, h, true, dir)

	// The program did and got the same.
	require.Equal(t, sameRun(t, plain.raw), sameRun(t, ir.raw))

	// One record per module load, in order. The first patched module's
	// region is every later one's (one context, one probe set).
	shared := uint16(devrtinject.FlagRegionShared)
	checkRecords(t, ir, 8192, []wantRecord{ // 5000 bytes, in whole pages
		{ev.APICuModuleLoadData, devrtinject.OutPatched, devrtinject.ReasonNone, 0, ir.handles["m1"], vecaddPTX},
		{ev.APICuModuleLoadDataEx, devrtinject.OutPatched, devrtinject.ReasonNone, devrtinject.FlagCollectorCache | shared, ir.handles["m2"], vecaddPTX},
		{ev.APICuModuleLoadFatBinary, devrtinject.OutPatched, devrtinject.ReasonNone, shared, ir.handles["m3"], scalePTX},
		{ev.APICuModuleLoadData, devrtinject.OutNotInstrumentable, devrtinject.ReasonSASSOnly, 0, ir.handles["m4"], ""},
		{ev.APICuLibraryLoadData, devrtinject.OutPatched, devrtinject.ReasonNone, devrtinject.FlagLibrary | shared, ir.handles["lib"], libPTX},
		{ev.APICuModuleLoadData, devrtinject.OutPatched, devrtinject.ReasonNone, devrtinject.FlagCollectorCache | shared, "", scalePTX},
	})
	// Three distinct PTX: three patches, two answers from the cache.
	require.Equal(t, int64(3), p.Calls())
	st := srv.Stats()
	require.Equal(t, devrtinject.Stats{Requests: 5, Patched: 5, CacheHits: 2, Patches: 3,
		PatchNanos: st.PatchNanos}, st)

	// Every launch of a patched kernel went to its twin (the fake driver
	// keeps no kernels for the cubin, whose launches it does not count).
	for _, k := range []struct {
		name        string
		orig, other int
	}{
		{"_Z6vecAddPfS_S_i", 0, 2 * injectN}, // two modules, cuLaunchKernel and _ptsz
		{"_Z5scalePfi", 0, 2 * injectN},      // cuLaunchKernelEx, and the runtime's
		{"add_kernel", 0, injectN},           // the library's CUfunction
	} {
		orig, other := ir.launchesOf(k.name)
		require.Equal(t, k.orig, orig, k.name)
		require.Equal(t, k.other, other, k.name)
	}

	// Each twin's __gpuext_shared holds the one region's device pointer,
	// device memory of the region's size; every module was unloaded.
	dptrs := map[string]bool{}
	for _, e := range ir.events {
		if e.Outcome == devrtinject.OutPatched {
			dptrs["0x"+strconv.FormatUint(e.SharedDptr, 16)] = true
		}
	}
	require.Len(t, dptrs, 1, "one region for the process's context and probe set")
	twins := 0
	for _, l := range ir.launches {
		require.True(t, l.Unloaded, "%+v", l)
		if !l.Patched {
			require.Equal(t, "0x0", l.Shared)
			continue
		}
		twins++
		require.True(t, dptrs[l.Shared], "%+v", l)
		require.Equal(t, 8192, l.Device, "%+v", l)
	}
	require.Equal(t, 5, twins)

	// Records name the program's handles, never the twins.
	mine := map[uint64]bool{}
	for _, hs := range ir.handles {
		v, err := strconv.ParseUint(hs[2:], 16, 64)
		require.NoError(t, err)
		mine[v] = true
	}
	launchRecords := 0
	for i := range ir.calls {
		c := &ir.calls[i]
		switch c.API {
		case ev.APICuLaunchKernel, ev.APICuLaunchCooperativeKernel:
			require.True(t, mine[c.Args[0]], "%x", c.Args[0])
			launchRecords++
		case ev.APICuLaunchKernelEx:
			require.True(t, mine[c.Args[1]], "%x", c.Args[1])
			launchRecords++
		}
	}
	// The program's five launch calls; the runtime's driver launch inside
	// its reported cudaLaunchKernel is not reported (GPUEXT_CLASS_NESTED).
	require.Equal(t, 5*injectN, launchRecords)
}

// TestInjectFiles: modules loaded from files (cuModuleLoad,
// cuLibraryLoadFromFile) are patched from what the files hold: PTX as it
// is, and a cubin of a Triton cache entry from the .ptx beside it (as
// PyTorch's static launcher loads inductor's kernels); a cubin with
// nothing beside it stays SASS-only, and a load the driver refuses (no
// such file) is the program's own error, with no record.
func TestInjectFiles(t *testing.T) {
	h := newHarness(t)
	// No Triton cache to search: only what is beside a cubin counts.
	env := []string{"TRITON_CACHE_DIR=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
	plain := runInjectScenario(t, h, false, "", "inject-files", env...)
	dir := shortSocketDir(t)
	p := &injecttest.Patcher{SharedSize: 64}
	serve(t, dir, p)
	ir := runInjectScenario(t, h, true, dir, "inject-files", env...)
	require.Equal(t, sameRun(t, plain.raw), sameRun(t, ir.raw))

	shared := uint16(devrtinject.FlagRegionShared)
	checkRecords(t, ir, 4096, []wantRecord{
		{ev.APICuModuleLoad, devrtinject.OutPatched, devrtinject.ReasonNone, 0, ir.handles["m1"], vecaddPTX},
		{ev.APICuModuleLoad, devrtinject.OutPatched, devrtinject.ReasonNone, shared, ir.handles["m2"], scalePTX},
		{ev.APICuModuleLoad, devrtinject.OutNotInstrumentable, devrtinject.ReasonSASSOnly, 0, ir.handles["m3"], ""},
		{ev.APICuLibraryLoadFromFile, devrtinject.OutPatched, devrtinject.ReasonNone, devrtinject.FlagLibrary | shared, ir.handles["lib"], libPTX},
	})
	// The file loads were reported as calls, the failed one with its
	// result.
	loads := map[int32]int{}
	for _, c := range ir.calls {
		if c.API == ev.APICuModuleLoad || c.API == ev.APICuLibraryLoadFromFile {
			loads[c.Result]++
		}
	}
	require.Equal(t, map[int32]int{0: 4, 301: 1}, loads)

	// Launches of the patched kernels ran their twins; the lone cubin's
	// scale ran its original.
	for _, k := range []struct {
		name        string
		orig, other int
	}{
		{"_Z6vecAddPfS_S_i", 0, injectN},
		{"_Z5scalePfi", injectN, injectN},
		{"add_kernel", 0, injectN},
	} {
		orig, other := ir.launchesOf(k.name)
		require.Equal(t, k.orig, orig, k.name)
		require.Equal(t, k.other, other, k.name)
	}
	require.Equal(t, int64(3), p.Calls())
}

// TestInjectTwinShared: kernels set up for all the shared memory there is
// (227 KiB), launched with 64 KiB, once with all of it, then with 64 KiB
// again. A twin whose probes take static shared memory cannot have all of
// it: it takes the rest (the setting is not refused), runs the launches
// that fit, and the one that does not is made again with the original,
// which every later launch of the module runs. The program sees the same.
// With 1-D twins (every launch of the scenario is 1-D) the same happens to
// them: the setting's retry is theirs too.
func TestInjectTwinShared(t *testing.T) {
	h := newHarness(t)
	plain := runInjectScenario(t, h, false, "", "inject-shared")
	for _, tc := range []struct {
		name         string
		static       int
		grid1D       bool
		twins, origs int
		refused      int
	}{
		{"probes without shared memory", 0, false, 2*injectN + 1, 0, 0},
		{"probes with 1 KiB of shared memory", 1024, false, injectN, injectN + 1, 2},
		{"probes with 1 KiB of shared memory, 1-D twins", 1024, true, injectN, injectN + 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortSocketDir(t)
			serve(t, dir, &injecttest.Patcher{SharedSize: 64, StaticShared: tc.static, Grid1D: tc.grid1D})
			ir := runInjectScenario(t, h, true, dir, "inject-shared")
			require.Equal(t, sameRun(t, plain.raw), sameRun(t, ir.raw))
			for _, name := range []string{"_Z6vecAddPfS_S_i", "add_kernel"} {
				orig, other := ir.launchesOf(name)
				_, g1 := ir.launchesOf(name + devrtinject.Grid1DSuffix)
				require.Equal(t, tc.origs, orig, name)
				if tc.grid1D {
					other, g1 = g1, other // the 1-D twin ran what the twin did
				}
				require.Equal(t, tc.twins, other, name)
				require.Zero(t, g1, name)
			}
			var patched, refused int
			for _, e := range ir.events {
				switch e.Outcome {
				case devrtinject.OutPatched:
					patched++
				case devrtinject.OutFailed:
					require.Equal(t, devrtinject.ReasonRefused, e.Reason)
					require.Equal(t, "launch", e.Text, "the setting was taken")
					refused++
				}
			}
			require.Equal(t, 2, patched)
			require.Equal(t, tc.refused, refused)
		})
	}
}

// TestInjectRegionMirror: the region is device memory (the fake driver
// backs it, and each launch of a patched kernel adds one to a word of it,
// as a probe would); devrt starts it with the collector's initial
// contents and copies it into the file the collector reads, periodically
// while the modules stay loaded and once more at the last unload.
func TestInjectRegionMirror(t *testing.T) {
	h := newHarness(t)
	dir := shortSocketDir(t)
	const counter = 2048 // the word the fake "probe" adds to
	hdr := make([]byte, 128)
	for i := range hdr {
		hdr[i] = byte(i + 1)
	}
	p := &injecttest.Patcher{SharedSize: 5000, Init: []devrtinject.InitRange{
		{Offset: 0, Data: hdr}, {Offset: 4096, Data: []byte("tail-hdr")}}}
	serve(t, dir, p)

	// Watch for the region file; keep it open (its contents outlive the
	// unlink at the last unload) and note the counter while it exists.
	type seen struct {
		f       *os.File
		first   []byte // the file's contents when it was first seen
		maxLive uint64 // the counter in the file while the modules were loaded
	}
	done := make(chan struct{})
	got := make(chan seen, 1)
	go func() {
		var s seen
		defer func() { got <- s }()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			if s.f == nil {
				paths, _ := filepath.Glob(filepath.Join(dir, "gpuext-devmaps-*.maps"))
				if len(paths) == 0 {
					continue
				}
				f, err := os.Open(paths[0])
				if err != nil {
					continue
				}
				s.f = f
				s.first, _ = io.ReadAll(f)
			}
			if _, err := os.Stat(s.f.Name()); err != nil {
				continue // unloaded: the final copy is read after the run
			}
			var w [8]byte
			if _, err := s.f.ReadAt(w[:], counter); err == nil {
				s.maxLive = max(s.maxLive, binary.LittleEndian.Uint64(w[:]))
			}
		}
	}()
	runStart := monoNow(t)
	ir := runInject(t, h, true, dir, "FAKECUDA_DEVICE_BACKING=1",
		"FAKECUDA_PROBE_COUNTER="+strconv.Itoa(counter),
		"GPUEXT_DEVRT_PROBE_SYNC_MS=5", "WORKLOAD_INJECT_HOLD_MS=300")
	close(done)
	s := <-got
	require.NotNil(t, s.f, "the region file was seen")
	defer s.f.Close()
	// Published whole: never seen shorter or without its initial contents.
	require.Equal(t, 8192+devrtinject.DeviceTrailer, len(s.first), "the region file's size when first seen")
	d, ok, err := devrtinject.ReadDeviceInfo(bytes.NewReader(s.first), int64(len(s.first)))
	require.NoError(t, err)
	require.True(t, ok, "its device record")
	require.Equal(t, devrtinject.DeviceInfo{RegionLen: 8192, UUID: [16]byte([]byte("fakecuda-gpu\x00\x00\x00\x00")),
		HasUUID: true, Ctx: d.Ctx, CopyStartNS: d.CopyStartNS, CopyEndNS: d.CopyEndNS}, d)
	require.NotZero(t, d.Ctx)
	require.Equal(t, hdr, s.first[:128], "the initial contents when first seen")
	require.Equal(t, []byte("tail-hdr"), s.first[4096:4104])
	left, err := filepath.Glob(filepath.Join(dir, ".gpuext-devmaps-*"))
	require.NoError(t, err)
	require.Empty(t, left, "no region left under its creation name")

	// Launches of the patched twins, the ones the "probe" counted.
	twins := 0
	for _, k := range []string{"_Z6vecAddPfS_S_i", "_Z5scalePfi", "add_kernel"} {
		_, other := ir.launchesOf(k)
		twins += other
	}
	require.Equal(t, 5*injectN, twins)

	b := make([]byte, 8192)
	n, err := s.f.ReadAt(b, 0)
	require.NoError(t, err)
	require.Equal(t, 8192, n, "5000 bytes, in whole pages")
	require.Equal(t, hdr, b[:128], "initial contents")
	require.Equal(t, []byte("tail-hdr"), b[4096:4104])
	require.Equal(t, uint64(twins), binary.LittleEndian.Uint64(b[counter:]), "the copy at the last unload")
	require.Equal(t, uint64(twins), s.maxLive, "a periodic copy while the modules were loaded")
	for i, c := range b {
		if i < 128 || i >= 4096 && i < 4104 || i >= counter && i < counter+8 {
			continue
		}
		require.Zero(t, c, "byte %d", i)
	}
	// The last copy's times, in the device record: issued, then seen
	// complete, both during the run (CLOCK_MONOTONIC, as the collector's).
	whole := make([]byte, 8192+devrtinject.DeviceTrailer)
	_, err = s.f.ReadAt(whole, 0)
	require.NoError(t, err)
	last, ok, err := devrtinject.DecodeDeviceInfo(whole[len(whole)-devrtinject.DeviceInfoSize:], int64(len(whole)))
	require.NoError(t, err)
	require.True(t, ok)
	require.NotZero(t, last.CopyStartNS, "a copy noted")
	require.LessOrEqual(t, last.CopyStartNS, last.CopyEndNS)
	require.Less(t, runStart, last.CopyStartNS, "noted during the run")
	require.Less(t, last.CopyEndNS, monoNow(t), "noted during the run")
	require.Greater(t, last.CopyStartNS, d.CopyStartNS, "later than the copies before the file was first seen")
}

// monoNow is CLOCK_MONOTONIC in ns, devrt's clock for its copies' times.
func monoNow(t *testing.T) uint64 {
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts))
	return uint64(ts.Nano())
}

// TestInjectLibraryContexts: a library's CUkernel launched in two contexts,
// as the CUDA runtime launches a program's kernels on two GPUs, and the
// CUfunction cuKernelGetFunction gives in each. The twin is bound in each
// context to that context's own region (before, only in the context of the
// load: elsewhere its global stayed 0 and the probes did nothing), each
// region counts exactly its context's launches, and each region file names
// its device. The second context's function (its own handle there) is
// redirected to the twin's function in that context: before, it ran the
// original.
func TestInjectLibraryContexts(t *testing.T) {
	h := newHarness(t)
	dir := shortSocketDir(t)
	const counter = 2048 // the word the fake "probe" adds to
	serve(t, dir, &injecttest.Patcher{SharedSize: 5000})

	// Region files are removed at the unload: keep each open once seen.
	done := make(chan struct{})
	got := make(chan map[string]*os.File, 1)
	go func() {
		files := map[string]*os.File{}
		defer func() { got <- files }()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			paths, _ := filepath.Glob(filepath.Join(dir, "gpuext-devmaps-*.maps"))
			for _, p := range paths {
				if files[p] == nil {
					if f, err := os.Open(p); err == nil {
						files[p] = f
					}
				}
			}
		}
	}()
	ir := runInjectScenario(t, h, true, dir, "inject-contexts", "FAKECUDA_DEVICE_BACKING=1",
		"FAKECUDA_PROBE_COUNTER="+strconv.Itoa(counter),
		"GPUEXT_DEVRT_PROBE_SYNC_MS=5", "WORKLOAD_INJECT_HOLD_MS=200")
	close(done)
	files := <-got
	byCtx := map[uint64]uint64{}
	for _, f := range files {
		defer f.Close()
		b, err := io.ReadAll(f)
		require.NoError(t, err)
		require.Len(t, b, 8192+devrtinject.DeviceTrailer, "the region's pages, then the device record's")
		d, ok, err := devrtinject.ReadDeviceInfo(bytes.NewReader(b), int64(len(b)))
		require.NoError(t, err)
		require.True(t, ok, "a device record")
		require.Equal(t, uint64(8192), d.RegionLen)
		require.Equal(t, int32(0), d.Device)
		require.Equal(t, "GPU-66616b65-6375-6461-2d67-707500000000", d.HWID(), `"fakecuda-gpu"`)
		byCtx[d.Ctx] = binary.LittleEndian.Uint64(b[counter:])
	}
	ctx := func(name string) uint64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(ir.handles[name], "0x"), 16, 64)
		require.NoError(t, err, name)
		return v
	}
	require.NotEqual(t, ctx("fo"), ctx("fp"), "a function per context")
	require.Equal(t, map[uint64]uint64{ctx("primary"): 3 * injectN, ctx("other"): 4 * injectN}, byCtx,
		"one region per context, each with that context's launches of the twin")
	orig, twin := ir.launchesOf("add_kernel")
	require.Equal(t, [2]int{0, 7 * injectN}, [2]int{orig, twin}, "every launch ran the twin")
	devs := map[int32]int{}
	for _, c := range ir.calls {
		if c.API == ev.APICuLaunchKernel {
			devs[c.Device]++
		}
	}
	require.Equal(t, map[int32]int{0: 7 * injectN}, devs,
		"with patched kernels live every launch record names its device (the fake's contexts are all device 0)")

	var loads, binds []devrtinject.Event
	for _, e := range ir.events {
		if e.Flags&devrtinject.FlagOtherContext != 0 {
			binds = append(binds, e)
		} else {
			loads = append(loads, e)
		}
	}
	require.Len(t, loads, 1)
	require.Equal(t, devrtinject.OutPatched, loads[0].Outcome)
	require.Len(t, binds, 1, "one binding, when the second context's function was asked for")
	require.Equal(t, devrtinject.OutPatched, binds[0].Outcome)
	require.Equal(t, uint16(devrtinject.FlagLibrary|devrtinject.FlagOtherContext), binds[0].Flags)
	require.Equal(t, loads[0].Module, binds[0].Module)
	require.Equal(t, loads[0].Patched, binds[0].Patched)
	require.NotZero(t, binds[0].SharedDptr)
	require.NotEqual(t, loads[0].SharedDptr, binds[0].SharedDptr, "the second context's own region")
}

// renamer answers PATCHED with kernels that are not in the module.
type renamer struct{ injecttest.Patcher }

func (r *renamer) Patch(ctx context.Context, m *devrtinject.Module) (devrtinject.Result, error) {
	res, err := r.Patcher.Patch(ctx, m)
	if res.Status == devrtinject.StatusPatched {
		res.Kernels = []string{"missing_" + m.Kernels[0]}
	}
	return res, err
}

// listener serves raw connections with fn, as a broken collector would.
func listener(t *testing.T, dir string, fn func(net.Conn)) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(dir, devrtinject.SocketName))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go fn(c)
		}
	}()
}

func TestInjectFailsOpen(t *testing.T) {
	h := newHarness(t)
	plain := runInject(t, h, false, "")
	ptxLoads := 5
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		env     []string
		outcome devrtinject.Outcome
		reason  devrtinject.Reason
		text    string
		records int // 0: none at all
	}{
		{name: "no socket", setup: func(*testing.T, string) {}},
		{name: "stale socket", setup: func(t *testing.T, dir string) {
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, devrtinject.SocketName), Net: "unix"})
			require.NoError(t, err)
			ln.SetUnlinkOnClose(false)
			ln.Close()
		}, outcome: devrtinject.OutFailed, reason: devrtinject.ReasonConnect, records: 6},
		{name: "no answer", setup: func(t *testing.T, dir string) {
			listener(t, dir, func(c net.Conn) { time.Sleep(2 * time.Second); c.Close() })
		}, env: []string{"GPUEXT_DEVRT_INJECT_TIMEOUT_MS=100"},
			outcome: devrtinject.OutFailed, reason: devrtinject.ReasonTimeout, records: 6},
		{name: "garbage", setup: func(t *testing.T, dir string) {
			listener(t, dir, func(c net.Conn) {
				defer c.Close()
				if q, err := devrtinject.ReadRequest(c); err == nil && q != nil {
					c.Write(make([]byte, devrtinject.RespHeaderSize))
				}
			})
		}, outcome: devrtinject.OutFailed, reason: devrtinject.ReasonBadResponse, records: 6},
		{name: "closed early", setup: func(t *testing.T, dir string) {
			listener(t, dir, func(c net.Conn) {
				devrtinject.ReadRequest(c)
				c.Close()
			})
		}, outcome: devrtinject.OutFailed, reason: devrtinject.ReasonBadResponse, records: 6},
		{name: "rejected", setup: func(t *testing.T, dir string) {
			serve(t, dir, &injecttest.Patcher{Reject: map[string]bool{
				"_Z6vecAddPfS_S_i": true, "_Z5scalePfi": true, "add_kernel": true}})
		}, outcome: devrtinject.OutRejected, text: "rejected: ", records: 6},
		{name: "unchanged", setup: func(t *testing.T, dir string) {
			serve(t, dir, &injecttest.Patcher{Unchanged: map[string]bool{
				"_Z6vecAddPfS_S_i": true, "_Z5scalePfi": true, "add_kernel": true}})
		}, outcome: devrtinject.OutUnchanged, records: 6},
		{name: "kernel missing in the twin", setup: func(t *testing.T, dir string) {
			serve(t, dir, &renamer{injecttest.Patcher{SharedSize: 64}})
		}, outcome: devrtinject.OutFailed, reason: devrtinject.ReasonFunction, records: 6},
		{name: "injection off", setup: func(t *testing.T, dir string) {
			serve(t, dir, &injecttest.Patcher{SharedSize: 64})
		}, env: []string{"GPUEXT_DEVRT_INJECT=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortSocketDir(t)
			tc.setup(t, dir)
			ir := runInject(t, h, true, dir, tc.env...)
			require.Equal(t, sameRun(t, plain.raw), sameRun(t, ir.raw))
			for _, name := range []string{"_Z6vecAddPfS_S_i", "_Z5scalePfi", "add_kernel"} {
				orig, other := ir.launchesOf(name)
				want := injectN
				if name == "_Z6vecAddPfS_S_i" {
					want = 2 * injectN
				}
				if name == "_Z5scalePfi" {
					orig, other = orig+other, 0 // the runtime's module is not the program's
					want = 2 * injectN
				}
				require.Equal(t, want, orig, name)
				require.Zero(t, other, name)
			}
			for _, l := range ir.launches {
				require.False(t, l.Patched, "no twin was left loaded: %+v", l)
			}
			launches := 0
			for _, c := range ir.calls {
				if c.API.Class() == ev.ClassLaunch {
					launches++
					require.Equal(t, int32(-1), c.Device, "nothing patched: no launch names its device (%s)", c.API)
				}
			}
			require.NotZero(t, launches)
			require.Len(t, ir.events, tc.records)
			if tc.records == 0 {
				return
			}
			ptx := 0
			for i, e := range ir.events {
				if e.Reason == devrtinject.ReasonSASSOnly {
					require.Equal(t, devrtinject.OutNotInstrumentable, e.Outcome)
					continue
				}
				ptx++
				require.Equal(t, tc.outcome, e.Outcome, "event %d", i)
				require.Equal(t, tc.reason, e.Reason, "event %d", i)
				require.Zero(t, e.Patched)
				require.Zero(t, e.SharedDptr)
				if tc.text != "" {
					require.Contains(t, e.Text, tc.text)
				}
				if tc.reason == devrtinject.ReasonTimeout {
					require.GreaterOrEqual(t, e.AskNS, uint64(100*time.Millisecond))
					require.Less(t, e.AskNS, uint64(time.Second))
				}
				if tc.reason == devrtinject.ReasonFunction {
					require.Equal(t, int32(500), e.CUDAResult, "CUDA_ERROR_NOT_FOUND")
				}
			}
			require.Equal(t, ptxLoads, ptx)
		})
	}
}

// TestInjectCParts runs devrt's C test of what injection does without a
// driver: SHA-256, fat binaries, LZ4 blocks against liblz4, .entry names.
func TestInjectCParts(t *testing.T) {
	out, err := exec.Command(filepath.Join(devrtDir(t), "inject-test")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "inject-test: ok\n", string(out))
}

// TestInjectTwinRefused: twins that refuse the program's launches (their
// .maxntid is below its blocks) are dropped at their first refused launch,
// which is made again with the original: the program sees only successes,
// every launch ran an original, and one record per module says why. With
// 1-D twins (every launch of the scenario is 1-D; the copies keep their
// twins' .maxntid) the first launch is refused by the 1-D twin, then by
// the twin, then made with the original: the same.
func TestInjectTwinRefused(t *testing.T) {
	h := newHarness(t)
	plain := runInject(t, h, false, "")
	for _, grid1D := range []bool{false, true} {
		t.Run("grid1D="+strconv.FormatBool(grid1D), func(t *testing.T) {
			dir := shortSocketDir(t)
			serve(t, dir, &injecttest.Patcher{SharedSize: 64, MaxNTID: 16, Grid1D: grid1D})
			ir := runInject(t, h, true, dir)
			require.Equal(t, sameRun(t, plain.raw), sameRun(t, ir.raw))
			for _, name := range []string{"_Z6vecAddPfS_S_i", "_Z5scalePfi", "add_kernel"} {
				orig, other := ir.launchesOf(name)
				require.Equal(t, 2*injectN-map[string]int{"add_kernel": injectN}[name], orig+other, name)
			}
			for _, l := range ir.launches {
				if l.Patched {
					require.Zero(t, l.Launches, "%+v", l)
				}
			}
			var patched, refused []devrtinject.Event
			for _, e := range ir.events {
				switch e.Outcome {
				case devrtinject.OutPatched:
					patched = append(patched, e)
				case devrtinject.OutFailed:
					require.Equal(t, devrtinject.ReasonRefused, e.Reason)
					require.Equal(t, "launch", e.Text)
					require.Equal(t, int32(1), e.CUDAResult, "CUDA_ERROR_INVALID_VALUE")
					require.Zero(t, e.API)
					refused = append(refused, e)
				}
			}
			require.Len(t, patched, 5)
			require.Len(t, refused, 5, "each patched module, at its first launch")
			mods := map[uint64]bool{}
			for _, e := range patched {
				mods[e.Module] = true
			}
			for _, e := range refused {
				require.True(t, mods[e.Module], "%x", e.Module)
				delete(mods, e.Module)
			}
		})
	}
}

// TestInjectGrid1D: twins that come with a 1-D twin (the Patcher's copy of
// each patched kernel named with devrtinject.Grid1DSuffix, as the
// collector sends a kernel specialised for one-dimensional grids). Every
// launch with a 1-D grid ran the 1-D twin and every other launch the twin,
// whatever the launch call, for a module's function, a library's CUkernel,
// its function in the load's context and its own function in a second
// context; the settings reached both (the launches asking for 64 KiB of
// dynamic shared memory need them: the fake driver keeps them per
// function). Without the copies the twins run every grid, as before.
func TestInjectGrid1D(t *testing.T) {
	h := newHarness(t)
	const (
		vecAdd = "_Z6vecAddPfS_S_i"
		scale  = "_Z5scalePfi"
		lib    = "add_kernel"
		g1     = devrtinject.Grid1DSuffix
	)
	for _, tc := range []struct {
		name     string
		scenario string
		grid1D   bool
		// launches by kernel name: the originals', then the other
		// handles' (the twins'; a name with the suffix is a 1-D twin's)
		want map[string][2]int
		// the patched library's launches in each context it was bound
		// in (the load's first): each context's twin and 1-D twin
		libContexts []int
	}{
		{"inject, every grid 1-D", "inject", true, map[string][2]int{
			vecAdd: {0, 0}, vecAdd + g1: {0, 2 * injectN}, // cuLaunchKernel and _ptsz
			scale: {0, 0}, scale + g1: {0, 2 * injectN}, // cuLaunchKernelEx, and the runtime's
			lib: {0, 0}, lib + g1: {0, injectN}, // the library's CUfunction
		}, []int{injectN}},
		{"inject-grid", "inject-grid", true, map[string][2]int{
			// each launch call with 4x2x1 and 4x1x2, then with 8x1x1
			vecAdd: {0, 12 * injectN}, vecAdd + g1: {0, 6 * injectN},
			// the CUkernel, its function and the second context's
			// function, each with a grid that is not 1-D and one that is
			lib: {0, 3 * injectN}, lib + g1: {0, 3 * injectN},
		}, []int{4 * injectN, 2 * injectN}},
		{"inject-grid, no 1-D twins", "inject-grid", false, map[string][2]int{
			vecAdd: {0, 18 * injectN}, lib: {0, 6 * injectN},
		}, []int{4 * injectN, 2 * injectN}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := runInjectScenario(t, h, false, "", tc.scenario)
			dir := shortSocketDir(t)
			serve(t, dir, &injecttest.Patcher{SharedSize: 64, Grid1D: tc.grid1D})
			ir := runInjectScenario(t, h, true, dir, tc.scenario)
			require.Equal(t, sameRun(t, plain.raw), sameRun(t, ir.raw))

			got := map[string][2]int{}
			for _, l := range ir.launches {
				if _, ok := tc.want[l.Name]; ok {
					orig, other := ir.launchesOf(l.Name)
					got[l.Name] = [2]int{orig, other}
				}
			}
			require.Equal(t, tc.want, got)
			var libContexts []int
			for _, l := range ir.launches {
				if l.Lib && l.Patched && l.Name == lib {
					for _, c := range l.Contexts {
						libContexts = append(libContexts, c.Launches)
					}
				}
			}
			require.Equal(t, tc.libContexts, libContexts)

			var patched, binds int
			for _, e := range ir.events {
				switch {
				case e.Outcome == devrtinject.OutPatched && e.Flags&devrtinject.FlagOtherContext != 0:
					binds++
				case e.Outcome == devrtinject.OutPatched:
					patched++
				default:
					require.Equal(t, devrtinject.ReasonSASSOnly, e.Reason, "nothing refused: %+v", e)
				}
			}
			require.Equal(t, map[string]int{"inject": 5, "inject-grid": 2}[tc.scenario], patched)
			require.Equal(t, len(tc.libContexts)-1, binds)
		})
	}
}

// TestInjectGrid1DRefused: 1-D twins that refuse what their twins take
// (the Patcher bounds only the copies) are dropped alone: the module stays
// patched. One whose .maxntid is below the program's 1-D blocks refuses
// the first 1-D launch of each handle it is the 1-D twin of, which is
// made again with the twin, and launches of that handle run the twin from
// then on, whatever their grid: the module's function, the library's
// CUkernel and its function in the load's context each once (each has
// its 1-D twin: devrt clears the one refused); the second context's
// function, asked for after the CUkernel's was cleared, has none. One
// whose static shared memory leaves no room for the 64 KiB the program
// allows is dropped at that setting, before any launch, for the handle
// the setting named: the module's function and the library's CUkernel;
// the library's function in the load's context keeps its 1-D twin, which
// takes its 1-D launches (without dynamic shared memory). Every
// launch ran a twin, the program sees only successes, and one record per
// handle dropped says why.
func TestInjectGrid1DRefused(t *testing.T) {
	h := newHarness(t)
	plain := runInjectScenario(t, h, false, "", "inject-grid")
	const (
		vecAdd = "_Z6vecAddPfS_S_i"
		lib    = "add_kernel"
		g1     = devrtinject.Grid1DSuffix
	)
	for _, tc := range []struct {
		name string
		p    *injecttest.Patcher
		want map[string][2]int // as TestInjectGrid1D's
		text []string          // the refused records', in order
		lib  []bool            // whether each is the library's
	}{
		{"launches", &injecttest.Patcher{SharedSize: 64, Grid1D: true, Grid1DMaxNTID: 32}, map[string][2]int{
			vecAdd: {0, 18 * injectN}, vecAdd + g1: {0, 0},
			lib: {0, 6 * injectN}, lib + g1: {0, 0},
		}, []string{"launch (1-D twin)", "launch (1-D twin)", "launch (1-D twin)"}, []bool{false, true, true}},
		{"settings", &injecttest.Patcher{SharedSize: 64, Grid1D: true, Grid1DStaticShared: 200 << 10}, map[string][2]int{
			vecAdd: {0, 18 * injectN}, vecAdd + g1: {0, 0},
			// the function's 1-D launches, cooperative, 2x1x1
			lib: {0, 5 * injectN}, lib + g1: {0, injectN},
		}, []string{"cuFuncSetAttribute(8, 65536) (1-D twin)", "cuKernelSetAttribute(8, 65536) (1-D twin)"},
			[]bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortSocketDir(t)
			serve(t, dir, tc.p)
			ir := runInjectScenario(t, h, true, dir, "inject-grid")
			require.Equal(t, sameRun(t, plain.raw), sameRun(t, ir.raw))
			require.Equal(t, tc.want, ir.launchesOfEach(tc.want))

			// the two loads, the second context's binding, the refusals
			require.Len(t, ir.events, 3+len(tc.text))
			var refused []devrtinject.Event
			for i, e := range ir.events {
				if e.Outcome == devrtinject.OutPatched {
					continue
				}
				require.Equal(t, devrtinject.OutFailed, e.Outcome, "event %d", i)
				refused = append(refused, e)
			}
			require.Len(t, refused, len(tc.text))
			for i, e := range refused {
				require.Equal(t, devrtinject.ReasonRefused, e.Reason)
				require.Equal(t, tc.text[i], e.Text)
				require.Equal(t, int32(1), e.CUDAResult, "CUDA_ERROR_INVALID_VALUE")
				require.Zero(t, e.API)
				require.Equal(t, ir.handles[map[bool]string{false: "m", true: "lib"}[tc.lib[i]]],
					"0x"+strconv.FormatUint(e.Module, 16), "record %d", i)
				require.Equal(t, devrtinject.FlagGrid1D|map[bool]uint16{true: devrtinject.FlagLibrary}[tc.lib[i]], e.Flags, "record %d", i)
			}
		})
	}
}

// TestInjectGrid1DNames: a module whose own kernels are gx_step and
// gx_step__gx1d (named as gx_step's 1-D twin would be, other parameters),
// loaded as a module and as a library. The collector makes no 1-D twin
// for gx_step then, and its patched module holds the program's
// gx_step__gx1d under that name: devrt must not take it for gx_step's 1-D
// twin. Every launch of gx_step ran gx_step's twin, whatever its grid;
// gx_step__gx1d's launches ran its own twin, or its 1-D twin
// (gx_step__gx1d__gx1d) where the Patcher made one.
func TestInjectGrid1DNames(t *testing.T) {
	h := newHarness(t)
	plain := runInjectScenario(t, h, false, "", "inject-grid-names")
	const (
		step = "gx_step"
		g1   = devrtinject.Grid1DSuffix
	)
	for _, tc := range []struct {
		name   string
		grid1D bool
		want   map[string][2]int // as TestInjectGrid1D's
	}{
		// the module's two launches and the library's three of gx_step;
		// one each of gx_step__gx1d
		{"no 1-D twins", false, map[string][2]int{
			step: {0, 5 * injectN}, step + g1: {0, 2 * injectN}, step + g1 + g1: {0, 0},
		}},
		{"1-D twins", true, map[string][2]int{
			step: {0, 5 * injectN}, step + g1: {0, 0}, step + g1 + g1: {0, 2 * injectN},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortSocketDir(t)
			serve(t, dir, &injecttest.Patcher{SharedSize: 64, Grid1D: tc.grid1D})
			ir := runInjectScenario(t, h, true, dir, "inject-grid-names")
			require.Equal(t, sameRun(t, plain.raw), sameRun(t, ir.raw))
			require.Equal(t, tc.want, ir.launchesOfEach(tc.want))
			// launches by module: gx_step__gx1d's twins ran only the
			// program's launches of gx_step__gx1d, in each module
			byModule := map[[2]string]int{}
			for _, l := range ir.launches {
				if l.Patched {
					byModule[[2]string{strconv.FormatBool(l.Lib), l.Name}] += l.Launches
				}
			}
			want := map[[2]string]int{
				{"false", step}: 2 * injectN, {"true", step}: 3 * injectN,
				{"false", step + g1}: injectN, {"true", step + g1}: injectN,
			}
			if tc.grid1D {
				want[[2]string{"false", step + g1}], want[[2]string{"true", step + g1}] = 0, 0
				want[[2]string{"false", step + g1 + g1}], want[[2]string{"true", step + g1 + g1}] = injectN, injectN
			}
			require.Equal(t, want, byModule)

			require.Len(t, ir.events, 2)
			for i, e := range ir.events {
				require.Equal(t, devrtinject.OutPatched, e.Outcome, "event %d", i)
				require.Equal(t, uint32(2), e.Kernels, "event %d", i)
			}
			require.Equal(t, ir.handles["m"], "0x"+strconv.FormatUint(ir.events[0].Module, 16))
			require.Equal(t, ir.handles["lib"], "0x"+strconv.FormatUint(ir.events[1].Module, 16))
		})
	}
}

// TestInjectVars: a module and a library with variables of their own (a
// __device__ counter and a __constant__ array). Answered with RespVars,
// their twins own them: every kernel ran in the twin, the one no probe
// patched (Only) too, and what the program asked by name
// (cuModuleGetGlobal, cuLibraryGetGlobal, cuModuleGetGlobal on the
// library's cuLibraryGetModule) was the twin's variable, so what it wrote
// is what the kernels read. The original's variables were never handed
// out. Without RespVars (an answer for a module without variables) the
// unpatched kernel runs the original, as before.
func TestInjectVars(t *testing.T) {
	h := newHarness(t)
	vars := func(raw string) map[string]string {
		var m struct {
			Vars map[string]string `json:"vars"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &m))
		return m.Vars
	}
	same := func(raw string) map[string]any {
		m := sameRun(t, raw)
		delete(m, "vars")
		return m
	}
	// twinVars: the variables of the twin of the module (lib: library)
	// whose kernels ran in the other handles.
	twinVars := func(ir *injectRun, lib bool) map[string]string {
		mine := map[string]bool{}
		for _, v := range ir.handles {
			mine[v] = true
		}
		for _, l := range ir.launches {
			if l.Name == "vk_a" && l.Lib == lib && !mine[l.Handle] {
				return l.Vars
			}
		}
		t.Fatalf("no twin of lib=%t", lib)
		return nil
	}
	plain := runInjectScenario(t, h, false, "", "inject-vars")
	pv := vars(plain.raw)
	require.NotEqual(t, "0x0", pv["module_coeffs"])
	require.Equal(t, map[string][2]int{"vk_a": {2 * injectN, 0}, "vk_b": {2 * injectN, 0}},
		plain.launchesOfEach(map[string][2]int{"vk_a": {}, "vk_b": {}}))

	dir := shortSocketDir(t)
	serve(t, dir, &injecttest.Patcher{SharedSize: 64, Only: map[string]bool{"vk_a": true}, Vars: []string{"counter", "coeffs"}})
	ir := runInjectScenario(t, h, true, dir, "inject-vars")
	require.Equal(t, same(plain.raw), same(ir.raw))
	require.Equal(t, map[string][2]int{"vk_a": {0, 2 * injectN}, "vk_b": {0, 2 * injectN}},
		ir.launchesOfEach(map[string][2]int{"vk_a": {}, "vk_b": {}}))
	got := vars(ir.raw)
	mod, lib := twinVars(ir, false), twinVars(ir, true)
	require.Equal(t, mod["coeffs"], got["module_coeffs"])
	require.Equal(t, lib["coeffs"], got["library_coeffs"])
	require.Equal(t, lib["counter"], got["library_counter"])
	require.Equal(t, mod["counter"], got["module_counter"], "through cuFuncGetModule")
	for _, v := range got {
		require.NotEqual(t, "0x0", v)
	}
	for _, l := range ir.launches {
		if ir.handles["fa"] == l.Handle || ir.handles["ka"] == l.Handle {
			require.Equal(t, map[string]string{"counter": "0x0", "coeffs": "0x0"}, l.Vars, "the original's, never asked for")
		}
	}
	require.Len(t, ir.events, 2)
	for i, e := range ir.events {
		require.Equal(t, devrtinject.OutPatched, e.Outcome, "%+v", e)
		// (the second load's answer is the cache's, and shares the region)
		require.Equal(t, uint16(devrtinject.FlagVars|[]uint16{0, devrtinject.FlagLibrary}[i]),
			e.Flags&(devrtinject.FlagVars|devrtinject.FlagLibrary), "%+v", e)
		require.Equal(t, uint32(2), e.Kernels)
	}

	// Graphs built node by node, by every entry point (functions and
	// CUkernels; v2, v1 and cuGraphAddNode; set again in the graph and
	// its exec): the patched kernel's nodes run its plain copy in the
	// twin, the unpatched one's the twin's (its own code), never the
	// original's; read back, the nodes name the program's kernels (the
	// workload checks). Without variables the nodes are left as they are.
	pa := "vk_a" + devrtinject.PlainSuffix
	gplain := runInjectScenario(t, h, false, "", "inject-vars", "WORKLOAD_VARS_GRAPH=1")
	require.Equal(t, map[string][2]int{"vk_a": {4 * injectN, 0}, "vk_b": {4 * injectN, 0}},
		gplain.launchesOfEach(map[string][2]int{"vk_a": {}, "vk_b": {}}))
	for _, tc := range []struct {
		vars []string
		want map[string][2]int
	}{
		{[]string{"counter", "coeffs"}, map[string][2]int{"vk_a": {0, 2 * injectN}, pa: {0, 2 * injectN}, "vk_b": {0, 4 * injectN}}},
		{nil, map[string][2]int{"vk_a": {2 * injectN, 2 * injectN}, pa: {0, 0}, "vk_b": {4 * injectN, 0}}},
	} {
		dir := shortSocketDir(t)
		serve(t, dir, &injecttest.Patcher{SharedSize: 64, Only: map[string]bool{"vk_a": true}, Vars: tc.vars})
		ir := runInjectScenario(t, h, true, dir, "inject-vars", "WORKLOAD_VARS_GRAPH=1")
		require.Equal(t, same(gplain.raw), same(ir.raw))
		require.Equal(t, tc.want, ir.launchesOfEach(map[string][2]int{"vk_a": {}, pa: {}, "vk_b": {}}), "vars %v", tc.vars)
	}

	// A library in two contexts (each context's own CUfunction too):
	// with variables its twin runs everywhere, with a region or without
	// one (probes without maps: no binding to make).
	for _, size := range []uint64{0, 64} {
		dir := shortSocketDir(t)
		serve(t, dir, &injecttest.Patcher{SharedSize: size, Vars: []string{"v"}})
		ir := runInjectScenario(t, h, true, dir, "inject-contexts")
		orig, other := ir.launchesOf("add_kernel")
		require.Equal(t, [2]int{0, 7 * injectN}, [2]int{orig, other}, "region of %d bytes", size)
	}

	// An answer without variables: the unpatched kernel runs the
	// original, and the program gets the original's variables.
	dir = shortSocketDir(t)
	serve(t, dir, &injecttest.Patcher{SharedSize: 64, Only: map[string]bool{"vk_a": true}})
	ir = runInjectScenario(t, h, true, dir, "inject-vars")
	require.Equal(t, map[string][2]int{"vk_a": {0, 2 * injectN}, "vk_b": {2 * injectN, 0}},
		ir.launchesOfEach(map[string][2]int{"vk_a": {}, "vk_b": {}}))
	require.NotEqual(t, twinVars(ir, false)["coeffs"], vars(ir.raw)["module_coeffs"])
}

// TestInjectVarsFallback: a twin that owns the variables is never left
// for the original. A launch it refuses (its .maxntid below the program's
// blocks) is made again with the kernel's plain copy in the twin, which
// runs that kernel's launches from then on (a record each kernel handle)
// and gets the program's settings too; a launch refused by everything
// (the program's own mistake) changes nothing. Without plain copies such
// a twin is not used at all (ReasonVarsLimits at the load: launches the
// original takes would fail), and one that refuses a launch only at run
// time (the dynamic shared memory its probes' static shared memory leaves)
// fails that launch with its error, one record a module, where a module
// without variables falls back to the original and drops its redirects.
func TestInjectVarsFallback(t *testing.T) {
	h := newHarness(t)
	pa, pb := "vk_a"+devrtinject.PlainSuffix, "vk_b"+devrtinject.PlainSuffix
	all := map[string][2]int{"vk_a": {}, "vk_b": {}, pa: {}, pb: {}}
	withVars := []string{"counter", "coeffs"}
	same := func(raw string) map[string]any {
		m := sameRun(t, raw)
		delete(m, "vars")
		return m
	}
	records := func(ir *injectRun) (took, other []devrtinject.Event) {
		for _, e := range ir.events {
			switch {
			case e.Reason == devrtinject.ReasonRefused && e.Text == "launch (plain copy now)":
				require.NotZero(t, e.Flags&devrtinject.FlagVars)
				took = append(took, e)
			case e.Reason == devrtinject.ReasonRefused:
				other = append(other, e)
			default:
				require.Equal(t, devrtinject.OutPatched, e.Outcome, "%+v", e)
			}
		}
		return took, other
	}

	// The twin refuses the program's blocks: the plain copies run, with
	// 64 KiB of dynamic shared memory too (set on them as on the twin).
	for _, shmem := range []string{"0", "65536"} {
		dir := shortSocketDir(t)
		serve(t, dir, &injecttest.Patcher{SharedSize: 64, MaxNTID: 16, Vars: withVars})
		ir := runInjectScenario(t, h, true, dir, "inject-vars", "WORKLOAD_VARS_SHMEM="+shmem)
		require.Equal(t, same(runInjectScenario(t, h, false, "", "inject-vars", "WORKLOAD_VARS_SHMEM="+shmem).raw), same(ir.raw))
		require.Equal(t, map[string][2]int{"vk_a": {0, 0}, "vk_b": {0, 0}, pa: {0, 2 * injectN}, pb: {0, 2 * injectN}},
			ir.launchesOfEach(all), "shmem %s", shmem)
		took, other := records(ir)
		require.Len(t, took, 4, "one a kernel handle launched: the module's two functions, the library's two CUkernels")
		require.Empty(t, other)
	}

	// A launch nothing takes (the program's mistake) leaves the twin be.
	dir := shortSocketDir(t)
	serve(t, dir, &injecttest.Patcher{SharedSize: 64, Vars: withVars})
	ir := runInjectScenario(t, h, true, dir, "inject-vars", "WORKLOAD_VARS_BAD=1")
	require.Equal(t, map[string][2]int{"vk_a": {0, 2 * injectN}, "vk_b": {0, 2 * injectN}, pa: {0, 0}, pb: {0, 0}}, ir.launchesOfEach(all))
	took, other := records(ir)
	require.Empty(t, took)
	require.Empty(t, other)

	dir = shortSocketDir(t)
	serve(t, dir, &injecttest.Patcher{SharedSize: 64, MaxNTID: 16, Vars: withVars, NoPlain: true})
	ir = runInjectScenario(t, h, true, dir, "inject-vars")
	require.Equal(t, map[string][2]int{"vk_a": {2 * injectN, 0}, "vk_b": {2 * injectN, 0}}, ir.launchesOfEach(map[string][2]int{"vk_a": {}, "vk_b": {}}))
	require.Len(t, ir.events, 2)
	for i, e := range ir.events {
		require.Equal(t, devrtinject.OutFailed, e.Outcome, "%+v", e)
		require.Equal(t, devrtinject.ReasonVarsLimits, e.Reason)
		require.Equal(t, uint16(devrtinject.FlagVars|[]uint16{0, devrtinject.FlagLibrary}[i]),
			e.Flags&(devrtinject.FlagVars|devrtinject.FlagLibrary), "%+v", e)
		require.Equal(t, "twin: 16 of 1024 threads a block", e.Text)
	}

	// All the shared memory there is: the twin (1 KiB of probe arrays)
	// refuses it. Its plain copies, which use no probe array, take it
	// (as on a GPU: bench/device/vars_runtime.cu's big); a plain copy
	// that refuses the setting itself is forgotten ("(plain copy)"), and
	// without one the launch fails with the twin's error, where a module
	// without variables falls back to the original.
	const shmem = 227 * 1024
	all2 := map[string][2]int{"vk_a": {}, "vk_b": {}, pa: {}, pb: {}}
	for _, tc := range []struct {
		name          string
		vars          []string
		noPlain       bool
		plainShared   int
		expect        int
		runs          map[string][2]int
		launch, took  int // "launch" records, "launch (plain copy now)"
		copiesRefused int // "(plain copy)" records
	}{
		{"plain copies", withVars, false, 0, 0, map[string][2]int{"vk_a": {0, 0}, "vk_b": {0, 0}, pa: {0, 2 * injectN}, pb: {0, 2 * injectN}}, 0, 4, 0},
		{"plain copies refusing", withVars, false, 1024, 1, map[string][2]int{"vk_a": {0, 0}, "vk_b": {0, 0}, pa: {0, 0}, pb: {0, 0}}, 2, 0, 4},
		{"no plain copies", withVars, true, 0, 1, map[string][2]int{"vk_a": {0, 0}, "vk_b": {0, 0}, pa: {0, 0}, pb: {0, 0}}, 2, 0, 0},
		{"no variables", nil, true, 0, 0, map[string][2]int{"vk_a": {2 * injectN, 0}, "vk_b": {2 * injectN, 0}, pa: {0, 0}, pb: {0, 0}}, 2, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortSocketDir(t)
			serve(t, dir, &injecttest.Patcher{SharedSize: 64, StaticShared: 1024, Vars: tc.vars, NoPlain: tc.noPlain,
				PlainStaticShared: tc.plainShared})
			ir := runInjectScenario(t, h, true, dir, "inject-vars",
				"WORKLOAD_VARS_SHMEM="+strconv.Itoa(shmem), "WORKLOAD_VARS_EXPECT="+strconv.Itoa(tc.expect))
			require.Equal(t, tc.runs, ir.launchesOfEach(all2)) // (refused launches are not counted)
			var launch, took, copies int
			for _, e := range ir.events {
				if e.Reason != devrtinject.ReasonRefused {
					continue
				}
				require.Equal(t, tc.vars != nil, e.Flags&devrtinject.FlagVars != 0)
				switch {
				case strings.HasSuffix(e.Text, "(plain copy)"):
					copies++
				case e.Text == "launch (plain copy now)":
					took++
				default:
					require.Equal(t, "launch", e.Text)
					require.Equal(t, int32(1), e.CUDAResult)
					launch++
				}
			}
			require.Equal(t, [3]int{tc.launch, tc.took, tc.copiesRefused}, [3]int{launch, took, copies})
		})
	}
}
