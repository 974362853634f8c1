package jit

// The test programs (one per instruction class) are compiled like the
// shipped probes, with -mcpu=v4 for the newest instructions.
//go:generate env DIR=check/progs MCPU=v4 bash ../../bpf/device/build.sh classes.bpf.c reject.bpf.c abi.bpf.c empty.bpf.c per_block.bpf.c
