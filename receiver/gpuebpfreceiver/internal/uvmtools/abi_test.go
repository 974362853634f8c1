package uvmtools

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expected values below are worked out from the C declarations of
// open-gpu-kernel-modules 580.142 with the x86-64 System V rules: each field
// at the next multiple of its alignment (NvU8 1, NvU16 2, NvU32/NvS32 4,
// NvU64 8, NvProcessorUuid = NvU8[16] 1), the struct size rounded up to its
// largest alignment. Every header struct is padded by hand, so only
// UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS has implicit (tail) padding.

func TestLittleEndianHost(t *testing.T) {
	// The overlay decoding reads native-endian values the driver wrote;
	// Decode's table tests build little-endian bytes.
	var x uint16 = 1
	require.Equal(t, byte(1), *(*byte)(unsafe.Pointer(&x)), "uvmtools assumes a little-endian host")
	require.Equal(t, uint16(1), binary.NativeEndian.Uint16([]byte{1, 0}))
}

func TestIoctlNumbers(t *testing.T) {
	// uvm_ioctl.h: #define UVM_IOCTL_BASE(i) i (non-Windows), so the request
	// is the bare number.
	for name, c := range map[string]struct{ got, want uintptr }{
		"UVM_TOOLS_INIT_EVENT_TRACKER":          {ioctlToolsInitEventTracker, 56},
		"UVM_TOOLS_SET_NOTIFICATION_THRESHOLD":  {ioctlToolsSetNotificationThreshold, 57},
		"UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS":   {ioctlToolsEventQueueEnableEvents, 58},
		"UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS":  {ioctlToolsEventQueueDisableEvents, 59},
		"UVM_TOOLS_ENABLE_COUNTERS":             {ioctlToolsEnableCounters, 60},
		"UVM_TOOLS_DISABLE_COUNTERS":            {ioctlToolsDisableCounters, 61},
		"UVM_TOOLS_GET_PROCESSOR_UUID_TABLE":    {ioctlToolsGetProcessorUUIDTable, 64},
		"UVM_TOOLS_FLUSH_EVENTS":                {ioctlToolsFlushEvents, 67},
		"UVM_TOOLS_INIT_EVENT_TRACKER_V2":       {ioctlToolsInitEventTrackerV2, 76},
		"UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2": {ioctlToolsGetProcessorUUIDTableV2, 77},
	} {
		assert.Equal(t, c.want, c.got, name)
	}
}

func TestLimits(t *testing.T) {
	// UVM_MAX_PROCESSORS_V1 = NV_MAX_DEVICES(32) + 1
	assert.Equal(t, 33, maxProcessorsV1)
	// UVM_MAX_PROCESSORS = NV_MAX_DEVICES(32) * UVM_PARENT_ID_MAX_SUB_PROCESSORS(8) + 1
	assert.Equal(t, 257, maxProcessorsV2)
	// UVM_PROCESSOR_MASK_SIZE = (257 + 63) / 64
	assert.Equal(t, 5, processorMaskWords)
	// UvmEventNumTypesAll = UvmEventTestTypesLast (62 + 1) + 1
	assert.Equal(t, 64, numEventTypesAll)
	// UvmEventNumTypes: the last regular type is UvmEventTypeEviction = 14
	assert.Equal(t, EventType(15), numEventTypes)
	// UVM_TOTAL_COUNTERS: UvmCounterNameGpuPageFaultCount = 9, + 1
	assert.Equal(t, 10, numCounters)
	assert.Equal(t, 33*16, uuidTableSizeV1)
	assert.Equal(t, 257*16, uuidTableSizeV2)
	// UVM_COUNTER_NAME_FLAG_*: 0x1 0x2 0x4 ... 0x80 0x100 0x200
	assert.Equal(t, uint64(0x1|0x2|0x4|0x80|0x100|0x200), uint64(allCountersMask))
	// UVM_EVENT_ENABLE_*: bits 1 (CPU fault) to 14 (eviction)
	assert.Equal(t, EventMask(0x7ffe), AllEvents)
}

type layout struct {
	name   string
	size   uintptr
	want   uintptr
	fields []offset
}

type offset struct {
	name      string
	got, want uintptr
}

func checkLayouts(t *testing.T, ls []layout) {
	t.Helper()
	for _, l := range ls {
		assert.Equal(t, l.want, l.size, "sizeof(%s)", l.name)
		for _, f := range l.fields {
			assert.Equal(t, f.want, f.got, "offsetof(%s, %s)", l.name, f.name)
		}
	}
}

func TestParamLayouts(t *testing.T) {
	var ie initEventTrackerParams
	var mp maskParams
	var ut uuidTableParams
	var sn setNotificationThresholdParams
	var cd controlData
	checkLayouts(t, []layout{
		// queueBuffer 0, queueBufferSize 8, controlBuffer 16 (NvU64),
		// processor 24 (16 bytes), allProcessors 40, uvmFd 44, rmStatus 48
		// (NvU32): 52 bytes, rounded up to 8 = 56.
		{"UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS", unsafe.Sizeof(ie), 56, []offset{
			{"queueBuffer", unsafe.Offsetof(ie.QueueBuffer), 0},
			{"queueBufferSize", unsafe.Offsetof(ie.QueueBufferSize), 8},
			{"controlBuffer", unsafe.Offsetof(ie.ControlBuffer), 16},
			{"processor", unsafe.Offsetof(ie.Processor), 24},
			{"allProcessors", unsafe.Offsetof(ie.AllProcessors), 40},
			{"uvmFd", unsafe.Offsetof(ie.UVMFd), 44},
			{"rmStatus", unsafe.Offsetof(ie.RMStatus), 48},
		}},
		// 56 + 8 spare bytes for pre-560 drivers' requestedVersion/grantedVersion.
		{"initEventTrackerArg", unsafe.Sizeof(initEventTrackerArg{}), 64, nil},
		// eventTypeFlags NvU64 0, rmStatus 8: 12, rounded to 16.
		{"UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS_PARAMS", unsafe.Sizeof(mp), 16, []offset{
			{"eventTypeFlags", unsafe.Offsetof(mp.Flags), 0},
			{"rmStatus", unsafe.Offsetof(mp.RMStatus), 8},
		}},
		// tablePtr NvU64 0, rmStatus 8: 12, rounded to 16.
		{"UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_PARAMS", unsafe.Sizeof(ut), 16, []offset{
			{"tablePtr", unsafe.Offsetof(ut.TablePtr), 0},
			{"rmStatus", unsafe.Offsetof(ut.RMStatus), 8},
		}},
		// notificationThreshold 0, rmStatus 4 (NvU32 each): 8.
		{"UVM_TOOLS_SET_NOTIFICATION_THRESHOLD_PARAMS", unsafe.Sizeof(sn), 8, []offset{
			{"notificationThreshold", unsafe.Offsetof(sn.NotificationThreshold), 0},
			{"rmStatus", unsafe.Offsetof(sn.RMStatus), 4},
		}},
		{"UVM_TOOLS_FLUSH_EVENTS_PARAMS", unsafe.Sizeof(flushEventsParams{}), 4, nil},
		// get_ahead 0, get_behind 4, put_ahead 8, put_behind 12 (NvU32),
		// dropped NvU64[64] at 16: 16 + 512 = 528.
		{"UvmToolsEventControlData", unsafe.Sizeof(cd), 528, []offset{
			{"get_ahead", unsafe.Offsetof(cd.GetAhead), 0},
			{"get_behind", unsafe.Offsetof(cd.GetBehind), 4},
			{"put_ahead", unsafe.Offsetof(cd.PutAhead), 8},
			{"put_behind", unsafe.Offsetof(cd.PutBehind), 12},
			{"dropped", unsafe.Offsetof(cd.Dropped), 16},
		}},
	})
	// The counters buffer is NvU64[UVM_TOTAL_COUNTERS] = 80 bytes.
	assert.Equal(t, 80, counterBufferSize)
}

func TestEntryLayouts(t *testing.T) {
	var cf cpuFaultInfo
	var m1 migrationInfoV1
	var m2 migrationInfoV2
	var g1 gpuFaultInfoV1
	var g2 gpuFaultInfoV2
	var r1 gpuFaultReplayInfoV1
	var r2 gpuFaultReplayInfoV2
	var f1 fatalFaultInfoV1
	var f2 fatalFaultInfoV2
	var rm1 regionMaskInfoV1
	var rm2 regionMaskInfoV2
	var ri1 readDuplicateInvalidateInfoV1
	var ri2 readDuplicateInvalidateInfoV2
	var ps1 pageSizeChangeInfoV1
	var ps2 pageSizeChangeInfoV2
	var th1 throttlingInfoV1
	var th2 throttlingInfoV2
	var mr1 mapRemoteInfoV1
	var mr2 mapRemoteInfoV2
	var ev1 evictionInfoV1
	var ev2 evictionInfoV2
	checkLayouts(t, []layout{
		// u8 eventType 0, u8 accessType 1, u16 pad 2, u32 cpuId 4, u64
		// address 8, u64 timeStamp 16, u32 pid 24, u32 threadId 28, u64 pc
		// 32: 40.
		{"UvmEventCpuFaultInfo", unsafe.Sizeof(cf), 40, []offset{
			{"accessType", unsafe.Offsetof(cf.AccessType), 1},
			{"cpuId", unsafe.Offsetof(cf.CPUID), 4},
			{"address", unsafe.Offsetof(cf.Address), 8},
			{"timeStamp", unsafe.Offsetof(cf.TimeStamp), 16},
			{"pid", unsafe.Offsetof(cf.PID), 24},
			{"threadId", unsafe.Offsetof(cf.ThreadID), 28},
			{"pc", unsafe.Offsetof(cf.PC), 32},
		}},
		// 4 x u8 (type, cause, src, dst) 0-3, u32 pad 4, then 7 x u64 from
		// 8: 8 + 56 = 64.
		{"UvmEventMigrationInfo", unsafe.Sizeof(m1), 64, []offset{
			{"migrationCause", unsafe.Offsetof(m1.MigrationCause), 1},
			{"srcIndex", unsafe.Offsetof(m1.SrcIndex), 2},
			{"dstIndex", unsafe.Offsetof(m1.DstIndex), 3},
			{"address", unsafe.Offsetof(m1.Address), 8},
			{"migratedBytes", unsafe.Offsetof(m1.MigratedBytes), 16},
			{"beginTimeStamp", unsafe.Offsetof(m1.BeginTimeStamp), 24},
			{"endTimeStamp", unsafe.Offsetof(m1.EndTimeStamp), 32},
			{"rangeGroupId", unsafe.Offsetof(m1.RangeGroupID), 40},
			{"beginTimeStampGpu", unsafe.Offsetof(m1.BeginTimeStampGPU), 48},
			{"endTimeStampGpu", unsafe.Offsetof(m1.EndTimeStampGPU), 56},
		}},
		// u8 type 0, u8 cause 1, u16 pad 2, u16 src 4, u16 dst 6, s32
		// srcNid 8, s32 dstNid 12, then 7 x u64 from 16: 16 + 56 = 72.
		{"UvmEventMigrationInfo_V2", unsafe.Sizeof(m2), 72, []offset{
			{"migrationCause", unsafe.Offsetof(m2.MigrationCause), 1},
			{"srcIndex", unsafe.Offsetof(m2.SrcIndex), 4},
			{"dstIndex", unsafe.Offsetof(m2.DstIndex), 6},
			{"srcNid", unsafe.Offsetof(m2.SrcNid), 8},
			{"dstNid", unsafe.Offsetof(m2.DstNid), 12},
			{"address", unsafe.Offsetof(m2.Address), 16},
			{"migratedBytes", unsafe.Offsetof(m2.MigratedBytes), 24},
			{"beginTimeStamp", unsafe.Offsetof(m2.BeginTimeStamp), 32},
			{"endTimeStamp", unsafe.Offsetof(m2.EndTimeStamp), 40},
			{"rangeGroupId", unsafe.Offsetof(m2.RangeGroupID), 48},
			{"beginTimeStampGpu", unsafe.Offsetof(m2.BeginTimeStampGPU), 56},
			{"endTimeStampGpu", unsafe.Offsetof(m2.EndTimeStampGPU), 64},
		}},
		// 4 x u8 (type, faultType, accessType, gpuIndex), u16 gpcId 4, u16
		// clientId 6, 3 x u64 8/16/24, u32 batchId 32, u8 clientType 36, u8
		// + u16 pad: 40.
		{"UvmEventGpuFaultInfo", unsafe.Sizeof(g1), 40, []offset{
			{"faultType", unsafe.Offsetof(g1.FaultType), 1},
			{"accessType", unsafe.Offsetof(g1.AccessType), 2},
			{"gpuIndex", unsafe.Offsetof(g1.GPUIndex), 3},
			{"gpcId", unsafe.Offsetof(g1.GPCID), 4},
			{"clientId", unsafe.Offsetof(g1.ClientID), 6},
			{"address", unsafe.Offsetof(g1.Address), 8},
			{"timeStamp", unsafe.Offsetof(g1.TimeStamp), 16},
			{"timeStampGpu", unsafe.Offsetof(g1.TimeStampGPU), 24},
			{"batchId", unsafe.Offsetof(g1.BatchID), 32},
			{"clientType", unsafe.Offsetof(g1.ClientType), 36},
		}},
		// u8 type, u8 faultType, u16 gpuIndex 2, u16 gpcId 4, u16 clientId
		// 6, 3 x u64, u32 batchId 32, u8 clientType 36, u8 accessType 37,
		// u16 pad: 40.
		{"UvmEventGpuFaultInfo_V2", unsafe.Sizeof(g2), 40, []offset{
			{"faultType", unsafe.Offsetof(g2.FaultType), 1},
			{"gpuIndex", unsafe.Offsetof(g2.GPUIndex), 2},
			{"gpcId", unsafe.Offsetof(g2.GPCID), 4},
			{"clientId", unsafe.Offsetof(g2.ClientID), 6},
			{"address", unsafe.Offsetof(g2.Address), 8},
			{"timeStamp", unsafe.Offsetof(g2.TimeStamp), 16},
			{"timeStampGpu", unsafe.Offsetof(g2.TimeStampGPU), 24},
			{"batchId", unsafe.Offsetof(g2.BatchID), 32},
			{"clientType", unsafe.Offsetof(g2.ClientType), 36},
			{"accessType", unsafe.Offsetof(g2.AccessType), 37},
		}},
		// 4 x u8, u32 batchId 4, u64 8, u64 16: 24.
		{"UvmEventGpuFaultReplayInfo", unsafe.Sizeof(r1), 24, []offset{
			{"gpuIndex", unsafe.Offsetof(r1.GPUIndex), 1},
			{"clientType", unsafe.Offsetof(r1.ClientType), 2},
			{"batchId", unsafe.Offsetof(r1.BatchID), 4},
			{"timeStamp", unsafe.Offsetof(r1.TimeStamp), 8},
			{"timeStampGpu", unsafe.Offsetof(r1.TimeStampGPU), 16},
		}},
		// u8 type, u8 clientType, u16 gpuIndex 2, u32 batchId 4, 2 x u64: 24.
		{"UvmEventGpuFaultReplayInfo_V2", unsafe.Sizeof(r2), 24, []offset{
			{"clientType", unsafe.Offsetof(r2.ClientType), 1},
			{"gpuIndex", unsafe.Offsetof(r2.GPUIndex), 2},
			{"batchId", unsafe.Offsetof(r2.BatchID), 4},
			{"timeStamp", unsafe.Offsetof(r2.TimeStamp), 8},
			{"timeStampGpu", unsafe.Offsetof(r2.TimeStampGPU), 16},
		}},
		// 6 x u8 (type, faultType, accessType, processorIndex, reason, pad),
		// u16 pad 6, u64 address 8, u64 timeStamp 16: 24.
		{"UvmEventFatalFaultInfo", unsafe.Sizeof(f1), 24, []offset{
			{"faultType", unsafe.Offsetof(f1.FaultType), 1},
			{"accessType", unsafe.Offsetof(f1.AccessType), 2},
			{"processorIndex", unsafe.Offsetof(f1.ProcessorIndex), 3},
			{"reason", unsafe.Offsetof(f1.Reason), 4},
			{"address", unsafe.Offsetof(f1.Address), 8},
			{"timeStamp", unsafe.Offsetof(f1.TimeStamp), 16},
		}},
		// 4 x u8 (type, faultType, accessType, reason), u16 processorIndex
		// 4, u16 pad 6, 2 x u64: 24.
		{"UvmEventFatalFaultInfo_V2", unsafe.Sizeof(f2), 24, []offset{
			{"faultType", unsafe.Offsetof(f2.FaultType), 1},
			{"accessType", unsafe.Offsetof(f2.AccessType), 2},
			{"reason", unsafe.Offsetof(f2.Reason), 3},
			{"processorIndex", unsafe.Offsetof(f2.ProcessorIndex), 4},
			{"address", unsafe.Offsetof(f2.Address), 8},
			{"timeStamp", unsafe.Offsetof(f2.TimeStamp), 16},
		}},
		// u8 + u8 + u16 + u32 padding to 8, then processors, address, size,
		// timeStamp (u64): 8 + 32 = 40.
		{"UvmEventReadDuplicateInfo / UvmEventThrashingDetectedInfo", unsafe.Sizeof(rm1), 40, []offset{
			{"processors", unsafe.Offsetof(rm1.Processors), 8},
			{"address", unsafe.Offsetof(rm1.Address), 16},
			{"size", unsafe.Offsetof(rm1.Size), 24},
			{"timeStamp", unsafe.Offsetof(rm1.TimeStamp), 32},
		}},
		// padding to 8, address 8, size 16, timeStamp 24, processors
		// NvU64[5] at 32: 32 + 40 = 72.
		{"UvmEventReadDuplicateInfo_V2 / UvmEventThrashingDetectedInfo_V2", unsafe.Sizeof(rm2), 72, []offset{
			{"address", unsafe.Offsetof(rm2.Address), 8},
			{"size", unsafe.Offsetof(rm2.Size), 16},
			{"timeStamp", unsafe.Offsetof(rm2.TimeStamp), 24},
			{"processors", unsafe.Offsetof(rm2.Processors), 32},
		}},
		// u8 type, u8 residentIndex 1, u16 + u32 pad, 3 x u64 from 8: 32.
		{"UvmEventReadDuplicateInvalidateInfo", unsafe.Sizeof(ri1), 32, []offset{
			{"residentIndex", unsafe.Offsetof(ri1.ResidentIndex), 1},
			{"address", unsafe.Offsetof(ri1.Address), 8},
			{"size", unsafe.Offsetof(ri1.Size), 16},
			{"timeStamp", unsafe.Offsetof(ri1.TimeStamp), 24},
		}},
		// u8 type, u8 pad, u16 residentIndex 2, u32 pad, 3 x u64: 32.
		{"UvmEventReadDuplicateInvalidateInfo_V2", unsafe.Sizeof(ri2), 32, []offset{
			{"residentIndex", unsafe.Offsetof(ri2.ResidentIndex), 2},
			{"address", unsafe.Offsetof(ri2.Address), 8},
			{"size", unsafe.Offsetof(ri2.Size), 16},
			{"timeStamp", unsafe.Offsetof(ri2.TimeStamp), 24},
		}},
		// u8 type, u8 processorIndex 1, u16 pad, u32 size 4, 2 x u64: 24.
		{"UvmEventPageSizeChangeInfo", unsafe.Sizeof(ps1), 24, []offset{
			{"processorIndex", unsafe.Offsetof(ps1.ProcessorIndex), 1},
			{"size", unsafe.Offsetof(ps1.Size), 4},
			{"address", unsafe.Offsetof(ps1.Address), 8},
			{"timeStamp", unsafe.Offsetof(ps1.TimeStamp), 16},
		}},
		// u8 type, u8 pad, u16 processorIndex 2, u32 size 4, 2 x u64: 24.
		{"UvmEventPageSizeChangeInfo_V2", unsafe.Sizeof(ps2), 24, []offset{
			{"processorIndex", unsafe.Offsetof(ps2.ProcessorIndex), 2},
			{"size", unsafe.Offsetof(ps2.Size), 4},
			{"address", unsafe.Offsetof(ps2.Address), 8},
			{"timeStamp", unsafe.Offsetof(ps2.TimeStamp), 16},
		}},
		// u8 type, u8 processorIndex 1, u16 + u32 pad, 2 x u64: 24.
		{"UvmEventThrottling{Start,End}Info", unsafe.Sizeof(th1), 24, []offset{
			{"processorIndex", unsafe.Offsetof(th1.ProcessorIndex), 1},
			{"address", unsafe.Offsetof(th1.Address), 8},
			{"timeStamp", unsafe.Offsetof(th1.TimeStamp), 16},
		}},
		// u8 type, u8 pad, u16 processorIndex 2, u32 pad, 2 x u64: 24.
		{"UvmEventThrottling{Start,End}Info_V2", unsafe.Sizeof(th2), 24, []offset{
			{"processorIndex", unsafe.Offsetof(th2.ProcessorIndex), 2},
			{"address", unsafe.Offsetof(th2.Address), 8},
			{"timeStamp", unsafe.Offsetof(th2.TimeStamp), 16},
		}},
		// 4 x u8 (type, src, dst, cause), u32 pad, 4 x u64 from 8: 40.
		{"UvmEventMapRemoteInfo", unsafe.Sizeof(mr1), 40, []offset{
			{"srcIndex", unsafe.Offsetof(mr1.SrcIndex), 1},
			{"dstIndex", unsafe.Offsetof(mr1.DstIndex), 2},
			{"mapRemoteCause", unsafe.Offsetof(mr1.MapRemoteCause), 3},
			{"address", unsafe.Offsetof(mr1.Address), 8},
			{"size", unsafe.Offsetof(mr1.Size), 16},
			{"timeStamp", unsafe.Offsetof(mr1.TimeStamp), 24},
			{"timeStampGpu", unsafe.Offsetof(mr1.TimeStampGPU), 32},
		}},
		// u8 type, u8 cause 1, u16 pad, u16 src 4, u16 dst 6, 4 x u64: 40.
		{"UvmEventMapRemoteInfo_V2", unsafe.Sizeof(mr2), 40, []offset{
			{"mapRemoteCause", unsafe.Offsetof(mr2.MapRemoteCause), 1},
			{"srcIndex", unsafe.Offsetof(mr2.SrcIndex), 4},
			{"dstIndex", unsafe.Offsetof(mr2.DstIndex), 6},
			{"address", unsafe.Offsetof(mr2.Address), 8},
			{"size", unsafe.Offsetof(mr2.Size), 16},
			{"timeStamp", unsafe.Offsetof(mr2.TimeStamp), 24},
			{"timeStampGpu", unsafe.Offsetof(mr2.TimeStampGPU), 32},
		}},
		// 4 x u8 (type, src, dst, pad), u32 pad, 4 x u64 from 8: 40.
		{"UvmEventEvictionInfo", unsafe.Sizeof(ev1), 40, []offset{
			{"srcIndex", unsafe.Offsetof(ev1.SrcIndex), 1},
			{"dstIndex", unsafe.Offsetof(ev1.DstIndex), 2},
			{"addressOut", unsafe.Offsetof(ev1.AddressOut), 8},
			{"addressIn", unsafe.Offsetof(ev1.AddressIn), 16},
			{"size", unsafe.Offsetof(ev1.Size), 24},
			{"timeStamp", unsafe.Offsetof(ev1.TimeStamp), 32},
		}},
		// u8 type, u8 + u16 pad, u16 src 4, u16 dst 6, 4 x u64: 40.
		{"UvmEventEvictionInfo_V2", unsafe.Sizeof(ev2), 40, []offset{
			{"srcIndex", unsafe.Offsetof(ev2.SrcIndex), 4},
			{"dstIndex", unsafe.Offsetof(ev2.DstIndex), 6},
			{"addressOut", unsafe.Offsetof(ev2.AddressOut), 8},
			{"addressIn", unsafe.Offsetof(ev2.AddressIn), 16},
			{"size", unsafe.Offsetof(ev2.Size), 24},
			{"timeStamp", unsafe.Offsetof(ev2.TimeStamp), 32},
		}},
		// The unions: the largest member, 8-byte aligned. V1: the migration
		// info (64; UvmEventTestAccessCounterInfo is 40). V2: the migration
		// and processor-mask infos (72; the test access counter is 48).
		{"UvmEventEntry", unsafe.Sizeof(entryV1{}), 64, nil},
		{"UvmEventEntry_V2", unsafe.Sizeof(entryV2{}), 72, nil},
	})
	assert.Equal(t, uintptr(8), unsafe.Alignof(entryV1{}))
	assert.Equal(t, uintptr(8), unsafe.Alignof(entryV2{}))

	// Every overlaid struct fits in its entry.
	for name, sz := range map[string]uintptr{
		"cpuFault": unsafe.Sizeof(cf), "migrationV1": unsafe.Sizeof(m1), "gpuFaultV1": unsafe.Sizeof(g1),
		"regionMaskV1": unsafe.Sizeof(rm1), "mapRemoteV1": unsafe.Sizeof(mr1), "evictionV1": unsafe.Sizeof(ev1),
	} {
		assert.LessOrEqual(t, sz, uintptr(EntrySizeV1), name)
	}
	for name, sz := range map[string]uintptr{
		"migrationV2": unsafe.Sizeof(m2), "regionMaskV2": unsafe.Sizeof(rm2), "gpuFaultV2": unsafe.Sizeof(g2),
	} {
		assert.LessOrEqual(t, sz, uintptr(EntrySizeV2), name)
	}
}

func TestNVStatusError(t *testing.T) {
	assert.Equal(t, "NV_ERR_ILLEGAL_ACTION", nvErrIllegalAction.Error())
	assert.Equal(t, "NV_STATUS 0x00001234", nvStatus(0x1234).Error())
}
