// Package devrt is the gpuebpf receiver's source for devrt, the device
// runtime library LD_PRELOADed into CUDA programs. devrt records every CUDA
// call in-process for tens of nanoseconds instead of the microsecond a
// uprobe trap costs, and times a sample of the work on the GPU; it writes
// both into a shared-memory ring per process (internal/devring).
//
// The source finds the rings (the configured directories, and the same
// directories inside the root of container processes that map the
// library), drains each one every poll_interval on the receiver's event
// goroutine, so devrt's records take the same path as the uprobes'
// (attribution, spans, metrics: one translator), writes the control page
// (what to report, how often to time, a heartbeat), and removes a ring
// once its process has exited, exec'd or made a newer one, after a final
// drain.
//
// Ring files are written by the traced program and read and written by a
// privileged collector, so they are opened without following symbolic
// links (openat2 with RESOLVE_IN_ROOT inside a container's root) and
// checked to be single-link regular files before anything is mapped.
package devrt
