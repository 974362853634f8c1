// Package gpupolicyprocessor implements the gpupolicy processor: it passes
// telemetry through and, in later modes, derives signals from it, decides on
// GPU policy (prefetch, eviction, timeslices) and actuates those decisions
// through pinned BPF maps and device-runtime control blocks.
//
// Two modes exist today. observe changes nothing, so the processor can sit
// in every pipeline of the default configuration without effect. advise
// reads a gpuebpf receiver's fault stream (package faultstream: a bounded
// ring of each process's latest faults, shared in-process so that a policy
// never depends on what a pipeline forwards), classifies it and appends the
// prefetch and eviction policy it calls for as gpu.policy.advice gauges,
// applying nothing. enforce, which will load and tune gpu_ext policies, is
// reserved.
package gpupolicyprocessor

//go:generate go tool mdatagen metadata.yaml
