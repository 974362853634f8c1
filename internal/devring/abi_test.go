package devring

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/bpf"
)

// TestLayoutMatchesBTF checks every offset this package uses against the
// layout clang gave gpuext_abi.h in bpf/abi.bpf.c's BTF.
func TestLayoutMatchesBTF(t *testing.T) {
	spec, err := bpf.LoadAbi()
	require.NoError(t, err)
	members := func(name string) (map[string]uint32, uint32) {
		var st *btf.Struct
		require.NoError(t, spec.Types.TypeByName(name, &st))
		got := map[string]uint32{}
		for _, m := range st.Members {
			if !strings.HasPrefix(m.Name, "_") {
				got[m.Name] = m.Offset.Bytes()
			}
		}
		return got, st.Size
	}
	for _, tt := range []struct {
		name string
		size uint32
		want map[string]uint32
	}{
		{"gpuext_ring_hdr", hdrSize, map[string]uint32{
			"magic": hdrMagic, "abi_version": hdrABIVersion, "slot_size": hdrSlotSize, "capacity": hdrCapacity,
			"pid": hdrPID, "start_time": hdrStartTime, "created_ns": hdrCreated, "ctl_offset": hdrCtlOffset,
			"data_offset": hdrDataOffset, "state": hdrState, "disabled_reason": hdrDisabledReason,
			"version": hdrVersion, "pidns_ino": hdrPIDNS, "head": hdrHead, "tail": hdrTail, "drops": hdrDrops,
			"records": hdrRecords, "timed": hdrTimed}},
		{"gpuext_slot", SlotSize, map[string]uint32{"seq": slotSeq, "len": slotLen, "nslots": slotNSlots, "data": slotData}},
		{"gpuext_ctl", ctlSize, map[string]uint32{
			"magic": ctlMagic, "generation": ctlGeneration, "classes": ctlClasses, "sample_every": ctlSampleEvery,
			"consumer_pid": ctlConsumerPID, "heartbeat_ns": ctlHeartbeat, "sample_gap_us": ctlSampleGap,
			"actions": ctlActions}},
		{"gpuext_ctl_action", ctlActionSize, map[string]uint32{"kind": 0, "flags": 4, "args": 8}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, size := members(tt.name)
			require.Equal(t, tt.size, size)
			require.Equal(t, tt.want, got)
		})
	}
	require.LessOrEqual(t, hdrSize, PageSize)
	require.Equal(t, ctlActions+ctlActionCount*ctlActionSize, ctlSize)

	var drops *btf.Enum
	require.NoError(t, spec.Types.TypeByName("gpuext_ring_drop", &drops))
	got := map[string]uint64{}
	for _, v := range drops.Values {
		got[v.Name] = v.Value
	}
	require.Equal(t, map[string]uint64{"GPUEXT_RDROP_FULL": DropFull, "GPUEXT_RDROP_DISABLED": DropDisabled,
		"GPUEXT_RDROP_TIMING": DropTiming, "GPUEXT_RDROP_MAX": NumDrops}, got)
}

// TestConstantsMatchHeader checks the #define constants, which BTF does not
// keep, against the text of gpuext_abi.h.
func TestConstantsMatchHeader(t *testing.T) {
	data, err := os.ReadFile("../../bpf/include/gpuext_abi.h")
	require.NoError(t, err)
	defines := map[string]uint64{}
	re := regexp.MustCompile(`(?m)^#define (GPUEXT_[A-Z0-9_]+) +\(?(0x[0-9a-fA-F]+|[0-9]+)U?L{0,2}( << ([0-9]+))?\)?`)
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		v, err := strconv.ParseUint(m[2], 0, 64)
		require.NoError(t, err, m[0])
		if m[4] != "" {
			shift, _ := strconv.Atoi(m[4])
			v <<= shift
		}
		defines[m[1]] = v
	}
	for name, want := range map[string]uint64{
		"GPUEXT_RING_MAGIC": Magic, "GPUEXT_CTL_MAGIC": CtlMagic, "GPUEXT_RING_PAGE": PageSize,
		"GPUEXT_SLOT_SIZE": SlotSize, "GPUEXT_SLOT_HDR": SlotHdr, "GPUEXT_RING_MIN_SLOTS": MinSlots,
		"GPUEXT_RING_MAX_SLOTS": MaxSlots, "GPUEXT_RING_ACTIVE": StateActive, "GPUEXT_RING_DISABLED": StateDisabled,
		"GPUEXT_RING_CLOSED": StateClosed, "GPUEXT_CLASS_LAUNCH": ClassLaunch, "GPUEXT_CLASS_MEMORY": ClassMemory,
		"GPUEXT_CLASS_COPY": ClassCopy, "GPUEXT_CLASS_SYNC": ClassSync, "GPUEXT_CLASS_MODULE": ClassModule,
		"GPUEXT_CLASS_EXEC": ClassExec, "GPUEXT_CLASS_ALL": ClassAll, "GPUEXT_ABI_VERSION": ABIVersion,
		"GPUEXT_CLASS_NESTED": ClassNested, "GPUEXT_CLASS_MASK": ClassMask,
		"GPUEXT_CTL_ACTIONS": ctlActionCount, "GPUEXT_CTL_MAX_GAP_US": MaxSampleGapUS,
	} {
		got, ok := defines[name]
		require.True(t, ok, "%s not found in gpuext_abi.h", name)
		require.Equal(t, want, got, name)
	}
}
