package nvml

import "fmt"

// hwState is an hw.status state; higher is worse.
type hwState uint8

const (
	stateOK hwState = iota
	stateDegraded
	stateFailed
)

func (s hwState) String() string {
	switch s {
	case stateDegraded:
		return "degraded"
	case stateFailed:
		return "failed"
	default:
		return "ok"
	}
}

// xidInfo is what the collector knows about one XID: what it means and
// what it says about the GPU. XIDs that applications cause (an illegal
// address, a killed process) leave the GPU ok and are logged as warnings;
// XIDs that point at the GPU, its memory, its links or its firmware make
// it degraded (it works, but needs attention or a reset soon) or failed
// (it cannot be used until reset or replaced), and are logged as errors.
type xidInfo struct {
	Description string
	State       hwState
}

// xidTable is the one place XIDs are described. Written from NVIDIA's
// public XID documentation; XIDs not listed are logged as warnings and do
// not change hw.status.
var xidTable = map[uint64]xidInfo{
	8:   {"GPU stopped processing", stateDegraded},
	13:  {"Graphics engine exception (usually an application error such as an out-of-range or illegal memory access)", stateOK},
	31:  {"GPU memory page fault (usually an application's illegal address access)", stateOK},
	32:  {"Invalid or corrupted push buffer stream (driver, system memory or PCIe bus error)", stateDegraded},
	38:  {"Driver firmware error", stateDegraded},
	43:  {"GPU stopped processing a channel (an application fault, usually after XID 13 or 31)", stateOK},
	44:  {"Graphics engine fault during context switch", stateDegraded},
	45:  {"Preemptive cleanup of a channel after earlier errors (application ended or faulted)", stateOK},
	48:  {"Double-bit ECC error", stateDegraded},
	57:  {"Error programming video memory interface", stateDegraded},
	58:  {"Unstable video memory interface detected", stateDegraded},
	61:  {"Internal micro-controller breakpoint or warning", stateDegraded},
	62:  {"Internal micro-controller halt", stateFailed},
	63:  {"ECC page retirement or row remapping recorded (takes effect at the next GPU reset)", stateDegraded},
	64:  {"ECC page retirement or row remapping recording failure", stateFailed},
	68:  {"Video decoder (NVDEC) exception", stateDegraded},
	69:  {"Graphics engine class error", stateDegraded},
	74:  {"NVLink error", stateDegraded},
	79:  {"GPU has fallen off the bus", stateFailed},
	92:  {"High single-bit ECC error rate", stateDegraded},
	93:  {"Non-fatal violation of provisioned InfoROM wear limit", stateDegraded},
	94:  {"Contained ECC error (only the affected applications were stopped)", stateDegraded},
	95:  {"Uncontained ECC error (every application on the GPU is affected; reset required)", stateFailed},
	109: {"Context switch timeout", stateDegraded},
	119: {"GSP RPC timeout (the GPU System Processor did not answer)", stateFailed},
	120: {"GSP error (the GPU System Processor reported a fault)", stateFailed},
	121: {"C2C link error", stateDegraded},
	140: {"Unrecovered ECC error", stateFailed},
	143: {"GPU initialization failure", stateFailed},
	154: {"GPU recovery action changed (a reset, reboot or drain is needed)", stateDegraded},
}

// lookupXID describes xid; unknown XIDs get a generic description.
func lookupXID(xid uint64) (xidInfo, bool) {
	if info, ok := xidTable[xid]; ok {
		return info, true
	}
	return xidInfo{Description: "Unknown XID (see NVIDIA's XID catalog)", State: stateOK}, false
}

// xidBody is the log body of an XID: "XID 79: GPU has fallen off the bus".
func xidBody(xid uint64, info xidInfo) string {
	return fmt.Sprintf("XID %d: %s", xid, info.Description)
}
