package uvmtools

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNewProcessorTable(t *testing.T) {
	gpu := UUID{0x94, 0x8a, 0xd2, 0x4a, 0xc6, 0x2e, 0x62, 0xf7, 0xd2, 0xbd, 0xad, 0x21, 0x81, 0x9f, 0x9f, 0x3d}
	other := UUID{1}
	tab := NewProcessorTable(V2,
		ProcessorInfo{Index: CPU, UUID: CPUUUID, Parent: CPUUUID},
		ProcessorInfo{Index: 1, UUID: other, Parent: other},
		ProcessorInfo{Index: 1, UUID: gpu, Parent: gpu}, // replaces the one before
		ProcessorInfo{Index: 9, UUID: gpu, Parent: gpu},
		ProcessorInfo{Index: 300, UUID: other, Parent: other}, // beyond V2: ignored
	)
	assert.Equal(t, V2, tab.Version)
	assert.Equal(t, 3, tab.Len())
	assert.Equal(t, "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d", tab.HWID(1))
	assert.Equal(t, "GPU-948ad24a-c62e-62f7-d2bd-ad21819f9f3d", tab.HWID(9))
	assert.Equal(t, "", tab.HWID(CPU))
	_, ok := tab.Lookup(300)
	assert.False(t, ok)
	assert.Len(t, tab.GPUs(), 2)
}
