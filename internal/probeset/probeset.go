// Package probeset is the collector's configured set of device probes: the
// probe objects the receiver's devrt.probes configuration names (shipped
// ones from bpf/device, or eBPF objects at paths), compiled once by
// devrt/jit at warp or thread level, the kernels they may go into
// (include/exclude globs), and the devrtinject.Patcher that devrt's
// injection server asks. It also remembers the names of the kernels it
// patched, so the device probes' records, which carry a kernel id (FNV-1a 64
// of the name), can be reported by name, and it gives the region readers the
// layout of the maps.
//
// Why a layer over devrt/jit/probepatch (which joins the compiler and the
// rewriter): what to load and where it may go is configuration, which that
// package does not know. Kernels the configuration excludes are left out of
// the answer's kernel list, so devrt never redirects their launches (their
// instrumented copies sit unused in the twin module): the rewriter itself is
// not asked to do anything new.
package probeset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/device"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/probepatch"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/ptx"
	"github.com/otelcol-gpu/otelcol-gpu/internal/devrtinject"
)

// Modes of running a probe body.
const (
	ModeWarp   = "warp"   // once per warp, on the lowest active lane (default)
	ModeThread = "thread" // in every active lane
)

// Config says which probes go into which kernels.
type Config struct {
	// Enabled starts the injection server in each devrt directory.
	Enabled bool `mapstructure:"enabled"`
	// Probes are shipped probe names (block_sched, launch_latency,
	// sm_load, warp_occupancy) or absolute paths of eBPF objects (clang
	// -target bpf, sections gpu/<site>/<kernel glob>). Empty: all shipped.
	Probes []string `mapstructure:"probes"`
	// Include and Exclude are path.Match globs of (mangled) kernel names: a
	// kernel is instrumented when it matches an include (none: every
	// kernel) and no exclude, and a probe's own section glob matches it.
	Include []string `mapstructure:"include"`
	Exclude []string `mapstructure:"exclude"`
	// Mode is warp (default) or thread.
	Mode string `mapstructure:"mode"`
	// BlockSample runs the probes in 1 of BlockSample thread blocks of
	// each kernel (at most 65536; 0 or 1 with BlocksPerLaunch 0: every
	// block): the blocks picked by a hash of their index, block 0 always. On short memory-bound
	// kernels the probes that touch memory in every warp cost 15-80% of
	// the kernel's time in every block; see devrt/jit/README.md. Over 1,
	// it replaces BlocksPerLaunch.
	BlockSample uint32 `mapstructure:"block_sample"`
	// BlocksPerLaunch samples each launch by its own size: a launch of b
	// blocks runs the probes in 1 of 2^s (the same hash), the least s
	// with b / 2^s <= BlocksPerLaunch (s at most 16): every block of a
	// launch of at most that many, about half as many to that many of
	// larger ones (the hash rounds: 128 to 262 at 256; beyond
	// BlocksPerLaunch * 2^16 blocks, 1 in 2^16). A power of two up to 65536; 0: off
	// (every block, unless BlockSample). Either way the probes weigh what
	// they count by the blocks each sampled block stands for: per-SM,
	// occupancy, block counts and the schedule delay histogram estimate
	// all blocks, a block span describes the blocks sampled and says the
	// weight.
	BlocksPerLaunch uint32 `mapstructure:"blocks_per_launch"`
}

// DefaultBlocksPerLaunch is the receiver's default BlocksPerLaunch: every
// block of grids up to 256 blocks (one or two waves on an H100), and about
// 128 to 256 of larger ones. Measured (bench/device/jit_bench.sh, 2026-11-27)
// it takes the hand-written stress kernels' probes from 1.16-1.73x to
// 1.02-1.14x; 1024 left them at up to 1.14x on the H100.
const DefaultBlocksPerLaunch = 256

// sampling is the block sampling the configuration asks for: BlockSample
// over 1 replaces BlocksPerLaunch.
func (c *Config) sampling() (every, perLaunch uint32) {
	if c.BlockSample > 1 {
		return c.BlockSample, 0
	}
	return 1, c.BlocksPerLaunch
}

// Validate checks the configuration without compiling anything; errors
// name the field (devrt::probes::...).
func (c *Config) Validate() error {
	var errs []error
	if c.BlockSample > ptx.MaxBlockSample {
		errs = append(errs, fmt.Errorf("devrt::probes::block_sample: %d: at most %d", c.BlockSample, ptx.MaxBlockSample))
	}
	if ptx.CheckSampling(0, c.BlocksPerLaunch) != nil {
		errs = append(errs, fmt.Errorf("devrt::probes::blocks_per_launch: %d: want 0 (off) or a power of two up to %d", c.BlocksPerLaunch, ptx.MaxBlocksPerLaunch))
	}
	switch c.Mode {
	case "", ModeWarp, ModeThread:
	default:
		errs = append(errs, fmt.Errorf("devrt::probes::mode: %q is not warp or thread", c.Mode))
	}
	shipped := device.Names()
	for i, p := range c.Probes {
		if strings.HasPrefix(p, "/") {
			continue
		}
		if !slices.Contains(shipped, p) {
			errs = append(errs, fmt.Errorf("devrt::probes::probes[%d]: %q is neither a shipped probe (%s) nor an absolute path", i, p, strings.Join(shipped, ", ")))
		}
	}
	for name, globs := range map[string][]string{"include": c.Include, "exclude": c.Exclude} {
		for i, g := range globs {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				errs = append(errs, fmt.Errorf("devrt::probes::%s[%d]: bad glob %q", name, i, g))
			}
		}
	}
	return errors.Join(errs...)
}

// Set is a compiled probe set; it implements devrtinject.Patcher.
type Set struct {
	cfg      Config
	compiled *jit.Compiled
	patcher  *probepatch.Patcher
	version  uint64

	mu    sync.Mutex
	names map[uint64]string // kernel id -> name, of the kernels patched
}

var _ devrtinject.Patcher = (*Set)(nil)

// MaxKernelNames bounds the kernel names remembered (a process that loads
// endless generated modules cannot grow the collector).
const MaxKernelNames = 1 << 16

// New loads and compiles the configured probes. A probe the verifier
// rejects is an error with its reason.
func New(cfg Config) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	names := cfg.Probes
	if len(names) == 0 {
		names = device.Names()
	}
	var objs []*jit.Object
	for _, n := range names {
		var b []byte
		var err error
		if strings.HasPrefix(n, "/") {
			b, err = os.ReadFile(n)
		} else {
			b, err = device.Object(n)
		}
		if err != nil {
			return nil, fmt.Errorf("device probe %s: %w", n, err)
		}
		o, err := jit.LoadObject(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("device probe %s: %w", n, err)
		}
		if len(o.Programs) == 0 {
			return nil, fmt.Errorf("device probe %s: no gpu/<site>/<kernel> programs", n)
		}
		objs = append(objs, o)
	}
	every, perLaunch := cfg.sampling()
	c, err := jit.Compile(objs, jit.Options{PerThread: cfg.Mode == ModeThread, BlockSample: every, BlocksPerLaunch: perLaunch})
	if err != nil {
		return nil, fmt.Errorf("compile device probes: %w", err)
	}
	s := &Set{cfg: cfg, compiled: c, names: map[uint64]string{}}
	// the kernels excluded are left as they are (they run in a twin that
	// owns its module's variables all the same)
	s.patcher = probepatch.New(c, probepatch.Options{Select: s.Selected})
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, s.patcher.Version())
	fmt.Fprintf(h, "\x00%q\x00%q", cfg.Include, cfg.Exclude)
	s.version = binary.LittleEndian.Uint64(h.Sum(nil))
	return s, nil
}

// Version identifies the probe set and the kernel selection.
func (s *Set) Version() uint64 { return s.version }

// Layout is where the probes' maps lie in a process's shared region.
func (s *Set) Layout() gpumap.Layout { return s.compiled.Layout }

// Compiled is the compiled probe set.
func (s *Set) Compiled() *jit.Compiled { return s.compiled }

// Selected reports whether the configuration lets probes into kernel.
func (s *Set) Selected(kernel string) bool {
	in := len(s.cfg.Include) == 0
	for _, g := range s.cfg.Include {
		if ok, _ := path.Match(g, kernel); ok {
			in = true
			break
		}
	}
	if !in {
		return false
	}
	for _, g := range s.cfg.Exclude {
		if ok, _ := path.Match(g, kernel); ok {
			return false
		}
	}
	return true
}

// KernelName is the name of a kernel this set patched, by its id.
func (s *Set) KernelName(id uint64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.names[id]
	return n, ok
}

// Patch instruments the module's kernels the configuration selects.
// devrt's list of kernel names decides early when none is selected
// (UNCHANGED without parsing); otherwise devrt/jit/probepatch patches the
// module, instrumenting the selected kernels only.
func (s *Set) Patch(ctx context.Context, m *devrtinject.Module) (devrtinject.Result, error) {
	if len(m.Kernels) > 0 && !slices.ContainsFunc(m.Kernels, s.Selected) {
		return devrtinject.Result{Status: devrtinject.StatusUnchanged, Reason: "no kernel selected by include/exclude"}, nil
	}
	res, err := s.patcher.Patch(ctx, m)
	if err == nil && res.Status == devrtinject.StatusUnchanged && res.Reason == probepatch.ReasonNoneSelected {
		res.Reason = "no kernel selected by include/exclude"
	}
	if err != nil || res.Status != devrtinject.StatusPatched {
		return res, err
	}
	// The patcher instrumented the selected kernels only (Select), which
	// the probes' data names; the answer names those, or every kernel of a
	// module whose twin owns its variables (the excluded ones run there
	// as they were).
	s.mu.Lock()
	for _, k := range res.Kernels {
		if !s.Selected(k) {
			continue
		}
		if len(s.names) >= MaxKernelNames {
			clear(s.names)
		}
		s.names[ptx.KernelID(k)] = k
	}
	s.mu.Unlock()
	return res, nil
}
