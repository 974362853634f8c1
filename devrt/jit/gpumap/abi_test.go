package gpumap

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/btftest"
)

// TestLayoutMatchesBTF checks the offsets this package uses against the
// layout clang gave struct gpuext_gpumap_hdr and friends (gpuext_abi.h).
func TestLayoutMatchesBTF(t *testing.T) {
	spec, err := ebpf.LoadCollectionSpec("../check/progs/abi.bpf.o")
	require.NoError(t, err)
	btftest.Struct(t, spec.Types, "gpuext_gpumap_hdr", HeaderSize, map[string]uint32{
		"magic": OffMagic, "type": OffType, "key_size": OffKeySize, "value_size": OffValueSize,
		"max_entries": OffMaxEntries, "slots": OffSlots, "stride": OffStride, "flags": OffFlags,
		"data_size": OffDataSize, "head": OffHead, "drops": OffDrops, "count": OffCount, "tail": OffTail,
		"shards": OffShards, "block_sample": OffBlockSample, "blocks_per_launch": OffBlocksPerLaunch,
		"_pad": OffBlocksPerLaunch + 4, "_reserved": OffReserved,
	})
	btftest.Struct(t, spec.Types, "gpuext_gpuhash_bucket", BucketHeaderSize, map[string]uint32{"state": 0, "_pad": 4})
	btftest.Struct(t, spec.Types, "gpuext_gpuring_rec", RecHeaderSize,
		map[string]uint32{"seq": RecSeq, "len": RecLen, "check": RecCheckOff})
	var keys [5]uint32
	require.NoError(t, spec.Variables["gpuext_gpuring_keys"].Get(&keys))
	require.Equal(t, [5]uint32{RecKey(0), RecKey(1), RecKey(2), RecKey(3), RecKey(40)}, keys, "GPUEXT_GPURING_KEY")

	enum := func(name, prefix string) map[string]uint64 {
		var e *btf.Enum
		require.NoError(t, spec.Types.TypeByName(name, &e))
		m := map[string]uint64{}
		for _, v := range e.Values {
			m[strings.TrimPrefix(v.Name, prefix)] = v.Value
		}
		return m
	}
	require.Equal(t, map[string]uint64{
		"HASH": uint64(Hash), "PER_THREAD_ARRAY": uint64(PerThreadArray), "ARRAY": uint64(Array),
		"RINGBUF": uint64(Ringbuf), "PER_WARP_ARRAY": uint64(PerWarpArray), "PER_SM_ARRAY": uint64(PerSMArray),
		"PER_BLOCK_ARRAY": uint64(PerBlockArray),
	}, enum("gpuext_gpumap_type", "GPUEXT_GPUMAP_"))
	require.Equal(t, map[string]uint64{"BLOCK_MAX": MaxBlock}, enum("gpuext_gpumap_limit", "GPUEXT_GPUMAP_"))
	require.Equal(t, map[string]uint64{"EMPTY": StateEmpty, "BUSY": StateBusy, "FULL": StateFull, "DELETED": StateDeleted},
		enum("gpuext_gpuhash_state", "GPUEXT_GPUHASH_"))
}
