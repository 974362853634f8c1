package policy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
	sim "github.com/otelcol-gpu/otelcol-gpu/internal/gpuextsim"
)

// runSched runs a job mix with no policy (p nil) or with the scheduling
// policy p attached, and returns the run and the module counters it moved.
func runSched(t *testing.T, l *gpuext.Loader, p *gpuext.SchedParams, cfg sim.SchedConfig, tasks []sim.Task, jobs []sim.Job) (sim.SchedResult, [sim.HookMax]sim.HookStats) {
	t.Helper()
	if p != nil {
		require.NoError(t, l.AttachSched("replay", *p))
		defer func() { require.NoError(t, l.Detach(gpuext.Sched)) }()
	}
	before, err := sim.ReadStats()
	require.NoError(t, err)
	res, err := sim.ReplaySchedRun(cfg, tasks, jobs)
	require.NoError(t, err)
	after, err := sim.ReadStats()
	require.NoError(t, err)
	return res, after.Sub(before)
}

// lcbe is the LC/BE policy of the issue: 1 s slices for the LC task
// (comm "lc"), 200 µs for everything else.
func lcbe() *gpuext.SchedParams {
	p := gpuext.LCBE(1_000_000, 200)
	p.DefaultClass = gpuext.ClassBE
	p.Rules[gpuext.Task{Comm: "lc"}] = gpuext.ClassLC
	return &p
}

func beThroughput(r sim.SchedResult) float64 {
	var jobs uint64
	for _, tr := range r.Tasks[1:] {
		jobs += tr.Jobs
	}
	return float64(jobs) / float64(r.MakespanNS)
}

// TestKernelLCBE: a latency-critical task submitting 200 µs jobs every 5 ms
// beside 3 best-effort tasks with queues of 4 ms jobs, on a runlist with
// 2 ms default timeslices and a 5 µs switch. With no policy an LC job waits
// behind up to three 2 ms BE slices; with LC/BE behind up to three 200 µs
// ones, while the BE tasks still get all the GPU the LC task leaves.
func TestKernelLCBE(t *testing.T) {
	l := needSim(t)
	cfg := sim.SchedConfig{SwitchNS: 5_000, DefaultTimesliceUS: 2_000}
	tasks, jobs := sim.LCBE(3, 500, 3, 100, 5_000_000, 200_000, 4_000_000)
	base, _ := runSched(t, l, nil, cfg, tasks, jobs)
	got, d := runSched(t, l, lcbe(), cfg, tasks, jobs)

	require.Len(t, got.Tasks, 4)
	require.Equal(t, uint64(1_000_000), got.Tasks[0].TimesliceUS)
	for _, tr := range got.Tasks[1:] {
		require.Equal(t, uint64(200), tr.TimesliceUS)
		require.False(t, tr.Rejected)
	}
	for i := range got.Tasks {
		require.Equal(t, base.Tasks[i].Jobs, got.Tasks[i].Jobs, "every job runs either way")
		require.Equal(t, base.Tasks[i].BusyNS, got.Tasks[i].BusyNS)
	}
	lcBase, lc := base.Tasks[0], got.Tasks[0]
	require.Less(t, lc.P99LatencyNS, lcBase.P99LatencyNS)
	require.Less(t, lc.MeanLatencyNS, lcBase.MeanLatencyNS)
	// Round robin: a 200 µs LC job waits for at most one 200 µs slice of
	// each BE task, each with its switch, and its own switch.
	require.LessOrEqual(t, lc.P99LatencyNS, uint64(200_000+3*(200_000+5_000)+5_000))
	ratio := beThroughput(got) / beThroughput(base)
	require.InDelta(t, 1.0, ratio, 0.03, "BE throughput within 3%%")
	t.Logf("LC p99 latency %d -> %d ns, mean %d -> %d ns; BE throughput x%.4f; switches %d -> %d",
		lcBase.P99LatencyNS, lc.P99LatencyNS, lcBase.MeanLatencyNS, lc.MeanLatencyNS, ratio, base.Switches, got.Switches)

	// The module saw one init and one bind per task, each asking one
	// timeslice, all applied.
	for _, h := range []uint32{sim.HookTaskInit, sim.HookTaskBind} {
		require.Equal(t, sim.HookStats{Hook: sim.HookNames[h], Calls: 4, Policy: 4, Requests: 4, Applied: 4}, d[h])
	}
	require.Equal(t, sim.HookStats{Hook: sim.HookNames[sim.HookTaskDestroy], Calls: 4, Policy: 4}, d[sim.HookTaskDestroy])
}

// TestKernelSchedClasses: interleave and rejection reach the driver, by
// pid, by comm and by default class.
func TestKernelSchedClasses(t *testing.T) {
	l := needSim(t)
	cfg := sim.SchedConfig{SwitchNS: 1_000, DefaultTimesliceUS: 1_000}
	tasks, jobs := sim.LCBE(5, 600, 3, 10, 1_000_000, 100_000, 500_000)
	p := lcbe()
	p.Classes[gpuext.ClassLC] = gpuext.ClassParams{TimesliceUS: 5_000, Interleave: gpuext.InterleaveHigh}
	p.Classes[3] = gpuext.ClassParams{Reject: true}
	p.Rules[gpuext.Task{PID: 602}] = 3 // "be1"
	got, d := runSched(t, l, p, cfg, tasks, jobs)

	want := []struct {
		timeslice  uint64
		interleave uint32
		rejected   bool
	}{{5_000, 3, false}, {200, 0, false}, {1_000, 0, true}, {200, 0, false}}
	var dropped uint64
	for i, w := range want {
		tr := got.Tasks[i]
		require.Equal(t, w.timeslice, tr.TimesliceUS, tasks[i].Comm)
		require.Equal(t, w.interleave, tr.Interleave, tasks[i].Comm)
		require.Equal(t, w.rejected, tr.Rejected, tasks[i].Comm)
		if w.rejected {
			require.Zero(t, tr.Jobs)
			require.NotZero(t, tr.Dropped)
			dropped = tr.Dropped
		}
	}
	var be1 uint64
	for _, j := range jobs {
		if j.Task == 2 {
			be1++
		}
	}
	require.Equal(t, be1, dropped, "all of the rejected task's jobs")
	// init: LC asks a timeslice and an interleave, the BE tasks a timeslice,
	// the rejected class nothing; bind: the same, and one reject.
	require.Equal(t, sim.HookStats{Hook: "task_init", Calls: 4, Policy: 4, Requests: 4, Applied: 4}, d[sim.HookTaskInit])
	require.Equal(t, sim.HookStats{Hook: "task_bind", Calls: 4, Policy: 4, Requests: 5, Applied: 5}, d[sim.HookTaskBind])
}
