package uvmtools

// The UVM tools ABI of NVIDIA's nvidia-uvm kernel module, written from the
// MIT-licensed headers of NVIDIA/open-gpu-kernel-modules, tag 580.142
// (kernel-open/nvidia-uvm/uvm_ioctl.h, uvm_linux_ioctl.h, uvm_types.h,
// uvm_tools.c, uvm.c). These structures are byte-identical in tags 565.57.01
// through 595.45.04 (the V2 ioctls appeared in 565); 580.65.06 and 580.142 do
// not differ at all in those files. abi_test.go asserts every size and offset
// below against the arithmetic of the C layout.
//
// Each Go struct here is one C struct with its padding spelled out (C pads
// nothing implicitly in these, except where noted), so that a Go value can be
// overlaid on the bytes the driver writes. Little-endian hosts only (x86-64,
// arm64): the driver writes native-endian values.

// Ioctl request numbers. On Linux, UVM_IOCTL_BASE(i) is plain i: the
// request passed to ioctl(2) is the bare command number, with no _IOC
// direction or size bits (uvm_ioctl.h: "#define UVM_IOCTL_BASE(i) i").
const (
	// On /dev/nvidia-uvm-tools (uvm_tools.c, uvm_tools_unlocked_ioctl).
	ioctlToolsInitEventTracker         = 56 // UVM_TOOLS_INIT_EVENT_TRACKER: V1 entries (64 bytes)
	ioctlToolsSetNotificationThreshold = 57 // UVM_TOOLS_SET_NOTIFICATION_THRESHOLD
	ioctlToolsEventQueueEnableEvents   = 58 // UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS
	ioctlToolsEventQueueDisableEvents  = 59 // UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS
	ioctlToolsEnableCounters           = 60 // UVM_TOOLS_ENABLE_COUNTERS
	ioctlToolsDisableCounters          = 61 // UVM_TOOLS_DISABLE_COUNTERS
	ioctlToolsInitEventTrackerV2       = 76 // UVM_TOOLS_INIT_EVENT_TRACKER_V2: V2 entries (72 bytes)

	// On the target process's /dev/nvidia-uvm (uvm.c, uvm_ioctl), which must
	// be an initialized VA space fd (else NV_ERR_ILLEGAL_ACTION).
	ioctlToolsGetProcessorUUIDTable   = 64 // UVM_TOOLS_GET_PROCESSOR_UUID_TABLE: 33 entries, parent GPU UUIDs
	ioctlToolsFlushEvents             = 67 // UVM_TOOLS_FLUSH_EVENTS
	ioctlToolsGetProcessorUUIDTableV2 = 77 // UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2: 257 entries
)

// Processor limits (uvm_types.h, nvlimits.h, uvm_processors.h).
const (
	maxDevices         = 32                              // NV_MAX_DEVICES
	maxSubProcessors   = 8                               // UVM_PARENT_ID_MAX_SUB_PROCESSORS
	maxProcessorsV1    = maxDevices + 1                  // UVM_MAX_PROCESSORS_V1 = 33
	maxProcessorsV2    = maxDevices*maxSubProcessors + 1 // UVM_MAX_PROCESSORS = UVM_ID_MAX_PROCESSORS = 257
	processorMaskWords = (maxProcessorsV2 + 63) / 64     // UVM_PROCESSOR_MASK_SIZE = 5
	numEventTypesAll   = 64                              // UvmEventNumTypesAll = UvmEventTestTypesLast(63) + 1
	numCounters        = 10                              // UVM_TOTAL_COUNTERS
	uuidLen            = 16                              // NV_UUID_LEN
	uuidTableSizeV1    = maxProcessorsV1 * uuidLen       // 528 bytes
	uuidTableSizeV2    = maxProcessorsV2 * uuidLen       // 4112 bytes
	counterBufferSize  = numCounters * 8                 // the counters tracker's buffer: NvU64[UVM_TOTAL_COUNTERS]
)

// EntrySizeV1 and EntrySizeV2 are the sizes of one queue entry
// (sizeof(UvmEventEntry), sizeof(UvmEventEntry_V2)); the driver picks the
// layout by the ioctl that created the queue.
const (
	EntrySizeV1 = 64
	EntrySizeV2 = 72
)

// nvStatus is the driver's NV_STATUS (nvstatuscodes.h), returned in the
// rmStatus field of every params struct; ioctl(2) itself returns 0.
type nvStatus uint32

const (
	nvOK                        nvStatus = 0x00
	nvErrBusyRetry              nvStatus = 0x03
	nvErrGPUIsLost              nvStatus = 0x0F
	nvErrIllegalAction          nvStatus = 0x16
	nvErrInsufficientPermission nvStatus = 0x1B
	nvErrInvalidAddress         nvStatus = 0x1E
	nvErrInvalidArgument        nvStatus = 0x1F
	nvErrInvalidDevice          nvStatus = 0x26
	nvErrInvalidState           nvStatus = 0x40
	nvErrNoMemory               nvStatus = 0x51
	nvErrNotSupported           nvStatus = 0x56
	nvErrGeneric                nvStatus = 0xFFFF
)

var nvStatusNames = map[nvStatus]string{
	nvOK:                        "NV_OK",
	nvErrBusyRetry:              "NV_ERR_BUSY_RETRY",
	nvErrGPUIsLost:              "NV_ERR_GPU_IS_LOST",
	nvErrIllegalAction:          "NV_ERR_ILLEGAL_ACTION",
	nvErrInsufficientPermission: "NV_ERR_INSUFFICIENT_PERMISSIONS",
	nvErrInvalidAddress:         "NV_ERR_INVALID_ADDRESS",
	nvErrInvalidArgument:        "NV_ERR_INVALID_ARGUMENT",
	nvErrInvalidDevice:          "NV_ERR_INVALID_DEVICE",
	nvErrInvalidState:           "NV_ERR_INVALID_STATE",
	nvErrNoMemory:               "NV_ERR_NO_MEMORY",
	nvErrNotSupported:           "NV_ERR_NOT_SUPPORTED",
	nvErrGeneric:                "NV_ERR_GENERIC",
}

func (s nvStatus) Error() string {
	if n, ok := nvStatusNames[s]; ok {
		return n
	}
	return "NV_STATUS " + hex32(uint32(s))
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	b := []byte("0x00000000")
	for i := 9; i >= 2; i-- {
		b[i] = digits[v&0xF]
		v >>= 4
	}
	return string(b)
}

// --- ioctl parameter blocks (uvm_ioctl.h) ---

// initEventTrackerParams is UVM_TOOLS_INIT_EVENT_TRACKER_PARAMS (also the
// V2 params). queueBufferSize counts entries, not bytes: a power of two, at
// least 2; zero makes a counters tracker instead of a queue, whose buffer is
// controlBuffer. uvmFd is a file descriptor in the caller's own table that
// refers to the traced process's /dev/nvidia-uvm.
type initEventTrackerParams struct {
	QueueBuffer     uint64   // 0
	QueueBufferSize uint64   // 8
	ControlBuffer   uint64   // 16
	Processor       [16]byte // 24: NvProcessorUuid (counters tracker, when !allProcessors)
	AllProcessors   uint32   // 40
	UVMFd           uint32   // 44
	RMStatus        nvStatus // 48
	_               uint32   // 52: C tail padding to 8-byte alignment
}

// initEventTrackerArg is what is passed to the kernel: the params plus 8
// spare zero bytes, because drivers before 560 read a 64-byte struct with
// requestedVersion/grantedVersion after rmStatus (zero asks for V1).
type initEventTrackerArg struct {
	p     initEventTrackerParams
	spare [8]byte
}

// setNotificationThresholdParams is UVM_TOOLS_SET_NOTIFICATION_THRESHOLD_PARAMS.
type setNotificationThresholdParams struct {
	NotificationThreshold uint32
	RMStatus              nvStatus
}

// maskParams is UVM_TOOLS_EVENT_QUEUE_{ENABLE,DISABLE}_EVENTS_PARAMS and
// UVM_TOOLS_{ENABLE,DISABLE}_COUNTERS_PARAMS: one 64-bit mask.
type maskParams struct {
	Flags    uint64
	RMStatus nvStatus
	_        uint32
}

// uuidTableParams is UVM_TOOLS_GET_PROCESSOR_UUID_TABLE(_V2)_PARAMS: the
// driver copies UVM_MAX_PROCESSORS_V1 (33) or UVM_ID_MAX_PROCESSORS (257)
// NvProcessorUuid to tablePtr; index = the processor index in events.
type uuidTableParams struct {
	TablePtr uint64
	RMStatus nvStatus
	_        uint32
}

// flushEventsParams is UVM_TOOLS_FLUSH_EVENTS_PARAMS.
type flushEventsParams struct {
	RMStatus nvStatus
}

// controlData is UvmToolsEventControlData, the page shared with the driver.
// The driver writes entries at put_behind and then sets put_ahead and
// put_behind (equal outside its lock); it treats the queue as full when
// put_behind+1 == get_behind, so it holds at most size-1 entries, and uses
// get_ahead only to decide when to wake poll(2). dropped[t] counts entries of
// type t lost because the queue was full.
type controlData struct {
	GetAhead  uint32                   // 0
	GetBehind uint32                   // 4
	PutAhead  uint32                   // 8
	PutBehind uint32                   // 12
	Dropped   [numEventTypesAll]uint64 // 16
}

// --- queue entries (uvm_types.h) ---
//
// Every entry starts with its eventType byte. V1 structs index processors
// with NvU8 parent-GPU ids (CPU 0, GPUs 1..32); V2 with NvU16 ids that count
// MIG sub-processors (CPU 0, GPU = parent_index*8 + sub_index + 1).

type cpuFaultInfo struct { // UvmEventCpuFaultInfo, same in V1 and V2: 40 bytes
	EventType  uint8  // 0
	AccessType uint8  // 1
	_          uint16 // 2
	CPUID      uint32 // 4
	Address    uint64 // 8
	TimeStamp  uint64 // 16
	PID        uint32 // 24
	ThreadID   uint32 // 28
	PC         uint64 // 32
}

type migrationInfoV1 struct { // UvmEventMigrationInfo: 64 bytes
	EventType         uint8  // 0
	MigrationCause    uint8  // 1
	SrcIndex          uint8  // 2
	DstIndex          uint8  // 3
	_                 uint32 // 4
	Address           uint64 // 8
	MigratedBytes     uint64 // 16
	BeginTimeStamp    uint64 // 24
	EndTimeStamp      uint64 // 32
	RangeGroupID      uint64 // 40
	BeginTimeStampGPU uint64 // 48
	EndTimeStampGPU   uint64 // 56
}

type migrationInfoV2 struct { // UvmEventMigrationInfo_V2: 72 bytes
	EventType         uint8  // 0
	MigrationCause    uint8  // 1
	_                 uint16 // 2
	SrcIndex          uint16 // 4
	DstIndex          uint16 // 6
	SrcNid            int32  // 8
	DstNid            int32  // 12
	Address           uint64 // 16
	MigratedBytes     uint64 // 24
	BeginTimeStamp    uint64 // 32
	EndTimeStamp      uint64 // 40
	RangeGroupID      uint64 // 48
	BeginTimeStampGPU uint64 // 56
	EndTimeStampGPU   uint64 // 64
}

type gpuFaultInfoV1 struct { // UvmEventGpuFaultInfo: 40 bytes
	EventType    uint8  // 0
	FaultType    uint8  // 1
	AccessType   uint8  // 2
	GPUIndex     uint8  // 3
	GPCID        uint16 // 4: union with channelId (non-replayable faults)
	ClientID     uint16 // 6
	Address      uint64 // 8
	TimeStamp    uint64 // 16
	TimeStampGPU uint64 // 24
	BatchID      uint32 // 32
	ClientType   uint8  // 36
	_            uint8  // 37
	_            uint16 // 38
}

type gpuFaultInfoV2 struct { // UvmEventGpuFaultInfo_V2: 40 bytes
	EventType    uint8  // 0
	FaultType    uint8  // 1
	GPUIndex     uint16 // 2
	GPCID        uint16 // 4: union with channelId
	ClientID     uint16 // 6
	Address      uint64 // 8
	TimeStamp    uint64 // 16
	TimeStampGPU uint64 // 24
	BatchID      uint32 // 32
	ClientType   uint8  // 36
	AccessType   uint8  // 37
	_            uint16 // 38
}

type gpuFaultReplayInfoV1 struct { // UvmEventGpuFaultReplayInfo: 24 bytes
	EventType    uint8  // 0
	GPUIndex     uint8  // 1
	ClientType   uint8  // 2
	_            uint8  // 3
	BatchID      uint32 // 4
	TimeStamp    uint64 // 8
	TimeStampGPU uint64 // 16
}

type gpuFaultReplayInfoV2 struct { // UvmEventGpuFaultReplayInfo_V2: 24 bytes
	EventType    uint8  // 0
	ClientType   uint8  // 1
	GPUIndex     uint16 // 2
	BatchID      uint32 // 4
	TimeStamp    uint64 // 8
	TimeStampGPU uint64 // 16
}

type fatalFaultInfoV1 struct { // UvmEventFatalFaultInfo: 24 bytes
	EventType      uint8  // 0
	FaultType      uint8  // 1
	AccessType     uint8  // 2
	ProcessorIndex uint8  // 3
	Reason         uint8  // 4
	_              uint8  // 5
	_              uint16 // 6
	Address        uint64 // 8
	TimeStamp      uint64 // 16
}

type fatalFaultInfoV2 struct { // UvmEventFatalFaultInfo_V2: 24 bytes
	EventType      uint8  // 0
	FaultType      uint8  // 1
	AccessType     uint8  // 2
	Reason         uint8  // 3
	ProcessorIndex uint16 // 4
	_              uint16 // 6
	Address        uint64 // 8
	TimeStamp      uint64 // 16
}

// regionMaskInfoV1 is UvmEventReadDuplicateInfo and
// UvmEventThrashingDetectedInfo (same layout): 40 bytes.
type regionMaskInfoV1 struct {
	EventType  uint8  // 0
	_          uint8  // 1
	_          uint16 // 2
	_          uint32 // 4
	Processors uint64 // 8
	Address    uint64 // 16
	Size       uint64 // 24
	TimeStamp  uint64 // 32
}

// regionMaskInfoV2 is UvmEventReadDuplicateInfo_V2 and
// UvmEventThrashingDetectedInfo_V2 (same layout): 72 bytes.
type regionMaskInfoV2 struct {
	EventType  uint8                      // 0
	_          uint8                      // 1
	_          uint16                     // 2
	_          uint32                     // 4
	Address    uint64                     // 8
	Size       uint64                     // 16
	TimeStamp  uint64                     // 24
	Processors [processorMaskWords]uint64 // 32
}

type readDuplicateInvalidateInfoV1 struct { // UvmEventReadDuplicateInvalidateInfo: 32 bytes
	EventType     uint8  // 0
	ResidentIndex uint8  // 1
	_             uint16 // 2
	_             uint32 // 4
	Address       uint64 // 8
	Size          uint64 // 16
	TimeStamp     uint64 // 24
}

type readDuplicateInvalidateInfoV2 struct { // UvmEventReadDuplicateInvalidateInfo_V2: 32 bytes
	EventType     uint8  // 0
	_             uint8  // 1
	ResidentIndex uint16 // 2
	_             uint32 // 4
	Address       uint64 // 8
	Size          uint64 // 16
	TimeStamp     uint64 // 24
}

type pageSizeChangeInfoV1 struct { // UvmEventPageSizeChangeInfo: 24 bytes
	EventType      uint8  // 0
	ProcessorIndex uint8  // 1
	_              uint16 // 2
	Size           uint32 // 4
	Address        uint64 // 8
	TimeStamp      uint64 // 16
}

type pageSizeChangeInfoV2 struct { // UvmEventPageSizeChangeInfo_V2: 24 bytes
	EventType      uint8  // 0
	_              uint8  // 1
	ProcessorIndex uint16 // 2
	Size           uint32 // 4
	Address        uint64 // 8
	TimeStamp      uint64 // 16
}

// throttlingInfoV1 is UvmEventThrottlingStartInfo and
// UvmEventThrottlingEndInfo (same layout): 24 bytes.
type throttlingInfoV1 struct {
	EventType      uint8  // 0
	ProcessorIndex uint8  // 1
	_              uint16 // 2
	_              uint32 // 4
	Address        uint64 // 8
	TimeStamp      uint64 // 16
}

// throttlingInfoV2 is UvmEventThrottling{Start,End}Info_V2: 24 bytes.
type throttlingInfoV2 struct {
	EventType      uint8  // 0
	_              uint8  // 1
	ProcessorIndex uint16 // 2
	_              uint32 // 4
	Address        uint64 // 8
	TimeStamp      uint64 // 16
}

type mapRemoteInfoV1 struct { // UvmEventMapRemoteInfo: 40 bytes
	EventType      uint8  // 0
	SrcIndex       uint8  // 1
	DstIndex       uint8  // 2
	MapRemoteCause uint8  // 3
	_              uint32 // 4
	Address        uint64 // 8
	Size           uint64 // 16
	TimeStamp      uint64 // 24
	TimeStampGPU   uint64 // 32
}

type mapRemoteInfoV2 struct { // UvmEventMapRemoteInfo_V2: 40 bytes
	EventType      uint8  // 0
	MapRemoteCause uint8  // 1
	_              uint16 // 2
	SrcIndex       uint16 // 4
	DstIndex       uint16 // 6
	Address        uint64 // 8
	Size           uint64 // 16
	TimeStamp      uint64 // 24
	TimeStampGPU   uint64 // 32
}

type evictionInfoV1 struct { // UvmEventEvictionInfo: 40 bytes
	EventType  uint8  // 0
	SrcIndex   uint8  // 1
	DstIndex   uint8  // 2
	_          uint8  // 3
	_          uint32 // 4
	AddressOut uint64 // 8
	AddressIn  uint64 // 16
	Size       uint64 // 24
	TimeStamp  uint64 // 32
}

type evictionInfoV2 struct { // UvmEventEvictionInfo_V2: 40 bytes
	EventType  uint8  // 0
	_          uint8  // 1
	_          uint16 // 2
	SrcIndex   uint16 // 4
	DstIndex   uint16 // 6
	AddressOut uint64 // 8
	AddressIn  uint64 // 16
	Size       uint64 // 24
	TimeStamp  uint64 // 32
}

// entryV1 and entryV2 have the size and 8-byte alignment of UvmEventEntry
// (largest member: UvmEventMigrationInfo, 64) and UvmEventEntry_V2 (largest:
// UvmEventMigrationInfo_V2 and the *_V2 processor-mask events, 72).
type (
	entryV1 [EntrySizeV1 / 8]uint64
	entryV2 [EntrySizeV2 / 8]uint64
)
