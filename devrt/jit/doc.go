// Package jit compiles eBPF device probes to PTX: the programs the
// collector injects into running GPU kernels (issue 7, with devrt/ptx,
// which rewrites the kernels to call them, and devrt's injection).
//
// Input is an eBPF ELF object from clang -target bpf (read with
// cilium/ebpf's ELF reader; nothing is loaded into the kernel). Section
// names say where a program runs: gpu/entry/<kernel>,
// gpu/entry_block0/<kernel> (block 0 of a launch only),
// gpu/entry_thread/<kernel> (every thread, no leader, even at warp level),
// gpu/exit/<kernel>,
// gpu/load/<kernel>, gpu/store/<kernel>, or bpftime's kprobe/<kernel>
// (entry) and kretprobe/<kernel> (exit); <kernel> is a mangled name or a
// glob. Maps are declared as usual, with the GPU map types of gpuext_abi.h
// (standard ARRAY, HASH and RINGBUF map onto them).
//
// Every program is verified before any code is generated (verify.go):
// known helpers only, every path ends within a budget of explored
// instructions, registers and stack initialised before use, ctx reads
// inside struct gpuext_dev_ctx, map values only after a NULL check and in
// bounds, no pointer leaves the probe. A rejected program gets the reason
// and the instruction index.
//
// Code generation (ptx.go) emits a fragment (.global and .func only) with
// one function per program, .func __gpuext_probe_<N>(.param .u64 __gx_c0,
// .param .u64 __gx_c1, .param .u64 __gx_c2) taking the ctx by value (its
// three little-endian words: site<<32 | kind, addr, kernel_id), and the
// maps laid out in one shared region reached through the module global
// __gpuext_shared (gpumap). By default a probe runs once per warp: the
// lowest active lane runs the body and r0 is shared with the others.
//
// The interpreter (interp.go) runs the same verified programs on a byte
// slice region with the thread's values injected, to compute the exact
// results a GPU run must give (check, cmd/jitcheck).
package jit
