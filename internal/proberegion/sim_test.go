package proberegion

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit"
	"github.com/otelcol-gpu/otelcol-gpu/internal/proberegion/probesim"
	"github.com/otelcol-gpu/otelcol-gpu/internal/probeset"
)

type simBlock = probesim.Block

const simThreads = 64 // 2 warps per block

func warpTimes(b simBlock, w uint32) (uint64, uint64) { return probesim.WarpTimes(b, simThreads, w) }

func simulate(t testing.TB, c *jit.Compiled, region []byte, kernel string, grid uint32, nsm uint32, blocks []simBlock) {
	require.NoError(t, probesim.Run(c, region, probesim.Launch{Kernel: kernel, Grid: grid, Threads: simThreads, NSM: nsm, Blocks: blocks}))
}

// base is a %globaltimer value at the start of an occupancy bucket.
const base = uint64(1_700_000_000_000_000_000) >> OccShift << OccShift

func imbalancedBlocks(t0 uint64) []simBlock { return probesim.Imbalanced(t0, 16, 4) }

func newSet(t testing.TB, probes ...string) *probeset.Set {
	s, err := probeset.New(probeset.Config{Probes: probes})
	require.NoError(t, err)
	return s
}
