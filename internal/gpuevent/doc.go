// Package gpuevent is the decoded form of every record that a signal source
// of the collector produces (the uprobes and the in-process device runtime,
// devrt), and the decoder from the wire layout of bpf/include/gpuext_abi.h.
//
// The decoder turns the raw integer arguments of a call into what they mean
// for that API (addresses, byte counts, launch geometry, copy direction), so
// everything downstream works on one type whatever the source. devrt also
// writes GPU execution records (when sampled work ran on the GPU): those
// decode into GPUExec, a type of their own, since they describe work rather
// than a call.
package gpuevent
