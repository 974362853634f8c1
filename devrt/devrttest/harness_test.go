// Package devrttest tests libgpuext-devrt.so from the outside: it runs the
// fake CUDA workload (testdata/fakecuda) with the library preloaded, reads
// the ring files it leaves with the collector's own reader
// (internal/devring) and decoder (internal/gpuevent), and compares record
// by record with what the workload says it did.
//
// It builds nothing: $DEVRT names the folder of devrt's build (make test
// sets it; else build/devrt), and the fake driver comes from $FAKECUDA
// through fakecudatest. Without the library the tests skip, saying so.
package devrttest

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devring"
	"github.com/otelcol-gpu/otelcol-gpu/internal/fakecudatest"
	ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"
)

// devrtDir is devrt's build folder, or the test is skipped.
func devrtDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("DEVRT")
	if dir == "" {
		_, self, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(self), "..", "..", "build", "devrt")
	}
	if _, err := os.Stat(filepath.Join(dir, "libgpuext-devrt.so")); err != nil {
		t.Skipf("devrt not built (%v): run make devrt, or set DEVRT to its build folder", err)
	}
	return dir
}

// symbol is a row of devrt's table, as devrt-symbols prints it.
type symbol struct {
	api   ev.API
	flags uint64
}

// symbols reads devrt's table of reported symbols.
func symbols(t testing.TB, dir string) map[string]symbol {
	t.Helper()
	out, err := exec.Command(filepath.Join(dir, "devrt-symbols")).Output()
	require.NoError(t, err)
	table := map[string]symbol{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		require.GreaterOrEqual(t, len(f), 3, sc.Text())
		api, err := strconv.ParseUint(f[1], 10, 16)
		require.NoError(t, err)
		flags, err := strconv.ParseUint(f[2], 10, 64)
		require.NoError(t, err)
		table[f[0]] = symbol{ev.API(api), flags}
	}
	require.NotEmpty(t, table)
	return table
}

// harness runs the fake workload from a private copy of the fake driver.
type harness struct {
	t     *testing.T
	devrt string // devrt's build folder
	fake  string // the fake driver and workload
	syms  map[string]symbol
}

func newHarness(t *testing.T) *harness {
	dir := devrtDir(t)
	return &harness{t: t, devrt: dir, fake: fakeDir(t), syms: symbols(t, dir)}
}

// fakeDir is a private copy of the fake driver and its programs.
func fakeDir(t testing.TB) string { return fakecudatest.Dir(t) }

func (h *harness) lib() string { return filepath.Join(h.devrt, "libgpuext-devrt.so") }

// result is the workload's JSON line.
type result struct {
	Scenario    string         `json:"scenario"`
	PID         int            `json:"pid"`
	OK          bool           `json:"ok"`
	Calls       map[string]int `json:"calls"`
	DriverCalls map[string]int `json:"driver_calls"`
	Launches    int            `json:"launches"`
	TIDs        []int          `json:"tids"`
	Child       *struct {
		PID    int    `json:"pid"`
		Result result `json:"result"`
	} `json:"child"`
}

// run is one workload run.
type run struct {
	raw    string                 // its JSON line
	res    result                 // parsed
	dir    string                 // devrt's ring folder ("" without devrt)
	counts string                 // where the driver writes its counters at unload
	final  map[int]map[string]int // those counters, by pid
}

// opts are how to run the workload.
type opts struct {
	devrt bool     // preload devrt
	env   []string // more environment
}

// run runs the workload and waits for it. The workload must exit 0.
func (h *harness) run(o opts, args ...string) *run {
	h.t.Helper()
	cmd, r := h.command(o, args...)
	out, err := cmd.Output()
	require.NoError(h.t, err, "workload %v: %s", args, out)
	h.finish(r, out)
	return r
}

// command prepares a workload run; finish reads what it left.
func (h *harness) command(o opts, args ...string) (*exec.Cmd, *run) {
	r := &run{counts: h.t.TempDir(), final: map[int]map[string]int{}}
	cmd := exec.Command(filepath.Join(h.fake, "workload"), args...)
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+h.fake,
		"FAKECUDA_COUNTS_FILE="+filepath.Join(r.counts, "%p.json"))
	if o.devrt {
		r.dir = h.t.TempDir()
		// Samples are counted exactly: no minimum interval between two
		// timed calls unless the test sets one (a later value wins).
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+h.lib(), "GPUEXT_DEVRT_DIR="+r.dir, "GPUEXT_DEVRT_STATS=1",
			"GPUEXT_DEVRT_SAMPLE_GAP_US=0")
	}
	cmd.Env = append(cmd.Env, o.env...)
	cmd.Stderr = os.Stderr
	return cmd, r
}

func (h *harness) finish(r *run, out []byte) {
	h.t.Helper()
	r.raw = strings.TrimSpace(string(out))
	require.NoError(h.t, json.Unmarshal([]byte(r.raw), &r.res), r.raw)
	require.True(h.t, r.res.OK, r.raw)
	files, err := filepath.Glob(filepath.Join(r.counts, "*.json"))
	require.NoError(h.t, err)
	for _, f := range files {
		pid, err := strconv.Atoi(strings.TrimSuffix(filepath.Base(f), ".json"))
		require.NoError(h.t, err)
		r.final[pid] = readCounts(h.t, f)
	}
}

func readCounts(t testing.TB, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	m := map[string]int{}
	require.NoError(t, json.Unmarshal(data, &m), string(data))
	return m
}

// comparable is the workload's JSON without what differs between two runs
// of one scenario: pids, wall time, thread ids and the driver's counters
// (which include devrt's own calls).
func comparable(t testing.TB, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m))
	var strip func(m map[string]any)
	strip = func(m map[string]any) {
		for _, k := range []string{"pid", "wall_ms", "tids", "driver_calls"} {
			delete(m, k)
		}
		for _, v := range m {
			if sub, ok := v.(map[string]any); ok {
				strip(sub)
			}
		}
	}
	strip(m)
	return m
}

// ring is what one devrt ring file held after its process ended.
type ring struct {
	path  string
	hdr   devring.Header
	ctr   devring.Counters
	calls []ev.Event   // call records, in ring order
	execs []ev.GPUExec // GPU execution records
	stats map[string]int
}

// rings reads every ring devrt left in r.dir, by pid.
func (r *run) rings(t testing.TB) map[int]*ring {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(r.dir, "gpuext-devrt-*.ring"))
	require.NoError(t, err)
	out := map[int]*ring{}
	for _, p := range paths {
		rg := readRing(t, p)
		require.NotContains(t, out, int(rg.hdr.PID), "one ring per process")
		out[int(rg.hdr.PID)] = rg
	}
	return out
}

func readRing(t testing.TB, path string) *ring {
	t.Helper()
	rr, err := devring.Open(path)
	require.NoError(t, err)
	defer rr.Close()
	rg := &ring{path: path, hdr: rr.Header()}
	rg.ctr, err = rr.Counters()
	require.NoError(t, err)
	for {
		n, err := rr.Drain(func(b []byte) error { return rg.add(b) })
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	st := strings.TrimSuffix(path, ".ring") + ".stats.json"
	if _, err := os.Stat(st); err == nil {
		rg.stats = readCounts(t, st)
	}
	return rg
}

func (rg *ring) add(b []byte) error {
	if len(b) >= 2 && ev.Kind(binary.LittleEndian.Uint16(b)) == ev.KindGPUExec {
		var x ev.GPUExec
		if err := ev.DecodeGPUExec(b, &x); err != nil {
			return err
		}
		rg.execs = append(rg.execs, x)
		return nil
	}
	var e ev.Event
	if err := ev.Decode(b, &e); err != nil {
		return err
	}
	if e.Source != ev.SourceDevrt {
		return errors.New("record not from devrt")
	}
	rg.calls = append(rg.calls, e)
	return nil
}

// only returns the one ring of a single-process run.
func (r *run) only(t testing.TB) *ring {
	t.Helper()
	rs := r.rings(t)
	require.Len(t, rs, 1)
	rg, ok := rs[r.res.PID]
	require.True(t, ok, "the ring is the workload's (pid %d)", r.res.PID)
	return rg
}

// expected is how many records of each API devrt must write for a run:
// the driver's final counters for the table's driver symbols, less the
// calls devrt made itself (it never reports those), and the program's own
// calls of the table's runtime symbols.
func (h *harness) expected(r *run, pid int, calls map[string]int, own map[string]int) map[ev.API]int {
	h.t.Helper()
	final, ok := r.final[pid]
	require.True(h.t, ok, "driver counters of pid %d", pid)
	out := map[ev.API]int{}
	for sym, s := range h.syms {
		n := final[sym] - own[sym]
		if s.api.Runtime() {
			n = calls[sym]
		}
		if n > 0 {
			out[s.api] += n
		}
	}
	return out
}

// countByAPI counts call records by API.
func countByAPI(calls []ev.Event) map[ev.API]int {
	out := map[ev.API]int{}
	for i := range calls {
		out[calls[i].API]++
	}
	return out
}

// checkCalls checks what holds for every call record of a ring: devrt's
// source, the process, times in order, call numbers each once, from blocks
// of DEVRT_CORR_BLOCK per thread: a thread's numbers increase in the order
// of its calls' starts, and no more numbers are used than its calls and
// one part-used block per thread explain.
// corrBlock is DEVRT_CORR_BLOCK (devrt/src/devrt.h).
const corrBlock = 64

func checkCalls(t testing.TB, rg *ring) {
	t.Helper()
	corrs := make([]int, 0, len(rg.calls))
	for i := range rg.calls {
		e := &rg.calls[i]
		require.Equal(t, ev.SourceDevrt, e.Source)
		require.Equal(t, rg.hdr.PID, e.PID)
		require.NotZero(t, e.TID)
		require.Zero(t, e.CgroupID)
		require.GreaterOrEqual(t, e.Start, rg.hdr.CreatedNS)
		require.GreaterOrEqual(t, e.End, e.Start)
		corrs = append(corrs, int(e.Corr))
	}
	sort.Ints(corrs)
	threads := map[uint32][]*ev.Event{}
	for i := range rg.calls {
		e := &rg.calls[i]
		threads[e.TID] = append(threads[e.TID], e)
	}
	for i, c := range corrs {
		require.Positive(t, c)
		if i > 0 {
			require.NotEqual(t, corrs[i-1], c, "call number %d twice", c)
		}
	}
	if len(corrs) > 0 {
		require.LessOrEqual(t, corrs[len(corrs)-1], len(corrs)+corrBlock*len(threads), "numbers used")
	}
	for tid, es := range threads {
		sort.SliceStable(es, func(i, j int) bool { return es[i].Start < es[j].Start })
		for i := 1; i < len(es); i++ {
			if es[i].Start > es[i-1].Start {
				require.Greater(t, es[i].Corr, es[i-1].Corr, "thread %d: call numbers in call order", tid)
			}
		}
	}
}
