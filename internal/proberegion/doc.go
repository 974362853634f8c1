// Package proberegion reads what the device probes (bpf/device, compiled by
// devrt/jit, injected by devrt) left in a process's shared region and turns
// it into facts about kernels: when each thread block ran and on which SM,
// how much work each SM got, when a launch's first block started, and how
// many warps were resident per SM over time.
//
// Why a package of its own: the region is written by GPU code of an
// untrusted process (devrt copies the device memory the probes write into
// the file <ring dir>/gpuext-devmaps-<pid>-<created_ns>.maps; its size is
// what the collector's Patcher asked for),
// so every byte is checked before use, and the receiver only sees decoded
// records. A region that is short, foreign (its map headers do not match the
// layout of the probe set this collector compiled) or truncated while mapped
// (SIGBUS, caught like internal/devring does) is broken: it is never read
// again, and nothing else is affected.
//
// The map layout is the probe set's (gpumap.Layout from devrt/jit): the file
// carries no description of itself. devrt fills it with the maps' headers
// the collector sent (Layout.Init's static fields, which the device never
// touches; Open writes the same ones into a file still zero), so the
// readers of devrt/jit/gpumap can check each map against the layout. The
// reader writes nothing else: devrt's next copy would overwrite it, so
// ring tails and losses are the Region's own.
package proberegion
