package devrt

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-gpu/otelcol-gpu/internal/nsfs"
)

func TestParseName(t *testing.T) {
	for _, tt := range []struct {
		name string
		pid  uint32
		ok   bool
	}{
		{"gpuext-devrt-4242-123456789.ring", 4242, true},
		{"gpuext-devrt-1-0.ring", 1, true},
		{"gpuext-devrt-4294967295-1.ring", 4294967295, true},
		{"gpuext-devrt-4294967296-1.ring", 0, false}, // beyond 32 bits
		{"gpuext-devrt-0-1.ring", 0, false},
		{"gpuext-devrt--1.ring", 0, false},
		{"gpuext-devrt-12-.ring", 0, false},
		{"gpuext-devrt-12.ring", 0, false},
		{"gpuext-devrt-12-3-4.ring", 0, false},
		{"gpuext-devrt-+12-3.ring", 0, false},
		{"gpuext-devrt-12-3.ring.tmp", 0, false},
		{"gpuext-devrt-12-3", 0, false},
		{"gpuext-devrt-1a-3.ring", 0, false},
		{"x-gpuext-devrt-12-3.ring", 0, false},
		{"gpuext-devrt-12-123456789012345678901.ring", 0, false}, // 21 digits
		{"", 0, false},
	} {
		pid, ok := parseName(tt.name)
		require.Equal(t, tt.ok, ok, tt.name)
		require.Equal(t, tt.pid, pid, tt.name)
	}
}

func TestParseNSpid(t *testing.T) {
	for _, tt := range []struct {
		status string
		want   uint32
		err    string
	}{
		{"Name:\tsleep\nNSpid:\t4242\n", 4242, ""},
		{"Name:\tsleep\nNSpid:\t4242\t17\t1\nNSpgid:\t9\n", 1, ""},
		{"Name:\tsleep\n", 0, "status: no NSpid line"},
		{"NSpid:\n", 0, "status: no NSpid line"},
		{"NSpid:\tx\n", 0, `status: NSpid "\tx"`},
		{"NSpid:\t0\n", 0, `status: NSpid "\t0"`},
	} {
		got, err := nsfs.ParseNSPID([]byte(tt.status))
		if tt.err != "" {
			require.EqualError(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{"gpuext-devrt-4242-1.ring", "gpuext-devrt-0-1.ring", "gpuext-devrt-1-2-3.ring", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		pid, ok := parseName(name)
		if !ok {
			return
		}
		if pid == 0 {
			t.Fatal("pid 0 accepted")
		}
		for i := 0; i < len(name); i++ {
			if name[i] == '/' {
				t.Fatal("a name with a slash accepted")
			}
		}
	})
}

func FuzzParseNSpid(f *testing.F) {
	f.Add([]byte("NSpid:\t4242\t1\n"))
	f.Add([]byte("NSpid:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := nsfs.ParseNSPID(b); err == nil && v == 0 {
			t.Fatal("pid 0 accepted")
		}
	})
}
