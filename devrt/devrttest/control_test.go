package devrttest

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
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
// took its start time just after.
const settle = 20 * time.Millisecond

// consumer drains a live ring as the collector would.
type consumer struct {
	t     *testing.T
	ring  *devring.Ring
	calls []ev.Event
	execs []ev.GPUExec
}

// pump drains for d.
func (c *consumer) pump(d time.Duration) {
	c.t.Helper()
	rg := &ring{}
	for end := time.Now().Add(d); time.Now().Before(end); {
		n, err := c.ring.Drain(rg.add)
		require.NoError(c.t, err)
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	c.calls = append(c.calls, rg.calls...)
	c.execs = append(c.execs, rg.execs...)
}

// after counts launch records and GPU execution records of calls that
// started after t.
func (c *consumer) after(t uint64) (launches, execs int) {
	for _, e := range c.calls {
		if e.API == ev.APICuLaunchKernel && e.Start > t {
			launches++
		}
	}
	for _, x := range c.execs {
		if x.CallStart > t {
			execs++
		}
	}
	return launches, execs
}

// The collector changes what devrt reports while the program runs: devrt
// follows each consistent change of the control page, and keeps its last
// consistent values while a write is in progress (generation odd).
func TestControlPage(t *testing.T) {
	h := newHarness(t)
	cmd, r := h.command(opts{devrt: true, env: []string{"GPUEXT_DEVRT_SAMPLE=0", "GPUEXT_DEVRT_EVENT_PAIRS=4096",
		"FAKECUDA_DELAY_US=10", "FAKECUDA_DELAY_SPIN=1"}}, "launch-storm", "100000000")
	cmd.Stdout = nil
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
	running := func() { require.NoError(t, syscall.Kill(cmd.Process.Pid, 0), "the workload still runs") }
	ms := func(d time.Duration) uint64 { return uint64(d.Nanoseconds()) }

	// Reporting launches, no timing (sample 0).
	require.Eventually(t, func() bool { c.pump(10 * time.Millisecond); n, _ := c.after(0); return n >= 1000 },
		10*time.Second, time.Millisecond)

	// A write in progress: generation odd, classes 0 written. devrt keeps
	// reporting with the values it had.
	ctl := mapControl(t, path)
	g := atomic.LoadUint32(ctl.gen)
	atomic.StoreUint32(ctl.gen, g|1)
	atomic.StoreUint32(ctl.classes, 0)
	t2 := monotonic()
	c.pump(100 * time.Millisecond)
	n, _ := c.after(t2 + ms(settle))
	require.NotZero(t, n, "a torn control page is not followed")

	// The write completes: nothing is reported any more.
	atomic.StoreUint32(ctl.gen, (g|1)+1)
	t3 := monotonic()
	c.pump(150 * time.Millisecond)
	running()
	n, _ = c.after(t3 + ms(settle))
	require.Zero(t, n, "classes 0: no records")

	// Everything, every launch timed.
	require.NoError(t, rr.WriteControl(devring.Control{Classes: devring.ClassAll, SampleEvery: 1, ConsumerPID: uint32(os.Getpid())}))
	t4 := monotonic()
	c.pump(150 * time.Millisecond)
	launches, execs := c.after(t4 + ms(settle))
	require.NotZero(t, launches)
	require.NotZero(t, execs, "sample_every 1 with the exec class: timed")

	// No exec class: launches reported, none timed.
	require.NoError(t, rr.WriteControl(devring.Control{Classes: devring.ClassAll &^ devring.ClassExec, SampleEvery: 1}))
	t5 := monotonic()
	c.pump(150 * time.Millisecond)
	running()
	launches, execs = c.after(t5 + ms(settle))
	require.NotZero(t, launches)
	require.Zero(t, execs, "no exec class: nothing timed")
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
