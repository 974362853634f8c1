package devrtinject_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject/injecttest"
)

const ptx = "//\n.version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry k(\n)\n{\n\tret;\n}\n"

func request(ptx string, kernels ...string) *devrtinject.Request {
	return &devrtinject.Request{PID: 1, SMArch: 90, API: 83, Image: devrtinject.ImagePTX,
		Hash: sha256.Sum256([]byte(ptx)), PTX: []byte(ptx), Kernels: kernels}
}

func start(t *testing.T, p devrtinject.Patcher, mod func(*devrtinject.Config)) (*devrtinject.Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "inj")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := devrtinject.Config{Path: filepath.Join(dir, devrtinject.SocketName), Patcher: p}
	if mod != nil {
		mod(&cfg)
	}
	s, err := devrtinject.Listen(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, cfg.Path
}

// ask sends raw bytes and reads the answer, as devrt does.
func ask(t *testing.T, path string, raw []byte) (*devrtinject.Response, error) {
	t.Helper()
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Write(raw)
	require.NoError(t, err)
	return devrtinject.ReadResponse(c)
}

func askReq(t *testing.T, path string, q *devrtinject.Request) *devrtinject.Response {
	t.Helper()
	raw, err := devrtinject.AppendRequest(nil, q)
	require.NoError(t, err)
	p, err := ask(t, path, raw)
	require.NoError(t, err)
	return p
}

func TestServerPatchesAndCaches(t *testing.T) {
	p := &injecttest.Patcher{SharedSize: 4096}
	s, path := start(t, p, nil)
	q := request(ptx, "k")

	first := askReq(t, path, q)
	require.Equal(t, devrtinject.StatusPatched, first.Status)
	require.Equal(t, uint32(0), first.Flags)
	require.Equal(t, q.Hash, first.Hash)
	require.Equal(t, []string{"k"}, first.Kernels)
	require.Equal(t, uint64(4096), first.SharedSize)
	require.Equal(t, uint64(7), first.ProbeVersion)
	want := "//\n.version 8.0\n.target sm_90\n.address_size 64\n" + injecttest.Marker +
		"\n.visible .const .align 8 .u64 __gpuext_shared;\n\n.visible .entry k(\n)\n{\n\tret;\n}\n"
	require.Equal(t, want, string(first.PTX))

	second := askReq(t, path, q)
	require.Equal(t, uint32(devrtinject.RespCached), second.Flags)
	require.Equal(t, first.PTX, second.PTX)

	// Another device is another key.
	q80 := request(ptx, "k")
	q80.SMArch = 80
	require.Equal(t, uint32(0), askReq(t, path, q80).Flags)

	require.Equal(t, int64(2), p.Calls())
	st := s.Stats()
	require.Equal(t, devrtinject.Stats{Requests: 3, Patched: 3, CacheHits: 1, Patches: 2,
		PatchNanos: st.PatchNanos}, st)
}

func TestServerOnePatchForConcurrentLoads(t *testing.T) {
	p := &injecttest.Patcher{Delay: 100 * time.Millisecond}
	s, path := start(t, p, nil)
	var wg sync.WaitGroup
	out := make([]*devrtinject.Response, 16)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = askReq(t, path, request(ptx, "k"))
		}()
	}
	wg.Wait()
	for _, r := range out {
		require.Equal(t, devrtinject.StatusPatched, r.Status)
	}
	require.Equal(t, int64(1), p.Calls())
	require.Equal(t, uint64(15), s.Stats().CacheHits, "the waiters count as cache hits")
}

// failing is a Patcher whose answers are broken in the ways listed.
type failing struct {
	res   devrtinject.Result
	err   error
	calls int
}

func (f *failing) Version() uint64 { return 1 }
func (f *failing) Patch(context.Context, *devrtinject.Module) (devrtinject.Result, error) {
	f.calls++
	return f.res, f.err
}

func TestServerAnswersError(t *testing.T) {
	tests := []struct {
		name   string
		p      *failing
		reason string
	}{
		{"patcher error", &failing{err: errors.New("jit: map too large")}, "jit: map too large"},
		{"patched without kernels", &failing{res: devrtinject.Result{Status: devrtinject.StatusPatched, PTX: []byte(ptx)}},
			"patcher: patched without PTX or kernels"},
		{"region without the global", &failing{res: devrtinject.Result{Status: devrtinject.StatusPatched,
			PTX: []byte(ptx), Kernels: []string{"k"}, SharedSize: 64}}, "patcher: a shared region but no __gpuext_shared"},
		{"NUL in PTX", &failing{res: devrtinject.Result{Status: devrtinject.StatusPatched,
			PTX: []byte("a\x00b"), Kernels: []string{"k"}}}, "patcher: devrtinject: inconsistent fields: NUL in the patched PTX"},
		{"unknown status", &failing{res: devrtinject.Result{Status: 9}}, "patcher: status status(9)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, path := start(t, tc.p, nil)
			for range 2 { // errors are not cached: the patcher runs again
				r := askReq(t, path, request(ptx, "k"))
				require.Equal(t, devrtinject.StatusError, r.Status)
				require.Equal(t, tc.reason, r.Reason)
				require.Nil(t, r.PTX)
			}
			require.Equal(t, 2, tc.p.calls)
			require.Equal(t, uint64(2), s.Stats().Errors)
		})
	}
}

func TestServerBadRequests(t *testing.T) {
	p := &injecttest.Patcher{}
	s, path := start(t, p, nil)
	good, err := devrtinject.AppendRequest(nil, request(ptx, "k"))
	require.NoError(t, err)

	// A wrong hash is answered, with the reason and the request's hash.
	bad := append([]byte(nil), good...)
	bad[devrtinject.ReqHeaderSize] = 'x'
	r, err := ask(t, path, bad)
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusError, r.Status)
	require.Equal(t, "bad request: devrtinject: SHA-256 does not match the PTX", r.Reason)
	require.Equal(t, sha256.Sum256([]byte(ptx)), r.Hash)

	// A wrong magic is not: the connection is closed.
	bad = append([]byte(nil), good...)
	bad[0] = 0
	_, err = ask(t, path, bad)
	require.Error(t, err)

	require.Equal(t, int64(0), p.Calls())
	st := s.Stats()
	require.Equal(t, uint64(2), st.BadRequests)
	require.Equal(t, uint64(1), st.Errors)
	require.Equal(t, uint64(0), st.Requests)
}

func TestServerCutsOffSlowClients(t *testing.T) {
	s, path := start(t, &injecttest.Patcher{}, func(c *devrtinject.Config) { c.IOTimeout = 100 * time.Millisecond })
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte{0x47, 0x4a}) // 2 bytes of a header, then nothing
	require.NoError(t, err)
	start := time.Now()
	buf := make([]byte, 1)
	_, err = c.Read(buf)
	require.Error(t, err, "closed by the server")
	require.Less(t, time.Since(start), 5*time.Second)
	require.Equal(t, uint64(1), s.Stats().BadRequests)
}

func TestServerFinishesAPatchDevrtGaveUpOn(t *testing.T) {
	p := &injecttest.Patcher{Delay: 300 * time.Millisecond}
	_, path := start(t, p, nil)
	raw, err := devrtinject.AppendRequest(nil, request(ptx, "k"))
	require.NoError(t, err)
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	_, err = c.Write(raw)
	require.NoError(t, err)
	c.Close() // devrt's timeout
	require.Eventually(t, func() bool { return p.Calls() == 1 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	r := askReq(t, path, request(ptx, "k"))
	require.Equal(t, uint32(devrtinject.RespCached), r.Flags)
	require.Equal(t, int64(1), p.Calls())
}

func TestListenRefusesToReplaceAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "not-a-socket")
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
	_, err := devrtinject.Listen(devrtinject.Config{Path: path, Patcher: &injecttest.Patcher{}})
	require.ErrorContains(t, err, "exists and is not a socket")
	_, err = devrtinject.Listen(devrtinject.Config{Path: filepath.Join(dir, "s")})
	require.ErrorContains(t, err, "no Patcher")
}

func TestListenReplacesAStaleSocket(t *testing.T) {
	_, path := start(t, &injecttest.Patcher{}, nil)
	// A second server on the same path (the collector restarted).
	s2, err := devrtinject.Listen(devrtinject.Config{Path: path, Patcher: &injecttest.Patcher{}})
	require.NoError(t, err)
	defer s2.Close()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o666), fi.Mode().Perm())
	require.True(t, strings.HasSuffix(path, devrtinject.SocketName))
	require.Equal(t, devrtinject.StatusPatched, askReq(t, path, request(ptx, "k")).Status)
}

// TestServerVars: a module with variables of its own is answered PATCHED
// with RespVars and every kernel, to a devrt that says it can hand them
// over (ReqVars), and REJECTED to one that does not (an older devrt would
// run some kernels in the original or give the program the original's
// variables); the cache serves both.
func TestServerVars(t *testing.T) {
	p := &injecttest.Patcher{SharedSize: 4096, Vars: []string{"counter", "coeffs"}, Only: map[string]bool{"k": true}}
	_, path := start(t, p, nil)
	two := strings.Replace(ptx, ".visible .entry k(", ".visible .entry j(\n)\n{\n\tret;\n}\n.visible .entry k(", 1)

	q := request(two, "j", "k")
	q.Flags = devrtinject.ReqVars
	r := askReq(t, path, q)
	require.Equal(t, devrtinject.StatusPatched, r.Status)
	require.Equal(t, uint32(devrtinject.RespVars), r.Flags)
	require.Equal(t, []string{"j", "k"}, r.Kernels)
	require.Equal(t, uint64(4096), r.SharedSize)

	old := request(two, "j", "k")
	r = askReq(t, path, old)
	require.Equal(t, devrtinject.StatusRejected, r.Status)
	require.Equal(t, uint32(devrtinject.RespCached), r.Flags)
	require.Equal(t, "the module declares variables (counter, coeffs), which this devrt cannot hand over to the patched module: update devrt", r.Reason)
	require.Empty(t, r.PTX)
	require.Empty(t, r.Kernels)
	require.Zero(t, r.SharedSize)
	require.Equal(t, int64(1), p.Calls())

	// Without variables the flag changes nothing.
	p.Vars = nil
	_, path = start(t, p, nil)
	r = askReq(t, path, request(two, "j", "k"))
	require.Equal(t, devrtinject.StatusPatched, r.Status)
	require.Zero(t, r.Flags)
	require.Equal(t, []string{"k"}, r.Kernels)
}
