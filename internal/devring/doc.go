// Package devring is the collector's side of devrt's shared-memory rings:
// the in-process device runtime (LD_PRELOADed into CUDA programs) writes one
// record per call, and GPU execution records, into a file per process that
// both sides map (layout and protocol: bpf/include/gpuext_abi.h).
//
// The producer is an untrusted process. Everything it wrote is checked
// before use: the header against the file's size, each record's length and
// slot count against the capacity and a maximum record size, each slot's
// sequence number against the position the protocol says it must hold. A
// ring that breaks a rule is marked broken and never read again; a fault
// while touching the mapping (the file truncated under it: SIGBUS) breaks
// the ring instead of the collector. Drain reads at most one lap of the
// ring per call, so a producer that writes without pause cannot keep the
// consumer in its loop.
//
// A Ring is driven by one goroutine (the protocol has a single consumer).
package devring
