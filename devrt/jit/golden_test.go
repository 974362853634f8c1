package jit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf/device"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/check"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), got, "%s differs; review and run go test -update", path)
}

func loadFile(t *testing.T, path string) *jit.Object {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	o, err := jit.LoadObject(bytes.NewReader(b))
	require.NoError(t, err)
	return o
}

// TestGoldenPTX: the PTX of every test program (one per instruction class)
// and of every shipped probe, at warp level, and of some at thread level.
func TestGoldenPTX(t *testing.T) {
	classes := loadFile(t, "check/progs/classes.bpf.o")
	perThread := map[string]bool{"alu64": true, "hash_ops": true, "ring_out": true, "atomics": true}
	for _, p := range classes.Programs {
		one, err := classes.Only(p.Name)
		require.NoError(t, err)
		for _, per := range []bool{false, true} {
			if per && !perThread[p.Name] {
				continue
			}
			c, err := jit.Compile([]*jit.Object{one}, jit.Options{PerThread: per})
			require.NoError(t, err)
			golden(t, fmt.Sprintf("%s.%s.ptx", p.Name, map[bool]string{false: "warp", true: "thread"}[per]), c.PTX)
		}
	}
	// the block weight by launch: 2^s of the launch's blocks, computed
	weight, err := classes.Only("weight")
	require.NoError(t, err)
	c, err := jit.Compile([]*jit.Object{weight}, jit.Options{BlocksPerLaunch: 256})
	require.NoError(t, err)
	golden(t, "weight.launch256.warp.ptx", c.PTX)
	pb := loadFile(t, "check/progs/per_block.bpf.o")
	for _, per := range []bool{false, true} {
		c, err := jit.Compile([]*jit.Object{pb}, jit.Options{PerThread: per})
		require.NoError(t, err)
		golden(t, fmt.Sprintf("per_block.%s.ptx", map[bool]string{false: "warp", true: "thread"}[per]), c.PTX)
	}
	for _, name := range device.Names() {
		b, err := device.Object(name)
		require.NoError(t, err)
		o, err := jit.LoadObject(bytes.NewReader(b))
		require.NoError(t, err)
		c, err := jit.Compile([]*jit.Object{o}, jit.Options{})
		require.NoError(t, err)
		golden(t, "device_"+name+".warp.ptx", c.PTX)
	}
}

// TestGoldenInterpreter records what the interpreter computes for every
// GPU check case of the test programs: the first r0 values and digests of
// all of them and of the region. A change here changes what the GPU must
// produce.
func TestGoldenInterpreter(t *testing.T) {
	var b strings.Builder
	for _, c := range check.Cases() {
		if strings.HasPrefix(c.Object, "device/") {
			continue
		}
		comp, err := c.Compile()
		require.NoError(t, err)
		out, region, err := c.Expected(comp)
		require.NoError(t, err)
		raw := make([]byte, 8*len(out))
		for i, v := range out {
			binary.LittleEndian.PutUint64(raw[8*i:], v)
		}
		fmt.Fprintf(&b, "%s: out %x region %x\n", c.Name, sha256.Sum256(raw), sha256.Sum256(region))
		for i := 0; i < len(out) && i < 8; i += 2 {
			fmt.Fprintf(&b, "  thread %d: %#x\n", i/2, out[i])
		}
	}
	golden(t, "interpreter.txt", b.String())
}
