package uvmtools

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	gpuA = UUID{0x8c, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70, 0x81, 0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7, 0xf8}
	gpuB = UUID{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10}
	giB1 = UUID{0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01}
)

func table(n int, entries map[int]UUID) []byte {
	b := make([]byte, n*uuidLen)
	for i, u := range entries {
		copy(b[i*uuidLen:], u[:])
	}
	return b
}

func TestUUIDString(t *testing.T) {
	assert.Equal(t, "8c1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8", gpuA.String())
	assert.Equal(t, "a65e0f4e-d7d4-7ba2-5047-412c142a7773", CPUUUID.String())
	assert.True(t, UUID{}.IsZero())
}

func TestProcessorTableV1(t *testing.T) {
	tab, err := parseUUIDTables(table(maxProcessorsV1, map[int]UUID{0: CPUUUID, 1: gpuA, 2: gpuB}), nil)
	require.NoError(t, err)
	assert.Equal(t, V1, tab.Version)
	assert.Equal(t, 3, tab.Len())
	assert.Equal(t, "GPU-8c1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8", tab.HWID(1))
	assert.Equal(t, "GPU-01020304-0506-0708-090a-0b0c0d0e0f10", tab.HWID(2))
	assert.Equal(t, "", tab.HWID(CPU))
	assert.Equal(t, "", tab.HWID(3))
	c, ok := tab.Lookup(CPU)
	require.True(t, ok)
	assert.Equal(t, CPUUUID, c.UUID)
}

func TestProcessorTableV2(t *testing.T) {
	// Parent ids 1 (gpuA) and 2 (gpuB) in V1; in V2, GPU A is id 1
	// (parent index 0, sub 0), GPU B's MIG instances ids 9 and 10 (parent
	// index 1, subs 0 and 1).
	v1 := table(maxProcessorsV1, map[int]UUID{0: CPUUUID, 1: gpuA, 2: gpuB})
	v2 := table(maxProcessorsV2, map[int]UUID{0: CPUUUID, 1: gpuA, 9: giB1, 10: gpuB})
	tab, err := parseUUIDTables(v1, v2)
	require.NoError(t, err)
	assert.Equal(t, V2, tab.Version)
	gpus := tab.GPUs()
	require.Len(t, gpus, 3)
	assert.Equal(t, ProcessorInfo{Index: 1, UUID: gpuA, Parent: gpuA}, gpus[0])
	assert.Equal(t, ProcessorInfo{Index: 9, UUID: giB1, Parent: gpuB, MIG: true}, gpus[1])
	assert.Equal(t, ProcessorInfo{Index: 10, UUID: gpuB, Parent: gpuB}, gpus[2])
	assert.Equal(t, "GPU-01020304-0506-0708-090a-0b0c0d0e0f10", tab.HWID(9), "a MIG instance maps to its GPU")

	// Without the V1 table, no parents: each UUID stands for itself.
	tab, err = parseUUIDTables(nil, v2)
	require.NoError(t, err)
	p, _ := tab.Lookup(9)
	assert.False(t, p.MIG)
	assert.Equal(t, giB1, p.Parent)
}

func TestProcessorTableBadSizes(t *testing.T) {
	_, err := parseUUIDTables(make([]byte, 10), nil)
	assert.ErrorContains(t, err, "V1 processor table is 10 bytes")
	_, err = parseUUIDTables(nil, make([]byte, 10))
	assert.ErrorContains(t, err, "V2 processor table is 10 bytes")
}
