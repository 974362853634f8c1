package proberegion

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/devrt/jit/gpumap"
)

// TestRunOfClaimedBlocks: block_sched claims a block's record when the
// block starts and writes it when the block ends. Four blocks that start
// together and end 1.2 and 1.3 s later, read every 50 ms, make one run of
// four blocks: reads while they run (the ring's head moved at the claims,
// no record whole) neither lose them nor close the launch, though more
// than QuietClose passes between the claims and the records.
func TestRunOfClaimedBlocks(t *testing.T) {
	s := newSet(t, "block_sched")
	region := make([]byte, s.Layout().Size)
	r, err := FromBytes(region, s.Layout())
	require.NoError(t, err)
	var ring gpumap.Map
	for _, m := range s.Layout().Maps {
		if m.Name == MapBlockRing {
			ring = m
		}
	}
	g := gpumap.Region(region)
	const kid, grid = 77, 9
	idx := make([]uint64, 4)
	for b := range idx {
		idx[b], err = ring.RingClaimSM(g, uint64(b))
		require.NoError(t, err)
	}
	end := func(b int, at time.Duration) {
		rec := make([]byte, BlockSize)
		binary.LittleEndian.PutUint64(rec[0:], kid)
		binary.LittleEndian.PutUint64(rec[8:], uint64(b))
		binary.LittleEndian.PutUint64(rec[16:], base)
		binary.LittleEndian.PutUint64(rec[24:], base+uint64(at))
		binary.LittleEndian.PutUint16(rec[32:], uint16(b))
		binary.LittleEndian.PutUint16(rec[34:], 128)
		binary.LittleEndian.PutUint32(rec[36:], 1)
		binary.LittleEndian.PutUint64(rec[40:], grid)
		res, err := ring.RingOutputAt(g, uint64(b), idx[b], rec)
		require.NoError(t, err)
		require.Zero(t, res)
	}
	tr := NewTracker()
	t0 := time.Unix(1000, 0)
	var runs []Run
	var got int
	for at := time.Duration(0); at <= 3*time.Second; at += 50 * time.Millisecond {
		switch at {
		case 1200 * time.Millisecond:
			end(0, at)
			end(1, at)
		case 1300 * time.Millisecond:
			end(2, at)
			end(3, at)
		}
		snap, err := r.Read()
		require.NoError(t, err)
		got += len(snap.Blocks)
		runs = append(runs, tr.Blocks(snap.Blocks, snap.BlockDone, t0.Add(at))...)
		require.Zero(t, snap.Drops[MapBlockRing], "at %v", at)
	}
	require.Equal(t, 4, got)
	require.Len(t, runs, 1)
	require.Len(t, runs[0].Blocks, 4)
	require.Equal(t, uint64(grid), runs[0].GridID)
	require.Equal(t, uint64(1300*time.Millisecond), runs[0].Duration())
}
