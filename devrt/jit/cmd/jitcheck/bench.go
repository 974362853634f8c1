package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/check"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/probepatch"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion"
)

// The benchmark: kernels uninstrumented and instrumented by devrt/ptx with
// each shipped probe (and an empty one: the call itself) at entry and exits,
// compiled at warp level and per thread. jit_bench.py times them.

// benchKernel is a kernel of the benchmark and how to launch it.
type benchKernel struct {
	Name  string `json:"name"`
	Entry string `json:"entry"`
	Grid  uint32 `json:"grid"`
	GridY uint32 `json:"grid_y,omitempty"` // 0: 1
	Block uint32 `json:"block"`
	// Shared is the dynamic shared memory of a launch (Triton's
	// metadata.shared: its kernels address .extern .shared global_smem).
	Shared uint32   `json:"shared,omitempty"`
	Args   [][2]any `json:"args"` // ["buf", bytes], ["u32", value], ["u64", value] or ["f32", value]
	// Out is the index in Args of the buffer the kernel writes, which
	// starts zeroed and whose contents must not change with a probe
	// (jit_bench.py fills every other buffer with a pattern of distinct
	// words); -1: the last buffer.
	Out int    `json:"out"`
	Doc string `json:"doc"`
	src string // PTX without its header (benchHeader), or
	// file, a whole PTX module in the corpus directory.
	file string
}

const benchHeader = ".version 8.0\n.target sm_80\n.address_size 64\n\n"

// vecadd: c[i] = a[i] + b[i], memory bound; a labelled exit.
const vecaddPTX = `.visible .entry vecadd(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 pn)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<10>;
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd2, [pb];
	ld.param.u64 %rd3, [pc];
	ld.param.u32 %r1, [pn];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.u32 %p1, %r5, %r1;
	@%p1 bra $L_end;
	cvta.to.global.u64 %rd4, %rd1;
	cvta.to.global.u64 %rd5, %rd2;
	cvta.to.global.u64 %rd6, %rd3;
	mul.wide.u32 %rd7, %r5, 4;
	add.s64 %rd8, %rd4, %rd7;
	ld.global.f32 %f1, [%rd8];
	add.s64 %rd9, %rd5, %rd7;
	ld.global.f32 %f2, [%rd9];
	add.f32 %f3, %f1, %f2;
	add.s64 %rd8, %rd6, %rd7;
	st.global.f32 [%rd8], %f3;
$L_end:
	ret;
}
`

// earlyexits: a third of the threads leave at once, a third store -1, a
// third load, compute and store; their paths meet at one labelled exit,
// which ptxas turns into an EXIT on each path (as nvcc's early_exits of
// bench/device/ptx/kernels.cu).
const earlyexitsPTX = `.visible .entry earlyexits(.param .u64 pa, .param .u64 pc, .param .u32 pn)
{
	.reg .pred %p<4>;
	.reg .b32 %r<7>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [pa];
	ld.param.u64 %rd2, [pc];
	ld.param.u32 %r1, [pn];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.u32 %p1, %r5, %r1;
	@%p1 bra $L_end;
	rem.u32 %r6, %r5, 3;
	setp.eq.u32 %p2, %r6, 1;
	@%p2 bra $L_end;
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	mul.wide.u32 %rd5, %r5, 4;
	add.s64 %rd6, %rd3, %rd5;
	add.s64 %rd7, %rd4, %rd5;
	setp.eq.u32 %p3, %r6, 0;
	@%p3 bra $L_neg;
	ld.global.f32 %f1, [%rd6];
	mul.f32 %f2, %f1, %f1;
	fma.rn.f32 %f3, %f2, %f1, %f1;
	st.global.f32 [%rd7], %f3;
	bra.uni $L_end;
$L_neg:
	mov.f32 %f1, 0fBF800000;
	st.global.f32 [%rd7], %f1;
$L_end:
	ret;
}
`

// compute: iters FMA pairs per thread; blocks with id % 8 == 0 do heavy
// times more (heavy 1: balanced).
const computePTX = `.visible .entry compute(.param .u64 pout, .param .u32 piters, .param .u32 pheavy)
{
	.reg .pred %p<3>;
	.reg .b32 %r<10>;
	.reg .f32 %f<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [pout];
	ld.param.u32 %r1, [piters];
	ld.param.u32 %r7, [pheavy];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	and.b32 %r8, %r2, 7;
	setp.eq.u32 %p2, %r8, 0;
	@%p2 mul.lo.u32 %r1, %r1, %r7;
	cvt.rn.f32.u32 %f1, %r5;
	mov.f32 %f2, 0f3F800000;
	mov.f32 %f3, 0f3F000001;
	mov.u32 %r6, 0;
$L_loop:
	fma.rn.f32 %f2, %f2, %f3, %f1;
	fma.rn.f32 %f1, %f1, %f3, %f2;
	add.u32 %r6, %r6, 1;
	setp.lt.u32 %p1, %r6, %r1;
	@%p1 bra $L_loop;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r5, 4;
	add.s64 %rd2, %rd2, %rd3;
	st.global.f32 [%rd2], %f2;
	ret;
}
`

func benchKernels() []benchKernel {
	const n = 1 << 24
	const small = 1 << 20
	vec := func(name string, n uint32, doc string) benchKernel {
		return benchKernel{Name: name, Entry: "vecadd", Grid: n / 256, Block: 256, src: vecaddPTX, Doc: doc, Out: -1,
			Args: [][2]any{{"buf", 4 * n}, {"buf", 4 * n}, {"buf", 4 * n}, {"u32", n}}}
	}
	comp := func(name string, iters, heavy uint32, doc string) benchKernel {
		return benchKernel{Name: name, Entry: "compute", Grid: 2048, Block: 256, src: computePTX, Doc: doc, Out: -1,
			Args: [][2]any{{"buf", 4 * 2048 * 256}, {"u32", iters}, {"u32", heavy}}}
	}
	return []benchKernel{
		vec("vecadd16M", n, "memory bound, 65536 blocks of 256"),
		vec("vecadd1M", small, "launch bound, 4096 blocks of 256"),
		{Name: "earlyexits4M", Entry: "earlyexits", Grid: 1 << 22 / 256, Block: 256, src: earlyexitsPTX, Out: -1,
			Doc:  "16384 blocks of 256, two thirds of the threads leave early on paths that meet at the exit",
			Args: [][2]any{{"buf", 4 << 22}, {"buf", 4 << 22}, {"u32", 1 << 22}}},
		comp("compute", 2048, 1, "2048 x 256 threads, 4096 FMAs each"),
		comp("imbalanced", 2048, 8, "as compute, blocks with id % 8 == 0 do 8x the work"),
	}
}

// corpusKernels are kernels as compilers write them, from the PTX corpus
// (devrt/ptx/testdata/corpus, generated by bench/device/ptx_corpus.sh on
// an H200): the shapes ML programs launch, beside the hand-written
// kernels above that single out a probe's fixed costs (one element per
// thread, two thirds of the threads leaving at once). Triton kernels take
// two scratch pointers after their own parameters (0 here: these use
// none) and address their dynamic shared memory from global_smem.
func corpusKernels() []benchKernel {
	const n = 1 << 24
	const rows, cols = 1 << 15, 1000
	const mnk = 4096
	scratch := [][2]any{{"u64", 0}, {"u64", 0}}
	return []benchKernel{
		{Name: "triton_add16M", Entry: "add_kernel", file: "triton_add.ptx", Grid: n / 1024, Block: 128, Out: 2,
			Doc:  "Triton elementwise add (BLOCK 1024, 4 warps: 8 elements a thread in 16-byte loads), 16384 blocks of 128",
			Args: append([][2]any{{"buf", 4 * n}, {"buf", 4 * n}, {"buf", 4 * n}, {"u32", n}}, scratch...)},
		{Name: "triton_softmax", Entry: "softmax_kernel", file: "triton_softmax.ptx", Grid: rows, Block: 128, Shared: 16, Out: 0,
			Doc:  "Triton row softmax, 32768 rows of 1000 fp32, a block of 128 a row (cross-warp max and sum through shared memory)",
			Args: append([][2]any{{"buf", 4 * rows * cols}, {"buf", 4 * rows * cols}, {"u32", cols}, {"u32", cols}}, scratch...)},
		{Name: "triton_matmul", Entry: "matmul_kernel", file: "triton_matmul.ptx", Grid: mnk / 128, GridY: mnk / 128, Block: 128,
			Shared: 3 * (128*64 + 64*128) * 2, Out: 2,
			Doc: "Triton fp16 GEMM 4096^3 (128x128x64 tiles, 3 stages of cp.async, wgmma), 32 x 32 blocks of 128",
			Args: append([][2]any{{"buf", 2 * mnk * mnk}, {"buf", 2 * mnk * mnk}, {"buf", 2 * mnk * mnk},
				{"u32", mnk}, {"u32", mnk}, {"u32", mnk}, {"u32", mnk}, {"u32", mnk}, {"u32", mnk}}, scratch...)},
		{Name: "axpy16M", Entry: "_Z4axpyIfEvT_PKS0_PS0_i", file: "nvcc_kernels.ptx", Grid: 1024, Block: 256, Out: 2,
			Doc:  "nvcc grid-stride y = a*x + y over 16M floats, 1024 blocks of 256 (64 elements a thread)",
			Args: [][2]any{{"f32", 2.0}, {"buf", 4 * n}, {"buf", 4 * n}, {"u32", n}}},
	}
}

// benchProbes are the probe sets of the benchmark.
var benchProbes = []string{"empty", "device/block_sched", "device/launch_latency", "device/sm_load", "device/warp_occupancy"}

// benchVariant is one module to time.
type benchVariant struct {
	Name   string `json:"name"`
	Kernel string `json:"kernel"`
	Probe  string `json:"probe"` // "" for the original
	Level  string `json:"level"` // warp, thread
	Form   string `json:"form"`  // "" inlined probe bodies, "call" probe calls, "guards" block sampling's guards form
	// BlockSample: the probes run in 1 of that many blocks (0: every one);
	// BlocksPerLaunch: in the blocks sampling by launch picks.
	BlockSample     uint32 `json:"block_sample,omitempty"`
	BlocksPerLaunch uint32 `json:"blocks_per_launch,omitempty"`
	PTX             string `json:"ptx"`
	// Grid1D names the kernel's entry for 1-D grids (ptx.Spec.Grid1D),
	// which jit_bench.py launches, as devrt does, when the grid is 1-D.
	Grid1D     string   `json:"grid1d,omitempty"`
	RegionSize uint64   `json:"region_size"`
	Headers    [][2]any `json:"headers"`  // [offset, hex]: the map headers of the zeroed region
	PatchMS    float64  `json:"patch_ms"` // compile + link + instrument + write, in Go
}

type benchFile struct {
	Kernels  []benchKernel  `json:"kernels"`
	Variants []benchVariant `json:"variants"`
}

// benchSample is one block sampling of -block-sample: 1 in N blocks, or
// by launch at most PerLaunch blocks of each, in the guards form if Guards
// (ptx.MaxSampleCopy: a branch around each site instead of a copy of the
// original code for the blocks not sampled).
type benchSample struct {
	N         uint32
	Guards    bool
	PerLaunch uint32
}

func genBench(dir, corpus string, probes, levels []string, calls bool, samples []benchSample) error {
	if dir == "" {
		return errors.New("bench: -out is required")
	}
	var perThread []bool
	for _, l := range levels {
		switch l {
		case "warp":
			perThread = append(perThread, false)
		case "thread":
			perThread = append(perThread, true)
		default:
			return fmt.Errorf("bench: level %q: want warp or thread", l)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	kernels := benchKernels()
	if corpus != "" {
		kernels = append(kernels, corpusKernels()...)
	}
	var bf benchFile
	for _, k := range kernels {
		bf.Kernels = append(bf.Kernels, k)
		src := benchHeader + k.src
		if k.file != "" {
			b, err := os.ReadFile(filepath.Join(corpus, k.file))
			if err != nil {
				return fmt.Errorf("bench: kernel %s: %w", k.Name, err)
			}
			src = string(b)
		}
		base := k.Name + ".orig.ptx"
		if err := os.WriteFile(filepath.Join(dir, base), []byte(src), 0o644); err != nil {
			return err
		}
		bf.Variants = append(bf.Variants, benchVariant{Name: k.Name, Kernel: k.Name, PTX: base})
		forms := []probepatch.Options{{}}
		if calls {
			forms = append(forms, probepatch.Options{Calls: true})
		}
		for _, probe := range probes {
			for _, per := range perThread {
				for _, form := range forms {
					for _, n := range samples {
						v, err := instrument(dir, k, src, probe, per, form, n)
						if err != nil {
							return fmt.Errorf("%s with %s: %w", k.Name, probe, err)
						}
						bf.Variants = append(bf.Variants, v)
					}
				}
			}
		}
	}
	js, _ := json.MarshalIndent(bf, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), js, 0o644); err != nil {
		return err
	}
	fmt.Printf("jitcheck bench: %d kernels, %d modules in %s\n", len(bf.Kernels), len(bf.Variants), dir)
	return nil
}

// instrument patches the kernel's module as the injection server does:
// compile the probe set, then probepatch links it and calls it at entry
// and exits (in 1 of sample blocks).
func instrument(dir string, k benchKernel, src, probe string, perThread bool, opts probepatch.Options, bs benchSample) (benchVariant, error) {
	sample := bs.N
	lvl := map[bool]string{false: "warp", true: "thread"}[perThread]
	short := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(probe), ".o"), ".bpf")
	v := benchVariant{Name: fmt.Sprintf("%s+%s/%s", k.Name, short, lvl), Kernel: k.Name, Probe: short, Level: lvl}
	file := fmt.Sprintf("%s.%s.%s.ptx", k.Name, short, lvl)
	if opts.Calls {
		v.Form = "call"
		v.Name += ",call"
		file = fmt.Sprintf("%s.%s.%s.call.ptx", k.Name, short, lvl)
	}
	if sample > 1 {
		v.BlockSample = sample
		v.Name += fmt.Sprintf(",1/%d", sample)
		file = strings.TrimSuffix(file, ".ptx") + fmt.Sprintf(".s%d.ptx", sample)
	}
	if bs.PerLaunch > 0 {
		v.BlocksPerLaunch = bs.PerLaunch
		v.Name += fmt.Sprintf(",l%d", bs.PerLaunch)
		file = strings.TrimSuffix(file, ".ptx") + fmt.Sprintf(".l%d.ptx", bs.PerLaunch)
	}
	if bs.Guards {
		v.Form = "guards" // not one of the imbalance report's
		v.Name += "g"
		file = strings.TrimSuffix(file, ".ptx") + "g.ptx"
		old := ptx.MaxSampleCopy
		ptx.MaxSampleCopy = -1
		defer func() { ptx.MaxSampleCopy = old }()
	}
	o, err := check.Object(probe)
	if err != nil {
		return v, err
	}
	t0 := time.Now()
	c, err := jit.Compile([]*jit.Object{o}, jit.Options{PerThread: perThread, BlockSample: sample, BlocksPerLaunch: bs.PerLaunch})
	if err != nil {
		return v, err
	}
	res, err := probepatch.New(c, opts).Patch(context.Background(), &devrtinject.Module{PTX: []byte(src)})
	if err != nil {
		return v, err
	}
	// every kernel instrumented (a module's variables are no reason not to)
	if res.Status != devrtinject.StatusPatched || strings.Contains(res.Reason, "not instrumented") {
		return v, fmt.Errorf("%s: %s", res.Status, res.Reason)
	}
	v.PatchMS = float64(time.Since(t0).Microseconds()) / 1000
	v.PTX = file
	m, err := ptx.Parse(string(res.PTX))
	if err != nil {
		return v, err
	}
	if slices.Contains(m.KernelNames(), k.Entry+ptx.Grid1DSuffix) {
		v.Grid1D = k.Entry + ptx.Grid1DSuffix
	}
	v.Headers = check.Headers(c)
	v.RegionSize = res.SharedSize
	return v, os.WriteFile(filepath.Join(dir, v.PTX), res.PTX, 0o644)
}

// report reads the regions jit_bench.py kept after one launch of the
// imbalanced kernel and prints what the probes saw: block durations of the
// heavy blocks (id % 8 == 0) against the others (block_sched), and how
// unevenly the SMs were loaded (sm_load).
func report(dir string) error {
	// the probe's layout and, if read, its unsampled region
	layout := func(probe string, read bool) (gpumap.Layout, []byte, error) {
		o, err := check.Object("device/" + probe)
		if err != nil {
			return gpumap.Layout{}, nil, err
		}
		c, err := jit.Compile([]*jit.Object{o}, jit.Options{})
		if err != nil {
			return gpumap.Layout{}, nil, err
		}
		if !read {
			return c.Layout, nil, nil
		}
		b, err := os.ReadFile(filepath.Join(dir, "report."+probe+".bin"))
		return c.Layout, b, err
	}
	if _, err := os.Stat(filepath.Join(dir, "report.block_sched.bin")); errors.Is(err, fs.ErrNotExist) {
		return reportSampled(dir, layout) // only sampled modules were timed
	}
	l, region, err := layout("block_sched", true)
	if err != nil {
		return err
	}
	ring, _ := l.Find("gx_block_ring")
	recs, err := ring.RingDrain(gpumap.Region(region), 1<<24)
	if err != nil {
		return err
	}
	var heavy, light []float64
	var first, last uint64
	for i, r := range recs {
		b, ok := proberegion.ParseBlock(r)
		if !ok {
			return fmt.Errorf("block record of %d bytes, want %d", len(r), proberegion.BlockSize)
		}
		if i == 0 || b.StartNS < first {
			first = b.StartNS
		}
		last = max(last, b.EndNS)
		d := float64(b.EndNS-b.StartNS) / 1e3
		if b.Block%8 == 0 {
			heavy = append(heavy, d)
		} else {
			light = append(light, d)
		}
	}
	rh, err := ring.ReadHeader(gpumap.Region(region))
	if err != nil {
		return err
	}
	fmt.Printf("block_sched: %d blocks seen, kernel span %.1f us (first block start to last block end); ring drops %d\n",
		len(recs), float64(last-first)/1e3, rh.Drops)
	fmt.Printf("  blocks id%%8==0: %d, median %.1f us; other blocks: %d, median %.1f us; ratio %.2f\n",
		len(heavy), median(heavy), len(light), median(light), median(heavy)/median(light))
	l, region, err = layout("sm_load", true)
	if err != nil {
		return err
	}
	sm, _ := l.Find("gx_sm")
	var busy []float64
	var blocks, threads uint64
	for s := uint32(0); s < sm.Slots; s++ {
		v, err := sm.ArrayCopy(gpumap.Region(region), s)
		if err != nil {
			return err
		}
		b, t, ns := binary.LittleEndian.Uint64(v[0]), binary.LittleEndian.Uint64(v[0][8:]), binary.LittleEndian.Uint64(v[0][16:])
		blocks += b
		threads += t
		if t > 0 {
			busy = append(busy, float64(ns)/32/1e3) // warp-us
		}
	}
	mn, mx := busy[0], busy[0]
	sum := 0.0
	for _, b := range busy {
		mn, mx, sum = min(mn, b), max(mx, b), sum+b
	}
	fmt.Printf("sm_load: %d SMs used, %d blocks, %d threads; warp-us per SM min %.0f, mean %.0f, max %.0f (max/mean %.2f)\n",
		len(busy), blocks, threads, mn, sum/float64(len(busy)), mx, mx/(sum/float64(len(busy))))
	return reportSampled(dir, layout)
}

// reportSampled checks the regions of the sampled variants of the same
// launch (report.<probe>.s<N>.bin: 1 in N; report.<probe>.l<N>.bin: by
// launch, at most N): block_sched must have recorded exactly the blocks
// devrt/ptx picks, each weighing what ptx.SampleWeight says, and sm_load
// counted as many blocks times that weight.
func reportSampled(dir string, layout func(string, bool) (gpumap.Layout, []byte, error)) error {
	grid := uint32(0)
	for _, k := range benchKernels() {
		if k.Name == "imbalanced" {
			grid = k.Grid
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "report.*.[sl]*.bin"))
	for _, f := range files {
		var probe string
		var kind rune
		var n uint32
		if _, err := fmt.Sscanf(strings.ReplaceAll(strings.TrimPrefix(filepath.Base(f), "report."), ".", " "), "%s %c%d bin", &probe, &kind, &n); err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
		every, perLaunch, what := n, uint32(0), fmt.Sprintf("1 in %d", n)
		if kind == 'l' {
			every, perLaunch = 0, n
			what = fmt.Sprintf("%d a launch (1 in %d)", n, ptx.SampleWeight(0, n, uint64(grid)))
		}
		weight := uint64(ptx.SampleWeight(every, perLaunch, uint64(grid)))
		want := map[uint64]bool{}
		for i := range grid {
			if ptx.Sampled(i, every, perLaunch, uint64(grid)) {
				want[uint64(i)] = true
			}
		}
		l, _, err := layout(probe, false)
		if err != nil {
			return err
		}
		l = l.WithSampling(every, perLaunch)
		region, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		switch probe {
		case "block_sched":
			ring, _ := l.Find("gx_block_ring")
			recs, err := ring.RingDrain(gpumap.Region(region), 1<<24)
			if err != nil {
				return err
			}
			got := map[uint64]bool{}
			weighed := true
			for _, r := range recs {
				b, ok := proberegion.ParseBlock(r)
				if !ok {
					return fmt.Errorf("block record of %d bytes, want %d", len(r), proberegion.BlockSize)
				}
				got[b.Block] = true
				weighed = weighed && uint64(b.Weight) == weight && b.GridBlocks == uint64(grid)
			}
			ok := len(got) == len(recs) && len(got) == len(want) && weighed
			for b := range got {
				ok = ok && want[b]
			}
			fmt.Printf("block_sched %s: %d block records of %d blocks, weight %d; the blocks devrt/ptx picks: %d (%s)\n",
				what, len(recs), grid, weight, len(want), map[bool]string{true: "the same blocks", false: "MISMATCH"}[ok])
			if !ok {
				return fmt.Errorf("block_sched sampled %s recorded other blocks or weights than devrt/ptx picks", what)
			}
		case "sm_load":
			sm, _ := l.Find("gx_sm")
			var blocks uint64
			for s := uint32(0); s < sm.Slots; s++ {
				v, err := sm.ArrayCopy(gpumap.Region(region), s)
				if err != nil {
					return err
				}
				blocks += binary.LittleEndian.Uint64(v[0])
			}
			fmt.Printf("sm_load %s: %d blocks counted (picked: %d, weighing %d each) of %d\n", what, blocks, len(want), weight, grid)
			if blocks != uint64(len(want))*weight {
				return fmt.Errorf("sm_load sampled %s counted %d blocks, %d picked of weight %d", what, blocks, len(want), weight)
			}
		}
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
