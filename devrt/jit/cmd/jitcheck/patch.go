package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/device"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/check"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/probepatch"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

// patchFiles writes each PTX file patched with every shipped probe, as the
// collector's probe set patches a module at warp level (sampled by launch
// at perLaunch, with the kernels' entries for 1-D grids unless no1D), to
// dir under its own name, and prints the kernels and entries of each: the
// modules whose driver JIT bench/device/ptx_jit_cost.sh times.
func patchFiles(dir string, perLaunch uint32, no1D bool, files []string) error {
	if dir == "" || len(files) == 0 {
		return errors.New("patch: -out and at least one PTX file are required")
	}
	if err := ptx.CheckSampling(0, perLaunch); err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	var objs []*jit.Object
	for _, n := range device.Names() {
		o, err := check.Object("device/" + n)
		if err != nil {
			return fmt.Errorf("patch: probe %s: %w", n, err)
		}
		objs = append(objs, o)
	}
	c, err := jit.Compile(objs, jit.Options{BlocksPerLaunch: perLaunch})
	if err != nil {
		return fmt.Errorf("patch: %w", err)
	}
	p := probepatch.New(c, probepatch.Options{NoGrid1D: no1D})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		res, err := p.Patch(context.Background(), &devrtinject.Module{PTX: src})
		if err != nil {
			return fmt.Errorf("patch: %s: %w", f, err)
		}
		if res.Status != devrtinject.StatusPatched {
			return fmt.Errorf("patch: %s: %s: %s", f, res.Status, res.Reason)
		}
		m, err := ptx.Parse(string(res.PTX))
		if err != nil {
			return fmt.Errorf("patch: %s: the patched module: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), res.PTX, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d kernels patched, %d entries\n", filepath.Base(f), len(res.Kernels), len(m.KernelNames()))
	}
	return nil
}
