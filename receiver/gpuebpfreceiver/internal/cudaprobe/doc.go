// Package cudaprobe loads the CUDA uprobe programs (bpf/cuda.bpf.c), attaches
// them once per library file (by inode), reads the ring buffer and exposes
// the kernel-side knobs: the per-process filter and the drop counters.
//
// It knows nothing about OpenTelemetry: records go to a callback as bytes and
// are decoded by internal/gpuevent, so the probe side can be benchmarked and
// tested on its own.
package cudaprobe
