// Package uvmtools reads the UVM tools event interface of NVIDIA's nvidia-uvm
// driver (/dev/nvidia-uvm-tools) from Go, without cgo: per-process unified
// memory events (CPU and GPU page faults, migrations with direction, cause
// and CPU/GPU timestamps, fault replays, fatal faults, thrashing, throttling,
// remote mappings, read duplication) and the driver's per-process counters.
//
// # How it attaches
//
// The driver keys a tracker by a file descriptor of the traced process's
// /dev/nvidia-uvm (its VA space), which must be valid in the tracer's own fd
// table. Open finds it in /proc/<pid>/fd, duplicates it with pidfd_getfd
// (CAP_SYS_PTRACE), checks it is the nvidia-uvm device (same major as the
// tools node, minor 0), and asks for a queue with
// UVM_TOOLS_INIT_EVENT_TRACKER_V2 (falling back to the V1 ioctl). The queue
// buffer and its control page are anonymous shared mappings that the driver
// pins and writes directly: reading events is a few atomic loads and copies,
// no system call. A second tracker without a queue holds the counters.
//
// # ABI
//
// abi.go defines, from the headers of NVIDIA/open-gpu-kernel-modules tag
// 580.142 (identical for these interfaces from 565.57.01 to 595.45.04),
// the ioctl numbers (bare command numbers on Linux: 56, 57, 58, 60, 64, 67,
// 76, 77), the parameter blocks and the 64-byte V1 and 72-byte V2 entries;
// abi_test.go checks every size and offset.
//
// # Counters
//
// UVM_TOOLS_ENABLE_COUNTERS offers, on Linux: bytes migrated CPU to GPU and
// GPU to CPU, CPU page faults, GPU page faults, and two prefetch byte
// counters the Linux driver never increments. See Counters.
//
// # Caveats
//
//   - GPU fault replays are broadcast to every traced process with replay
//     events enabled, not only the one whose faults were replayed.
//   - Migration, replay and remote-mapping events are queued when the GPU
//     work completes; Flush delivers what is pending.
//   - A tracker keeps the process's VA space (not its memory mappings)
//     alive after the process exits, until Close.
//   - The CPU timestamps are ktime_get_raw (CLOCK_MONOTONIC_RAW), not
//     CLOCK_MONOTONIC.
package uvmtools
