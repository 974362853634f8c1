package nvml

import "github.com/otelcol-gpu/otelcol-gpu/internal/procattr"

// The process attribution the receiver's sources share (procattr); the
// names are kept here so this package reads on its own.
type (
	// Process is what a resource says about a process.
	Process = procattr.Identity
	// Attributor describes the process behind a pid; it must be safe for
	// concurrent use.
	Attributor = procattr.Attributor
	// AttributorFunc adapts a function to Attributor.
	AttributorFunc = procattr.AttributorFunc
)

// pidOnly is the Attributor used when none is given.
var pidOnly = procattr.PIDOnly
