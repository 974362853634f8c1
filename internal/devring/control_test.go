package devring

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWriteControl(t *testing.T) {
	mem, _, r := memRing(t, testHeader)
	c, gen, hb, err := r.ReadControl()
	require.NoError(t, err)
	require.Equal(t, Control{Classes: ClassAll, SampleEvery: 32, SampleGapUS: 50000}, c, "what devrt starts with")
	require.Zero(t, gen)
	require.Zero(t, hb)

	want := Control{Classes: ClassLaunch | ClassExec, SampleEvery: 8, SampleGapUS: 250, ConsumerPID: 99}
	require.NoError(t, r.WriteControl(want))
	c, gen, _, _ = r.ReadControl()
	require.Equal(t, want, c)
	require.Equal(t, uint32(2), gen, "odd while writing, even after")

	require.NoError(t, r.Heartbeat(5_000_000))
	c, gen, hb, _ = r.ReadControl()
	require.Equal(t, uint64(5_000_000), hb)
	require.Equal(t, uint32(2), gen, "a heartbeat does not move the generation")

	// A generation left odd (a writer that died, or garbage) becomes a new
	// odd value while writing and even after.
	putU32(mem, CtlOffset+ctlGeneration, 7)
	require.NoError(t, r.WriteControl(want))
	_, gen, _, _ = r.ReadControl()
	require.Equal(t, uint32(10), gen)
	putU32(mem, CtlOffset+ctlGeneration, ^uint32(0))
	require.NoError(t, r.WriteControl(want))
	_, gen, _, _ = r.ReadControl()
	require.Equal(t, uint32(2), gen, "wraps to an even value")
}

// TestControlSeqlock: a reader that follows devrt's rule (read the
// generation, the fields, the generation again; keep the copy when both
// are the same even value) only ever sees a configuration that was written
// whole.
func TestControlSeqlock(t *testing.T) {
	mem, _, r := memRing(t, testHeader)
	gen := func() uint32 { return atomic.LoadUint32((*uint32)(ptr(mem, CtlOffset+ctlGeneration))) }
	field := func(off int) uint32 { return atomic.LoadUint32((*uint32)(ptr(mem, CtlOffset+off))) }
	var wg sync.WaitGroup
	done := make(chan struct{})
	var consistent, torn atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			g1 := gen()
			a, b, c, d := field(ctlClasses), field(ctlSampleEvery), field(ctlConsumerPID), field(ctlSampleGap)
			if g1%2 == 1 || gen() != g1 {
				continue
			}
			if a == b && b == c && c == d {
				consistent.Add(1)
			} else if g1 != 0 {
				torn.Add(1)
			}
		}
	}()
	// Write until the reader has taken many copies (it may not run at
	// all for a while on a busy machine), at least 20000 times.
	deadline := time.Now().Add(10 * time.Second)
	for i := uint32(1); i <= 20000 || (consistent.Load() < 1000 && time.Now().Before(deadline)); i++ {
		require.NoError(t, r.WriteControl(Control{Classes: i, SampleEvery: i, SampleGapUS: i, ConsumerPID: i}))
		if i%1024 == 0 {
			runtime.Gosched()
		}
	}
	close(done)
	wg.Wait()
	require.Zero(t, torn.Load())
	require.Positive(t, consistent.Load())
}
