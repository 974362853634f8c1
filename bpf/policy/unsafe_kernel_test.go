package policy

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext/ktest"
)

// CFLAGS as in doc.go; the object and its Go file are test-only (_test suffix).
//go:generate go tool bpf2go -cc clang-19 -target amd64 -no-global-types -cflags "-O2 -g -Wall -Werror -D__TARGET_ARCH_x86 -idirafter /usr/include/x86_64-linux-gnu" Unsafe testdata/unsafe.bpf.c

// TestKernelVerifierRejects loads each unsafe policy of testdata/unsafe.bpf.c
// into the real kernel with the gpu_ext module: every load must fail, with
// the errno and the verifier's reason given.
func TestKernelVerifierRejects(t *testing.T) {
	ktest.Require(t, ktest.Module)
	spec, err := LoadUnsafe()
	require.NoError(t, err)
	for _, tc := range []struct {
		prog, attach string
		errno        error
		log          string
	}{
		{"write_ctx", "gpu_mem_ops:block_activate", unix.EACCES, "gpu_ext: policies cannot write kernel memory"},
		{"write_past_ctx", "gpu_mem_ops:block_access", unix.EACCES, "gpu_ext: policies cannot write kernel memory"},
		{"read_past_ctx", "gpu_mem_ops:evict_prepare", unix.EACCES, "access beyond struct gpuext_mem_ctx at off 72 size 8"},
		{"helper_write_ctx", "gpu_mem_ops:block_activate", unix.EACCES, "bpf_probe_read_kernel() may write into memory pointed by R1 type=trusted_ptr_"},
		{"unbounded_loop", "gpu_mem_ops:page_prefetch", unix.EINVAL, "infinite loop detected"},
		{"wrong_ops_kfunc", "gpu_sched_ops:task_init", unix.EINVAL,
			"kernel function bpf_gpu_ext_block_move args#0 expected pointer to STRUCT gpuext_mem_ctx but R1 has a pointer to STRUCT gpuext_sched_ctx"},
		{"sleepable", "gpu_sched_ops:task_bind", unix.EINVAL, "attach to unsupported member task_bind of struct gpu_sched_ops"},
	} {
		t.Run(tc.prog, func(t *testing.T) {
			require.Contains(t, spec.Programs, tc.prog)
			ps := spec.Programs[tc.prog].Copy()
			ps.AttachTo = tc.attach
			prog, err := ebpf.NewProgramWithOptions(ps, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction})
			if err == nil {
				prog.Close()
				t.Fatalf("%s loaded; the kernel must refuse it", tc.prog)
			}
			var ve *ebpf.VerifierError
			log := err.Error()
			if errors.As(err, &ve) {
				log = fmt.Sprintf("%+v", ve)
			}
			t.Logf("%s refused: %v", tc.prog, err)
			require.ErrorIs(t, err, tc.errno, log)
			require.Contains(t, log, tc.log)
		})
	}
}
