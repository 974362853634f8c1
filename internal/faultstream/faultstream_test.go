package faultstream

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/faultpattern"
)

func samples(addrs ...uint64) []Sample {
	out := make([]Sample, len(addrs))
	for i, a := range addrs {
		out[i] = Sample{TimeNs: uint64(i + 1), Addr: a, Access: AccessRead}
	}
	return out
}

func TestStreamRing(t *testing.T) {
	tests := []struct {
		name      string
		add       int
		wantAddrs []uint64
	}{
		{"empty", 0, nil},
		{"partial", 2, []uint64{0x1000, 0x2000}},
		{"exactly full", 4, []uint64{0x1000, 0x2000, 0x3000, 0x4000}},
		{"wrapped once", 5, []uint64{0x2000, 0x3000, 0x4000, 0x5000}},
		{"wrapped many", 11, []uint64{0x8000, 0x9000, 0xa000, 0xb000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHub(4, 0)
			st := h.Stream(Key{PID: 7, HWID: "GPU-a"})
			require.NotNil(t, st)
			for i := 1; i <= tt.add; i++ {
				st.Add(Sample{TimeNs: uint64(i), Addr: uint64(i) << 12, Access: AccessWrite})
			}
			got, total, ok := h.Recent(Key{PID: 7, HWID: "GPU-a"}, nil)
			require.True(t, ok)
			assert.Equal(t, uint64(tt.add), total)
			var addrs []uint64
			for i, s := range got {
				addrs = append(addrs, s.Addr)
				assert.Equal(t, s.Addr>>12, s.TimeNs, "sample %d", i)
				assert.Equal(t, AccessWrite, s.Access)
			}
			assert.Equal(t, tt.wantAddrs, addrs)
		})
	}
}

func TestHubBoundsAndKeys(t *testing.T) {
	h := NewHub(0, 3)
	assert.Equal(t, DefaultCapacity, h.Capacity())
	a := h.Stream(Key{PID: 20})
	b := h.Stream(Key{PID: 10, HWID: "GPU-b"})
	c := h.Stream(Key{PID: 10, HWID: "GPU-a"})
	require.NotNil(t, a)
	require.NotNil(t, b)
	require.NotNil(t, c)
	assert.Same(t, a, h.Stream(Key{PID: 20}), "a key has one stream")
	assert.Nil(t, h.Stream(Key{PID: 30}), "beyond max streams")
	assert.Nil(t, h.Stream(Key{PID: 31}))
	assert.Equal(t, uint64(2), h.Refused())
	assert.Equal(t, []Key{{PID: 10, HWID: "GPU-a"}, {PID: 10, HWID: "GPU-b"}, {PID: 20}}, h.Keys())

	h.Remove(10)
	assert.Equal(t, []Key{{PID: 20}}, h.Keys())
	_, _, ok := h.Recent(Key{PID: 10, HWID: "GPU-a"}, nil)
	assert.False(t, ok)
	assert.NotNil(t, h.Stream(Key{PID: 30}), "room again after Remove")

	assert.Equal(t, MaxCapacity, NewHub(MaxCapacity+1, 0).Capacity())
}

func TestRegistry(t *testing.T) {
	h1, h2 := NewHub(8, 0), NewHub(8, 0)
	un1 := Register("gpuebpf/test", h1)
	got, ok := Lookup("gpuebpf/test")
	require.True(t, ok)
	assert.Same(t, h1, got)

	un2 := Register("gpuebpf/test", h2) // a restarted receiver replaces its hub
	un1()                               // the old one's unregister leaves the new hub
	got, ok = Lookup("gpuebpf/test")
	require.True(t, ok)
	assert.Same(t, h2, got)
	un2()
	_, ok = Lookup("gpuebpf/test")
	assert.False(t, ok)
}

func TestClassify(t *testing.T) {
	var seq, strided []uint64
	for i := range uint64(512) {
		seq = append(seq, 0x7f0000000000+i*4096)
		strided = append(strided, 0x7f0000000000+i*16*4096)
	}
	tests := []struct {
		name    string
		in      []Sample
		want    faultpattern.Pattern
		stride  int64
		samples int
	}{
		{"sequential", samples(seq...), faultpattern.Sequential, 4096, 512},
		{"strided 64 KiB", samples(strided...), faultpattern.Strided, 16 * 4096, 512},
		{"too few", samples(0x1000, 0x2000), faultpattern.Unknown, 0, 2},
		{"none", nil, faultpattern.Unknown, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Classify(tt.in, faultpattern.Options{})
			assert.Equal(t, tt.want, r.Pattern)
			assert.Equal(t, tt.stride, r.Stride)
			assert.Equal(t, tt.samples, r.Samples)
		})
	}
}

func TestConcurrentAddAndRead(t *testing.T) {
	h := NewHub(64, 0)
	k := Key{PID: 1, HWID: "GPU-x"}
	st := h.Stream(k)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				st.Add(Sample{TimeNs: uint64(w*1000 + i), Addr: uint64(i)})
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			got, _, _ := h.Recent(k, nil)
			if len(got) > 64 {
				t.Errorf("%d samples from a ring of 64", len(got))
			}
		}
	})
	wg.Wait()
	got, total, _ := h.Recent(k, nil)
	assert.Len(t, got, 64)
	assert.Equal(t, uint64(4000), total)
}

func TestAccessString(t *testing.T) {
	for a, want := range map[Access]string{
		AccessUnknown: "unknown", AccessRead: "read", AccessWrite: "write",
		AccessAtomic: "atomic", AccessPrefetch: "prefetch", Access(9): "unknown",
	} {
		assert.Equal(t, want, a.String())
	}
}

func BenchmarkStreamAdd(b *testing.B) {
	st := NewHub(DefaultCapacity, 0).Stream(Key{PID: 1})
	b.ReportAllocs()
	for i := range b.N {
		st.Add(Sample{TimeNs: uint64(i), Addr: uint64(i) << 12})
	}
}

func TestSinceIdle(t *testing.T) {
	at := func(ts ...uint64) []Sample {
		out := make([]Sample, len(ts))
		for i, v := range ts {
			out[i] = Sample{TimeNs: v, Addr: uint64(i)}
		}
		return out
	}
	tests := []struct {
		name string
		in   []Sample
		idle uint64
		want int // samples kept
	}{
		{"no pause", at(1, 2, 3, 4), 10, 4},
		{"one pause", at(1, 2, 100, 101), 10, 2},
		{"the last pause counts", at(1, 50, 51, 200, 201, 202), 10, 3},
		{"a pause of exactly idle is none", at(1, 11, 21), 10, 3},
		{"idle off", at(1, 100, 200), 0, 3},
		{"unordered times are no pause", at(100, 1, 2), 10, 3},
		{"empty", nil, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SinceIdle(tt.in, tt.idle)
			assert.Len(t, got, tt.want)
			if tt.want > 0 {
				assert.Equal(t, tt.in[len(tt.in)-tt.want:], got)
			}
		})
	}
}
