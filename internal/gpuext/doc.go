// Package gpuext loads gpu_ext's struct_ops policies (bpf/policy) into the
// kernel, attaches them, and keeps them there after the loader exits by
// pinning their link and maps under /sys/fs/bpf/gpuext/{mem,sched}/. Anyone
// with the pins (gpuextctl, the gpupolicy processor) then tunes the running
// policy through typed parameters, reads what it and the module did, or
// detaches it. Before loading, it checks that the gpu_ext module is there
// and speaks the ABI this build was compiled against, so a mismatch is one
// clear error instead of a verifier failure.
package gpuext
