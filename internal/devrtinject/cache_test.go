package devrtinject

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func key(b byte) Key { return Key{Hash: [32]byte{b}, SMArch: 90, Version: 1} }

func res(n int) Result {
	return Result{Status: StatusPatched, PTX: make([]byte, n), Kernels: []string{"k"}}
}

func TestCacheLRU(t *testing.T) {
	c := NewCache(3, 1000)
	c.Put(key(1), res(100))
	c.Put(key(2), res(100))
	c.Put(key(3), res(100))
	_, ok := c.Get(key(1)) // 1 becomes the most recent
	require.True(t, ok)
	c.Put(key(4), res(100)) // drops 2, the least recent
	_, ok = c.Get(key(2))
	require.False(t, ok)
	for _, k := range []byte{1, 3, 4} {
		_, ok := c.Get(key(k))
		require.True(t, ok, k)
	}
	require.Equal(t, 3, c.Len())

	// Bytes: 3 x 102 + 800 > 1000 drops the two least recent.
	c.Put(key(5), res(798))
	require.Equal(t, 2, c.Len())
	_, ok = c.Get(key(4))
	require.True(t, ok)
	_, ok = c.Get(key(5))
	require.True(t, ok)

	// Larger than the cache: not kept, nothing dropped.
	c.Put(key(6), res(1000))
	require.Equal(t, 2, c.Len())

	// Replacing keeps one entry with the new answer.
	c.Put(key(4), Result{Status: StatusRejected, Reason: "r"})
	got, ok := c.Get(key(4))
	require.True(t, ok)
	require.Equal(t, StatusRejected, got.Status)
	require.Equal(t, 2, c.Len())
}

func TestCacheKeyParts(t *testing.T) {
	c := NewCache(10, 1<<20)
	c.Put(key(1), res(1))
	for _, k := range []Key{
		{Hash: [32]byte{1}, SMArch: 80, Version: 1},
		{Hash: [32]byte{1}, SMArch: 90, Version: 2},
		{Hash: [32]byte{2}, SMArch: 90, Version: 1},
	} {
		_, ok := c.Get(k)
		require.False(t, ok, "%+v", k)
	}
}
