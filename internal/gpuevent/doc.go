// Package gpuevent is the decoded form of every record that a signal source
// of the collector produces (uprobes today, the device runtime later), and
// the decoder from the wire layout of bpf/include/gpuext_abi.h.
//
// The decoder turns the raw integer arguments of a call into what they mean
// for that API (addresses, byte counts, launch geometry, copy direction), so
// everything downstream works on one type whatever the source.
package gpuevent
