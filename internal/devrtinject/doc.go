// Package devrtinject is the collector's side of device probe injection
// (issue 7): it answers devrt, the in-process CUDA runtime, when a program
// loads a GPU module, with the module's PTX patched to call the probes.
//
// Why a socket and not files: the collector owns the probe programs (it
// compiles them and may change them while programs run), and devrt must
// decide within a bounded time at each module load whether to load a
// patched twin of the module or keep the original. devrt connects to a unix
// stream socket beside its ring, <ring dir>/gpuext-inject.sock
// (SocketName; GPUEXT_DEVRT_INJECT_SOCK overrides it in devrt), sends one
// request and reads one response; the layouts, status codes and limits are
// the "devrt injection protocol" section of bpf/include/gpuext_abi.h, which
// this package mirrors and checks in tests against the header's BTF.
//
// The server (Server) reads and checks a request (sizes within the limits,
// the kernel names, the SHA-256 of the PTX against the bytes received),
// asks a Patcher (in production the PTX rewriter devrt/ptx linking the
// probes compiled by devrt/jit; not this package's business) and writes the
// answer: PATCHED with the patched PTX, the names of the patched kernels
// and the size of the shared region their maps need; UNCHANGED; REJECTED
// with the reason; or ERROR. Answers are cached by (PTX hash, SM arch,
// probe-set version) (Cache), so the same module loaded by many processes,
// or by one process many times, is patched once; a patch still running when
// devrt gives up (its default timeout is 2 s) finishes and is cached, so the
// next load of that module gets it. Errors are not cached.
//
// devrt writes what it did with each module into its ring as a
// struct gpuext_inject_event (record kind GPUEXT_KIND_INJECT, 8): patched,
// unchanged, rejected, not instrumentable (SASS only, compressed or no PTX)
// or failed, with the reason, the times (asking, the driver's JIT of the
// patched PTX, the total) and the device pointer of the shared region.
// DecodeEvent reads it.
//
// The gpuebpf receiver starts a Server in each devrt directory when its
// devrt.probes configuration is enabled (receiver/gpuebpfreceiver/internal/
// devprobes, with internal/probeset as the Patcher) and counts these
// records by outcome; devrt writes them only while the socket exists.
package devrtinject
