// Package gpupolicyprocessor implements the gpupolicy processor: it passes
// telemetry through and, in later modes, derives signals from it, decides on
// GPU policy (prefetch, eviction, timeslices) and actuates those decisions
// through pinned BPF maps and device-runtime control blocks.
//
// Only the observe mode exists today: the processor changes nothing and
// decides nothing, so it can sit in every pipeline of the default
// configuration without effect.
package gpupolicyprocessor

//go:generate go tool mdatagen metadata.yaml
