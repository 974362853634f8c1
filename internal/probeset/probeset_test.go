package probeset

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/probepatch"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

const corpus = "../../devrt/ptx/testdata/corpus"

func read(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join(corpus, name))
	require.NoError(t, err)
	return b
}

// probeCalls counts, per kernel of the PTX, the sites of each shipped
// probe function, called or copied.
func probeCalls(t *testing.T, src []byte) map[string]map[string]int {
	s, err := New(Config{})
	require.NoError(t, err)
	out, err := probepatch.Sites(src, s.Compiled().Probes)
	require.NoError(t, err)
	return out
}

// TestPatchCorpus: every corpus module through the shipped probe set; each
// selected kernel calls every entry probe once and every exit probe once per
// exit of the original kernel; the output re-parses.
func TestPatchCorpus(t *testing.T) {
	for _, mode := range []string{ModeWarp, ModeThread} {
		s, err := New(Config{Mode: mode})
		require.NoError(t, err)
		require.Len(t, s.Compiled().Probes, 7)
		files, err := filepath.Glob(filepath.Join(corpus, "*.ptx"))
		require.NoError(t, err)
		require.Len(t, files, 7)
		for _, f := range files {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			orig, err := ptx.Parse(string(src))
			require.NoError(t, err)
			res, err := s.Patch(context.Background(), &devrtinject.Module{PTX: src, Kernels: orig.KernelNames()})
			require.NoError(t, err)
			require.Equal(t, devrtinject.StatusPatched, res.Status, "%s: %s", f, res.Reason)
			require.ElementsMatch(t, orig.KernelNames(), res.Kernels, f)
			require.Equal(t, s.Layout().Size, res.SharedSize)
			require.Contains(t, string(res.PTX), ".visible .const .align 8 .u64 __gpuext_shared;")
			calls := probeCalls(t, res.PTX)
			for _, k := range orig.Kernels() {
				if k.Body == nil {
					continue
				}
				want := map[string]int{}
				for _, p := range s.Compiled().Probes {
					switch p.Site {
					case jit.SiteEntry:
						want[p.Func] = 1
					case jit.SiteExit:
						want[p.Func] = len(k.Exits())
					}
				}
				require.Equal(t, want, calls[k.Name], "%s %s", f, k.Name)
				name, ok := s.KernelName(ptx.KernelID(k.Name))
				require.True(t, ok)
				require.Equal(t, k.Name, name)
			}
		}
	}
}

// TestSiteCounts pins the calls of block_sched's entry and exit probes per
// kernel of nvcc_kernels_debug.ptx (nvcc -G keeps every return of the
// source: one exit site per ret).
func TestSiteCounts(t *testing.T) {
	s, err := New(Config{Probes: []string{"block_sched"}})
	require.NoError(t, err)
	src := read(t, "nvcc_kernels_debug.ptx")
	res, err := s.Patch(context.Background(), &devrtinject.Module{PTX: src})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status, res.Reason)
	got := map[string][2]int{}
	for k, c := range probeCalls(t, res.PTX) {
		if strings.HasSuffix(k, devrtinject.PlainSuffix) {
			// the module has variables: each kernel's plain copy, bare
			require.Empty(t, c, k)
			require.Contains(t, wantSites, strings.TrimSuffix(k, devrtinject.PlainSuffix))
			continue
		}
		got[k] = [2]int{c["__gpuext_probe_0"], c["__gpuext_probe_1"]}
	}
	require.Equal(t, wantSites, got)
}

// TestFirstBlockSite: launch_latency's entry (gpu/entry_block0) is
// patched behind a test of the block index in every kernel, once; the
// other shipped entries are not.
func TestFirstBlockSite(t *testing.T) {
	src := read(t, "nvcc_kernels.ptx")
	orig, err := ptx.Parse(string(src))
	require.NoError(t, err)
	for _, tt := range []struct {
		probe string
		want  int
	}{{"launch_latency", len(orig.KernelNames())}, {"sm_load", 0}, {"block_sched", 0}} {
		s, err := New(Config{Probes: []string{tt.probe}})
		require.NoError(t, err)
		require.Equal(t, tt.want > 0, s.Compiled().Probes[0].FirstBlock, tt.probe)
		res, err := s.Patch(context.Background(), &devrtinject.Module{PTX: src})
		require.NoError(t, err)
		require.Equal(t, devrtinject.StatusPatched, res.Status, res.Reason)
		require.Len(t, regexp.MustCompile(`bra\.uni\s+\$GXF_SKIP`).FindAll(res.PTX, -1), tt.want, tt.probe)
	}
}

func TestIncludeExclude(t *testing.T) {
	src := read(t, "nvcc_kernels.ptx")
	orig, err := ptx.Parse(string(src))
	require.NoError(t, err)
	all := orig.KernelNames()
	ctx := context.Background()

	// Include one kernel by glob, exclude another.
	s, err := New(Config{Probes: []string{"sm_load"}, Include: []string{"*vec_add*", "*imbalanced*"}, Exclude: []string{"*imbalanced*"}})
	require.NoError(t, err)
	res, err := s.Patch(ctx, &devrtinject.Module{PTX: src, Kernels: all})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status)
	var want []string
	for _, k := range all {
		if strings.Contains(k, "vec_add") {
			want = append(want, k)
		}
	}
	require.NotEmpty(t, want)
	// The module has variables: every kernel runs in the twin, only the
	// selected ones instrumented (and given a plain copy).
	require.Equal(t, []string{"dev_counter", "coeffs"}, res.Vars)
	require.ElementsMatch(t, all, res.Kernels)
	require.Equal(t, fmt.Sprintf("the patched module owns its variables (dev_counter, coeffs): all its kernels run there; excluded: %d kernels",
		len(all)-len(want)), res.Reason)
	sites := probeCalls(t, res.PTX)
	for _, k := range all {
		require.Equal(t, slices.Contains(want, k), len(sites[k]) > 0, "%s: %v", k, sites[k])
		_, copied := sites[k+devrtinject.PlainSuffix]
		require.Equal(t, slices.Contains(want, k), copied, k)
	}
	// Without variables, only the selected kernels are redirected.
	two := ".version 8.0\n.target sm_90\n.address_size 64\n" +
		".visible .entry vec_add()\n{\n\tret;\n}\n.visible .entry imbalanced()\n{\n\tret;\n}\n.visible .entry other()\n{\n\tret;\n}\n"
	res, err = s.Patch(ctx, &devrtinject.Module{PTX: []byte(two), Kernels: []string{"vec_add", "imbalanced", "other"}})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status)
	require.Equal(t, []string{"vec_add"}, res.Kernels)
	require.Equal(t, "excluded: 2 kernels", res.Reason)
	sites = probeCalls(t, res.PTX)
	require.NotEmpty(t, sites["vec_add"])
	require.Empty(t, sites["imbalanced"])
	require.Empty(t, sites["other"])

	// Nothing selected: unchanged, decided from devrt's names alone.
	s, err = New(Config{Probes: []string{"sm_load"}, Include: []string{"no_such_kernel"}})
	require.NoError(t, err)
	res, err = s.Patch(ctx, &devrtinject.Module{PTX: []byte("not even PTX"), Kernels: all})
	require.NoError(t, err)
	require.Equal(t, devrtinject.Result{Status: devrtinject.StatusUnchanged, Reason: "no kernel selected by include/exclude"}, res)
	// ... and without devrt's names, after patching.
	res, err = s.Patch(ctx, &devrtinject.Module{PTX: src})
	require.NoError(t, err)
	require.Equal(t, devrtinject.Result{Status: devrtinject.StatusUnchanged, Reason: "no kernel selected by include/exclude"}, res)

	// Bad PTX with a selected kernel: rejected with the parser's reason.
	s, err = New(Config{Probes: []string{"sm_load"}})
	require.NoError(t, err)
	res, err = s.Patch(ctx, &devrtinject.Module{PTX: []byte(".version 8.0\n.target sm_90\n.address_size 64\n.entry k( {"), Kernels: []string{"k"}})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusRejected, res.Status)
	require.Contains(t, res.Reason, "PTX does not parse")
}

func TestVersion(t *testing.T) {
	v := map[uint64]Config{}
	for _, c := range []Config{
		{}, {Mode: ModeThread}, {Probes: []string{"sm_load"}},
		{Include: []string{"a*"}}, {Exclude: []string{"a*"}}, {Include: []string{"a*"}, Exclude: []string{"b*"}},
		{BlockSample: 16}, {BlockSample: 3}, {BlocksPerLaunch: 256}, {BlocksPerLaunch: 1024},
	} {
		s, err := New(c)
		require.NoError(t, err)
		_, dup := v[s.Version()]
		require.False(t, dup, "%+v", c)
		v[s.Version()] = c
		s2, err := New(c)
		require.NoError(t, err)
		require.Equal(t, s.Version(), s2.Version())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Mode: "block"}, `devrt::probes::mode: "block" is not warp or thread`},
		{Config{Probes: []string{"nope"}}, `devrt::probes::probes[0]: "nope" is neither a shipped probe (block_sched, launch_latency, sm_load, warp_occupancy) nor an absolute path`},
		{Config{Include: []string{"[a"}}, `devrt::probes::include[0]: bad glob "[a"`},
		{Config{Exclude: []string{""}}, `devrt::probes::exclude[0]: bad glob ""`},
		{Config{BlockSample: 1<<16 + 1}, `devrt::probes::block_sample: 65537: at most 65536`},
		{Config{BlocksPerLaunch: 300}, `devrt::probes::blocks_per_launch: 300: want 0 (off) or a power of two up to 65536`},
		{Config{BlocksPerLaunch: 1 << 31}, `devrt::probes::blocks_per_launch: 2147483648: want 0 (off) or a power of two up to 65536`},
	} {
		require.EqualError(t, tc.cfg.Validate(), tc.want)
		_, err := New(tc.cfg)
		require.EqualError(t, err, tc.want)
	}
	_, err := New(Config{Probes: []string{"/no/such/probe.bpf.o"}})
	require.EqualError(t, err, "device probe /no/such/probe.bpf.o: open /no/such/probe.bpf.o: no such file or directory")
	bad := filepath.Join(t.TempDir(), "bad.bpf.o")
	require.NoError(t, os.WriteFile(bad, []byte("\x7fELF garbage"), 0o644))
	_, err = New(Config{Probes: []string{bad}})
	require.ErrorContains(t, err, "device probe "+bad+": read eBPF object:")
}

// TestBlockSample: block_sample and blocks_per_launch reach the patched
// kernels (each computes its sample predicate and branches around every
// site; by launch from %nctaid) and the layout the region readers use,
// whose headers say them; 0 and 1 are every block, block_sample over 1
// replaces blocks_per_launch.
func TestBlockSample(t *testing.T) {
	src := read(t, "nvcc_kernels_debug.ptx")
	for _, tt := range []struct {
		sample, perLaunch   uint32
		want, wantPerLaunch uint32
		code, byLaunch      bool
	}{
		{0, 0, 1, 0, false, false}, {1, 0, 1, 0, false, false}, {32, 0, 32, 0, true, false},
		{0, 256, 1, 256, true, true}, {1, 64, 1, 64, true, true}, {32, 256, 32, 0, true, false},
	} {
		s, err := New(Config{BlockSample: tt.sample, BlocksPerLaunch: tt.perLaunch})
		require.NoError(t, err)
		require.Equal(t, tt.want, s.Layout().BlockSample)
		require.Equal(t, tt.wantPerLaunch, s.Layout().BlocksPerLaunch)
		for _, m := range s.Layout().Maps {
			require.Equal(t, tt.want, m.BlockSample, m.Name)
			h := m.HeaderBytes()
			require.Equal(t, tt.want, binary.LittleEndian.Uint32(h[gpumap.OffBlockSample:]), m.Name)
			require.Equal(t, tt.wantPerLaunch, binary.LittleEndian.Uint32(h[gpumap.OffBlocksPerLaunch:]), m.Name)
		}
		res, err := s.Patch(context.Background(), &devrtinject.Module{PTX: src})
		require.NoError(t, err)
		require.Equal(t, devrtinject.StatusPatched, res.Status)
		for _, in := range res.Init {
			require.Equal(t, tt.want, binary.LittleEndian.Uint32(in.Data[gpumap.OffBlockSample:]))
			require.Equal(t, tt.wantPerLaunch, binary.LittleEndian.Uint32(in.Data[gpumap.OffBlocksPerLaunch:]))
		}
		require.Equal(t, tt.code, strings.Contains(string(res.PTX), "@!%gx_s bra.uni"), "sample %d", tt.sample)
		require.Equal(t, tt.byLaunch, strings.Contains(string(res.PTX), "%gx_r2, %nctaid.z;"), "sample %d", tt.sample) // the sampling code's
	}
}

// BenchmarkPatch is the collector's one-time cost of patching a module:
// parse, link, instrument and write the largest corpus file (61 KB, nvcc
// -G) with all shipped probes.
func BenchmarkPatch(b *testing.B) {
	s, err := New(Config{})
	require.NoError(b, err)
	src := read(b, "nvcc_kernels_debug.ptx")
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for range b.N {
		res, err := s.Patch(context.Background(), &devrtinject.Module{PTX: src})
		if err != nil || res.Status != devrtinject.StatusPatched {
			b.Fatal(err, res.Reason)
		}
	}
}

// Every kernel of the corpus has one ret (nvcc joins the returns).
var wantSites = map[string][2]int{
	"_Z4axpyIdEvT_PKS0_PS0_i": {1, 1}, "_Z4axpyIfEvT_PKS0_PS0_i": {1, 1}, "block_reduce": {1, 1},
	"early_exits": {1, 1}, "globals_use": {1, 1}, "half_vec4": {1, 1}, "histogram": {1, 1},
	"imbalanced": {1, 1}, "local_array": {1, 1}, "say_hello": {1, 1}, "vec_add": {1, 1},
}

// multiExit has a predicated exit, a labelled exit and a plain one.
const multiExit = `.version 8.0
.target sm_90
.address_size 64

.visible .entry three_exits(.param .u32 n)
{
	.reg .pred %p<3>;
	.reg .b32 %r<3>;
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %tid.x;
	setp.ge.u32 %p1, %r2, %r1;
	@%p1 ret;
	setp.eq.u32 %p2, %r2, 7;
	@%p2 bra DONE;
	exit;
DONE:
	ret;
}
`

// A kernel using the rewriter's reserved register names is refused: beside
// another kernel the module is patched without it (devrt does not redirect
// it); alone, the module is rejected with the rewriter's reason.
const reservedKernel = `
.visible .entry uses_reserved()
{
	.reg .b64 %gx_rd<2>;
	mov.u64 %gx_rd1, 0;
	ret;
}
`

func TestRewriterRefusal(t *testing.T) {
	s, err := New(Config{Probes: []string{"launch_latency"}})
	require.NoError(t, err)
	res, err := s.Patch(context.Background(), &devrtinject.Module{PTX: []byte(multiExit + reservedKernel)})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status)
	require.Equal(t, []string{"three_exits"}, res.Kernels)
	require.Contains(t, res.Reason, "not instrumented: uses_reserved: ")
	_, ok := s.KernelName(ptx.KernelID("uses_reserved"))
	require.False(t, ok)

	hdr := multiExit[:strings.Index(multiExit, ".visible")]
	res, err = s.Patch(context.Background(), &devrtinject.Module{PTX: []byte(hdr + reservedKernel)})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusRejected, res.Status)
	require.Contains(t, res.Reason, "every kernel refused: uses_reserved: ")
}

func TestSiteCountsMultiExit(t *testing.T) {
	s, err := New(Config{Probes: []string{"block_sched", "launch_latency"}})
	require.NoError(t, err)
	res, err := s.Patch(context.Background(), &devrtinject.Module{PTX: []byte(multiExit)})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status, res.Reason)
	require.Equal(t, []string{"three_exits"}, res.Kernels)
	// block_entry (0), block_exit (1) at 3 exits, launch_entry (2).
	require.Equal(t, map[string]map[string]int{"three_exits": {"__gpuext_probe_0": 1, "__gpuext_probe_1": 3, "__gpuext_probe_2": 1}},
		probeCalls(t, res.PTX))
}
