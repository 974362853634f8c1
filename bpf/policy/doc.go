// Package policy holds gpu_ext's struct_ops policies: the memory policy
// (eviction and prefetch algorithms chosen by a config map) and the
// scheduling policy (per-class timeslices, interleave and rejection), written
// in C beside this file and compiled by bpf2go (make generate). The objects
// and the *_bpfel.go files are generated and committed, so building the
// collector or gpuextctl needs no clang.
//
// The kernel module (kernel-modules/gpu_ext) registers the struct_ops types;
// a policy only reads its context and records requests through kfuncs, and
// the module validates them. internal/gpuext loads, attaches and pins these
// objects; this package turns an object into a loadable CollectionSpec.
package policy

// CFLAGS: -idirafter finds the multiarch asm/ headers that linux/types.h needs.
//go:generate go tool bpf2go -cc clang-19 -target amd64 -no-global-types -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" Mem mem.bpf.c
//go:generate go tool bpf2go -cc clang-19 -target amd64 -no-global-types -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" Sched sched.bpf.c

// Params has no programs: its BTF carries the parameter records and enums.
//go:generate go tool bpf2go -cc clang-19 -target amd64 -type gpuext_mem_cfg -type gpuext_sched_cfg -type gpuext_class_params -type gpuext_comm_key -type gpuext_evict_algo -type gpuext_prefetch_algo -type gpuext_mem_stat -type gpuext_sched_class -type gpuext_sched_stat -type gpuext_policy_abi -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" Params params.bpf.c
