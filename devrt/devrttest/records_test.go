package devrttest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
)

// noTiming turns GPU execution timing off: devrt then makes no driver call
// of its own, and the driver's counters must be exactly the program's. It
// also asks for the nested class, so that every call the fake driver counts
// has its record (by default a runtime launch's or copy's own driver call
// is folded into the runtime call's record: TestNestedDriverCallsFolded).
var noTiming = []string{"GPUEXT_DEVRT_SAMPLE=0", "GPUEXT_DEVRT_CLASSES=all,nested"}

// checkRun runs a scenario with and without devrt (no timing) and checks
// what must hold for every scenario: the same output, the same driver
// calls, one ring with one record per reported call and nothing dropped.
func checkRun(t *testing.T, h *harness, args ...string) (*run, *ring) {
	t.Helper()
	plain := h.run(opts{}, args...)
	traced := h.run(opts{devrt: true, env: noTiming}, args...)
	require.Equal(t, comparable(t, plain.raw), comparable(t, traced.raw), "the program's output under devrt")
	require.Equal(t, plain.res.DriverCalls, traced.res.DriverCalls, "devrt made driver calls of its own")
	rg := traced.only(t)
	for name, n := range rg.stats {
		require.Zero(t, n, "devrt called %s without timing", name)
	}
	checkCalls(t, rg)
	require.Equal(t, h.expected(traced, traced.res.PID, traced.res.Calls, nil), countByAPI(rg.calls))
	require.Equal(t, uint64(len(rg.calls)), rg.ctr.Records)
	require.Equal(t, uint32(3), rg.ctr.State, "closed at exit")
	require.Zero(t, rg.ctr.Drops, "no drops")
	return traced, rg
}

// byAPI returns the call records of one API.
func byAPI(rg *ring, api ev.API) []ev.Event {
	var out []ev.Event
	for _, e := range rg.calls {
		if e.API == api {
			out = append(out, e)
		}
	}
	return out
}

func one(t *testing.T, rg *ring, api ev.API) ev.Event {
	t.Helper()
	es := byAPI(rg, api)
	require.Len(t, es, 1, "%s records", api)
	return es[0]
}

// Every exported function once: a record for each of the 65 APIs, each
// decoded by the collector's decoder.
func TestEveryAPI(t *testing.T) {
	h := newHarness(t)
	_, rg := checkRun(t, h, "every-api")
	apis := map[ev.API]bool{}
	for _, s := range h.syms {
		apis[s.api] = true
	}
	got := countByAPI(rg.calls)
	for api := range apis {
		require.NotZero(t, got[api], "no record of %s", api)
	}
	require.Len(t, apis, 65)
	require.Len(t, h.syms, 107)

	// Out values and names, read after the call as the return probe does.
	lk := one(t, rg, ev.APICuLibraryGetKernel)
	require.Equal(t, "_Z6vecAddPfS_S_i", lk.Name)
	require.NotZero(t, lk.Flags&ev.FlagOutValid)
	kf := one(t, rg, ev.APICuKernelGetFunction)
	require.Equal(t, lk.Handle, kf.Parent, "the kernel cuKernelGetFunction was given")
	reg := one(t, rg, ev.APICudaRegisterFunction)
	require.Equal(t, "_Z11saxpyKernelfPKfPf", reg.Name)
	for _, e := range byAPI(rg, ev.APICuMemAlloc) {
		require.NotZero(t, e.Flags&ev.FlagOutValid)
		require.NotZero(t, e.Addr)
	}
	// cuMemPrefetchAsync_v2(.., CUmemLocation{DEVICE, 0}, ..) and the host.
	var devs []int32
	for _, e := range byAPI(rg, ev.APICuMemPrefetchAsyncV2) {
		devs = append(devs, e.Device)
	}
	require.ElementsMatch(t, []int32{0, -1}, devs)
	// cuLaunchKernelEx: geometry from the CUlaunchConfig.
	for _, e := range byAPI(rg, ev.APICuLaunchKernelEx) {
		require.NotZero(t, e.Flags&ev.FlagAuxValid)
		require.Equal(t, [3]uint32{128, 1, 1}, e.Grid)
		require.Equal(t, [3]uint32{256, 1, 1}, e.Block)
		require.Equal(t, uint32(1024), e.SharedMem)
	}
	// cudaLaunchKernel[_ptsz], and __cudaLaunchKernel[_ptsz] reported as
	// cudaLaunchKernel: 4 records, each with the registered host stub.
	rtl := byAPI(rg, ev.APICudaLaunchKernel)
	require.Len(t, rtl, 4)
	for _, e := range rtl {
		require.Equal(t, reg.Handle, e.Handle, "the host stub")
	}
	// cudaLaunchKernelExC[_ptsz]: geometry from the cudaLaunchConfig_t, the
	// registered host stub as handle.
	exc := byAPI(rg, ev.APICudaLaunchKernelExC)
	require.Len(t, exc, 2)
	for _, e := range exc {
		require.NotZero(t, e.Flags&ev.FlagAuxValid)
		require.Equal(t, reg.Handle, e.Handle, "the host stub")
		require.Equal(t, [3]uint32{64, 1, 1}, e.Grid)
		require.Equal(t, [3]uint32{128, 1, 1}, e.Block)
		require.Zero(t, e.SharedMem)
		require.Zero(t, e.Stream)
	}
}

func TestLaunchStorm(t *testing.T) {
	h := newHarness(t)
	_, rg := checkRun(t, h, "launch-storm", "300")
	ns, err := nsfs.PIDNS("/proc", os.Getpid())
	require.NoError(t, err)
	require.Equal(t, ns, rg.hdr.PIDNS, "the ring names devrt's pid namespace, this test's")
	load := one(t, rg, ev.APICuModuleLoadData)
	fn := one(t, rg, ev.APICuModuleGetFunction)
	require.Equal(t, ev.KindCallNamed, fn.Kind)
	require.Equal(t, "_Z6vecAddPfS_S_i", fn.Name)
	require.Equal(t, load.Handle, fn.Parent)
	launches := byAPI(rg, ev.APICuLaunchKernel)
	require.Len(t, launches, 300)
	for _, e := range launches {
		require.Equal(t, fn.Handle, e.Handle)
		require.Equal(t, [3]uint32{128, 1, 1}, e.Grid)
		require.Equal(t, [3]uint32{256, 1, 1}, e.Block)
		require.Equal(t, uint32(1024), e.SharedMem)
		require.NotZero(t, e.Stream)
		require.Equal(t, launches[0].Stream, e.Stream)
		require.Equal(t, uint16(ev.FlagStackValid), e.Flags)
	}
}

// Copies: the bytes and directions the collector derives, including the
// shapes devrt reads from CUDA_MEMCPY2D/3D, add up to what the program moved.
func TestCopies(t *testing.T) {
	h := newHarness(t)
	_, rg := checkRun(t, h, "copies")
	bytes := map[string]uint64{}
	for _, e := range rg.calls {
		switch {
		case e.API >= ev.APICuMemsetD8 && e.API <= ev.APICuMemsetD2D32Async:
			bytes["memset"] += e.Bytes
		case e.API.Class() == ev.ClassCopy:
			bytes[e.Direction.String()] += e.Bytes
		}
	}
	require.Equal(t, map[string]uint64{"htod": 14312, "dtoh": 18896, "dtod": 65536, "peer": 512, "memset": 8192}, bytes)
	c3 := one(t, rg, ev.APICuMemcpy3D)
	require.Equal(t, [5]uint64{64, 4, 2, 2 | 1<<32, 0}, c3.Aux, "width, height, depth, src|dst memory types")
}

// Failing calls: their results, no out value (devrt reads it only after a
// success), the name of what was not found.
func TestErrors(t *testing.T) {
	h := newHarness(t)
	_, rg := checkRun(t, h, "errors")
	results := map[ev.API]int32{}
	for _, e := range rg.calls {
		if e.Result != 0 {
			results[e.API] = e.Result
			require.Zero(t, e.Flags&ev.FlagOutValid, "%s", e.API)
		}
	}
	require.Equal(t, map[ev.API]int32{
		ev.APICuMemAlloc: 1, ev.APICuMemFree: 1, ev.APICuModuleGetFunction: 500,
		ev.APICuCtxDestroy: 201, ev.APICuLaunchKernel: 400,
	}, results)
	require.Equal(t, "missing_kernel", one(t, rg, ev.APICuModuleGetFunction).Name)
}

// The runtime reaches the driver only through dlopen, dlsym and
// cuGetProcAddress_v2: its driver calls are reported because devrt hands
// out its wrappers on that path.
func TestRuntimePath(t *testing.T) {
	h := newHarness(t)
	_, rg := checkRun(t, h, "runtime", "40")
	reg := one(t, rg, ev.APICudaRegisterFunction)
	require.Equal(t, "_Z11saxpyKernelfPKfPf", reg.Name)
	rt := byAPI(rg, ev.APICudaLaunchKernel)
	require.Len(t, rt, 40)
	for _, e := range rt {
		require.Equal(t, reg.Handle, e.Handle, "the host stub")
		require.Equal(t, [3]uint32{64, 1, 1}, e.Grid)
		require.Equal(t, [3]uint32{128, 1, 1}, e.Block)
		require.Zero(t, e.Stream)
		require.NotZero(t, e.Flags&ev.FlagStackValid)
	}
	require.Len(t, byAPI(rg, ev.APICuLaunchKernel), 40, "the runtime's own driver launches")
	require.Equal(t, "_Z11saxpyKernelfPKfPf", one(t, rg, ev.APICuModuleGetFunction).Name)

	// The registration record is kept until the stub's first launch and
	// written when it starts: after every record of the calls before it,
	// before those of the launch (its driver calls end, and are written,
	// before it does). It keeps the registration's call number and times.
	launch := rt[0]
	for i, e := range rg.calls {
		if e.API == ev.APICudaRegisterFunction {
			for _, b := range rg.calls[:i] {
				require.Less(t, b.Corr, launch.Corr, "written after the records before the launch")
			}
			for _, a := range rg.calls[i+1:] {
				require.GreaterOrEqual(t, a.Corr, launch.Corr, "written before the launch's records")
			}
		}
	}
	require.Less(t, reg.Corr, launch.Corr)
	require.LessOrEqual(t, reg.End, launch.Start)
}

// The runtime launches other than cudaLaunchKernel's own path, record by
// record: the stub's registration record is written at its first launch, as
// for cudaLaunchKernel, and each launch's driver launch is its own record.
//   - cudaLaunchKernelExC: the geometry, shared memory and stream from the
//     cudaLaunchConfig_t, the host stub as handle.
//   - __cudaLaunchKernel, what CUDA 13's nvcc stubs call (the runtime's
//     trampoline into cudaLaunchKernel): reported exactly as
//     cudaLaunchKernel, once per launch (the trampoline's own call of
//     cudaLaunchKernel does not reach devrt).
func TestRuntimeLaunchVariants(t *testing.T) {
	for _, c := range []struct {
		scenario    string
		api, other  ev.API
		flag        uint16
		grid, block [3]uint32
		shmem       uint32
	}{
		{"runtime-ex", ev.APICudaLaunchKernelExC, ev.APICudaLaunchKernel, ev.FlagAuxValid, [3]uint32{32, 2, 1}, [3]uint32{64, 2, 1}, 256},
		{"runtime-stub", ev.APICudaLaunchKernel, ev.APICudaLaunchKernelExC, ev.FlagStackValid, [3]uint32{16, 4, 1}, [3]uint32{32, 4, 1}, 128},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			h := newHarness(t)
			_, rg := checkRun(t, h, c.scenario, "40")
			reg := one(t, rg, ev.APICudaRegisterFunction)
			require.Equal(t, "_Z11saxpyKernelfPKfPf", reg.Name)
			require.Empty(t, byAPI(rg, c.other))
			rt := byAPI(rg, c.api)
			require.Len(t, rt, 40)
			for _, e := range rt {
				require.Equal(t, reg.Handle, e.Handle, "the host stub")
				require.NotZero(t, e.Flags&c.flag)
				require.Equal(t, c.grid, e.Grid)
				require.Equal(t, c.block, e.Block)
				require.Equal(t, c.shmem, e.SharedMem)
				require.Zero(t, e.Stream)
			}
			drv := byAPI(rg, ev.APICuLaunchKernel)
			require.Len(t, drv, 40, "the runtime's own driver launches")
			for i, e := range drv {
				require.Equal(t, c.shmem, e.SharedMem)
				require.Less(t, rt[i].Corr, e.Corr, "inside its runtime launch")
				require.LessOrEqual(t, e.End, rt[i].End)
			}
			require.Less(t, reg.Corr, rt[0].Corr)
			require.LessOrEqual(t, reg.End, rt[0].Start)
		})
	}
}

// By default the driver launch a runtime launch makes has no record of its
// own: the runtime call's record stands for it, one record per launch (what
// PyTorch pays for). Everything else is reported as with the nested class.
func TestNestedDriverCallsFolded(t *testing.T) {
	h := newHarness(t)
	for _, sc := range []string{"runtime", "runtime-ex", "runtime-stub"} {
		t.Run(sc, func(t *testing.T) {
			nested := h.run(opts{devrt: true, env: noTiming}, sc, "40").only(t)
			folded := h.run(opts{devrt: true, env: []string{"GPUEXT_DEVRT_SAMPLE=0"}}, sc, "40").only(t)
			checkCalls(t, folded)
			want := countByAPI(nested.calls)
			require.Equal(t, 40, want[ev.APICuLaunchKernel])
			delete(want, ev.APICuLaunchKernel)
			require.Equal(t, want, countByAPI(folded.calls))
			require.Equal(t, uint64(len(folded.calls)), folded.ctr.Records)
			require.Zero(t, folded.ctr.Drops)
		})
	}
}

// lazyRun runs a runtime scenario whose registration records are written
// only for launched stubs: like checkRun, with regs registration records
// expected where the program made more calls, and call numbers that skip
// the registrations never written.
func lazyRun(t *testing.T, h *harness, regs int, args ...string) *ring {
	t.Helper()
	plain := h.run(opts{}, args...)
	traced := h.run(opts{devrt: true, env: noTiming}, args...)
	require.Equal(t, comparable(t, plain.raw), comparable(t, traced.raw), "the program's output under devrt")
	rg := traced.only(t)
	want := h.expected(traced, traced.res.PID, traced.res.Calls, nil)
	require.Positive(t, want[ev.APICudaRegisterFunction])
	want[ev.APICudaRegisterFunction] = regs
	if regs == 0 {
		delete(want, ev.APICudaRegisterFunction)
	}
	require.Equal(t, want, countByAPI(rg.calls))
	seen := map[uint32]bool{}
	for _, e := range rg.calls {
		require.Equal(t, rg.hdr.PID, e.PID)
		require.NotZero(t, e.Corr)
		require.False(t, seen[e.Corr], "call number %d twice", e.Corr)
		seen[e.Corr] = true
	}
	require.Equal(t, uint64(len(rg.calls)), rg.ctr.Records)
	require.Equal(t, uint32(3), rg.ctr.State, "closed at exit")
	require.Zero(t, rg.ctr.Drops, "no drops")
	return rg
}

// A kernel registered but never launched writes no registration record.
func TestRegistrationNotLaunched(t *testing.T) {
	h := newHarness(t)
	lazyRun(t, h, 0, "runtime-unlaunched")
}

// 20,001 kernels registered (80,004 slots of records, as at `import torch`)
// into the default ring of 16,384 slots, one launched: one registration
// record, the launched stub's, and nothing dropped.
func TestRegistrationBurst(t *testing.T) {
	h := newHarness(t)
	rg := lazyRun(t, h, 1, "runtime-many", "20000")
	require.Equal(t, uint32(16384), rg.hdr.Capacity)
	reg := one(t, rg, ev.APICudaRegisterFunction)
	require.Equal(t, "_Z11saxpyKernelfPKfPf", reg.Name)
	require.Equal(t, reg.Handle, one(t, rg, ev.APICudaLaunchKernel).Handle, "the launched stub")
}

// Calls through pointers from cuGetProcAddress_v2, and the resolution table
// of procaddr-table (the workload checks each pointer against dlsym, which
// under devrt must give devrt's wrapper of the same variant).
func TestProcAddr(t *testing.T) {
	h := newHarness(t)
	_, rg := checkRun(t, h, "procaddr", "50")
	got := countByAPI(rg.calls)
	require.Equal(t, 50, got[ev.APICuLaunchKernel])
	require.Equal(t, 50, got[ev.APICuMemAlloc])
	require.Equal(t, 50, got[ev.APICuMemFree])

	plain := h.run(opts{}, "procaddr-table")
	traced := h.run(opts{devrt: true}, "procaddr-table")
	require.Equal(t, comparable(t, plain.raw), comparable(t, traced.raw))
	require.Empty(t, traced.rings(t), "no reported call: no ring")
}

func TestThreads(t *testing.T) {
	h := newHarness(t)
	r, rg := checkRun(t, h, "threads", "8", "500")
	perTID := map[uint32]int{}
	for _, e := range byAPI(rg, ev.APICuLaunchKernel) {
		perTID[e.TID]++
	}
	want := map[uint32]int{}
	for _, tid := range r.res.TIDs {
		want[uint32(tid)] = 500
	}
	require.Len(t, want, 8)
	require.Equal(t, want, perTID)
}

// Fork then exec, and fork without exec: each process its own ring and
// call numbers; the child never writes into its parent's ring.
func TestFork(t *testing.T) {
	h := newHarness(t)
	for _, sc := range []string{"fork-child", "fork-noexec"} {
		t.Run(sc, func(t *testing.T) {
			plain := h.run(opts{}, sc, "30")
			r := h.run(opts{devrt: true, env: noTiming}, sc, "30")
			require.Equal(t, comparable(t, plain.raw), comparable(t, r.raw))
			require.NotNil(t, r.res.Child)
			rings := r.rings(t)
			require.Len(t, rings, 2)
			child := r.res.Child
			for pid, calls := range map[int]map[string]int{r.res.PID: r.res.Calls, child.PID: child.Result.Calls} {
				rg, ok := rings[pid]
				require.True(t, ok, "ring of pid %d", pid)
				checkCalls(t, rg)
				require.Equal(t, uint32(3), rg.ctr.State)
				require.Zero(t, rg.ctr.Drops)
				if sc == "fork-child" || pid == r.res.PID {
					require.Equal(t, h.expected(r, pid, calls, nil), countByAPI(rg.calls), "pid %d", pid)
				}
			}
			// The forked copy counts from its parent's counters; its
			// records are its own launches.
			if sc == "fork-noexec" {
				got := countByAPI(rings[child.PID].calls)
				require.Equal(t, map[ev.API]int{ev.APICuLaunchKernel: 30, ev.APICuCtxSynchronize: 1}, got)
			}
		})
	}
}

// A ring too small and no collector: devrt keeps what fits, drops the rest
// and counts every drop; the program runs as before.
func TestRingOverflow(t *testing.T) {
	h := newHarness(t)
	plain := h.run(opts{}, "launch-storm", "1000")
	r := h.run(opts{devrt: true, env: append([]string{"GPUEXT_DEVRT_RING_SLOTS=64"}, noTiming...)}, "launch-storm", "1000")
	require.Equal(t, comparable(t, plain.raw), comparable(t, r.raw))
	rg := r.only(t)
	require.Equal(t, uint32(64), rg.hdr.Capacity)
	// cuDevicePrimaryCtxRetain, cuModuleLoadData (a slot each) and the named
	// cuModuleGetFunction (4 slots) leave 58 slots for launches.
	require.Equal(t, map[ev.API]int{ev.APICuDevicePrimaryCtxRetain: 1, ev.APICuModuleLoadData: 1,
		ev.APICuModuleGetFunction: 1, ev.APICuLaunchKernel: 58}, countByAPI(rg.calls))
	total := 0
	for _, n := range h.expected(r, r.res.PID, r.res.Calls, nil) {
		total += n
	}
	require.Equal(t, 1004, total)
	require.Equal(t, uint64(61), rg.ctr.Records)
	require.Equal(t, uint64(total-61), rg.ctr.Drops[0], "drops[GPUEXT_RDROP_FULL]")
	require.Equal(t, uint64(64), rg.ctr.Head)
}
