// Package bpf embeds the eBPF programs of otelcol-gpu, compiled from the C
// beside this file by bpf2go (make generate), and the Go bindings for them.
//
// The C sources are the only place the programs are written; the objects and
// the *_bpfel.go files are generated and committed so that building the
// collector needs no clang. make test fails when they are stale.
package bpf

// CFLAGS: -idirafter finds the multiarch asm/ headers that linux/types.h
// needs; the programs are x86-64 only (uprobe argument registers).
//go:generate go tool bpf2go -cc clang-19 -target amd64 -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" Cuda cuda.bpf.c
//go:generate go tool bpf2go -cc clang-19 -target amd64 -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" Xid xid.bpf.c
//go:generate go tool bpf2go -cc clang-19 -target amd64 -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" Uvm uvm.bpf.c

// Abi has no programs: its BTF holds the devrt ring and GPU execution
// records, for the layout tests of internal/gpuevent and internal/devring.
//go:generate go tool bpf2go -cc clang-19 -target amd64 -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" Abi abi.bpf.c
