package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext"
	"github.com/otelcol-gpu/otelcol-gpu/internal/gpuext/ktest"
)

func ctl(l *gpuext.Loader, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	rc := run(args, &out, &errOut, l)
	return rc, out.String(), errOut.String()
}

// TestUsage: bad command lines get status 2 and say what is wrong, before
// anything touches the kernel (the paths point nowhere).
func TestUsage(t *testing.T) {
	dir := t.TempDir()
	l := &gpuext.Loader{Paths: gpuext.Paths{Sys: dir, BTF: dir, BPFFS: filepath.Join(dir, "bpf")}}
	for _, tc := range []struct {
		args []string
		rc   int
		msg  string
	}{
		{nil, 2, "gpuextctl: bad usage: no command\n"},
		{[]string{"start"}, 2, `gpuextctl: bad usage: unknown command "start"`},
		{[]string{"load"}, 2, "gpuextctl: bad usage: load needs mem or sched\n"},
		{[]string{"load", "gpu"}, 2, `gpuextctl: bad usage: policy kind "gpu": want mem or sched`},
		{[]string{"detach", "mem", "now"}, 2, "gpuextctl: bad usage: detach mem takes no flags\n"},
		{[]string{"status", "mem"}, 2, "gpuextctl: bad usage: status takes no arguments\n"},
		{[]string{"load", "mem", "--eviction", "lfu", "extra"}, 2, `gpuextctl: bad usage: unexpected argument "extra"`},
		{[]string{"load", "mem", "--stride-ahead", "-1"}, 2, `invalid value "-1" for flag -stride-ahead: "-1" is not a number`},
		{[]string{"load", "mem", "--eviction", "random"}, 1, "gpuextctl: eviction \"random\": want one of lru, lfu, mru, fifo, priority\n"},
		{[]string{"load", "mem", "--threshold", "120"}, 1, "gpuextctl: threshold 120%: want 0..100\n"},
		{[]string{"load", "mem", "--priority", "pid:1=9"}, 1, "gpuextctl: priority \"pid:1=9\": want 0..7 after =\n"},
		{[]string{"load", "mem", "--pid-prefetch", "pid:1=all"}, 1, "gpuextctl: pid prefetch \"pid:1=all\": prefetch \"all\": want one of"},
		{[]string{"load", "sched", "--class", "be=50"}, 1, "gpuextctl: class be: timeslice 50 µs: want 0 or 100..10000000\n"},
		{[]string{"load", "sched", "--rule", "pid:1"}, 1, "gpuextctl: rule \"pid:1\": want pid:<pid>=<class>"},
		{[]string{"load", "mem"}, 1, "gpuextctl: gpu_ext kernel module is not loaded (no " + dir + "/gpu_ext; insmod gpu_ext.ko first)\n"},
		{[]string{"status"}, 1, "gpuextctl: gpu_ext kernel module is not loaded"},
		{[]string{"detach", "sched"}, 1, "gpuextctl: no policy of this kind is attached: nothing pinned at " + dir + "/bpf/sched/link\n"},
		{[]string{"set", "mem", "--eviction", "lfu"}, 1, "gpuextctl: no policy of this kind is attached: no " + dir + "/bpf/mem/mem_cfg\n"},
	} {
		rc, out, errOut := ctl(l, tc.args...)
		require.Equal(t, tc.rc, rc, "%v: %s", tc.args, errOut)
		require.Empty(t, out)
		require.Contains(t, errOut, tc.msg, "%v", tc.args)
	}
}

// TestKernelCLI drives the real module through the command line.
func TestKernelCLI(t *testing.T) {
	ktest.Require(t, ktest.Module, "/sys/fs/bpf")
	l := gpuext.New()
	t.Cleanup(func() { _ = l.Detach(gpuext.Mem); _ = l.Detach(gpuext.Sched) })

	rc, out, errOut := ctl(l, "load", "mem", "--eviction", "lfu", "--prefetch", "stride", "--stride-ahead", "8",
		"--priority", "pid:100=6")
	require.Equal(t, 0, rc, errOut)
	require.Equal(t, "mem policy gpuext_mem attached: eviction lfu, prefetch stride\n", out)
	rc, _, errOut = ctl(l, "load", "mem")
	require.Equal(t, 1, rc)
	require.Contains(t, errOut, "a policy of this kind is already attached")

	rc, out, errOut = ctl(l, "set", "mem", "--prefetch", "threshold", "--threshold", "20", "--no-priority", "pid:100",
		"--priority", "cgroup:7=2", "--pid-prefetch", "pid:55=always_max", "--pid-prefetch", "pid:56=none")
	require.Equal(t, 0, rc, errOut)
	rc, out, errOut = ctl(l, "set", "mem", "--no-pid-prefetch", "pid:56")
	require.Equal(t, 0, rc, errOut)
	require.Equal(t, "mem policy updated: eviction lfu, prefetch threshold\n", out)

	rc, out, errOut = ctl(l, "load", "sched", "--name", "lcbe", "--class", "lc=1000000", "--class", "be=200,interleave=low",
		"--rule", "comm:infer=lc", "--rule", "pid:300=be")
	require.Equal(t, 0, rc, errOut)
	require.Equal(t, "sched policy lcbe attached: 2 classes, 2 rules\n", out)
	rc, out, errOut = ctl(l, "set", "sched", "--no-rule", "pid:300", "--rule", "cgroup:5=be", "--default-class", "be")
	require.Equal(t, 0, rc, errOut)
	require.Equal(t, "sched policy updated: 2 classes, 2 rules\n", out)

	rc, out, errOut = ctl(l, "status")
	require.Equal(t, 0, rc, errOut)
	require.Equal(t, `module: mem_policy gpuext_mem, sched_policy lcbe
`+hookLines+`mem: eviction lfu prefetch threshold seq_pages 0 stride_conf 2 stride_ahead 8 threshold 20% lfu_hot 2 lfu_decay 0 protect 1 default_prio 0
mem: prefetch pid 55 = always_max
mem: priority cgroup 7 = 2
mem: stats activate 0 access 0 evict 0 spared 0 prefetch 0 region 0 stride_hit 0 table_full 0
sched: default class be
sched: class be timeslice 200 us interleave low reject false
sched: class lc timeslice 1000000 us interleave default reject false
sched: rule cgroup 5 -> be
sched: rule comm "infer" -> lc
`, maskCounts(out))

	for _, k := range []string{"mem", "sched"} {
		rc, out, errOut = ctl(l, "detach", k)
		require.Equal(t, 0, rc, errOut)
		require.Equal(t, k+" policy detached\n", out)
	}
	rc, out, _ = ctl(l, "status")
	require.Equal(t, 0, rc)
	require.Equal(t, "module: mem_policy -, sched_policy -\n"+hookLines+"mem: not pinned\nsched: not pinned\n", maskCounts(out))
}

// The module's counters depend on what ran before in the VM: masked.
const hookLines = `module: block_activate calls N policy N requests N applied N rejected N clamped N
module: block_access calls N policy N requests N applied N rejected N clamped N
module: evict_prepare calls N policy N requests N applied N rejected N clamped N
module: page_prefetch calls N policy N requests N applied N rejected N clamped N
module: page_prefetch_iter calls N policy N requests N applied N rejected N clamped N
module: task_init calls N policy N requests N applied N rejected N clamped N
module: task_bind calls N policy N requests N applied N rejected N clamped N
module: task_destroy calls N policy N requests N applied N rejected N clamped N
`

var number = regexp.MustCompile(`(calls|policy|requests|applied|rejected|clamped) [0-9]+`)

func maskCounts(s string) string { return number.ReplaceAllString(s, "$1 N") }
