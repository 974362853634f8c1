// Package kubernetes holds the DaemonSet manifest; this test keeps it
// well-formed and hands its collector configuration to `make test`, which
// validates it with the built distribution.
package kubernetes

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestDaemonSetManifest(t *testing.T) {
	f, err := os.Open("daemonset.yaml")
	require.NoError(t, err)
	defer f.Close()
	dec := yaml.NewDecoder(f)
	kinds := map[string]map[string]any{}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		kinds[doc["kind"].(string)] = doc
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "DaemonSet", "Service"} {
		require.Contains(t, kinds, k)
	}

	pod := kinds["DaemonSet"]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	require.Equal(t, true, pod["hostPID"], "uprobes and attribution need the host's pids")
	ctr := pod["containers"].([]any)[0].(map[string]any)
	caps := ctr["securityContext"].(map[string]any)["capabilities"].(map[string]any)["add"].([]any)
	require.ElementsMatch(t, []any{"BPF", "PERFMON", "SYS_PTRACE", "CHECKPOINT_RESTORE"}, caps)

	// The collector config, for `make test` to validate with the binary.
	cfg := kinds["ConfigMap"]["data"].(map[string]any)["config.yaml"].(string)
	require.Contains(t, cfg, "proc_root: /host/proc")
	if out := os.Getenv("DAEMONSET_CONFIG_OUT"); out != "" {
		require.NoError(t, os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(t, os.WriteFile(out, []byte(cfg), 0o644))
	}
}
