// Package check is the GPU check of devrt/jit: test cases that run compiled
// probes inside a small harness kernel on a real GPU and compare what they
// left (each thread's r0, the shared region) with what the interpreter
// computes for the same threads. cmd/jitcheck writes the cases (PTX module,
// inputs) and compares the results; bench/device/jit_check.py runs them
// with the CUDA driver API. The same cases run in the unit tests against
// the interpreter alone, so a GPU run checks the compiler, not the cases.
package check

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"strings"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/device"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
)

//go:embed progs/*.bpf.o
var progs embed.FS

// Mode says how a result is compared.
type Mode string

// Compare modes.
const (
	Exact   Mode = "exact"   // byte for byte
	RingSet Mode = "ringset" // a ring: the same records in any order, same head and drops
	HashSet Mode = "hashset" // a hash: the same keys and values in any buckets, same count and drops
	SlotSum Mode = "slotsum" // a per-copy array: per key, the sums over copies of each 8-byte word
	Skip    Mode = "skip"    // not compared (Check looks at it)
)

// Case is one harness kernel launch.
type Case struct {
	Name      string
	Object    string // "classes" (progs/) or "device/<probe>" (bpf/device)
	Entry     string // program called first; its r0 goes to out[2*tid]
	Exit      string // program called last (optional); r0 to out[2*tid+1]
	Grid      [3]uint32
	Block     [3]uint32
	PerThread bool
	Active    string // lanes that call the probes: "all", "odd", "mixed"
	CtxBase   uint64 // added to the global thread id for the ctx inputs
	Unique    bool   // ctx addr distinct for every thread
	Kernel    bool   // ctx as one kernel's: same kernel_id for all threads, kind entry/exit
	Work      bool   // the harness spins between entry and exit, longer for higher blocks
	// BlockSample and BlocksPerLaunch compile the programs for that block
	// sampling (jit.Options; the harness runs them in every block all the
	// same): what the block weight helper returns.
	BlockSample, BlocksPerLaunch uint32
	R0                           Mode // Exact or Skip
	Maps                         map[string]Mode
	// Check tests properties of the results no interpreter can predict
	// (timestamps, SM ids); run on both the expected and the GPU results.
	Check func(c *Case, l gpumap.Layout, region []byte, out []uint64) error
}

// weight is what the block weight helper returns in the case's launch.
func (c *Case) weight() uint32 {
	return ptx.SampleWeight(c.BlockSample, c.BlocksPerLaunch, uint64(c.Grid[0])*uint64(c.Grid[1])*uint64(c.Grid[2]))
}

// Threads is the launch's thread count.
func (c *Case) Threads() int {
	return int(c.Grid[0] * c.Grid[1] * c.Grid[2] * c.Block[0] * c.Block[1] * c.Block[2])
}

// Sentinel is what out holds for a lane that did not call a probe.
const Sentinel = 0xa5a5a5a5a5a5a5a5

// KernelID is the kernel_id of Kernel cases.
const KernelID = 0x1234_5678_9abc_def0

// Object loads an eBPF object by name: "device/<probe>" (bpf/device), a
// test program file of progs/ ("classes", "empty"), or a BPF object file
// by path (a name ending in .o: an experiment's probes).
func Object(name string) (*jit.Object, error) {
	var b []byte
	var err error
	if probe, ok := strings.CutPrefix(name, "device/"); ok {
		b, err = device.Object(probe)
	} else if strings.HasSuffix(name, ".o") {
		b, err = os.ReadFile(name)
	} else {
		b, err = progs.ReadFile("progs/" + name + ".bpf.o")
	}
	if err != nil {
		return nil, err
	}
	return jit.LoadObject(bytes.NewReader(b))
}

func (c *Case) object() (*jit.Object, error) {
	o, err := Object(c.Object)
	if err != nil {
		return nil, err
	}
	names := []string{c.Entry}
	if c.Exit != "" {
		names = append(names, c.Exit)
	}
	return o.Only(names...)
}

// Compile compiles the case's programs with the harness functions.
func (c *Case) Compile() (*jit.Compiled, error) {
	o, err := c.object()
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	comp, err := jit.Compile([]*jit.Object{o}, jit.Options{PerThread: c.PerThread, Harness: true,
		BlockSample: c.BlockSample, BlocksPerLaunch: c.BlocksPerLaunch})
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	return comp, nil
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Ctx is the ctx thread gtid passes to site (1 entry, 2 exit).
func (c *Case) Ctx(gtid uint64, site uint32) [jit.CtxSize]byte {
	x := gtid + c.CtxBase
	kind := uint32(1 + x%4)
	st := uint32(x*7 + 3)
	var addr uint64
	switch {
	case c.Unique:
		addr = splitmix(x) | 1<<40
	case x%8 == 0:
		addr = 0
	case x%8 == 1:
		addr = ^uint64(0)
	case x%8 == 2:
		addr = 1 << 63
	case x%8 == 3:
		addr = 7
	default:
		addr = splitmix(x)
	}
	kid := splitmix(x + 1000)
	if !c.Unique && x%5 == 0 {
		kid = addr
	}
	if c.Kernel {
		kind, st, addr, kid = site, site, 0, KernelID
	}
	var b [jit.CtxSize]byte
	le32(b[0:], kind)
	le32(b[4:], st)
	le64(b[8:], addr)
	le64(b[16:], kid)
	return b
}

func le32(b []byte, v uint32) { b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
func le64(b []byte, v uint64) { le32(b, uint32(v)); le32(b[4:], uint32(v>>32)) }

// active reports whether lane calls the probes under the case's pattern
// (tid is the thread's index in its block).
func (c *Case) active(tid uint32) bool {
	switch c.Active {
	case "odd":
		return tid%2 == 1
	case "mixed":
		return (tid*7)%5 < 3
	}
	return true
}
