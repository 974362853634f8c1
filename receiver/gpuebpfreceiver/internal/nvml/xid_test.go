package nvml

import "testing"

func TestXIDTable(t *testing.T) {
	tests := []struct {
		xid   uint64
		state hwState
		body  string
	}{
		{13, stateOK, "XID 13: Graphics engine exception (usually an application error such as an out-of-range or illegal memory access)"},
		{31, stateOK, "XID 31: GPU memory page fault (usually an application's illegal address access)"},
		{43, stateOK, "XID 43: GPU stopped processing a channel (an application fault, usually after XID 13 or 31)"},
		{45, stateOK, "XID 45: Preemptive cleanup of a channel after earlier errors (application ended or faulted)"},
		{48, stateDegraded, "XID 48: Double-bit ECC error"},
		{63, stateDegraded, "XID 63: ECC page retirement or row remapping recorded (takes effect at the next GPU reset)"},
		{64, stateFailed, "XID 64: ECC page retirement or row remapping recording failure"},
		{74, stateDegraded, "XID 74: NVLink error"},
		{79, stateFailed, "XID 79: GPU has fallen off the bus"},
		{92, stateDegraded, "XID 92: High single-bit ECC error rate"},
		{94, stateDegraded, "XID 94: Contained ECC error (only the affected applications were stopped)"},
		{95, stateFailed, "XID 95: Uncontained ECC error (every application on the GPU is affected; reset required)"},
		{119, stateFailed, "XID 119: GSP RPC timeout (the GPU System Processor did not answer)"},
		{120, stateFailed, "XID 120: GSP error (the GPU System Processor reported a fault)"},
		{9999, stateOK, "XID 9999: Unknown XID (see NVIDIA's XID catalog)"},
	}
	for _, tt := range tests {
		info, known := lookupXID(tt.xid)
		if info.State != tt.state || xidBody(tt.xid, info) != tt.body || known != (tt.xid != 9999) {
			t.Errorf("XID %d: %v %q known=%v", tt.xid, info.State, xidBody(tt.xid, info), known)
		}
	}
	// The brief's list of common XIDs is covered.
	for _, xid := range []uint64{13, 31, 32, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119, 120} {
		if _, ok := xidTable[xid]; !ok {
			t.Errorf("XID %d missing from the table", xid)
		}
	}
	for xid, info := range xidTable {
		if info.Description == "" {
			t.Errorf("XID %d has no description", xid)
		}
	}
}

func TestHWStateNames(t *testing.T) {
	if stateOK.String() != "ok" || stateDegraded.String() != "degraded" || stateFailed.String() != "failed" {
		t.Error("state names differ from hw.state values")
	}
}
