package gpuebpfreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/procattr"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	def := createDefaultConfig().(*Config)
	sub, err := cm.Sub(component.NewID(typ).String())
	require.NoError(t, err)
	got := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(got))
	require.Equal(t, def, got, "an empty section is the defaults")
	require.NoError(t, got.Validate())

	sub, err = cm.Sub(component.NewIDWithName(typ, "custom").String())
	require.NoError(t, err)
	got = createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(got))
	require.NoError(t, got.Validate())

	want := createDefaultConfig().(*Config)
	want.CollectionInterval = 30 * time.Second
	want.ProcRoot = "/host/proc"
	want.CUDA.Libraries = []string{"/opt/cuda/lib64/libcudart.so.12"}
	want.CUDA.LibraryGlobs = []string{"libcuda.so*"}
	want.CUDA.Include = []ProcessRule{{Executable: "python*"}, {PodUID: "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}}
	want.CUDA.Exclude = []ProcessRule{{ContainerID: "4e8d2bb4a7f3"}}
	want.CUDA.RescanInterval = time.Minute
	want.CUDA.RingBufferSize = 32 << 20
	want.CUDA.MaxInflight = 131072
	want.CUDA.LaunchReturnProbes = false
	want.Spans.Classes = []string{"launch", "copy"}
	want.Spans.FlushInterval = time.Second
	want.Spans.MaxBatch = 1024
	want.Histograms.BlockSize.Enabled = false
	want.Histograms.KernelQueueDelay.Buckets = []float64{1e-5, 1e-3}
	want.DevRT.Directories = []string{"/dev/shm", "/run/devrt"}
	want.DevRT.PollInterval = 20 * time.Millisecond
	want.DevRT.Classes = []string{"launch", "copy", "exec"}
	want.DevRT.SampleEvery = 0
	want.DevRT.SampleMinInterval = 250 * time.Microsecond
	want.DevRT.MaxRings = 64
	want.DevRT.Probes.Enabled = true
	want.DevRT.Probes.Probes = []string{"block_sched", "sm_load"}
	want.DevRT.Probes.Include = []string{"*attention*", "_Z4axpy*"}
	want.DevRT.Probes.Exclude = []string{"*_debug"}
	want.DevRT.Probes.Mode = "thread"
	want.DevRT.Probes.ScheduleDelay.Buckets = []float64{1e-6, 1e-3}
	want.DevRT.Probes.Spans = false
	require.Equal(t, "/usr/local/nvidia/lib64/libnvidia-ml.so.1", got.NVML.LibraryPath)
	require.False(t, got.NVML.ProcessUsage)
	require.False(t, got.NVML.Metrics.HwGpuIo.Enabled)
	require.True(t, got.NVML.Metrics.HwPower.Enabled)
	want.NVML = got.NVML // holds unexported "set by user" flags, checked above
	require.False(t, got.Metrics.GpuCudaMemorySet.Enabled)
	require.True(t, got.Metrics.GpuCudaCalls.Enabled)
	want.MetricsBuilderConfig = got.MetricsBuilderConfig // holds unexported "set by user" flags
	require.Equal(t, want, got)
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"interval", func(c *Config) { c.CollectionInterval = 0 }, "collection_interval: must be positive, got 0s"},
		{"probe mode", func(c *Config) { c.DevRT.Probes.Mode = "lane" }, `devrt::probes::mode: "lane" is not warp or thread`},
		{"probe name", func(c *Config) { c.DevRT.Probes.Probes = []string{"blocks"} },
			`devrt::probes::probes[0]: "blocks" is neither a shipped probe (block_sched, launch_latency, sm_load, warp_occupancy) nor an absolute path`},
		{"probes without devrt", func(c *Config) { c.DevRT.Probes.Enabled = true; c.DevRT.Enabled = false },
			"devrt::probes::enabled: needs devrt::enabled (the probes reach processes through devrt)"},
		{"probe buckets", func(c *Config) { c.DevRT.Probes.LaunchLatency.Buckets = []float64{2, 1} },
			"devrt::probes::launch_latency::buckets: must be strictly increasing, got [2 1]"},
		{"proc root", func(c *Config) { c.ProcRoot = "proc" }, `proc_root: must be an absolute path, got "proc"`},
		{"library path", func(c *Config) { c.CUDA.Libraries = []string{"libcuda.so.1"} },
			`cuda::libraries[0]: must be an absolute path, got "libcuda.so.1"`},
		{"library glob", func(c *Config) { c.CUDA.LibraryGlobs = []string{"lib/cuda*"} },
			`cuda::library_globs[0]: "lib/cuda*" is not a file-name glob`},
		{"bad glob", func(c *Config) { c.CUDA.LibraryGlobs = []string{"libcuda[.so"} },
			`cuda::library_globs[0]: "libcuda[.so" is not a file-name glob`},
		{"empty rule", func(c *Config) { c.CUDA.Include = []ProcessRule{{}} },
			"cuda::include[0]: a rule needs at least one of executable, container_id, pod_uid"},
		{"executable glob", func(c *Config) { c.CUDA.Exclude = []ProcessRule{{Executable: "py[thon"}} },
			`cuda::exclude[0]::executable: "py[thon" is not a valid glob: syntax error in pattern`},
		{"container id", func(c *Config) { c.CUDA.Include = []ProcessRule{{ContainerID: "ABC"}} },
			`cuda::include[0]::container_id: "ABC" must be 12 to 64 lowercase hex characters`},
		{"pod uid", func(c *Config) { c.CUDA.Include = []ProcessRule{{PodUID: "pod-1"}} },
			`cuda::include[0]::pod_uid: "pod-1" is not a lowercase dashed UUID`},
		{"rescan", func(c *Config) { c.CUDA.RescanInterval = -time.Second },
			"cuda::rescan_interval: must not be negative, got -1s"},
		{"ring size", func(c *Config) { c.CUDA.RingBufferSize = 5000 },
			"cuda::ring_buffer_size: must be a power of two between 4096 and 1073741824 bytes, got 5000"},
		{"inflight", func(c *Config) { c.CUDA.MaxInflight = 10 },
			"cuda::max_inflight: must be between 64 and 4194304, got 10"},
		{"span class", func(c *Config) { c.Spans.Classes = []string{"launch", "kernels"} },
			`spans::classes[1]: "kernels" is not one of launch, memory, copy, sync, module, context`},
		{"flush", func(c *Config) { c.Spans.FlushInterval = 0 }, "spans::flush_interval: must be positive, got 0s"},
		{"batch", func(c *Config) { c.Spans.MaxBatch = 0 }, "spans::max_batch: must be between 1 and 1048576, got 0"},
		{"buckets order", func(c *Config) { c.Histograms.CallDuration.Buckets = []float64{1, 1} },
			"histograms::gpu.cuda.call.duration::buckets: must be strictly increasing, got [1 1]"},
		{"nvml library", func(c *Config) { c.NVML.LibraryPath = "libnvidia-ml.so.1" },
			`nvml::library_path: must be an absolute path, got "libnvidia-ml.so.1"`},
		{"buckets empty", func(c *Config) { c.Histograms.GridSize.Buckets = nil },
			"histograms::gpu.cuda.launch.grid.size::buckets: an enabled histogram needs at least one bucket boundary"},
		{"execution buckets", func(c *Config) { c.Histograms.KernelExecution.Buckets = []float64{2, 1} },
			"histograms::gpu.kernel.execution.duration::buckets: must be strictly increasing, got [2 1]"},
		{"queue delay buckets", func(c *Config) { c.Histograms.KernelQueueDelay.Buckets = nil },
			"histograms::gpu.kernel.queue.delay::buckets: an enabled histogram needs at least one bucket boundary"},
		{"copy execution buckets", func(c *Config) { c.Histograms.CopyExecution.Buckets = []float64{1, 1} },
			"histograms::gpu.cuda.copy.execution.duration::buckets: must be strictly increasing, got [1 1]"},
		{"devrt class", func(c *Config) { c.DevRT.Classes = []string{"kernels"} },
			`devrt::classes[0]: "kernels" is not one of launch, memory, copy, sync, module, exec`},
		{"devrt poll", func(c *Config) { c.DevRT.PollInterval = 0 },
			"devrt::poll_interval: must be between 1ms and 10s, got 0s"},
		{"devrt sampling", func(c *Config) { c.DevRT.SampleEvery = 1 << 21 },
			"devrt::sample_every: must be between 0 (no timing) and 1048576, got 2097152"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tt.mutate(cfg)
			require.EqualError(t, cfg.Validate(), tt.want)
		})
	}
}

func TestSelector(t *testing.T) {
	py := procattr.Process{ExeName: "python3.11", Cgroup: procattr.Cgroup{
		ContainerID: "4e8d2bb4a7f3c6d5e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a",
		PodUID:      "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}}
	host := procattr.Process{ExeName: "nvidia-smi"}
	tests := []struct {
		name             string
		include, exclude []ProcessRule
		py, host         bool
	}{
		{"include by glob", []ProcessRule{{Executable: "python*"}}, nil, true, false},
		{"include by container prefix", []ProcessRule{{ContainerID: "4e8d2bb4a7f3"}}, nil, true, false},
		{"include by pod", []ProcessRule{{PodUID: "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"}}, nil, true, false},
		{"all fields must match", []ProcessRule{{Executable: "python*", PodUID: "00000000-0000-0000-0000-000000000000"}}, nil, false, false},
		{"exclude wins", []ProcessRule{{Executable: "*"}}, []ProcessRule{{Executable: "python*"}}, false, true},
		{"exclude only", nil, []ProcessRule{{Executable: "nvidia-smi"}}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := CUDAConfig{Include: tt.include, Exclude: tt.exclude}
			sel := c.selector()
			require.Equal(t, tt.py, sel(py))
			require.Equal(t, tt.host, sel(host))
		})
	}
	require.Nil(t, (&CUDAConfig{}).selector(), "no rules: nothing to evaluate")
}
