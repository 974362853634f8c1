package devring

// Layout of the ring file and of struct gpuext_ring_hdr, gpuext_slot and
// gpuext_ctl (bpf/include/gpuext_abi.h); the tests check every offset
// against the BTF of bpf/abi.bpf.c.
const (
	Magic      = 0x31474e5254584547 // GPUEXT_RING_MAGIC, "GEXTRNG1"
	CtlMagic   = 0x314c544354584547 // GPUEXT_CTL_MAGIC, "GEXTCTL1"
	ABIVersion = 1

	PageSize    = 4096
	CtlOffset   = PageSize     // GPUEXT_RING_PAGE
	DataOffset  = 2 * PageSize // slots start here
	SlotSize    = 192
	SlotHdr     = 16
	SlotPayload = SlotSize - SlotHdr // 176
	MinSlots    = 64
	MaxSlots    = 1 << 20

	// MaxSampleGapUS bounds the control page's sample_gap_us
	// (GPUEXT_CTL_MAX_GAP_US: 10 s).
	MaxSampleGapUS = 10_000_000

	// MaxRecordSlots bounds the slots one record may span: the largest
	// record of ABI version 1 (a named call, 680 bytes) needs 4; the bound
	// leaves room for larger records and stops a corrupt length from
	// sending the consumer around the ring.
	MaxRecordSlots = 8
	// MaxRecordSize is the longest record accepted, in bytes.
	MaxRecordSize = MaxRecordSlots * SlotPayload

	// struct gpuext_ring_hdr
	hdrMagic          = 0
	hdrABIVersion     = 8
	hdrSlotSize       = 12
	hdrCapacity       = 16
	hdrPID            = 20
	hdrStartTime      = 24
	hdrCreated        = 32
	hdrCtlOffset      = 40
	hdrDataOffset     = 44
	hdrState          = 48
	hdrDisabledReason = 52
	hdrVersion        = 56
	versionLen        = 16
	hdrPIDNS          = 72
	hdrHead           = 128
	hdrTail           = 192
	hdrDrops          = 256
	hdrRecords        = 320
	hdrTimed          = 328
	hdrSize           = 384

	// struct gpuext_slot
	slotSeq    = 0
	slotLen    = 8
	slotNSlots = 12
	slotData   = 16

	// struct gpuext_ctl, at CtlOffset
	ctlMagic       = 0
	ctlGeneration  = 8
	ctlClasses     = 12
	ctlSampleEvery = 16
	ctlConsumerPID = 20
	ctlHeartbeat   = 24
	ctlSampleGap   = 32
	ctlActions     = 64
	ctlActionSize  = 32
	ctlActionCount = 16
	ctlSize        = 576
)

// Ring states (gpuext_ring_hdr.state).
const (
	StateActive   = 1
	StateDisabled = 2 // devrt failed internally and passes calls through
	StateClosed   = 3 // the process is exiting: drain and remove
)

// Drop counters, indexes of Drops (enum gpuext_ring_drop).
const (
	DropFull     = 0 // no free slots
	DropDisabled = 1 // devrt turned itself off
	DropTiming   = 2 // a sampled launch could not be timed
	NumDrops     = 8
)

// Event classes, bits of Control.Classes (GPUEXT_CLASS_*).
const (
	ClassLaunch = 1 << 0
	ClassMemory = 1 << 1
	ClassCopy   = 1 << 2
	ClassSync   = 1 << 3
	ClassModule = 1 << 4 // contexts and modules
	ClassExec   = 1 << 5 // GPU execution timing of sampled work
	ClassAll    = 0x3f   // every call once: the default
	// ClassNested also reports the driver launches and copies the CUDA
	// runtime makes inside a reported runtime launch or copy (folded into
	// the runtime call's record otherwise).
	ClassNested = 1 << 6
	ClassMask   = 0x7f
)

// StateName is a ring state's name: active, disabled, closed or unknown.
func StateName(s uint32) string {
	switch s {
	case StateActive:
		return "active"
	case StateDisabled:
		return "disabled"
	case StateClosed:
		return "closed"
	}
	return "unknown"
}

// slotsFor is the number of slots a record of n bytes spans.
func slotsFor(n uint32) uint32 { return (n + SlotPayload - 1) / SlotPayload }
