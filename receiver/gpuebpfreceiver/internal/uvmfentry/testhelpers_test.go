package uvmfentry

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// readerAt buffers r: btf.LoadSpecFromReader needs an io.ReaderAt.
func readerAt(t testing.TB, r io.Reader) *bytes.Reader {
	t.Helper()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return bytes.NewReader(b)
}
