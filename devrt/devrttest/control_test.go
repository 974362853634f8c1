package devrttest

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

func monotonic() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// settle is how long after a control change a call may still follow the
// old values: one that read the control page just before the change and
// took its start time just after (only a thread descheduled in between).
const settle = 50 * time.Millisecond

// consumer drains a live ring as the collector would.
type consumer struct {
	t     *testing.T
	ring  *devring.Ring
	calls []ev.Event
	execs []ev.GPUExec
}

// pumpUntil drains until cond holds, for at most 20 s.
func (c *consumer) pumpUntil(what string, cond func() bool) {
	c.t.Helper()
	rg := &ring{}
	for end := time.Now().Add(20 * time.Second); !cond(); {
		require.True(c.t, time.Now().Before(end), "waiting for %s", what)
		n, err := c.ring.Drain(rg.add)
		require.NoError(c.t, err)
		c.calls = append(c.calls, rg.calls...)
		c.execs = append(c.execs, rg.execs...)
		rg.calls, rg.execs = rg.calls[:0], rg.execs[:0]
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// count counts the records of the calls that started after t: launches,
// memory calls, and GPU execution records.
func (c *consumer) count(t uint64) (launches, memory, execs int) {
	for _, e := range c.calls {
		if e.Start <= t {
			continue
		}
		switch e.API.Class() {
		case ev.ClassLaunch:
			launches++
		case ev.ClassMemory:
			memory++
		}
	}
	for _, x := range c.execs {
		if x.CallStart > t {
			execs++
		}
	}
	return launches, memory, execs
}

// The collector changes what devrt reports while the program runs: devrt
// follows each consistent change of the control page, and keeps its last
// consistent values while a write is in progress (generation odd). The
// program (procaddr) launches, allocates and frees in turn, so the memory
// records show it kept running while launches were not reported.
func TestControlPage(t *testing.T) {
	h := newHarness(t)
	cmd, r := h.command(opts{devrt: true, env: []string{"GPUEXT_DEVRT_SAMPLE=0", "GPUEXT_DEVRT_EVENT_PAIRS=4096",
		"FAKECUDA_DELAY_US=5", "FAKECUDA_DELAY_SPIN=1"}}, "procaddr", "100000000")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var rr *devring.Ring
	var path string
	require.Eventually(t, func() bool {
		paths, _ := filepath.Glob(filepath.Join(r.dir, "*.ring"))
		if len(paths) != 1 {
			return false
		}
		var err error
		path = paths[0]
		rr, err = devring.Open(path)
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "devrt's ring")
	defer rr.Close()
	c := &consumer{t: t, ring: rr}
	after := func(t0 uint64) uint64 { return t0 + uint64(settle.Nanoseconds()) }

	// Everything reported, no timing (sample 0).
	c.pumpUntil("launches", func() bool { n, _, _ := c.count(0); return n >= 1000 })

	// A write in progress: generation odd, "memory only" written. devrt
	// keeps reporting with the values it had.
	ctl := mapControl(t, path)
	g := atomic.LoadUint32(ctl.gen)
	atomic.StoreUint32(ctl.gen, g|1)
	atomic.StoreUint32(ctl.classes, devring.ClassMemory)
	t2 := after(monotonic())
	c.pumpUntil("calls during a torn write", func() bool { _, m, _ := c.count(t2); return m >= 2000 })
	n, _, _ := c.count(t2)
	require.NotZero(t, n, "a torn control page is not followed")

	// The write completes: memory calls only.
	atomic.StoreUint32(ctl.gen, (g|1)+1)
	t3 := after(monotonic())
	c.pumpUntil("memory calls", func() bool { _, m, _ := c.count(t3); return m >= 2000 })
	n, _, _ = c.count(t3)
	require.Zero(t, n, "memory class only: no launch records")

	// Everything, every launch timed.
	require.NoError(t, rr.WriteControl(devring.Control{Classes: devring.ClassAll, SampleEvery: 1, ConsumerPID: uint32(os.Getpid())}))
	t4 := after(monotonic())
	c.pumpUntil("timed launches", func() bool { n, _, x := c.count(t4); return n >= 100 && x >= 100 })

	// Every launch due, none timed within 20 ms of the thread's previous
	// timed one (procaddr launches from one thread, a call every ~10 µs).
	const gap = 20 * time.Millisecond
	require.NoError(t, rr.WriteControl(devring.Control{Classes: devring.ClassAll, SampleEvery: 1,
		SampleGapUS: uint32(gap / time.Microsecond), ConsumerPID: uint32(os.Getpid())}))
	t45 := after(monotonic())
	c.pumpUntil("timed launches, 20 ms apart", func() bool { _, _, x := c.count(t45); return x >= 4 })
	var starts []uint64
	for _, x := range c.execs {
		if x.CallStart > t45 {
			starts = append(starts, x.CallStart)
		}
	}
	for i := 1; i < len(starts); i++ {
		require.GreaterOrEqual(t, starts[i]-starts[i-1], uint64(gap.Nanoseconds()), "timed calls %d and %d", i-1, i)
	}
	n, _, x := c.count(starts[0])
	require.Greater(t, n, 10*x, "most due launches were not timed")

	// The gap lowered to none: every launch timed again, not 1 in 20 ms
	// (1000 of them would take 20 s). Launches whose pairs the poller has
	// not read yet have no execution record so far.
	require.NoError(t, rr.WriteControl(devring.Control{Classes: devring.ClassAll, SampleEvery: 1,
		ConsumerPID: uint32(os.Getpid())}))
	t46 := after(monotonic())
	c.pumpUntil("every launch timed again", func() bool { _, _, x := c.count(t46); return x >= 1000 })
	n, _, x = c.count(t46)
	require.GreaterOrEqual(t, 10*x, n, "%d of %d launches timed", x, n)

	// No exec class: launches reported, none timed.
	require.NoError(t, rr.WriteControl(devring.Control{Classes: devring.ClassAll &^ devring.ClassExec, SampleEvery: 1}))
	t5 := after(monotonic())
	c.pumpUntil("launches", func() bool { n, _, _ := c.count(t5); return n >= 2000 })
	_, _, x = c.count(t5)
	require.Zero(t, x, "no exec class: nothing timed")
	ctr, err := rr.Counters()
	require.NoError(t, err)
	require.Equal(t, uint32(1), ctr.State, "still active")
}

// control points into a ring's control page, for writes devring's seqlock
// writer would never make.
type control struct{ gen, classes *uint32 }

func mapControl(t *testing.T, path string) control {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), 0, devring.DataOffset, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	// struct gpuext_ctl: generation at 8, classes at 12.
	return control{
		gen:     (*uint32)(unsafe.Pointer(&mem[devring.CtlOffset+8])),
		classes: (*uint32)(unsafe.Pointer(&mem[devring.CtlOffset+12])),
	}
}
