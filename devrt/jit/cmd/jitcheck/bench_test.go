package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenBench: the benchmark's modules, hand-written and from the PTX
// corpus, each patched with every probe asked for; the launch settings
// jit_bench.py reads; without -corpus, the hand-written kernels only.
func TestGenBench(t *testing.T) {
	probes := []string{"empty", "device/block_sched"}
	// the output argument of each kernel (-1: the last buffer)
	out := map[string]int{"vecadd16M": -1, "vecadd1M": -1, "earlyexits4M": -1, "compute": -1, "imbalanced": -1,
		"triton_add16M": 2, "triton_softmax": 0, "triton_matmul": 2, "axpy16M": 2}
	tests := []struct {
		corpus  string
		kernels []string
	}{
		{"../../../ptx/testdata/corpus", []string{"vecadd16M", "vecadd1M", "earlyexits4M", "compute", "imbalanced",
			"triton_add16M", "triton_softmax", "triton_matmul", "axpy16M"}},
		{"", []string{"vecadd16M", "vecadd1M", "earlyexits4M", "compute", "imbalanced"}},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		if err := genBench(dir, tt.corpus, probes, []string{"warp"}, false, []benchSample{{N: 1}}); err != nil {
			t.Fatal(err)
		}
		var bf benchFile // as jit_bench.py reads it back
		b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &bf); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range bf.Kernels {
			names = append(names, k.Name)
			if want, ok := out[k.Name]; !ok || k.Out != want {
				t.Errorf("%s: output argument %d, want %d", k.Name, k.Out, want)
			}
			if k.Out >= len(k.Args) || k.Out >= 0 && k.Args[k.Out][0] != "buf" {
				t.Errorf("%s: output argument %d is not a buffer: %v", k.Name, k.Out, k.Args)
			}
			if k.Name == "triton_matmul" && (k.Grid != 32 || k.GridY != 32 || k.Block != 128 || k.Shared != 98304 || len(k.Args) != 11) {
				t.Errorf("triton_matmul launch: %+v", k)
			}
		}
		if strings.Join(names, " ") != strings.Join(tt.kernels, " ") {
			t.Errorf("corpus %q: kernels %v, want %v", tt.corpus, names, tt.kernels)
		}
		if len(bf.Variants) != len(tt.kernels)*(1+len(probes)) {
			t.Fatalf("corpus %q: %d variants", tt.corpus, len(bf.Variants))
		}
		for _, v := range bf.Variants {
			src, err := os.ReadFile(filepath.Join(dir, v.PTX))
			if err != nil {
				t.Fatal(err)
			}
			// every module holds its kernel's entry; the per-block
			// array is padded beside dynamic shared memory (devrt/ptx Link)
			for _, k := range bf.Kernels {
				if k.Name == v.Kernel && !strings.Contains(string(src), ".entry "+k.Entry+"(") {
					t.Errorf("%s: no entry %s", v.Name, k.Entry)
				}
			}
			if v.Probe == "block_sched" && v.Kernel == "triton_matmul" && !strings.Contains(string(src), ".shared .align 1024 .b8 __gpuext_block[1024];") {
				t.Errorf("%s: the per-block array is not padded", v.Name)
			}
		}
	}
}

// TestGenBenchGrid1D: sampled by launch, each module names its kernel's
// entry for 1-D grids, which it holds; at a fixed rate there is none.
func TestGenBenchGrid1D(t *testing.T) {
	dir := t.TempDir()
	if err := genBench(dir, "", []string{"empty"}, []string{"warp"}, false, []benchSample{{PerLaunch: 256}, {N: 16}}); err != nil {
		t.Fatal(err)
	}
	var bf benchFile
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &bf); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range bf.Variants {
		src, err := os.ReadFile(filepath.Join(dir, v.PTX))
		if err != nil {
			t.Fatal(err)
		}
		var entry string
		for _, k := range bf.Kernels {
			if k.Name == v.Kernel {
				entry = k.Entry
			}
		}
		want := ""
		if v.BlocksPerLaunch > 0 {
			want = entry + "__gx1d"
			n++
		}
		if v.Grid1D != want || (want != "") != strings.Contains(string(src), ".entry "+entry+"__gx1d(") {
			t.Errorf("%s: grid1d %q, want %q", v.Name, v.Grid1D, want)
		}
	}
	if n != 5 {
		t.Errorf("%d modules sampled by launch, want 5", n)
	}
}

// TestPatchFiles: the corpus patched as the collector patches it, with
// and without the 1-D entries; refusals of bad arguments.
func TestPatchFiles(t *testing.T) {
	files, err := filepath.Glob("../../../ptx/testdata/corpus/*.ptx")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	with, without := t.TempDir(), t.TempDir()
	if err := patchFiles(with, 256, false, files); err != nil {
		t.Fatal(err)
	}
	if err := patchFiles(without, 256, true, files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		a, err := os.ReadFile(filepath.Join(with, filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(without, filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "__gx1d("); n != 0 {
			t.Errorf("%s without: %d 1-D entries", f, n)
		}
		// every kernel but the Triton GEMM's (over ptx.MaxGrid1D)
		// (nvcc's modules have variables: each kernel also has its plain copy)
		n, k := strings.Count(string(a), "__gx1d("), strings.Count(string(b), ".entry ")-strings.Count(string(b), "__gxplain(")
		if strings.Contains(f, "matmul") {
			k = 0
		}
		if n != k || n == 0 && !strings.Contains(f, "matmul") {
			t.Errorf("%s: %d 1-D entries for %d kernels", f, n, k)
		}
	}
	for _, tt := range []struct {
		per   uint32
		files []string
	}{{256, nil}, {3, files}} {
		if err := patchFiles(t.TempDir(), tt.per, false, tt.files); err == nil {
			t.Errorf("patch %d %v: no error", tt.per, tt.files)
		}
	}
}
