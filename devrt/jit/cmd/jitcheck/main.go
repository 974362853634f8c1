// Command jitcheck is the Go half of devrt/jit's GPU check (the other half
// is bench/device/jit_check.py, which runs on the GPU machine where there is
// no Go: build this statically, CGO_ENABLED=0).
//
//	jitcheck gen -out DIR      write every case: NAME.ptx (module with the
//	                           harness kernel gx_test), NAME.ctx.bin (inputs),
//	                           NAME.json (launch, region size and map headers)
//	jitcheck compare -dir DIR [-results RDIR]
//	                           read NAME.out.bin and NAME.region.bin that the
//	                           Python script wrote in RDIR (or NAME.error), compare with
//	                           the interpreter, print PASS/FAIL per case and a
//	                           summary; exit 1 on any failure
//	jitcheck bench -out DIR    write the benchmark: kernels uninstrumented and
//	                           instrumented (devrt/ptx) with each shipped probe
//	                           at warp level and per thread, bench.json
//	                           (bench/device/jit_bench.py times them); the
//	                           hand-written kernels, and with -corpus DIR those
//	                           of the PTX corpus (devrt/ptx/testdata/corpus)
//	jitcheck report -dir DIR   what block_sched and sm_load saw in the
//	                           benchmark's imbalanced kernel
//	jitcheck patch -out DIR [-blocks-per-launch N] [-no-grid1d] FILE...
//	                           each PTX file patched with the shipped probes
//	                           as the collector patches it (warp level,
//	                           sampled by launch, 1-D entries unless
//	                           -no-grid1d), written to DIR under its name:
//	                           for bench/device/ptx_jit_cost.sh
//	jitcheck list              the cases
//	jitcheck ptx NAME          print a case's module
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/check"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

// caseFile is NAME.json: what the Python script needs to launch a case.
type caseFile struct {
	Name       string    `json:"name"`
	Kernel     string    `json:"kernel"`
	Shared     string    `json:"shared"`
	Grid       [3]uint32 `json:"grid"`
	Block      [3]uint32 `json:"block"`
	Threads    int       `json:"threads"`
	RegionSize uint64    `json:"region_size"`
	Headers    [][2]any  `json:"headers"` // [offset, hex]: the map headers of the zeroed region
	Sentinel   uint64    `json:"sentinel"`
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		fs := flag.NewFlagSet("gen", flag.ExitOnError)
		out := fs.String("out", "", "directory to write the cases to")
		_ = fs.Parse(os.Args[2:])
		err = gen(*out)
	case "compare":
		fs := flag.NewFlagSet("compare", flag.ExitOnError)
		dir := fs.String("dir", "", "directory of the cases")
		res := fs.String("results", "", "directory of the GPU results (default: -dir)")
		_ = fs.Parse(os.Args[2:])
		if *res == "" {
			*res = *dir
		}
		var failed int
		failed, err = compare(*dir, *res)
		if err == nil && failed > 0 {
			os.Exit(1)
		}
	case "bench":
		fs := flag.NewFlagSet("bench", flag.ExitOnError)
		out := fs.String("out", "", "directory to write the benchmark modules to")
		probes := fs.String("probes", strings.Join(benchProbes, ","),
			"probe sets, comma-separated: shipped names (device/sm_load), test programs, or paths of BPF objects (*.o)")
		levels := fs.String("levels", "warp,thread", "levels to compile each probe at: warp, thread")
		corpus := fs.String("corpus", "",
			"PTX corpus directory (devrt/ptx/testdata/corpus) whose compiler-written kernels join the hand-written ones (Triton add, softmax and GEMM, nvcc axpy)")
		calls := fs.Bool("calls", false, "also patch each module with probe calls instead of inlined probe bodies (form \"call\")")
		samples := fs.String("block-sample", "1", "block samplings to patch each module with, comma-separated: 1 (every block), 16 (1 block in 16), "+
			"16g (the same in the guards form: a branch around every site instead of a copy of the original code), "+
			"l256 (by launch: at most 256 blocks of each launch, a power of two; l256g in the guards form)")
		_ = fs.Parse(os.Args[2:])
		var ns []benchSample
		for _, f := range strings.Split(*samples, ",") {
			if per, ok := strings.CutPrefix(f, "l"); ok {
				per, guards := strings.CutSuffix(per, "g")
				n, perr := strconv.ParseUint(per, 10, 32)
				if perr != nil || n == 0 || ptx.CheckSampling(0, uint32(n)) != nil {
					fmt.Fprintf(os.Stderr, "jitcheck bench: -block-sample %q: want l and a power of two up to %d, g after it for the guards form\n", f, ptx.MaxBlocksPerLaunch)
					os.Exit(2)
				}
				ns = append(ns, benchSample{N: 1, PerLaunch: uint32(n), Guards: guards})
				continue
			}
			num, guards := strings.CutSuffix(f, "g")
			n, perr := strconv.ParseUint(num, 10, 32)
			if perr != nil || n < 1 || n > ptx.MaxBlockSample || guards && n == 1 {
				fmt.Fprintf(os.Stderr, "jitcheck bench: -block-sample %q: want numbers from 1 to %d, or from 2 with g\n", f, ptx.MaxBlockSample)
				os.Exit(2)
			}
			ns = append(ns, benchSample{N: uint32(n), Guards: guards})
		}
		err = genBench(*out, *corpus, strings.Split(*probes, ","), strings.Split(*levels, ","), *calls, ns)
	case "report":
		fs := flag.NewFlagSet("report", flag.ExitOnError)
		dir := fs.String("dir", "", "directory of the benchmark")
		_ = fs.Parse(os.Args[2:])
		err = report(*dir)
	case "patch":
		fs := flag.NewFlagSet("patch", flag.ExitOnError)
		out := fs.String("out", "", "directory to write the patched modules to")
		per := fs.Uint("blocks-per-launch", 256, "sampling by launch (a power of two; 0: every block)")
		no1D := fs.Bool("no-grid1d", false, "without the kernels' entries for 1-D grids")
		_ = fs.Parse(os.Args[2:])
		err = patchFiles(*out, uint32(*per), *no1D, fs.Args())
	case "list":
		for _, c := range check.Cases() {
			fmt.Println(c.Name)
		}
	case "ptx":
		if len(os.Args) < 3 {
			usage()
		}
		err = printPTX(os.Args[2])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jitcheck:", err)
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: jitcheck gen -out DIR | compare -dir DIR [-results RDIR] | bench -out DIR | report -dir DIR |\n"+
		"       patch -out DIR [-blocks-per-launch N] [-no-grid1d] FILE... | list | ptx NAME")
	os.Exit(2)
}

func gen(dir string) error {
	if dir == "" {
		return errors.New("gen: -out is required")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range check.Cases() {
		comp, err := c.Compile()
		if err != nil {
			return err
		}
		base := filepath.Join(dir, c.Name)
		cf := caseFile{Name: c.Name, Kernel: check.HarnessKernel, Shared: "__gpuext_shared", Grid: c.Grid, Block: c.Block,
			Threads: c.Threads(), RegionSize: comp.Layout.Size, Headers: check.Headers(comp), Sentinel: check.Sentinel}
		js, _ := json.MarshalIndent(cf, "", "  ")
		for name, b := range map[string][]byte{
			".ptx": []byte(c.Module(comp)), ".ctx.bin": c.Ctxs(), ".json": js,
		} {
			if err := os.WriteFile(base+name, b, 0o644); err != nil {
				return err
			}
		}
	}
	fmt.Printf("jitcheck: %d cases in %s\n", len(check.Cases()), dir)
	return nil
}

func compare(dir, results string) (int, error) {
	if dir == "" {
		return 0, errors.New("compare: -dir is required")
	}
	pass, fail := 0, 0
	for _, c := range check.Cases() {
		base := filepath.Join(results, c.Name)
		res := func() []string {
			if b, err := os.ReadFile(base + ".error"); err == nil {
				return []string{"GPU run failed: " + strings.TrimSpace(string(b))}
			}
			ob, err1 := os.ReadFile(base + ".out.bin")
			region, err2 := os.ReadFile(base + ".region.bin")
			if err1 != nil || err2 != nil {
				return []string{"no GPU results (was the case run?)"}
			}
			comp, err := c.Compile()
			if err != nil {
				return []string{err.Error()}
			}
			wantOut, wantRegion, err := c.Expected(comp)
			if err != nil {
				return []string{err.Error()}
			}
			got := make([]uint64, len(ob)/8)
			for i := range got {
				got[i] = binary.LittleEndian.Uint64(ob[8*i:])
			}
			return c.Compare(comp, wantOut, wantRegion, got, region)
		}()
		if len(res) == 0 {
			pass++
			fmt.Printf("PASS %s\n", c.Name)
			continue
		}
		fail++
		fmt.Printf("FAIL %s\n", c.Name)
		for _, d := range res {
			fmt.Printf("     %s\n", d)
		}
	}
	fmt.Printf("jitcheck: %d passed, %d failed, %d cases\n", pass, fail, pass+fail)
	return fail, nil
}

func printPTX(name string) error {
	for _, c := range check.Cases() {
		if c.Name == name {
			comp, err := c.Compile()
			if err != nil {
				return err
			}
			fmt.Print(c.Module(comp))
			return nil
		}
	}
	return fmt.Errorf("no case %q (jitcheck list)", name)
}
