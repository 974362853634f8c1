package fuzzseed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncode(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values []any
		want   string
		err    string
	}{
		{"bytes", []any{[]byte{0, 'a', 0xff}}, "go test fuzz v1\n[]byte(\"\\x00a\\xff\")\n", ""},
		{"string", []any{"0000:17:00.0\n"}, "go test fuzz v1\nstring(\"0000:17:00.0\\n\")\n", ""},
		{"several", []any{[]byte("h"), uint64(1) << 63, uint32(7), int(-2), true, float64(0.5)},
			"go test fuzz v1\n[]byte(\"h\")\nuint64(9223372036854775808)\nuint32(7)\nint(-2)\nbool(true)\nfloat64(0.5)\n", ""},
		{"none", nil, "go test fuzz v1\n", ""},
		{"not an argument", []any{[]int{1}}, "", "value 0: type []int is not a fuzz argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.values...)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestDecodeBytes(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     []byte
		err      string
	}{
		{"written", "go test fuzz v1\n[]byte(\"\\x00a\\xff\")\n", []byte{0, 'a', 0xff}, ""},
		{"go's own spacing", "go test fuzz v1\n[]byte(\"ab\")", []byte("ab"), ""},
		{"empty value", "go test fuzz v1\n[]byte(\"\")\n", []byte{}, ""},
		{"no header", "[]byte(\"ab\")\n", nil, "not a seed of one value"},
		{"two values", "go test fuzz v1\n[]byte(\"a\")\n[]byte(\"b\")\n", nil, "not a seed of one value"},
		{"a string", "go test fuzz v1\nstring(\"a\")\n", nil, "is not a []byte value"},
		{"bad quoting", "go test fuzz v1\n[]byte(\"a)\n", nil, "invalid syntax"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeBytes([]byte(tt.in))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestWriteReadsBack(t *testing.T) {
	dir := t.TempDir()
	b := []byte("\x01\x02 ring")
	require.NoError(t, Write(dir, "FuzzX", "a seed", b))
	got, err := ReadBytes(filepath.Join(dir, "testdata", "fuzz", "FuzzX", "a_seed"))
	require.NoError(t, err)
	require.Equal(t, b, got)
	_, err = ReadBytes(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// FuzzDecodeBytes: any file decodes without a panic, and what Encode
// writes decodes to itself.
func FuzzDecodeBytes(f *testing.F) {
	f.Add([]byte("go test fuzz v1\n[]byte(\"ab\")\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = DecodeBytes(raw)
		enc, err := Encode(raw)
		require.NoError(t, err)
		back, err := DecodeBytes(enc)
		require.NoError(t, err)
		require.Equal(t, raw, back)
	})
}
