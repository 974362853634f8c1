package procattr

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	// cid and kindID are container ids as runtimes write them.
	cid    = "8d3b5f5c1e0b2a4f6c7d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
	kindID = "f1e2d3c4b5a697887766554433221100ffeeddccbbaa99887766554433221100"
	// podUIDDashes is a pod UID as the API server reports it; podUIDSystemd
	// is the same UID as the systemd cgroup driver writes it.
	podUIDDashes  = "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b"
	podUIDSystemd = "0b6ecbb1_3f46_4e0a_9d1f_6e9b0c6a1a2b"
)

type cgroupCase struct {
	name string
	in   string
	want Cgroup
}

// cgroupCases are /proc/<pid>/cgroup files as the kernel prints them for the
// container runtimes and Kubernetes setups in use. FuzzParseCgroup seeds its
// corpus with them too.
var cgroupCases = []cgroupCase{
	// Kubernetes, systemd cgroup driver (the default since 1.22), cgroup v2.
	{
		name: "k8s systemd containerd burstable",
		in:   "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDSystemd + ".slice/cri-containerd-" + cid + ".scope\n",
		want: Cgroup{
			Path:        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDSystemd + ".slice/cri-containerd-" + cid + ".scope",
			ContainerID: cid, PodUID: podUIDDashes, Runtime: RuntimeContainerd,
		},
	},
	{
		name: "k8s systemd containerd besteffort",
		in:   "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podUIDSystemd + ".slice/cri-containerd-" + cid + ".scope\n",
		want: Cgroup{
			Path:        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podUIDSystemd + ".slice/cri-containerd-" + cid + ".scope",
			ContainerID: cid, PodUID: podUIDDashes, Runtime: RuntimeContainerd,
		},
	},
	{
		name: "k8s systemd containerd guaranteed",
		in:   "0::/kubepods.slice/kubepods-pod" + podUIDSystemd + ".slice/cri-containerd-" + cid + ".scope\n",
		want: Cgroup{
			Path:        "/kubepods.slice/kubepods-pod" + podUIDSystemd + ".slice/cri-containerd-" + cid + ".scope",
			ContainerID: cid, PodUID: podUIDDashes, Runtime: RuntimeContainerd,
		},
	},
	{
		name: "k8s systemd cri-o",
		in:   "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDSystemd + ".slice/crio-" + cid + ".scope\n",
		want: Cgroup{
			Path:        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDSystemd + ".slice/crio-" + cid + ".scope",
			ContainerID: cid, PodUID: podUIDDashes, Runtime: RuntimeCRIO,
		},
	},
	{
		// conmon runs beside the container in the pod's slice.
		name: "k8s systemd cri-o conmon is not the container",
		in:   "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDSystemd + ".slice/crio-conmon-" + cid + ".scope\n",
		want: Cgroup{
			Path:   "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + podUIDSystemd + ".slice/crio-conmon-" + cid + ".scope",
			PodUID: podUIDDashes,
		},
	},
	{
		name: "k8s systemd dockershim",
		in:   "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podUIDSystemd + ".slice/docker-" + cid + ".scope\n",
		want: Cgroup{
			Path:        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + podUIDSystemd + ".slice/docker-" + cid + ".scope",
			ContainerID: cid, PodUID: podUIDDashes, Runtime: RuntimeDocker,
		},
	},
	{
		// containerd managing cgroups itself writes the systemd-style
		// "slice:prefix:name" cgroupsPath literally.
		name: "k8s containerd cgroupfs with systemd-style path",
		in:   "0::/system.slice/containerd.service/kubepods-besteffort-pod" + podUIDSystemd + ".slice:cri-containerd:" + cid + "\n",
		want: Cgroup{
			Path:        "/system.slice/containerd.service/kubepods-besteffort-pod" + podUIDSystemd + ".slice:cri-containerd:" + cid,
			ContainerID: cid, PodUID: podUIDDashes, Runtime: RuntimeContainerd,
		},
	},
	// Kubernetes, cgroupfs driver.
	{
		name: "k8s cgroupfs burstable v1",
		in: "12:pids:/kubepods/burstable/pod" + podUIDDashes + "/" + cid + "\n" +
			"11:memory:/kubepods/burstable/pod" + podUIDDashes + "/" + cid + "\n" +
			"2:cpu,cpuacct:/kubepods/burstable/pod" + podUIDDashes + "/" + cid + "\n" +
			"1:name=systemd:/kubepods/burstable/pod" + podUIDDashes + "/" + cid + "\n",
		want: Cgroup{
			Path:        "/kubepods/burstable/pod" + podUIDDashes + "/" + cid,
			ContainerID: cid, PodUID: podUIDDashes,
		},
	},
	{
		name: "k8s cgroupfs guaranteed v2",
		in:   "0::/kubepods/pod" + podUIDDashes + "/" + cid + "\n",
		want: Cgroup{
			Path:        "/kubepods/pod" + podUIDDashes + "/" + cid,
			ContainerID: cid, PodUID: podUIDDashes,
		},
	},
	{
		name: "k8s cgroupfs cri-o",
		in:   "0::/kubepods/besteffort/pod" + podUIDDashes + "/crio-" + cid + "\n",
		want: Cgroup{
			Path:        "/kubepods/besteffort/pod" + podUIDDashes + "/crio-" + cid,
			ContainerID: cid, PodUID: podUIDDashes, Runtime: RuntimeCRIO,
		},
	},
	// Kubernetes in docker (kind): the pod's container is the innermost.
	{
		name: "kind v1 cgroupfs",
		in:   "0::/docker/" + kindID + "/kubepods/besteffort/pod" + podUIDDashes + "/" + cid + "\n",
		want: Cgroup{
			Path:        "/docker/" + kindID + "/kubepods/besteffort/pod" + podUIDDashes + "/" + cid,
			ContainerID: cid, PodUID: podUIDDashes,
		},
	},
	{
		name: "kind v2 systemd",
		in: "0::/system.slice/docker-" + kindID + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/" +
			"kubelet-kubepods-besteffort-pod" + podUIDSystemd + ".slice/cri-containerd-" + cid + ".scope\n",
		want: Cgroup{
			Path: "/system.slice/docker-" + kindID + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/" +
				"kubelet-kubepods-besteffort-pod" + podUIDSystemd + ".slice/cri-containerd-" + cid + ".scope",
			ContainerID: cid, PodUID: podUIDDashes, Runtime: RuntimeContainerd,
		},
	},
	{
		// A process in the pod's cgroup but in no container of it must
		// not be paired with the kind node's container.
		name: "kind pod level only",
		in:   "0::/docker/" + kindID + "/kubepods/burstable/pod" + podUIDDashes + "\n",
		want: Cgroup{
			Path:   "/docker/" + kindID + "/kubepods/burstable/pod" + podUIDDashes,
			PodUID: podUIDDashes,
		},
	},
	{
		name: "kind node itself",
		in:   "0::/docker/" + kindID + "/system.slice/containerd.service\n",
		want: Cgroup{
			Path:        "/docker/" + kindID + "/system.slice/containerd.service",
			ContainerID: kindID, Runtime: RuntimeDocker,
		},
	},
	// Containers without Kubernetes.
	{
		name: "docker systemd v2",
		in:   "0::/system.slice/docker-" + cid + ".scope\n",
		want: Cgroup{Path: "/system.slice/docker-" + cid + ".scope", ContainerID: cid, Runtime: RuntimeDocker},
	},
	{
		name: "docker cgroupfs v1",
		in: "12:freezer:/docker/" + cid + "\n" +
			"4:memory:/docker/" + cid + "\n" +
			"1:name=systemd:/docker/" + cid + "\n",
		want: Cgroup{Path: "/docker/" + cid, ContainerID: cid, Runtime: RuntimeDocker},
	},
	{
		// Hybrid hierarchy: the unified line carries nothing.
		name: "docker hybrid v1 ids and bare v2 line",
		in: "11:devices:/system.slice/docker-" + cid + ".scope\n" +
			"1:name=systemd:/system.slice/docker-" + cid + ".scope\n" +
			"0::/\n",
		want: Cgroup{Path: "/system.slice/docker-" + cid + ".scope", ContainerID: cid, Runtime: RuntimeDocker},
	},
	{
		name: "v2 line preferred over v1 lines",
		in: "1:name=systemd:/system.slice/docker-" + kindID + ".scope\n" +
			"0::/system.slice/docker-" + cid + ".scope\n",
		want: Cgroup{Path: "/system.slice/docker-" + cid + ".scope", ContainerID: cid, Runtime: RuntimeDocker},
	},
	{
		name: "containerd without k8s",
		in:   "0::/system.slice/cri-containerd-" + cid + ".scope\n",
		want: Cgroup{Path: "/system.slice/cri-containerd-" + cid + ".scope", ContainerID: cid, Runtime: RuntimeContainerd},
	},
	{
		name: "nerdctl",
		in:   "0::/system.slice/nerdctl-" + cid + ".scope\n",
		want: Cgroup{Path: "/system.slice/nerdctl-" + cid + ".scope", ContainerID: cid, Runtime: RuntimeContainerd},
	},
	{
		// ctr, cgroupfs: /<containerd namespace>/<id>; nothing names the runtime.
		name: "containerd ctr cgroupfs",
		in:   "0::/default/" + cid + "\n",
		want: Cgroup{Path: "/default/" + cid, ContainerID: cid},
	},
	{
		name: "containerd daemon itself",
		in:   "0::/system.slice/containerd.service\n",
		want: Cgroup{Path: "/system.slice/containerd.service"},
	},
	{
		name: "podman rootless",
		in:   "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + cid + ".scope\n",
		want: Cgroup{
			Path:        "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + cid + ".scope",
			ContainerID: cid, Runtime: RuntimePodman,
		},
	},
	{
		// systemd inside the container: podman adds a "container" leaf.
		name: "podman rootful with systemd inside",
		in:   "0::/machine.slice/libpod-" + cid + ".scope/container\n",
		want: Cgroup{Path: "/machine.slice/libpod-" + cid + ".scope/container", ContainerID: cid, Runtime: RuntimePodman},
	},
	{
		name: "podman cgroupfs",
		in:   "0::/libpod_parent/libpod-" + cid + "\n",
		want: Cgroup{Path: "/libpod_parent/libpod-" + cid, ContainerID: cid, Runtime: RuntimePodman},
	},
	{
		name: "podman conmon is not the container",
		in:   "0::/machine.slice/libpod-conmon-" + cid + ".scope\n",
		want: Cgroup{Path: "/machine.slice/libpod-conmon-" + cid + ".scope"},
	},
	// Host processes.
	{
		name: "user session",
		in:   "0::/user.slice/user-1000.slice/session-2.scope\n",
		want: Cgroup{Path: "/user.slice/user-1000.slice/session-2.scope"},
	},
	{
		name: "init",
		in:   "0::/init.scope\n",
		want: Cgroup{Path: "/init.scope"},
	},
	{
		name: "root or private cgroup namespace",
		in:   "0::/\n",
		want: Cgroup{Path: "/"},
	},
	{
		name: "outside the reader's cgroup namespace",
		in:   "0::/../../system.slice/sshd.service\n",
		want: Cgroup{Path: "/../../system.slice/sshd.service"},
	},
	{
		// A sandbox id of 32 hex digits is not a container id.
		name: "hybrid host with a non-container id",
		in: "9:name=systemd:/\n" +
			"4:memory:/process_api/24f94800cb541db539af687833ce8f37\n" +
			"1:cpu:/\n" +
			"0::/\n",
		want: Cgroup{Path: "/"},
	},
	{
		name: "v1 only without ids takes the first line",
		in:   "2:cpu:/a\n1:name=systemd:/b\n",
		want: Cgroup{Path: "/a"},
	},
	// Look-alikes that must not be taken as ids.
	{
		name: "pod slice outside kubepods",
		in:   "0::/system.slice/app-pod" + podUIDSystemd + ".slice\n",
		want: Cgroup{Path: "/system.slice/app-pod" + podUIDSystemd + ".slice"},
	},
	{
		name: "pod directory outside kubepods",
		in:   "0::/workloads/pod" + podUIDDashes + "\n",
		want: Cgroup{Path: "/workloads/pod" + podUIDDashes},
	},
	{
		name: "uppercase ids",
		in:   "0::/kubepods/pod" + strings.ToUpper(podUIDDashes) + "/" + strings.ToUpper(cid) + "\n",
		want: Cgroup{Path: "/kubepods/pod" + strings.ToUpper(podUIDDashes) + "/" + strings.ToUpper(cid)},
	},
	{
		name: "short container id",
		in:   "0::/system.slice/docker-" + cid[:63] + ".scope\n",
		want: Cgroup{Path: "/system.slice/docker-" + cid[:63] + ".scope"},
	},
	{
		name: "unknown runtime prefix",
		in:   "0::/system.slice/garden-" + cid + ".scope\n",
		want: Cgroup{Path: "/system.slice/garden-" + cid + ".scope"},
	},
	// Layout details.
	{
		name: "no trailing newline and blank lines",
		in:   "\n0::/system.slice/docker-" + cid + ".scope",
		want: Cgroup{Path: "/system.slice/docker-" + cid + ".scope", ContainerID: cid, Runtime: RuntimeDocker},
	},
	{
		name: "colon in path",
		in:   "0::/a:b/c\n",
		want: Cgroup{Path: "/a:b/c"},
	},
}

func TestParseCgroup(t *testing.T) {
	for _, tt := range cgroupCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCgroup([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseCgroupErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", "no cgroup entries"},
		{"only newlines", "\n\n", "no cgroup entries"},
		{"no colons", "hello\n", `cgroup line 1: want hierarchy-ID:controllers:path, got "hello"`},
		{"one colon", "0:/\n", `cgroup line 1: want hierarchy-ID:controllers:path, got "0:/"`},
		{"hierarchy not a number", "x::/\n", `cgroup line 1: hierarchy ID "x" is not a decimal number`},
		{"empty hierarchy", "::/\n", `cgroup line 1: hierarchy ID "" is not a decimal number`},
		{"no path", "0::\n", `cgroup line 1: cgroup path "" does not start with /`},
		{"relative path", "0::kubepods\n", `cgroup line 1: cgroup path "kubepods" does not start with /`},
		{"binary", "\x00\x01\xfegarbage", `cgroup line 1: control byte 0x00 in "\x00\x01\xfegarbage": not a cgroup file`},
		{"bad second line", "0::/\nnonsense\n", `cgroup line 2: want hierarchy-ID:controllers:path, got "nonsense"`},
		{
			"long garbage is shortened",
			strings.Repeat("z", 100),
			`cgroup line 1: want hierarchy-ID:controllers:path, got "` + strings.Repeat("z", 64) + `"...`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCgroup([]byte(tt.in))
			require.EqualError(t, err, tt.want)
			assert.Equal(t, Cgroup{}, got)
		})
	}
}

func TestTestIDs(t *testing.T) {
	// Guards the fixtures: a typo would make the cases above vacuous.
	require.True(t, isContainerID(cid))
	require.True(t, isContainerID(kindID))
	require.True(t, isUUID(podUIDDashes))
}
