// Package device embeds the device probes shipped with otelcol-gpu: eBPF
// programs (block_sched, launch_latency, sm_load, warp_occupancy) that
// devrt/jit verifies and compiles to PTX and devrt injects into GPU
// kernels. The C sources beside this file are the only place they are
// written; the objects are generated (go generate, make generate) and
// committed so building the collector needs no clang.
package device

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:generate bash build.sh block_sched.bpf.c launch_latency.bpf.c sm_load.bpf.c warp_occupancy.bpf.c

//go:embed *.bpf.o
var objects embed.FS

// Names lists the shipped probes (block_sched, launch_latency, ...).
func Names() []string {
	ents, _ := fs.ReadDir(objects, ".")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".bpf.o"))
	}
	sort.Strings(out)
	return out
}

// Object returns the eBPF ELF object of the probe named name.
func Object(name string) ([]byte, error) {
	b, err := objects.ReadFile(name + ".bpf.o")
	if err != nil {
		return nil, fmt.Errorf("no device probe %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}
