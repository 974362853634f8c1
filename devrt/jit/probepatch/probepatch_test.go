package probepatch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/device"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

func shipped(t *testing.T) *jit.Compiled { return shippedWith(t, jit.Options{}) }

// shippedWith compiles the shipped probes with opts.
func shippedWith(t *testing.T, opts jit.Options) *jit.Compiled {
	var objs []*jit.Object
	for _, n := range device.Names() {
		b, err := device.Object(n)
		require.NoError(t, err)
		o, err := jit.LoadObject(bytes.NewReader(b))
		require.NoError(t, err)
		objs = append(objs, o)
	}
	c, err := jit.Compile(objs, opts)
	require.NoError(t, err)
	return c
}

// TestPatchCorpus: every module of the PTX corpus (nvcc and Triton, from an
// H200) gets every shipped probe in every kernel, copied (the default)
// at the same sites as it is called with Options.Calls.
func TestPatchCorpus(t *testing.T) {
	c := shipped(t)
	require.Len(t, c.Probes, 7)
	p := New(c, Options{})
	calls := New(c, Options{Calls: true})
	require.NotEqual(t, p.Version(), calls.Version())
	files, err := filepath.Glob("../../ptx/testdata/corpus/*.ptx")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		m, err := ptx.Parse(string(src))
		require.NoError(t, err)
		kernels := m.KernelNames()
		res, err := p.Patch(context.Background(), &devrtinject.Module{PTX: src})
		require.NoError(t, err, f)
		require.Equal(t, devrtinject.StatusPatched, res.Status, "%s: %s", f, res.Reason)
		require.ElementsMatch(t, kernels, res.Kernels, f)
		require.Equal(t, c.Layout.Size, res.SharedSize)
		out, err := ptx.Parse(string(res.PTX))
		require.NoError(t, err, f)
		require.ElementsMatch(t, append(slices.Clone(kernels), plainCopies(m)...), out.KernelNames())
		require.Contains(t, string(res.PTX), ".visible .const .align 8 .u64 __gpuext_shared;")
		// block_sched's per-block array: beside dynamic shared memory
		// (Triton's softmax and GEMM) 1,024-aligned and padded, so that
		// the kernel's own shared memory keeps its 1,024-byte boundary.
		block := fmt.Sprintf(".shared .align 8 .b8 %s[%d];", jit.BlockSymbol, jit.BlockPad+c.Layout.BlockSize)
		if bytes.Contains(src, []byte(".extern .shared")) {
			block = ".shared .align 1024 .b8 " + jit.BlockSymbol + "[1024];"
		}
		require.Contains(t, string(res.PTX), block, f)
		sites, err := Sites(res.PTX, c.Probes)
		require.NoError(t, err)
		cres, err := calls.Patch(context.Background(), &devrtinject.Module{PTX: src})
		require.NoError(t, err)
		csites, err := Sites(cres.PTX, c.Probes)
		require.NoError(t, err)
		require.Equal(t, csites, sites, f)
		for _, k := range kernels {
			for _, pr := range c.Probes {
				require.GreaterOrEqual(t, sites[k][pr.Func], 1, "%s: %s: sites of %s", f, k, pr.Func)
			}
		}
		// inlined, the kernels call no probe (helpers only); with Calls,
		// every site is a call
		require.Zero(t, probeCallCount(t, res.PTX, c), f)
		n := 0
		for _, k := range sites {
			for _, v := range k {
				n += v
			}
		}
		require.Equal(t, n, probeCallCount(t, cres.PTX, c), f)
	}
}

// plainCopies names the uninstrumented copies a module with variables
// gets of its kernels (all instrumented here), in the order they are
// appended; none for a module without.
func plainCopies(m *ptx.Module) []string {
	if own, _ := m.Variables(); len(own) == 0 {
		return nil
	}
	var out []string
	for _, k := range slices.Sorted(slices.Values(m.KernelNames())) {
		out = append(out, k+devrtinject.PlainSuffix)
	}
	return out
}

// probeCallCount counts the calls of probe functions in src's kernels.
func probeCallCount(t *testing.T, src []byte, c *jit.Compiled) int {
	m, err := ptx.Parse(string(src))
	require.NoError(t, err)
	n := 0
	for _, k := range m.Kernels() {
		for _, in := range k.Instructions() {
			for _, pr := range c.Probes {
				if in.CallTarget() == pr.Func {
					n++
				}
			}
		}
	}
	return n
}

// program is r0 = 0; exit in section sec.
func program(t *testing.T, name, sec string) jit.Program {
	raw := make([]byte, 16)
	raw[0] = 0xb7 // r0 = 0
	raw[8] = 0x95 // exit
	insns, err := jit.Decode(raw, nil)
	require.NoError(t, err)
	site, k, err := jit.ParseSection(sec)
	require.NoError(t, err)
	return jit.Program{Name: name, Section: sec, Site: site, Kernel: k, Insns: insns}
}

func TestPatchSelectsKernels(t *testing.T) {
	src, err := os.ReadFile("../../ptx/testdata/corpus/nvcc_kernels.ptx")
	require.NoError(t, err)
	m, err := ptx.Parse(string(src))
	require.NoError(t, err)
	all := m.KernelNames()
	require.Greater(t, len(all), 2)
	one := all[1]

	compile := func(progs ...jit.Program) *Patcher {
		c, err := jit.Compile([]*jit.Object{{Programs: progs}}, jit.Options{})
		require.NoError(t, err)
		return New(c, Options{})
	}
	// Only the kernel the section names; entry from one program, exit
	// from another. The module has variables (a __device__ counter and a
	// __constant__ array), so the answer names every kernel: its twin
	// owns them.
	p := compile(program(t, "a", "gpu/entry/"+one), program(t, "b", "kretprobe/"+one))
	res, err := p.Patch(context.Background(), &devrtinject.Module{PTX: src})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status)
	require.Equal(t, slices.Sorted(slices.Values(all)), res.Kernels)
	require.Equal(t, []string{"dev_counter", "coeffs"}, res.Vars)
	require.Equal(t, "the patched module owns its variables (dev_counter, coeffs): all its kernels run there", res.Reason)
	require.Equal(t, uint64(0), res.SharedSize)
	out, err := ptx.Parse(string(res.PTX))
	require.NoError(t, err)
	sites, err := Sites(res.PTX, p.probes.Probes)
	require.NoError(t, err)
	// the patched kernel's plain copy: the program's kernel, renamed
	pc, _ := out.Lookup(one + devrtinject.PlainSuffix)
	require.NotNil(t, pc)
	g, _ := m.Lookup(one)
	want := ptx.Write(&ptx.Module{Items: []ptx.Item{g}})
	want = strings.Replace(want, ".entry "+one, ".entry "+one+devrtinject.PlainSuffix, 1)
	require.Equal(t, want, ptx.Write(&ptx.Module{Items: []ptx.Item{pc}}))
	for _, k := range all {
		cp, _ := out.Lookup(k + devrtinject.PlainSuffix)
		require.Equal(t, k == one, cp != nil, "%s: only the patched kernel has a copy", k)
		require.Equal(t, k == one, len(sites[k]) > 0, "%s: %v", k, sites[k])
		if k != one { // the others exactly as they were
			f, _ := out.Lookup(k)
			g, _ := m.Lookup(k)
			require.Equal(t, ptx.Write(&ptx.Module{Items: []ptx.Item{g}}), ptx.Write(&ptx.Module{Items: []ptx.Item{f}}), k)
		}
	}

	// Without variables, only the kernel the section names.
	two := ".version 8.0\n.target sm_90\n.address_size 64\n" +
		".visible .entry a()\n{\n\tret;\n}\n.visible .entry b()\n{\n\tret;\n}\n"
	p = compile(program(t, "a", "gpu/entry/b"))
	res, err = p.Patch(context.Background(), &devrtinject.Module{PTX: []byte(two)})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status)
	require.Equal(t, []string{"b"}, res.Kernels)
	require.Empty(t, res.Vars)
	require.Empty(t, res.Reason)

	// A managed variable or a texture reference: rejected, whatever the
	// kernels.
	for decl, why := range map[string]string{
		".global .attribute(.managed) .align 4 .u32 mv;\n": "the module declares mv (a managed variable), which a patched copy cannot take over",
		".global .texref tex0;\n":                          "the module declares tex0 (a texture reference), which a patched copy cannot take over",
	} {
		res, err = p.Patch(context.Background(), &devrtinject.Module{PTX: []byte(strings.Replace(two, ".visible", decl+".visible", 1))})
		require.NoError(t, err)
		require.Equal(t, devrtinject.Result{Status: devrtinject.StatusRejected, Reason: why}, res)
	}

	// Two groups: every kernel at entry, one kernel also at exits.
	p = compile(program(t, "a", "gpu/entry/*"), program(t, "b", "gpu/exit/"+one))
	res, err = p.Patch(context.Background(), &devrtinject.Module{PTX: src})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusPatched, res.Status, res.Reason)
	require.ElementsMatch(t, all, res.Kernels)

	// No kernel matches: unchanged.
	p = compile(program(t, "a", "gpu/entry/no_such_kernel"))
	res, err = p.Patch(context.Background(), &devrtinject.Module{PTX: src})
	require.NoError(t, err)
	require.Equal(t, devrtinject.Result{Status: devrtinject.StatusUnchanged, Reason: "no probe applies to its kernels"}, res)

	// Not PTX: rejected with the parser's reason.
	res, err = p.Patch(context.Background(), &devrtinject.Module{PTX: []byte(".version 8.0\n.target sm_90\n.address_size 64\n.entry k( {")})
	require.NoError(t, err)
	require.Equal(t, devrtinject.StatusRejected, res.Status)
	require.Contains(t, res.Reason, "PTX does not parse")

	// A cancelled request is an error, not an answer.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Patch(ctx, &devrtinject.Module{PTX: src})
	require.ErrorIs(t, err, context.Canceled)
}

func TestVersionChangesWithTheProbes(t *testing.T) {
	c1, err := jit.Compile([]*jit.Object{{Programs: []jit.Program{program(t, "a", "gpu/entry/*")}}}, jit.Options{})
	require.NoError(t, err)
	c2, err := jit.Compile([]*jit.Object{{Programs: []jit.Program{program(t, "a", "gpu/exit/*")}}}, jit.Options{})
	require.NoError(t, err)
	c3, err := jit.Compile([]*jit.Object{{Programs: []jit.Program{program(t, "a", "gpu/entry/*")}}}, jit.Options{PerThread: true})
	require.NoError(t, err)
	v := map[uint64]bool{New(c1, Options{}).Version(): true, New(c2, Options{}).Version(): true, New(c3, Options{}).Version(): true}
	require.Len(t, v, 3)
	require.Equal(t, New(c1, Options{}).Version(), New(c1, Options{}).Version())
}

// TestPatchGrid1D: sampled by launch, every kernel of the corpus of at
// most ptx.MaxGrid1D instructions (all but the Triton GEMM's 800) gets its
// entry for 1-D grids after it, with
// the same probe sites; the answer names the kernels only (devrt finds
// the entries by their suffix); Options.NoGrid1D leaves them out and is
// another probe set.
func TestPatchGrid1D(t *testing.T) {
	c := shippedWith(t, jit.Options{BlocksPerLaunch: 256})
	p, off := New(c, Options{}), New(c, Options{NoGrid1D: true})
	require.NotEqual(t, p.Version(), off.Version())
	files, err := filepath.Glob("../../ptx/testdata/corpus/*.ptx")
	require.NoError(t, err)
	twins := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		m, err := ptx.Parse(string(src))
		require.NoError(t, err)
		var want []string // each kernel, then its entry if copied
		for _, k := range m.Kernels() {
			want = append(want, k.Name)
			if len(k.Instructions()) <= ptx.MaxGrid1D {
				want = append(want, k.Name+ptx.Grid1DSuffix)
			}
		}
		res, err := p.Patch(context.Background(), &devrtinject.Module{PTX: src})
		require.NoError(t, err, f)
		require.Equal(t, devrtinject.StatusPatched, res.Status, "%s: %s", f, res.Reason)
		require.ElementsMatch(t, m.KernelNames(), res.Kernels, f)
		out, err := ptx.Parse(string(res.PTX))
		require.NoError(t, err, f)
		require.Equal(t, append(want, plainCopies(m)...), out.KernelNames(), f)
		sites, err := Sites(res.PTX, c.Probes)
		require.NoError(t, err)
		for _, k := range m.KernelNames() {
			if tw, ok := sites[k+ptx.Grid1DSuffix]; ok {
				require.Equal(t, sites[k], tw, "%s: %s", f, k)
				twins++
			}
			require.Empty(t, sites[k+devrtinject.PlainSuffix], "%s: %s's plain copy", f, k)
		}
		ores, err := off.Patch(context.Background(), &devrtinject.Module{PTX: src})
		require.NoError(t, err, f)
		out, err = ptx.Parse(string(ores.PTX))
		require.NoError(t, err, f)
		require.Equal(t, append(m.KernelNames(), plainCopies(m)...), out.KernelNames(), f)
	}
	require.Greater(t, twins, 10)
}
