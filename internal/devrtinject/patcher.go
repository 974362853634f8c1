package devrtinject

import "context"

// Module is a module a process loaded, as the Patcher sees it.
type Module struct {
	PID     uint32
	SMArch  uint32 // compute capability major*10+minor; 0: unknown
	API     uint16 // the load call (enum gpuext_api)
	Image   Image
	Hash    [32]byte
	PTX     []byte
	Kernels []string // .entry names devrt scanned (a hint: parse PTX)
}

// Result is what a Patcher made of a module.
type Result struct {
	// Status: StatusPatched, StatusUnchanged or StatusRejected (a Patcher
	// reports its own failures as errors).
	Status Status
	// PTX is the patched module (Patched): the whole module, which must
	// declare the .u64 __gpuext_shared (constant memory) if SharedSize > 0.
	PTX []byte
	// Kernels are the .entry names of the patched kernels (Patched):
	// launches of these are redirected; others run the original. With
	// Vars, every kernel of the module.
	Kernels []string
	// Vars names the module's own variables (.global and .const at module
	// scope) when it has any (Patched): the twin must own them, so every
	// kernel is redirected and devrt hands the program the twin's
	// variables (RespVars). A devrt that cannot (no ReqVars) is answered
	// REJECTED.
	Vars []string
	// SharedSize is the bytes of the shared region the probes' maps need
	// (0: none).
	SharedSize uint64
	// Init is the region's initial contents (the maps' headers); devrt
	// writes them into a fresh region, the rest of which starts zero. A
	// region is shared by every module patched with one probe set, so
	// Init must depend only on the probe set.
	Init []InitRange
	// Reason says why (Rejected, and optionally the others).
	Reason string
}

// Patcher instruments modules. The PTX rewriter (devrt/ptx) with the
// compiled probes (devrt/jit) implements it in production.
type Patcher interface {
	// Version identifies the probe set: a new one must not be served
	// from the cache of an old one.
	Version() uint64
	// Patch instruments m. An error answers ERROR and is not cached; a
	// rejection is a Result. It must not keep m.PTX.
	Patch(ctx context.Context, m *Module) (Result, error)
}
