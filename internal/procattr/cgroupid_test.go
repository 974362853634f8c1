package procattr

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCgroupIndexFakeTree(t *testing.T) {
	root := t.TempDir()
	pod := "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0b6ecbb1_3f46_4e0a_9d1f_6e9b0c6a1a2b.slice"
	ctr := pod + "/cri-containerd-4e8d2bb4a7f3c6d5e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a.scope"
	require.NoError(t, os.MkdirAll(filepath.Join(root, ctr), 0o755))
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(filepath.Join(root, ctr), &st))

	idx := NewCgroupIndex(root, 0)
	p, ok := idx.Path(st.Ino)
	require.True(t, ok)
	require.Equal(t, "/"+ctr, p)
	cg, ok := idx.Attribute(st.Ino)
	require.True(t, ok)
	require.Equal(t, "4e8d2bb4a7f3c6d5e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5a", cg.ContainerID)
	require.Equal(t, "0b6ecbb1-3f46-4e0a-9d1f-6e9b0c6a1a2b", cg.PodUID)

	_, ok = idx.Path(1 << 62)
	require.False(t, ok)

	// A miss within minWalk does not walk again: a cgroup made after the
	// first walk stays unknown until minWalk has passed.
	slow := NewCgroupIndex(root, time.Hour)
	_, ok = slow.Path(st.Ino)
	require.True(t, ok)
	late := filepath.Join(root, "system.slice")
	require.NoError(t, os.MkdirAll(late, 0o755))
	require.NoError(t, syscall.Stat(late, &st))
	_, ok = slow.Path(st.Ino)
	require.False(t, ok, "walks are rate-limited")
	_, ok = idx.Path(st.Ino)
	require.True(t, ok, "minWalk 0 walks again on a miss")
}
