// Package devprobes runs the device probes for the gpuebpf receiver: it
// compiles the configured probe set (internal/probeset), answers devrt's
// module loads with patched PTX through an injection server
// (internal/devrtinject) in each devrt directory, counts what devrt did
// with each load (its kind-8 ring records), reads the probes' shared
// regions of each process (internal/proberegion) and emits what they saw as
// metrics and spans.
//
// Regions are attributed to the process that made them, not to the pid in
// their file name (devrt's getpid(), 1 in many containers): a file is read
// only for the process that maps it and is the name's pid in its own pid
// namespace, whether it is found in a configured directory or inside the
// root of a container process that maps devrt (discover.go). Files are
// untrusted: opened without following links, inside a root as if it were
// "/" (internal/nsfs), with bounded work per poll.
//
// Why a source of its own: the probes' data does not come through devrt's
// ring but from per-module region files the GPU writes, on the GPU's
// clock; this package owns those files' lifecycle, the clock offset and
// the kernel names the probes know only by hash.
package devprobes

//go:generate go tool mdatagen metadata.yaml
