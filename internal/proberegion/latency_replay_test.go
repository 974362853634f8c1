package proberegion

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A launch trace is what the collector's launch matchers were given and
// reported in one run of a GPU program (bench/device/latency_repeat.sh
// writes them from its debug log; its header says the format).
type traceOp struct {
	op       byte // c, t, r, l, L; o, x: a region opened, closed (its last read)
	pid, dev int64
	kernel   string
	v        []uint64
}

func readTrace(t *testing.T, path string) []traceOp {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var ops []traceOp
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		w := strings.Fields(sc.Text())
		if len(w) >= 3 && w[0] == "#" && w[1] == "region" {
			// "# region opened|closed pid=P path=... device=D ...": the
			// region's reads, as the source makes them
			o := traceOp{op: map[string]byte{"opened": 'o', "closed": 'x'}[w[2]]}
			for _, kv := range w[3:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "pid":
					o.pid, err = strconv.ParseInt(v, 10, 64)
				case "device":
					o.dev, err = strconv.ParseInt(v, 10, 64)
				}
				require.NoError(t, err, "%s:%d", path, n)
			}
			if o.op != 0 {
				ops = append(ops, o)
			}
			continue
		}
		if len(w) == 0 || w[0] == "#" {
			continue // a comment: a process's lifecycle
		}
		want := map[string]int{"c": 5, "t": 7, "r": 5, "l": 4, "L": 6}[w[0]]
		require.True(t, want > 0 && len(w) == want, "%s:%d: %q", path, n, sc.Text())
		o := traceOp{op: w[0][0]}
		o.pid, err = strconv.ParseInt(w[1], 10, 64)
		require.NoError(t, err)
		o.dev, err = strconv.ParseInt(w[2], 10, 64)
		require.NoError(t, err)
		vals := w[3:]
		if o.op != 'l' {
			o.kernel, vals = w[3], w[4:]
		}
		for _, s := range vals {
			// latencies may be negative: parsed as int64, kept as its bits
			x, err := strconv.ParseInt(s, 10, 64)
			require.NoError(t, err, "%s:%d", path, n)
			o.v = append(o.v, uint64(x))
		}
		ops = append(ops, o)
	}
	require.NoError(t, sc.Err())
	return ops
}

func traceKernelID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// replayTrace feeds a trace's inputs to one matcher per process and GPU
// as devprobes.Source does: a read's records of a region at once, then
// Expire at the newest call seen, and what it released taken; at a
// region's last read (traces that say when), Flush; once a process's
// regions on a GPU are closed, what a call or timing releases is taken at
// once (Source.settle); at the end, as at shutdown, Flush. It returns
// each process's, GPU's and kernel's latencies by call start.
func replayTrace(ops []traceOp) map[string]map[uint64]int64 {
	type key struct{ pid, dev int64 }
	ms := map[key]*LaunchMatcher{}
	open, closed := map[key]int{}, map[key]bool{}
	names := map[uint64]string{}
	matcher := func(k key) *LaunchMatcher {
		if ms[k] == nil {
			ms[k] = NewLaunchMatcher()
		}
		return ms[k]
	}
	out := map[string]map[uint64]int64{}
	take := func(k key) {
		for _, l := range matcher(k).Take() {
			name := fmt.Sprintf("%d/%d/%s", k.pid, k.dev, names[l.KernelID])
			if out[name] == nil {
				out[name] = map[uint64]int64{}
			}
			out[name][l.HostNS] = l.NS
		}
	}
	var newest uint64
	var batch []Launch
	var batchOf key
	read := func() {
		if len(batch) > 0 {
			m := matcher(batchOf)
			m.Device(batch)
			m.Expire(newest)
			take(batchOf)
			batch = nil
		}
	}
	for _, o := range ops {
		k := key{o.pid, o.dev}
		if o.op != 'r' || k != batchOf {
			read()
		}
		id := traceKernelID(o.kernel)
		names[id] = o.kernel
		switch o.op {
		case 'c':
			newest = max(newest, o.v[0])
			matcher(k).Host(id, o.v[0])
		case 't':
			matcher(k).Timed(id, o.v[0], o.v[1], o.v[2])
		case 'r':
			batch, batchOf = append(batch, Launch{KernelID: id, StartNS: o.v[0]}), k
		case 'l':
			matcher(k).Lost()
		case 'o':
			open[k]++
			delete(closed, k)
		case 'x':
			if open[k]--; open[k] <= 0 {
				matcher(k).Flush()
				take(k)
				closed[k] = true
			}
		}
		if closed[k] && (o.op == 'c' || o.op == 't') {
			matcher(k).Flush()
			take(k)
		}
	}
	read()
	for k, m := range ms {
		m.Flush()
		take(k)
	}
	return out
}

// TestLaunchMatcherReplay replays launch traces recorded on a GPU by
// bench/device/latency_repeat.sh (probes_check.sh's launch_latency runs,
// warp level and per thread, 2026-11-27; when recorded, a replay with the
// matcher of the day gave exactly the latencies the collector reported):
// h100-a*, h100-b1 on an H100; h200-c5 on an H200, where the matcher of
// that day dropped early_exits' third record and paired every launch
// after with the next one's record (TestLaunchMatcherLostCallBounds);
// h200-d* on an H200 with this matcher (tenth session; the regions'
// reads in their lifecycle lines), which the collector's latencies
// matched, 185 of 185.
// Every launch call of every kernel gets one latency, none over 5 ms: the
// programs' launches do not queue, the GPU starts each within a few µs of
// its call (the first of a kernel, tens; long_tail's short launches, up
// to a hundred, behind the long launch's blocks). None below -10 µs
// (the offset's error: the least gap between a timed launch's start
// event and its first block near the call; in h100-a2-warp devrt clamped
// the Triton process's first timings to their calls, its clock anchor
// early), but long_tail's, whose timed launches come alone, 200 ms apart,
// and start their blocks 10-90 µs after their start events while the long
// launch holds the SMs: none below -50 µs (h100-b1-thread: -18 µs).
func TestLaunchMatcherReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/latency/*.trace")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ops := readTrace(t, path)
			calls := map[string]map[uint64]bool{}
			for _, o := range ops {
				if o.op == 'c' {
					name := fmt.Sprintf("%d/%d/%s", o.pid, o.dev, o.kernel)
					if calls[name] == nil {
						calls[name] = map[uint64]bool{}
					}
					calls[name][o.v[0]] = true
				}
			}
			got := replayTrace(ops)
			require.Len(t, got, len(calls))
			for name, cs := range calls {
				lats := got[name]
				require.Len(t, lats, len(cs), "%s: one latency per call", name)
				least := int64(-10_000)
				if strings.HasSuffix(name, "/long_tail") {
					least = -50_000
				}
				for c, ns := range lats {
					require.True(t, cs[c], "%s: a latency of a call never made, at %d", name, c)
					require.True(t, ns > least && ns < 5_000_000, "%s: call at %d: latency %d ns", name, c, ns)
				}
			}
		})
	}
}
