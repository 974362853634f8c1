// Package gpupolicyprocessor implements the gpupolicy processor: it passes
// telemetry through and derives GPU policy (prefetch, eviction) from it,
// reporting or applying it through the gpu_ext policies' pinned BPF maps.
//
// observe changes nothing, so the processor can sit in every pipeline of
// the default configuration without effect. advise reads a gpuebpf
// receiver's fault stream (package faultstream: a bounded ring of each
// process's latest faults, shared in-process so that a policy never
// depends on what a pipeline forwards), classifies it and appends the
// prefetch and eviction policy it calls for as gpu.policy.advice gauges,
// applying nothing. enforce also applies that advice, once stable, to the
// gpu_ext memory policy through the loader (package gpuext): it attaches
// bpf/policy's memory policy or adopts the one pinned under its name, sets
// per-process prefetch algorithms and the eviction algorithm, rate-limited,
// and undoes its changes at shutdown. Where the module cannot be used (no
// module: every machine that cannot load it; someone else's policy) it
// reports why through component status and advises only: the collector
// never fails for it.
package gpupolicyprocessor

//go:generate go tool mdatagen metadata.yaml
