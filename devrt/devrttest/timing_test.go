package devrttest

import (
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

const (
	kernelNS = 2_000_000 // FAKECUDA_KERNEL_NS: every kernel and graph
	copyNS   = 500_000   // FAKECUDA_COPY_NS: every copy and memset
)

// floatTol is how far a GPU time devrt computes may be from the fake GPU's:
// each is an anchor's host time plus cuEventElapsedTime's float
// milliseconds since the anchor, exact to 2^-24 of that span (two of them
// for a difference). devrt anchors at the poller's first round that finds
// work pending, after the ring's creation and at most anchorLagNS after
// the work (the poller sleeps GPUEXT_DEVRT_POLL_US, 100 ms, between rounds).
func floatTol(createdNS, at uint64) float64 {
	return float64(at-createdNS+anchorLagNS)/float64(1<<22) + 2
}

const anchorLagNS = 2 * 100_000_000 // twice the poller's period, for the round's own time

// tscSkew bounds how far devrt's TSC-based timestamps may stray from
// CLOCK_MONOTONIC (clock.c: tens of ns; a µs leaves room for a loaded machine).
const tscSkew = 1000

// The async fake driver runs each kernel for exactly kernelNS on its
// stream; devrt's GPU execution records must say so, link to their calls,
// and show the queue: back-to-back work on one stream starts when the work
// before it ends.
//
// devrt anchors the GPU's clock where it sees the anchor stream's write to
// a page it maps for the device (cuStreamWriteValue32) when the driver has
// stream memory operations, as the fake does; with the mark's fault
// injected it takes the midpoint anchor. Both must read the fake's timeline
// as exactly.
func TestGPUExecutionTiming(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault string
	}{{"marked anchor", ""}, {"midpoint anchor", "mark"}} {
		t.Run(tc.name, func(t *testing.T) {
			rg := checkGPUExecutionTiming(t, tc.fault)
			require.Positive(t, anchors(rg))
			if tc.fault == "" {
				require.Equal(t, anchors(rg), rg.stats["cuStreamWriteValue32_v2"], "every anchor after its mark")
				require.Equal(t, 1, rg.stats["cuMemHostRegister_v2"], "one page for the context's marks")
			} else {
				require.Zero(t, rg.stats["cuStreamWriteValue32_v2"])
				require.Zero(t, rg.stats["cuMemHostRegister_v2"])
			}
		})
	}
}

func checkGPUExecutionTiming(t *testing.T, fault string) *ring {
	h := newHarness(t)
	const n = 6
	fake := []string{"FAKECUDA_KERNEL_NS=" + strconv.Itoa(kernelNS), "FAKECUDA_COPY_NS=" + strconv.Itoa(copyNS)}
	plain := h.run(opts{env: fake}, "timed", strconv.Itoa(n))
	env := append(fake, "GPUEXT_DEVRT_SAMPLE=1")
	if fault != "" {
		env = append(env, "GPUEXT_DEVRT_FAULT_INJECT="+fault)
	}
	r := h.run(opts{devrt: true, env: env}, "timed", strconv.Itoa(n))
	require.Equal(t, comparable(t, plain.raw), comparable(t, r.raw))
	rg := r.only(t)
	checkCalls(t, rg)
	require.Zero(t, rg.ctr.Drops)
	require.Equal(t, uint32(3), rg.ctr.State)

	// Every launch, copy and set is timed (sample 1), once.
	require.Len(t, rg.execs, 3*n+4)
	require.Equal(t, uint64(len(rg.execs)), rg.ctr.Timed)
	calls := map[uint32]ev.Event{}
	for _, e := range rg.calls {
		calls[e.Corr] = e
	}
	fn := one(t, rg, ev.APICuModuleGetFunction).Handle
	graph := one(t, rg, ev.APICuGraphLaunch)
	streams := map[uint64][]ev.GPUExec{}
	for _, x := range rg.execs {
		call, ok := calls[x.Corr]
		require.True(t, ok, "corr %d: the call's record", x.Corr)
		require.Equal(t, call.API, x.API)
		require.Equal(t, call.Start, x.CallStart)
		require.Equal(t, call.TID, x.TID)
		require.Equal(t, ev.SourceDevrt, x.Source)
		require.Zero(t, x.Flags&ev.ExecFlagCallFailed)
		switch {
		case x.API == ev.APICuLaunchKernel:
			require.Equal(t, fn, x.Handle)
			require.Zero(t, x.Bytes)
		case x.API == ev.APICuGraphLaunch:
			require.Equal(t, graph.Handle, x.Handle)
		default:
			require.Equal(t, uint64(4096), x.Bytes)
			require.Zero(t, x.Handle)
		}
		streams[x.Stream] = append(streams[x.Stream], x)
	}

	// The streams: s0 and s1 (created), the per-thread default stream of
	// the _ptsz launches (CU_STREAM_PER_THREAD, 2) and the legacy one (0)
	// of the synchronous copy.
	launches := byAPI(rg, ev.APICuLaunchKernel)
	s0, s1 := launches[0].Stream, launches[n].Stream
	require.Len(t, streams, 4)
	want := map[uint64][]ev.API{
		s0: append(repeat(ev.APICuLaunchKernel, n), ev.APICuMemcpyHtoDAsync, ev.APICuGraphLaunch),
		s1: append(repeat(ev.APICuLaunchKernel, n), ev.APICuMemsetD8Async),
		2:  repeat(ev.APICuLaunchKernel, n),
		0:  {ev.APICuMemcpyHtoD},
	}
	for s, xs := range streams {
		sort.Slice(xs, func(i, j int) bool { return xs[i].GPUStart < xs[j].GPUStart })
		var apis []ev.API
		for _, x := range xs {
			apis = append(apis, x.API)
		}
		require.Equal(t, want[s], apis, "stream %#x in GPU order", s)
		for k, x := range xs {
			dur := float64(kernelNS)
			if x.API != ev.APICuLaunchKernel && x.API != ev.APICuGraphLaunch {
				dur = copyNS
			}
			tol := floatTol(rg.hdr.CreatedNS, x.GPUEnd)
			call := calls[x.Corr]
			require.GreaterOrEqual(t, x.GPUStart, x.CallStart, "work starts after its call")
			if k == 0 {
				// On an idle stream the start event is stamped when it is
				// recorded, before the work is queued: the time between the
				// two is part of the measure, as on a GPU.
				// The start may be clamped to the call's start, a host
				// timestamp that devrt takes from the TSC (clock.c) while the
				// events keep the kernel's clock (the two may differ by the
				// TSC conversion's error, tens of ns): a clamped interval
				// moves whole, its duration is still the events'.
				require.GreaterOrEqual(t, float64(x.Duration()), dur-tol, "first on stream %#x", s)
				require.LessOrEqual(t, float64(x.Duration()), dur+float64(call.End-call.Start)+tol)
				continue
			}
			// Queued behind the work before it: exact.
			require.Zero(t, x.Flags&ev.ExecFlagClamped)
			require.InDelta(t, dur, float64(x.Duration()), tol, "stream %#x work %d", s, k)
			// It starts when the work before it ends; after a clamped first
			// work, which moved whole, up to that clamp apart.
			gap := tol
			if xs[k-1].Flags&ev.ExecFlagClamped != 0 {
				gap += tscSkew
			}
			require.InDelta(t, float64(xs[k-1].GPUEnd), float64(x.GPUStart), gap, "starts when the work before it ends")
			if x.API == ev.APICuLaunchKernel {
				// Queue delay of back-to-back kernels: k-1 durations after
				// the second kernel started.
				require.InDelta(t, float64(k-1)*kernelNS, float64(x.GPUStart-xs[1].GPUStart), float64(k)*tol)
			}
		}
	}

	// devrt's own driver calls, accounted for exactly: at unload the driver
	// counted the program's calls plus devrt's (GPUEXT_DEVRT_STATS).
	final, base := r.final[r.res.PID], plain.final[plain.res.PID]
	for name := range merge(final, base, rg.stats) {
		require.Equal(t, base[name]+rg.stats[name], final[name], "%s: program + devrt", name)
		// The workload printed its counters before exit, when devrt's
		// poller had not necessarily finished.
		require.LessOrEqual(t, r.res.DriverCalls[name]-plain.res.DriverCalls[name], rg.stats[name], name)
	}
	require.Equal(t, 2*(3*n+4), rg.stats["cuEventRecord"]+rg.stats["cuEventRecord_ptsz"]-
		anchors(rg), "two records per timed call, besides the anchors")
	require.Equal(t, 2*n, rg.stats["cuEventRecord_ptsz"], "the _ptsz launches record on their stream kind")
	return rg
}

// TestGPUClockRate: the fake's "GPU" clock runs 500 ppm fast
// (FAKECUDA_CLOCK_PPB scales its cuEventElapsedTime). Kernels of 250 ms run
// back to back on a stream for 2 s. devrt maps each start through its
// latest anchor (at most ANCHOR_AGE_NS, 250 ms, old) times the clocks'
// rate it measured from its base anchor, once that is a second old: from
// then on the starts lie on the fake's timeline to a few µs of each other
// and the durations are the kernel's (before, a start could be off by up
// to 125 µs, and each duration was; 25 µs is allowed for a busy machine). Without marked anchors there is no
// rate (a midpoint anchor's error over a second would be a rate error of
// its own): each duration is 125 µs long.
func TestGPUClockRate(t *testing.T) {
	const kernel = 250_000_000
	h := newHarness(t)
	run := func(fault string) []ev.GPUExec {
		env := []string{"FAKECUDA_KERNEL_NS=" + strconv.Itoa(kernel), "FAKECUDA_COPY_NS=1000",
			"FAKECUDA_CLOCK_PPB=500000", "GPUEXT_DEVRT_SAMPLE=1"}
		if fault != "" {
			env = append(env, "GPUEXT_DEVRT_FAULT_INJECT="+fault)
		}
		rg := h.run(opts{devrt: true, env: env}, "timed", "8").only(t)
		s0 := byAPI(rg, ev.APICuLaunchKernel)[0].Stream
		var xs []ev.GPUExec
		for _, x := range rg.execs {
			if x.Stream == s0 && x.API == ev.APICuLaunchKernel {
				xs = append(xs, x)
			}
		}
		sort.Slice(xs, func(i, j int) bool { return xs[i].GPUStart < xs[j].GPUStart })
		require.Len(t, xs, 8)
		return xs
	}
	// off: how far work k's start is from work j's plus k-j kernels
	off := func(xs []ev.GPUExec, k, j int) float64 {
		return float64(int64(xs[k].GPUStart-xs[j].GPUStart) - int64(k-j)*kernel)
	}

	xs := run("")
	for k := 5; k < len(xs); k++ { // mapped with a rate from a base a second old
		// a few µs, or 25 µs if a busy machine held the poller up
		// around both the base and the anchor: not 125 µs
		require.InDelta(t, 0, off(xs, k, 5), 25_000, "work %d's start", k)
		require.InDelta(t, kernel, float64(xs[k].Duration()), 25_000, "work %d's duration", k)
	}

	xs = run("mark")
	for k := 1; k < len(xs); k++ { // the first's start event comes before the call queues it
		require.InDelta(t, kernel+kernel/2000, float64(xs[k].Duration()), 1000, "work %d: the GPU's clock, unscaled", k)
	}
}

// anchors is how many anchor events devrt recorded: each is followed by
// one cuEventSynchronize, which devrt calls for nothing else.
func anchors(rg *ring) int { return rg.stats["cuEventSynchronize"] }

func repeat(a ev.API, n int) []ev.API {
	out := make([]ev.API, n)
	for i := range out {
		out[i] = a
	}
	return out
}

func merge(ms ...map[string]int) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}

// 1 of every N launches per thread, starting with the first.
func TestSampling(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		env   []string
		timed int
	}{
		{nil, 10},                                         // the default, 1 in 32: launches 1, 33, ... 289
		{[]string{"GPUEXT_DEVRT_SAMPLE=7"}, 46},           // 1, 8, ... 316
		{[]string{"GPUEXT_DEVRT_SAMPLE=1"}, 320},          // all
		{[]string{"GPUEXT_DEVRT_CLASSES=launch,sync"}, 0}, // no exec class
	} {
		r := h.run(opts{devrt: true, env: append([]string{"GPUEXT_DEVRT_EVENT_PAIRS=1024"}, tc.env...)}, "launch-storm", "320")
		rg := r.only(t)
		require.Len(t, rg.execs, tc.timed, "%v", tc.env)
		require.Zero(t, rg.ctr.Drops, "%v", tc.env)
		launches := byAPI(rg, ev.APICuLaunchKernel)
		require.Len(t, launches, 320)
		every := 320 / max(tc.timed, 1)
		if tc.timed == 46 {
			every = 7
		}
		timed := map[uint32]bool{}
		for _, x := range rg.execs {
			timed[x.Corr] = true
		}
		for i, e := range launches {
			require.Equal(t, tc.timed > 0 && i%every == 0, timed[e.Corr], "%v: launch %d", tc.env, i)
		}
	}
}

// A minimum interval between a thread's timed calls: a sample due sooner is
// skipped, and the next is a whole period on, so the timed launches stay
// every N-th.
func TestSamplingGap(t *testing.T) {
	h := newHarness(t)
	run := func(env ...string) (*ring, []ev.Event) {
		r := h.run(opts{devrt: true, env: append([]string{"GPUEXT_DEVRT_EVENT_PAIRS=1024"}, env...)}, "launch-storm", "320")
		rg := r.only(t)
		require.Zero(t, rg.ctr.Drops, "%v", env)
		launches := byAPI(rg, ev.APICuLaunchKernel)
		require.Len(t, launches, 320)
		return rg, launches
	}
	// 10 s: the first launch only.
	rg, launches := run("GPUEXT_DEVRT_SAMPLE=1", "GPUEXT_DEVRT_SAMPLE_GAP_US=10000000")
	require.Equal(t, 1, len(rg.execs))
	require.Equal(t, launches[0].Corr, rg.execs[0].Corr)
	// No minimum: every launch.
	rg, _ = run("GPUEXT_DEVRT_SAMPLE=1", "GPUEXT_DEVRT_SAMPLE_GAP_US=0")
	require.Equal(t, 320, len(rg.execs))
	// 1 in 4, 20 µs apart: launches 0, 4, 8, ... as long as 20 µs passed.
	rg, launches = run("GPUEXT_DEVRT_SAMPLE=4", "GPUEXT_DEVRT_SAMPLE_GAP_US=20")
	index := map[uint32]int{}
	for i, e := range launches {
		index[e.Corr] = i
	}
	var timed []int
	for _, x := range rg.execs {
		i, ok := index[x.Corr]
		require.True(t, ok)
		require.Zero(t, i%4, "launch %d timed", i)
		timed = append(timed, i)
	}
	slices.Sort(timed)
	require.Equal(t, 0, timed[0])
	for j := 1; j < len(timed); j++ {
		d := launches[timed[j]].Start - launches[timed[j-1]].Start
		require.GreaterOrEqual(t, d, uint64(20_000), "launch %d timed %d ns after launch %d", timed[j], d, timed[j-1])
	}
	require.LessOrEqual(t, len(timed), 80)
}

// devrt writes the minimum interval it starts with to the control page, as
// the collector reads it back: GPUEXT_DEVRT_SAMPLE_GAP_US, 50000 µs when
// unset, at most 10 s.
func TestSamplingGapControlPage(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		env string
		gap uint32
	}{
		{"GPUEXT_DEVRT_SAMPLE_GAP_US=", 50000}, // empty: the default
		{"GPUEXT_DEVRT_SAMPLE_GAP_US=0", 0},
		{"GPUEXT_DEVRT_SAMPLE_GAP_US=250", 250},
		{"GPUEXT_DEVRT_SAMPLE_GAP_US=20000000", devring.MaxSampleGapUS},
	} {
		rg := h.run(opts{devrt: true, env: []string{"GPUEXT_DEVRT_SAMPLE=7", tc.env}}, "launch-storm", "1").only(t)
		rr, err := devring.Open(rg.path)
		require.NoError(t, err)
		c, _, _, err := rr.ReadControl()
		require.NoError(t, err)
		require.NoError(t, rr.Close())
		require.Equal(t, devring.Control{Classes: devring.ClassAll, SampleEvery: 7, SampleGapUS: tc.gap}, c, tc.env)
	}
}

// cudaLaunchKernel times the launch it makes in the driver once: the GPU
// execution record is the runtime call's, naming the kernel by the
// CUfunction of the driver launch inside it.
func TestRuntimeLaunchTiming(t *testing.T) {
	h := newHarness(t)
	r := h.run(opts{devrt: true, env: []string{"GPUEXT_DEVRT_SAMPLE=1", "FAKECUDA_KERNEL_NS=100000"}}, "runtime", "20")
	rg := r.only(t)
	require.Len(t, rg.execs, 20)
	fn := one(t, rg, ev.APICuModuleGetFunction).Handle
	rt := map[uint32]bool{}
	for _, e := range byAPI(rg, ev.APICudaLaunchKernel) {
		rt[e.Corr] = true
	}
	for _, x := range rg.execs {
		require.Equal(t, ev.APICudaLaunchKernel, x.API)
		require.True(t, rt[x.Corr])
		require.Equal(t, fn, x.Handle, "the CUfunction, not the host stub")
	}
}

// The poller keeps up with the rate pairs are taken: every launch timed,
// thousands a second (each fake driver call sleeps 10 µs), from a pool of
// 64 pairs, while its period is 100 ms: a pool half taken wakes it, and it
// comes back sooner by the rate the pool filled since its last round. A
// poller that slept its period after a round that found the pool under
// half full timed 64 of these 3,000 launches (383 with 30 µs calls).
func TestPollerKeepsUp(t *testing.T) {
	h := newHarness(t)
	const n = 3000
	r := h.run(opts{devrt: true, env: []string{"GPUEXT_DEVRT_SAMPLE=1", "GPUEXT_DEVRT_EVENT_PAIRS=64",
		"FAKECUDA_DELAY_US=30"}}, "launch-storm", strconv.Itoa(n))
	rg := r.only(t)
	require.Len(t, byAPI(rg, ev.APICuLaunchKernel), n)
	t.Logf("timed %d of %d launches", len(rg.execs), n)
	// The first samples come before the poller's first round; a loaded
	// machine may hold it up now and then.
	require.GreaterOrEqual(t, len(rg.execs), n*9/10, "timed %d of %d, %d timing drops", len(rg.execs), n, rg.ctr.Drops[devring.DropTiming])
	require.Equal(t, uint64(n-len(rg.execs)), rg.ctr.Drops[devring.DropTiming])
}
