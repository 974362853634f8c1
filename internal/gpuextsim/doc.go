// Package gpuextsim drives gpu_ext_sim, the simulated GPU driver module of
// kernel-modules/sim, from user space: it replays memory access traces and
// scheduling job mixes through /dev/gpu_ext_sim, times single gpu_ext entry
// points, reads the gpu_ext module's counters from /sys/kernel/gpu_ext/, and
// generates the deterministic traces the policy tests compare policies on.
//
// It exists so that struct_ops policies are tested against a real kernel
// (under qemu) with results that are exact and reproducible: the simulator
// is deterministic, so a policy's effect is a difference in counts, not a
// timing. The records it exchanges are those of the sim section of
// bpf/include/gpuext_abi.h; abi_test.go checks their layout against BTF.
package gpuextsim
