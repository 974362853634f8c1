package procmaps

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListPIDs(t *testing.T) {
	root := t.TempDir()
	// What a real /proc holds besides process directories, and names that
	// only look like pids.
	for _, name := range []string{
		"1", "10", "2", "4194304", "self", "thread-self", "sys", "meminfo",
		"01", "-5", "+5", "0", "1a", "99999999999",
	} {
		require.NoError(t, os.Mkdir(filepath.Join(root, name), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "3"), nil, 0o644))

	got, err := ListPIDs(root)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 10, 4194304}, got)
}

func TestListPIDsEmpty(t *testing.T) {
	got, err := ListPIDs(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, []int{}, got)
}

func TestListPIDsErrors(t *testing.T) {
	_, err := ListPIDs("")
	require.EqualError(t, err, "procmaps: procRoot must not be empty")

	missing := filepath.Join(t.TempDir(), "proc")
	_, err = ListPIDs(missing)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.EqualError(t, err, "procmaps: open "+missing+": no such file or directory")
}

func TestListPIDsSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no procfs:", err)
	}
	got, err := ListPIDs("/proc")
	require.NoError(t, err)
	assert.Contains(t, got, os.Getpid())
	assert.IsIncreasing(t, got)
}
