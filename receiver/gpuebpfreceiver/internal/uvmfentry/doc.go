// Package uvmfentry is the fentry backend of the UVM source: eBPF programs
// (bpf/uvm.bpf.c) on functions of NVIDIA's nvidia_uvm kernel module,
// relocated with CO-RE against the module's own BTF
// (/sys/kernel/btf/nvidia_uvm), sending one record per fault, migrated
// range, replay, prefetch decision, eviction, thrashing event and fault
// batch to a BPF ring buffer.
//
// # Why these functions
//
// The driver publishes faults and migrations on its own event bus,
// uvm_perf_event_notify(): the UVM tools interface is one listener of it,
// so a program there sees what a tools session sees, for every process at
// once and without a tools session per process. Replays, thrashing and
// throttling come from the tools recorders (called whether or not a tools
// session listens), the rest from the servicing functions themselves. Each
// target is a function the compiler kept out of line under its own name in
// driver 580 (Hooks lists them); a function that a later driver inlines or
// renames (a .isra or .constprop clone cannot be attached by its BTF name)
// is reported and skipped, and only the two the backend cannot do without
// (uvm_perf_event_notify, uvm_tools_broadcast_replay) make Open fail.
//
// # Records
//
// struct gpuext_uvm_event of bpf/include/gpuext_abi.h, 104 bytes, decoded
// by Decode. Driver enums (migration causes, access and fault types) are
// translated in BPF with CO-RE enum relocations, so the decoder needs no
// driver BTF. Each record names the process owning the VA space (through
// va_space->va_space_mm.mm: the current task when it uses that mm, else
// mm->owner) and the physical GPU by UUID.
//
// # Where it cannot run
//
// It needs the module loaded with its BTF, CAP_BPF and CAP_PERFMON (or
// root), and a kernel that lets tracing programs attach to module
// functions: kernel lockdown refuses them (EPERM), which is the case on
// Secure Boot machines that lock the kernel down. Open says which of these
// failed (ErrModuleNotLoaded, ErrNoModuleBTF, ErrFunctionMissing,
// ErrKernelRefused); the UVM source then uses the tools backend.
package uvmfentry
