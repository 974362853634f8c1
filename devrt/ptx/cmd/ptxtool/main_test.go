package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

const corpus = "../../testdata/corpus/"

func TestInfo(t *testing.T) {
	var b bytes.Buffer
	if err := info([]string{corpus + "triton_add.ptx"}, &b); err != nil {
		t.Fatal(err)
	}
	want := "version 8.7 target sm_90a address_size 64\n" +
		".visible entry add_kernel params=6 regs=[.b32:33 .b64:11 .pred:3] labels=4 exits=1 loads=4 stores/atomics=2 (generic 0) id=0x" +
		fmt.Sprintf("%016x", ptx.KernelID("add_kernel")) + "\n"
	if b.String() != want {
		t.Errorf("info:\n got  %q\n want %q", b.String(), want)
	}
}

func TestInstrumentAndCheck(t *testing.T) {
	dir := t.TempDir()
	out, rep := filepath.Join(dir, "out.ptx"), filepath.Join(dir, "report.json")
	err := instrument([]string{"-fragment", "../../testdata/probe_count.ptx", "-kernels", "vec_add,early_*",
		"-entry", "__gpuext_probe_0", "-exit", "__gpuext_probe_0", "-store", "__gpuext_probe_0", "-o", out, "-report", rep,
		corpus + "nvcc_kernels.ptx"})
	if err != nil {
		t.Fatal(err)
	}
	if err := check([]string{out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var r ptx.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Kernels) != 2 || r.Kernels[0].Name != "vec_add" || r.Kernels[1].Name != "early_exits" ||
		r.Kernels[0].Store != 1 || r.Kernels[1].Store != 2 || r.Kernels[1].Load != 0 {
		t.Errorf("report %+v", r)
	}
	if err := check([]string{corpus + "nvcc_kernels.ptx", filepath.Join(dir, "missing.ptx")}); err == nil ||
		err.Error() != "1 of 2 files failed" {
		t.Errorf("check with a missing file: %v", err)
	}
}

func TestProbeFlag(t *testing.T) {
	var p probeFlags
	if err := p.Set("__gpuext_probe_1:exit:vec_*,early_exits"); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("__gpuext_probe_0:entry"); err != nil {
		t.Fatal(err)
	}
	if err := p.Set("__gpuext_probe_2:entry_block0"); err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != "[{__gpuext_probe_1 exit [vec_* early_exits]  false} {__gpuext_probe_0 entry []  false} {__gpuext_probe_2 entry []  true}]" {
		t.Errorf("flags %s", got)
	}
	for _, bad := range []string{"f", ":exit", "f:middle"} {
		if err := p.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

func TestCarries(t *testing.T) {
	exits, probes, err := carries([]string{"x0", "x1"}, probeFlags{{Func: "x2", Kind: ptx.SiteExit}}, []string{"x1=e0", "x2=e1"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(exits) != "[x0]" || fmt.Sprint(probes) != "[{x2 exit [] e1 false} {x1 exit [] e0 false}]" {
		t.Errorf("exits %v probes %v", exits, probes)
	}
	for _, bad := range [][]string{{"x1"}, {"=e0"}, {"e0=x1"}} {
		if _, _, err := carries([]string{"x1"}, nil, bad); err == nil {
			t.Errorf("carries(%q) accepted", bad)
		}
	}
}
