// Package devrt holds the example of a workload with devrt preloaded; this
// test keeps its pieces pointing at each other.
package devrt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

type container struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	Env     []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

func (c container) env(name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func (c container) mount(volume string) (string, bool) {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath, m.ReadOnly
		}
	}
	return "", false
}

// The library the init container copies is the one LD_PRELOAD names, and
// the rings go to the host folder the collector reads, at the same path.
func TestWorkloadManifest(t *testing.T) {
	data, err := os.ReadFile("workload.yaml")
	require.NoError(t, err)
	var d struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					InitContainers []container `yaml:"initContainers"`
					Containers     []container `yaml:"containers"`
					Volumes        []struct {
						Name     string `yaml:"name"`
						EmptyDir *struct {
						} `yaml:"emptyDir"`
						HostPath *struct {
							Path string `yaml:"path"`
						} `yaml:"hostPath"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &d))
	require.Equal(t, "Deployment", d.Kind)
	pod := d.Spec.Template.Spec
	require.Len(t, pod.InitContainers, 1)
	require.Len(t, pod.Containers, 1)
	initC, app := pod.InitContainers[0], pod.Containers[0]

	libDir, _ := initC.mount("devrt-lib")
	appLibDir, ro := app.mount("devrt-lib")
	require.Equal(t, libDir, appLibDir)
	require.True(t, ro, "the workload cannot change the library")
	require.Equal(t, filepath.Join(libDir, "libgpuext-devrt.so"), app.env("LD_PRELOAD"))
	script := strings.Join(initC.Command, " ")
	require.Contains(t, script, "cp /devrt/libgpuext-devrt.so "+libDir)

	ringDir := app.env("GPUEXT_DEVRT_DIR")
	appRings, ro := app.mount("devrt-rings")
	require.Equal(t, ringDir, appRings)
	require.False(t, ro)
	initRings, _ := initC.mount("devrt-rings")
	require.Contains(t, script, "chmod 1777 "+initRings)
	for _, v := range pod.Volumes {
		switch v.Name {
		case "devrt-lib":
			require.NotNil(t, v.EmptyDir)
		case "devrt-rings":
			require.NotNil(t, v.HostPath)
			require.Equal(t, ringDir, v.HostPath.Path, "the collector mounts the host folder at the same path")
		}
	}

	dockerfile, err := os.ReadFile("Dockerfile")
	require.NoError(t, err)
	require.Contains(t, string(dockerfile), "COPY libgpuext-devrt.so /devrt/libgpuext-devrt.so")
}
