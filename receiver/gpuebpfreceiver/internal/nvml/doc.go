// Package nvml is the NVML source of the gpuebpf receiver: device
// telemetry of NVIDIA GPUs (utilization, memory, power, energy,
// temperature, clocks, throttling, errors, interconnect traffic, MIG
// devices, per-process usage) as metrics, and XIDs and other critical NVML
// events as log records.
//
// NVML is loaded at run time (go-nvml dlopens libnvidia-ml.so.1), so one
// binary runs with or without the driver; without it, or with a driver
// whose library and kernel module differ, Start returns an error wrapping
// ErrUnavailable that says why, and the receiver carries on without this
// source. go-nvml needs cgo; a binary built without cgo gets a Source whose
// Start says so.
//
// Design notes:
//
//   - Metric names follow the hardware semantic conventions (hw.*); what
//     they lack is under gpu.*. hw.gpu.memory.utilization is the fraction
//     of memory used, as the conventions define it; the memory
//     controller's busy time (nvidia-smi's utilization.memory) is
//     gpu.memory.controller.utilization.
//   - hw.gpu.io for NVLink is NVML's own cumulative counter (KiB of payload
//     over all links, field NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX). NVML
//     has no cumulative PCIe byte counter, only a throughput sampled over
//     20 ms, so PCIe bytes are integrated from one sample per scrape
//     (trapezoid rule): an estimate that misses bursts between scrapes.
//   - NVML's cumulative counters (volatile ECC counts, PCIe replays,
//     NVLink data, energy) go back to zero while the driver stays loaded
//     (nvidia-smi -p 0, a GPU reset); the cumulative series keep their
//     start time, so a drop is counted as a reset: what follows adds to
//     what was reported, and a series never goes backwards.
//   - A field NVML refuses for a device (not supported, no permission, or
//     missing from an older library) is not asked again; a transient
//     failure is retried at the next scrape. A lost GPU is reported as
//     hw.status failed and no longer read.
//   - Per-process metrics sit on a resource with the GPU's (or MIG
//     device's) hw.id and the process's pid, executable, container and
//     pod, so "which pod uses this GPU" is one query.
//   - Finish scrapes once more after the event goroutine has stopped and
//     before NVML is released, however recent the last Scrape: NVML's
//     cumulative counters and the XIDs counted since then would otherwise
//     be lost. Without NVML it has nothing to scrape.
//   - XIDs from NVML events and from the kernel tracepoint (RecordXID) go
//     through one path: a log record, hw.errors{error.type=xid}, and
//     hw.status held at the state the XID table (xid.go) gives for
//     xid_status_hold. One XID seen by both is counted once.
package nvml

//go:generate go tool mdatagen metadata.yaml
